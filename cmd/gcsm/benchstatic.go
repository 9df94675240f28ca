package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/kernels"
	"github.com/gcsm/gcsm/query"
)

// staticEngine is one engine of bench static.
type staticEngine struct {
	name    string
	matcher incremental.Matcher
	cpu     *incremental.CPU // nil for the GPU, whose kernels run to their end
}

// staticResult is one query on one engine.
type staticResult struct {
	Count    int64   `json:"count"` // partial when timed out
	Seconds  float64 `json:"seconds"`
	TimedOut bool    `json:"timed_out"`
}

// staticQuery is a row of bench static's table.
type staticQuery struct {
	Name    string                  `json:"name"`
	Answer  *int64                  `json:"answer"`
	Check   string                  `json:"check"` // ok, wrong, disagree, timed out or unchecked
	Engines map[string]staticResult `json:"engines"`
}

// staticSummary is bench static's JSON line.
type staticSummary struct {
	Data       string             `json:"data"`
	Engines    []string           `json:"engines"`
	Workers    int                `json:"workers"`
	Timeout    float64            `json:"timeout_seconds"`
	CountOnly  bool               `json:"count_only"`
	Queries    []staticQuery      `json:"queries"`
	Total      map[string]float64 `json:"total_seconds"`
	GeoMean    map[string]float64 `json:"geomean_seconds"`
	HeavyHalf  staticHeavy        `json:"heavy_half"`
	TimedOut   map[string]int     `json:"timed_out"`
	Checked    int                `json:"checked"`
	Mismatches int                `json:"mismatches"`
}

// staticHeavy is the slower half of the queries by the first engine's time.
type staticHeavy struct {
	Queries []string           `json:"queries"`
	Seconds map[string]float64 `json:"seconds"`
}

// runBenchStatic times the static matcher query by query on each engine and
// checks the counts against an answers file.
func runBenchStatic(args []string, stdout, stderr io.Writer) error {
	var (
		data, dir, answersPath, engines string
		cpuprofile                      string
		specs                           queryFlags
		workers                         int
		timeout                         time.Duration
		countOnly, jsonOut              bool
	)
	fs := flag.NewFlagSet("bench static", flag.ContinueOnError)
	fs.StringVar(&data, "d", "", "data graph `file` (CSM, SNAP or JSON lines)")
	fs.Var(&specs, "q", "query: a CSM or Cypher-style `file`, an inline pattern, or NAME=PATTERN (repeatable)")
	fs.StringVar(&dir, "queries", "", "a directory of query files (each file in it) or a glob of them; queries are named after their files")
	fs.StringVar(&answersPath, "answers", "", "`file` of expected counts, a 'QUERY COUNT' line per query, '#' comments; a count that differs is an error")
	fs.StringVar(&engines, "engines", "cpu", "comma-separated engines: cpu, gpu (the GPU static matcher)")
	fs.IntVar(&workers, "workers", 0, "CPU matching goroutines; 0 uses every core")
	fs.DurationVar(&timeout, "timeout", 0, "stop a query that runs longer than this `duration` and count it at the limit, marked timed out (on the GPU the kernels run to their end first); 0: no limit")
	fs.BoolVar(&countOnly, "count-only", false, "count matches without enumerating the last query vertex")
	fs.BoolVar(&jsonOut, "json", false, "write only the JSON summary to stdout; the table goes to stderr")
	fs.StringVar(&cpuprofile, "cpuprofile", "", "write a Go CPU profile of the queries' matching (not the loading) to `file`")
	tsUnitArg := tsUnitFlag(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	names, nerr := staticEngineNames(engines)
	if err := badFlags(workersFlag(workers), nerr, durationMin("timeout", timeout)); err != nil {
		return err
	}
	unit, err := tsUnit(*tsUnitArg)
	if err != nil {
		return err
	}
	if data == "" {
		fmt.Fprintln(stderr, "gcsm bench static: need -d DATA")
		return errUsage
	}
	if dir != "" {
		files, err := queryGlob(dir)
		if err != nil {
			return err
		}
		specs = append(specs, files...)
	}
	if len(specs) == 0 {
		return badFlags(errors.New("no query: give -q QUERY or --queries DIR_OR_GLOB"))
	}
	var answers bench.Answers
	if answersPath != "" {
		var err error
		if answers, err = bench.ReadAnswers(answersPath); err != nil {
			return fmt.Errorf("--answers: %w", err)
		}
	}

	var es []staticEngine
	var alloc hostmem.Allocator = hostmem.Mmap{}
	for _, name := range names {
		switch name {
		case "cpu":
			c := &incremental.CPU{Workers: workers}
			es = append(es, staticEngine{name: name, matcher: c, cpu: c})
			fmt.Fprintf(stderr, "engine cpu: %d workers\n", cpuWorkers(workers))
		case "gpu":
			x, err := kernels.Open(kernels.Options{})
			if err != nil {
				return fmt.Errorf("--engines gpu: %w", err)
			}
			defer x.Close()
			// The graph lives in the GPU's pinned memory, which the CPU
			// reads too.
			alloc = x.Allocator()
			es = append(es, staticEngine{name: name, matcher: x})
			fmt.Fprintf(stderr, "engine gpu: %s, %s placement\n", x.Name(), x.Placement())
		}
	}

	directed, fix, err := graphDirected(false, false, input{"-d", data})
	if err != nil {
		return err
	}
	s, err := newSession(directed, false, alloc)
	if err != nil {
		return err
	}
	defer s.g.Close()
	s.timeUnit(unit, stderr, "bench static")
	if err := s.loadGraph(data); err != nil {
		return err
	}
	known := s.labels.Len()
	qs, err := loadQueries(specs, s.labels, directed, fix, query.Embeddings, false)
	if err != nil {
		return err
	}
	s.warnUnknownLabels(stderr, "bench static", qs, known, "the data graph")

	mode, sink := incremental.Count, incremental.Sink(nil)
	if !countOnly {
		mode, sink = incremental.Enumerate, func(int, int, graph.Sign, []graph.VertexID) {}
	}
	// start is set before each call and read by the stop function from the
	// call's workers, which the call starts after the write.
	var start time.Time
	var stopped atomic.Bool
	if timeout > 0 {
		for _, e := range es {
			if e.cpu != nil {
				e.cpu.SetStop(func(int) bool {
					if time.Since(start) > timeout {
						stopped.Store(true)
						return true
					}
					return false
				})
			}
		}
	}
	sum := staticSummary{Data: data, Engines: names, Workers: cpuWorkers(workers), Timeout: timeout.Seconds(), CountOnly: countOnly}
	if cpuprofile != "" {
		stop, err := startProfile(cpuprofile)
		if err != nil {
			return err
		}
		defer stop()
	}
	for _, q := range qs {
		row := staticQuery{Name: q.Name, Engines: map[string]staticResult{}}
		if a, ok := answers[q.Name]; ok {
			row.Answer = &a
		}
		for _, e := range es {
			start = time.Now()
			stopped.Store(false)
			c, err := e.matcher.Static(s.g, []*query.Query{q}, mode, sink)
			el := time.Since(start)
			if err != nil {
				return fmt.Errorf("query %s on %s: %w", q.Name, e.name, err)
			}
			r := staticResult{Count: c[0], Seconds: el.Seconds()}
			if timeout > 0 && (stopped.Load() || el > timeout) {
				r.Seconds, r.TimedOut = timeout.Seconds(), true
			}
			row.Engines[e.name] = r
		}
		row.Check = checkStatic(row, names)
		sum.Queries = append(sum.Queries, row)
	}
	summarize(&sum)

	out := bufio.NewWriter(stdout)
	defer out.Flush()
	human := humanOut(out, stderr, jsonOut)
	printStatic(human, &sum, answersPath, timeout)
	if jsonOut {
		b, err := json.Marshal(sum)
		if err != nil {
			return err
		}
		out.Write(append(b, '\n'))
	}
	if sum.Mismatches > 0 {
		return fmt.Errorf("%d of %d queries have counts that differ from the answers or between engines", sum.Mismatches, len(sum.Queries))
	}
	return nil
}

// staticEngineNames parses --engines: known names, each once.
func staticEngineNames(v string) ([]string, error) {
	var names []string
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		if n != "cpu" && n != "gpu" {
			return nil, fmt.Errorf("--engines: unknown engine %q (want cpu or gpu)", n)
		}
		if slices.Contains(names, n) {
			return nil, fmt.Errorf("--engines: %s given twice", n)
		}
		names = append(names, n)
	}
	return names, nil
}

