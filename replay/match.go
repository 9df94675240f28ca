package replay

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/query"
)

// Printer writes --emit's lines, as text or JSON, from any worker.
type Printer struct {
	s    *Session
	qs   []*query.Query
	out  *bufio.Writer
	json bool
	mu   sync.Mutex
}

// NewPrinter writes the matches of s's queries qs to out, as JSON lines
// under json (--emit --json).
func NewPrinter(s *Session, qs []*query.Query, out *bufio.Writer, json bool) *Printer {
	return &Printer{s: s, qs: qs, out: out, json: json}
}

func (p *Printer) match(qi int, m []graph.VertexID) {
	line := p.s.matchLine("", p.qs[qi].Name, m)
	if p.json {
		line = p.s.matchJSON("", p.qs[qi].Name, m)
	}
	p.mu.Lock()
	p.out.WriteString(line)
	p.mu.Unlock()
}

func (p *Printer) matchTx(qi int, m []graph.VertexID, tx []bundle.Tx, ret []byte) {
	line := p.s.matchLineTx("", p.qs[qi].Name, m, tx, ret)
	if p.json {
		line = p.s.matchJSONTx("", p.qs[qi].Name, m, tx, ret)
	}
	p.mu.Lock()
	p.out.WriteString(line)
	p.mu.Unlock()
}

// MatchEach matches the queries on s's graph one at a time, so that each
// has its own time (the matchers take the queries of a call one after the
// other anyway), counting only under countOnly and printing every match
// through p where it is not nil. It returns each query's count and seconds.
func MatchEach(s *Session, matcher incremental.Matcher, qs []*query.Query, countOnly bool, p *Printer) ([]graph.Count, []float64, error) {
	mode, sink := incremental.Count, incremental.Sink(nil)
	if !countOnly {
		mode = incremental.Enumerate
		sink = func(_, qi int, _ graph.Sign, m []graph.VertexID) {
			if p != nil {
				p.match(qi, m)
			}
		}
	}
	counts, qsecs := make([]graph.Count, len(qs)), make([]float64, len(qs))
	for i := range qs {
		one := sink
		if sink != nil {
			one = func(w, _ int, sign graph.Sign, m []graph.VertexID) { sink(w, i, sign, m) }
		}
		t := time.Now()
		var c []graph.Count
		var err error
		if s.core.Store() != nil {
			b := &incremental.Binder{Matcher: matcher, Store: s.core.Store()}
			var bs incremental.BoundSink
			if p != nil {
				bs = func(_, _ int, sign graph.Sign, m []graph.VertexID, tx []bundle.Tx) {
					p.matchTx(i, m, tx, s.returnJSON(b, 0, qs[i], sign, m, tx))
				}
			}
			c, err = b.Static(s.g, qs[i:i+1], mode, bs)
		} else {
			c, err = matcher.Static(s.g, qs[i:i+1], mode, one)
		}
		if err != nil {
			return nil, nil, err
		}
		counts[i], qsecs[i] = c[0], time.Since(t).Seconds()
	}
	return counts, qsecs, nil
}

// ReportMatch writes the table of counts and times to human and, under
// --json, the summary line to out.
func ReportMatch(human io.Writer, out *bufio.Writer, jsonOut bool, qs []*query.Query, counts []graph.Count, qsecs []float64, secs float64, skipped int) error {
	tw := tabwriter.NewWriter(human, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "query\tmatches\tseconds")
	for i, q := range qs {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\n", q.Name, counts[i], qsecs[i])
	}
	tw.Flush()
	if skipped > 0 {
		fmt.Fprintf(human, "skipped: %d bad lines or refused updates\n", skipped)
	}
	fmt.Fprintf(human, "time: %.3fs\n", secs)
	// A count past 2^128-2 saturated: the table shows it as a bound, and
	// the command fails rather than report a number.
	var overflow error
	for i, q := range qs {
		if err := counts[i].Err(); err != nil {
			overflow = errors.Join(overflow, fmt.Errorf("query %s: %w", q.Name, err))
		}
	}
	if !jsonOut || overflow != nil {
		return overflow
	}
	// Counts are JSON numbers of any size (graph.Count.MarshalJSON):
	// past 2^53 a consumer must read them as big integers.
	type jq struct {
		Name    string      `json:"name"`
		Matches graph.Count `json:"matches"`
		Seconds float64     `json:"seconds"`
	}
	res := struct {
		Queries []jq    `json:"queries"`
		Skipped int     `json:"skipped"`
		Seconds float64 `json:"seconds"`
	}{Skipped: skipped, Seconds: secs}
	for i, q := range qs {
		res.Queries = append(res.Queries, jq{q.Name, counts[i], qsecs[i]})
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	out.Write(append(b, '\n'))
	return nil
}
