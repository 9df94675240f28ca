package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/query"
)

// StaticEngine is one engine of the static benchmark (gcsm bench static).
type StaticEngine struct {
	Name    string
	Matcher incremental.Matcher
	CPU     *incremental.CPU // nil for the GPU, whose kernels run to their end
}

// StaticResult is one query on one engine.
type StaticResult struct {
	Count    graph.Count `json:"count"` // partial when timed out; a JSON number of any size
	Seconds  float64     `json:"seconds"`
	TimedOut bool        `json:"timed_out"`
}

// StaticQuery is a row of bench static's table.
type StaticQuery struct {
	Name    string                  `json:"name"`
	Answer  *graph.Count            `json:"answer"`
	Check   string                  `json:"check"` // ok, wrong, disagree, timed out or unchecked
	Engines map[string]StaticResult `json:"engines"`
}

// StaticSummary is bench static's JSON line.
type StaticSummary struct {
	Data       string             `json:"data"`
	Engines    []string           `json:"engines"`
	Workers    int                `json:"workers"`
	Timeout    float64            `json:"timeout_seconds"`
	CountOnly  bool               `json:"count_only"`
	Queries    []StaticQuery      `json:"queries"`
	Total      map[string]float64 `json:"total_seconds"`
	GeoMean    map[string]float64 `json:"geomean_seconds"`
	HeavyHalf  StaticHeavy        `json:"heavy_half"`
	TimedOut   map[string]int     `json:"timed_out"`
	Checked    int                `json:"checked"`
	Mismatches int                `json:"mismatches"`
}

// StaticHeavy is the slower half of the queries by the first engine's time.
type StaticHeavy struct {
	Queries []string           `json:"queries"`
	Seconds map[string]float64 `json:"seconds"`
}

// RunStatic matches each query of qs alone on g, on each engine in turn,
// timed, and fills sum's rows, checks and totals. sum.Engines names es;
// sum.CountOnly counts without enumerating the last query vertex. With a
// timeout, a CPU engine stops a query that runs longer and counts it at
// the limit, marked timed out; the GPU's kernels run to their end first.
// answers, where they name a query, check its counts.
func RunStatic(g *dyngraph.Graph, qs []*query.Query, es []StaticEngine, answers Answers, timeout time.Duration, sum *StaticSummary) error {
	mode, sink := incremental.Count, incremental.Sink(nil)
	if !sum.CountOnly {
		mode, sink = incremental.Enumerate, func(int, int, graph.Sign, []graph.VertexID) {}
	}
	// start is set before each call and read by the stop function from the
	// call's workers, which the call starts after the write.
	var start time.Time
	var stopped atomic.Bool
	if timeout > 0 {
		for _, e := range es {
			if e.CPU != nil {
				e.CPU.SetStop(func(int) bool {
					if time.Since(start) > timeout {
						stopped.Store(true)
						return true
					}
					return false
				})
			}
		}
	}
	for _, q := range qs {
		row := StaticQuery{Name: q.Name, Engines: map[string]StaticResult{}}
		if a, ok := answers[q.Name]; ok {
			row.Answer = &a
		}
		for _, e := range es {
			start = time.Now()
			stopped.Store(false)
			c, err := e.Matcher.Static(g, []*query.Query{q}, mode, sink)
			el := time.Since(start)
			if err != nil {
				return fmt.Errorf("query %s on %s: %w", q.Name, e.Name, err)
			}
			r := StaticResult{Count: c[0], Seconds: el.Seconds()}
			if timeout > 0 && (stopped.Load() || el > timeout) {
				r.Seconds, r.TimedOut = timeout.Seconds(), true
			}
			row.Engines[e.Name] = r
		}
		row.Check = checkStatic(row, sum.Engines)
		sum.Queries = append(sum.Queries, row)
	}
	summarizeStatic(sum)
	return nil
}

// checkStatic compares the counts of the engines that finished with the
// answer, or with each other when there is none.
func checkStatic(row StaticQuery, names []string) string {
	var done []graph.Count
	for _, n := range names {
		if r := row.Engines[n]; !r.TimedOut {
			done = append(done, r.Count)
		}
	}
	switch {
	case len(done) == 0:
		return "timed out"
	case row.Answer != nil:
		for _, c := range done {
			if c != *row.Answer {
				return "wrong"
			}
		}
		return "ok"
	case slices.ContainsFunc(done, func(c graph.Count) bool { return c != done[0] }):
		return "disagree"
	}
	return "unchecked"
}