// durationMin refuses a negative duration for flag name.
func durationMin(name string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("--%s %v: want 0 (no limit) or more", name, d)
	}
	return nil
}

// queryGlob lists the query files of --queries: every regular file of a
// directory, or the files a glob matches, in name order.
func queryGlob(v string) ([]string, error) {
	var files []string
	if fi, err := os.Stat(v); err == nil && fi.IsDir() {
		ents, err := os.ReadDir(v)
		if err != nil {
			return nil, fmt.Errorf("--queries: %w", err)
		}
		for _, e := range ents {
			if e.Type().IsRegular() {
				files = append(files, filepath.Join(v, e.Name()))
			}
		}
	} else {
		m, err := filepath.Glob(v)
		if err != nil {
			return nil, fmt.Errorf("--queries %q: %w", v, err)
		}
		for _, f := range m {
			if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
				files = append(files, f)
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("--queries %q: no query files there", v)
	}
	return files, nil
}

// checkStatic compares the counts of the engines that finished with the
// answer, or with each other when there is none.
func checkStatic(row staticQuery, names []string) string {
	var done []int64
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
	case slices.Min(done) != slices.Max(done):
		return "disagree"
	}
	return "unchecked"
}

// summarize fills in the totals, geometric means, heavy half and tallies;
// a timed-out query counts at the limit.
func summarize(sum *staticSummary) {
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
		sum.GeoMean[n] = bench.GeoMean(secs[n])
	}
	sum.HeavyHalf.Queries = []string{}
	for _, i := range bench.HeavyHalf(secs[sum.Engines[0]]) {
		sum.HeavyHalf.Queries = append(sum.HeavyHalf.Queries, sum.Queries[i].Name)
		for _, n := range sum.Engines {
			sum.HeavyHalf.Seconds[n] += secs[n][i]
		}
	}
}

// printStatic writes the table and the totals.
func printStatic(w io.Writer, sum *staticSummary, answersPath string, timeout time.Duration) {
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

func countCheck(sum *staticSummary, check string) (n int) {
	for _, q := range sum.Queries {
		if q.Check == check {
			n++
		}
	}
	return n
}
