package replay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/engine"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/query"
)

// Replayer runs a stream through a session's core batch by batch.
type Replayer struct {
	Session *Session
	Stream  *Stream
	Queries []*query.Query
	Matcher incremental.Matcher
	// Batch is --batch; CountOnly, Emit and JSON are --count-only, --emit
	// and --json.
	Batch                 int
	CountOnly, Emit, JSON bool
	Out                   *bufio.Writer
	Human                 io.Writer  // the report: Out, or stderr under --json
	mu                    sync.Mutex // guards Out while workers emit
}

// Result is what a replay did.
type Result struct {
	counts                  []incremental.Counts
	batches                 int
	apply, match, reorg     time.Duration
	inserted, deleted, noop int
	Replayed                int  // updates of the stream replayed
	Interrupted             bool // ctx ended the replay before the stream did
}

// Run replays the stream batch by batch until its end or until ctx is done,
// checked between batches; progress, if set, hears how many updates are
// replayed after each batch.
func (r *Replayer) Run(ctx context.Context, progress func(int)) (Result, error) {
	res := Result{counts: make([]incremental.Counts, len(r.Queries))}
	mode, sink := incremental.Count, incremental.Sink(nil)
	if !r.CountOnly {
		mode = incremental.Enumerate
		sink = func(int, int, graph.Sign, []graph.VertexID) {}
		if r.Emit {
			sink = r.emit
		}
	}
	b := engine.Batch{Queries: r.Queries, Mode: mode, Sink: sink}
	if r.Emit {
		b.Bound = r.emitBound
	}
	r.Session.core.SetMatcher(r.Matcher)
	// A step's counts are known once it is finished: at once, or, where its
	// match overlaps the next batch's apply, within the next step.
	add := func(st *engine.Step) error {
		if st == nil {
			return nil
		}
		if err := st.Err(); err != nil {
			return err
		}
		res.match += st.Match
		for i, c := range st.Counts() {
			res.counts[i].Add(c)
		}
		return nil
	}
	var last *engine.Step
	n := len(r.Stream.updates)
	for lo := 0; lo < n; lo += r.Batch {
		if ctx.Err() != nil {
			res.Interrupted = true
			break
		}
		hi := min(lo+r.Batch, n)
		st, err := r.Session.step(r.Stream, lo, hi, b)
		if err != nil {
			return res, err
		}
		if err := add(last); err != nil { // finished by this step
			return res, err
		}
		last = st
		res.apply += st.Apply
		res.reorg += st.Reorganize
		res.batches++
		for _, c := range st.Delta {
			if c.Sign > 0 {
				res.inserted++
			} else {
				res.deleted++
			}
		}
		res.noop += hi - lo - len(st.Delta) - len(st.Rejects)
		res.Replayed = hi
		if progress != nil {
			progress(hi)
		}
	}
	r.Session.core.Finish()
	return res, add(last)
}

func (r *Replayer) emit(_ int, qi int, sign graph.Sign, m []graph.VertexID) {
	line := r.Session.matchLine(sign.String(), r.Queries[qi].Name, m)
	if r.JSON {
		line = r.Session.matchJSON(sign.String(), r.Queries[qi].Name, m)
	}
	r.mu.Lock()
	r.Out.WriteString(line)
	r.mu.Unlock()
}

// emitBound is emit for a match over transfers: the transfer ids follow.
func (r *Replayer) emitBound(_ int, qi int, sign graph.Sign, m []graph.VertexID, tx []bundle.Tx) {
	ret := r.Session.returnJSON(r.Session.core.Binder(), qi, r.Queries[qi], sign, m, tx)
	line := r.Session.matchLineTx(sign.String(), r.Queries[qi].Name, m, tx, ret)
	if r.JSON {
		line = r.Session.matchJSONTx(sign.String(), r.Queries[qi].Name, m, tx, ret)
	}
	r.mu.Lock()
	r.Out.WriteString(line)
	r.mu.Unlock()
}

// Report writes the replay's report to Human and, under --json, its
// summary line to Out.
func (r *Replayer) Report(res Result) error {
	total := res.apply + res.match + res.reorg
	n := len(r.Stream.updates)
	if res.Interrupted {
		fmt.Fprintf(r.Human, "stream: INTERRUPTED after %d of %d updates, in %d batches of up to %d (%d inserted, %d deleted, %d without effect); the counts are those so far\n",
			res.Replayed, n, res.batches, r.Batch, res.inserted, res.deleted, res.noop)
	} else {
		fmt.Fprintf(r.Human, "stream: %d updates in %d batches of up to %d (%d inserted, %d deleted, %d without effect)\n",
			n, res.batches, r.Batch, res.inserted, res.deleted, res.noop)
	}
	if r.Session.skipped > 0 {
		fmt.Fprintf(r.Human, "skipped: %d bad lines or refused updates\n", r.Session.skipped)
	}
	tw := tabwriter.NewWriter(r.Human, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "query\tpositive\tnegative")
	for i, q := range r.Queries {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", q.Name, res.counts[i].Positive, res.counts[i].Negative)
	}
	tw.Flush()
	// A count past 2^128-2 saturated: the table shows it as a bound, and
	// the replay fails rather than report a number.
	var overflow error
	for i, q := range r.Queries {
		if err := res.counts[i].Err(); err != nil {
			overflow = errors.Join(overflow, fmt.Errorf("query %s: %w", q.Name, err))
		}
	}
	rate := 0.0
	if total > 0 {
		rate = float64(res.Replayed) / total.Seconds()
	}
	fmt.Fprintf(r.Human, "time: apply %.3fs, match %.3fs, reorganize %.3fs, total %.3fs (%.0f updates/s)\n",
		res.apply.Seconds(), res.match.Seconds(), res.reorg.Seconds(), total.Seconds(), rate)
	if !r.JSON || overflow != nil {
		return overflow
	}
	// Counts are JSON numbers of any size (graph.Count.MarshalJSON):
	// past 2^53 a consumer must read them as big integers.
	type jq struct {
		Name     string      `json:"name"`
		Positive graph.Count `json:"positive"`
		Negative graph.Count `json:"negative"`
	}
	out := struct {
		Queries     []jq    `json:"queries"`
		Updates     int     `json:"updates"` // replayed: the stream's, unless interrupted
		Batches     int     `json:"batches"`
		Skipped     int     `json:"skipped"`
		Interrupted bool    `json:"interrupted"`
		Seconds     float64 `json:"seconds"`
	}{Updates: res.Replayed, Batches: res.batches, Skipped: r.Session.skipped, Interrupted: res.Interrupted, Seconds: total.Seconds()}
	for i, q := range r.Queries {
		out.Queries = append(out.Queries, jq{q.Name, res.counts[i].Positive, res.counts[i].Negative})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	r.Out.Write(append(b, '\n'))
	return nil
}