// summarizeStatic fills in the totals, geometric means, heavy half and tallies;
// a timed-out query counts at the limit.
func summarizeStatic(sum *StaticSummary) {
	sum.Total, sum.GeoMean, sum.TimedOut = map[string]float64{}, map[string]float64{}, map[string]int{}
	sum.HeavyHalf.Seconds = map[string]float64{}
	secs := map[string][]float64{}
	for _, n := range sum.Engines {
		sum.TimedOut[n] = 0 // every engine listed, none timed out yet
	}
	for _, q := range sum.Queries {
		for _, n := range sum.Engines {
			r := q.Engines[n]
			secs[n] = append(secs[n], r.Seconds)
			sum.Total[n] += r.Seconds
			if r.TimedOut {
				sum.TimedOut[n]++
			}
		}
		switch q.Check {
		case "ok":
			sum.Checked++
		case "wrong", "disagree":
			sum.Mismatches++
		}
	}
	for _, n := range sum.Engines {
		sum.GeoMean[n] = GeoMean(secs[n])
	}
	sum.HeavyHalf.Queries = []string{}
	for _, i := range HeavyHalf(secs[sum.Engines[0]]) {
		sum.HeavyHalf.Queries = append(sum.HeavyHalf.Queries, sum.Queries[i].Name)
		for _, n := range sum.Engines {
			sum.HeavyHalf.Seconds[n] += secs[n][i]
		}
	}
}

// ReportStatic writes the table and the totals; answersPath names the
// answers file, if any, and timeout is the limit a timed-out query counts at.
func ReportStatic(w io.Writer, sum *StaticSummary, answersPath string, timeout time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "query\tcount\t")
	for _, n := range sum.Engines {
		fmt.Fprintf(tw, "%s s\t", n)
	}
	fmt.Fprintln(tw, "check")
	for _, q := range sum.Queries {
		first := q.Engines[sum.Engines[0]]
		count := fmt.Sprint(first.Count)
		if first.TimedOut {
			count = ">=" + count
		}
		fmt.Fprintf(tw, "%s\t%s\t", q.Name, count)
		for _, n := range sum.Engines {
			r := q.Engines[n]
			if r.TimedOut {
				fmt.Fprintf(tw, ">%.3f\t", r.Seconds)
			} else {
				fmt.Fprintf(tw, "%.3f\t", r.Seconds)
			}
		}
		// One word each, so that the column stays one field.
		check := map[string]string{"ok": "ok", "disagree": "DISAGREE", "timed out": "timed-out", "unchecked": "-"}[q.Check]
		if q.Check == "wrong" {
			check = fmt.Sprintf("WRONG(want=%d)", *q.Answer)
		}
		fmt.Fprintln(tw, check)
	}
	tw.Flush()
	line := func(label string, v map[string]float64) {
		var parts []string
		for _, n := range sum.Engines {
			parts = append(parts, fmt.Sprintf("%s %.3fs", n, v[n]))
		}
		fmt.Fprintf(w, "%s %s\n", label, strings.Join(parts, ", "))
	}
	line("total:", sum.Total)
	line("geomean:", sum.GeoMean)
	line(fmt.Sprintf("heavy half (%d queries, slowest by %s):", len(sum.HeavyHalf.Queries), sum.Engines[0]), sum.HeavyHalf.Seconds)
	for _, n := range sum.Engines {
		if k := sum.TimedOut[n]; k > 0 {
			fmt.Fprintf(w, "timed out: %s %d of %d, each counted at %v\n", n, k, len(sum.Queries), timeout)
		}
	}
	if answersPath != "" {
		fmt.Fprintf(w, "answers: %d of %d queries checked against %s, %d differ\n", sum.Checked+countCheck(sum, "wrong"), len(sum.Queries), answersPath, countCheck(sum, "wrong"))
	}
	if k := countCheck(sum, "disagree"); k > 0 {
		fmt.Fprintf(w, "engines disagree on %d queries\n", k)
	}
}

func countCheck(sum *StaticSummary, check string) (n int) {
	for _, q := range sum.Queries {
		if q.Check == check {
			n++
		}
	}
	return n
}
