package engine

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/query"
)

// Batch is one step's input.
type Batch struct {
	// Updates are the batch's resolved updates, in order; Times their event
	// times in unix milliseconds (0: none), which only a window reads.
	Updates []graph.Update
	Times   []int64
	// Recycled are the ids the interning stage released for this batch
	// (Recycler.Release): the graph forgets their old vertices first.
	Recycled []graph.VertexID
	// Seq is the batch's number on the interning stage, for Advance.
	Seq uint32

	// Queries are matched against the batch's changes, in Mode. Own, if
	// set, picks the changes this caller matches (a cluster member's
	// shards); the batch changes the graph whole either way.
	Queries []*query.Query
	Mode    incremental.Mode
	Own     func(delta []graph.Change) []graph.Change
	// Sink takes vertex maps, and Bound the matches over transfers once
	// transfers are kept (a vertex map there has tx nil). Bound may be
	// nil in Count mode. Both are called from the matcher's workers.
	Sink  incremental.Sink
	Bound incremental.BoundSink
	// Stop, if set, is the matcher's stop check for the step (see
	// incremental.Matcher.SetStop).
	Stop func(q int) bool
}

// Step is one batch through the core.
type Step struct {
	// Updates is the batch as applied: the window's expiries first
	// (Expired of them), then Batch.Updates.
	Updates []graph.Update
	Expired int
	// Delta is the batch's ΔE; Rejects the updates the graph refused,
	// indexing Updates.
	Delta   []graph.Change
	Rejects []dyngraph.Reject
	Applied dyngraph.ApplyStats
	// Isolated are the endpoints of deleted edges left without any edge,
	// once the graph is reorganized; with a recycler only.
	Isolated []graph.VertexID
	Seq      uint32
	// Matched says that the step matched its queries: it had some, and
	// changes of its own. Devices, then, says which device ran each query
	// (incremental.Matcher.Devices), once the step is not pending.
	Matched bool
	Devices []incremental.Device
	// Apply, Match and Reorganize are what each stage took; Match grows
	// by what finishing an overlapped match waited.
	Apply, Match, Reorganize time.Duration

	batch  Batch // between Apply and Match
	stop   bool  // the matcher's stop check was set for this step
	nq     int   // queries matched
	wait   func() ([]incremental.Counts, error)
	once   sync.Once
	counts []incremental.Counts
	err    error
}

// Pending says whether the step's match is still running: it finishes in
// the next Step, after that batch's apply, or in Finish.
func (st *Step) Pending() bool { return st.wait != nil }

// Counts are the step's match counts, per query; valid once the step is
// not pending.
func (st *Step) Counts() []incremental.Counts { return st.counts }

// Err is the step's match error; valid once the step is not pending.
func (st *Step) Err() error { return st.err }

// Step applies b and matches it: Apply, then Match. See the package
// comment for a step's overlap. The previous step, if pending, has
// finished when Step returns, whatever it returns. An error from the graph
// ends the core's use: the graph may be left pending.
func (c *Core) Step(b Batch) (*Step, error) {
	st, err := c.Apply(b)
	if err != nil {
		return nil, err
	}
	c.Match(st)
	return st, nil
}

// Apply is a step's first half: it forgets the recycled ids, expires the
// window, applies the batch and finishes the previous step's match, which
// overlapped this apply. A caller that delivers in batch order completes
// that step before Match begins this one's, as the service does.
func (c *Core) Apply(b Batch) (*Step, error) {
	t0 := time.Now()
	st := &Step{Seq: b.Seq, batch: b}
	if err := c.forget(b.Recycled); err != nil {
		c.Finish()
		return nil, err
	}
	times := c.expire(st, b)
	if c.store == nil && graph.HasTransferID(st.Updates) {
		c.KeepTransfers(nil)
	}
	var folder dyngraph.Folder
	if c.store != nil {
		folder = c.store
	}
	var err error
	st.Delta, st.Rejects, st.Applied, err = c.g.ApplyFolded(st.Updates, folder)
	if err != nil {
		c.Finish()
		return nil, fmt.Errorf("apply: %w", err)
	}
	c.track(st, times)
	st.Apply = time.Since(t0)
	// The last step's match ran beside this apply; the matcher is needed
	// again now.
	c.Finish()
	return st, nil
}

// Match is a step's second half, after Apply: it matches the batch's
// queries (begun, where the matcher overlaps, and left pending), settles
// the transfers and reorganizes the graph.
func (c *Core) Match(st *Step) {
	t0 := time.Now()
	c.match(st, st.batch)
	t1 := time.Now()
	st.Match = t1.Sub(t0)
	if c.store != nil {
		c.store.Settle()
	}
	c.g.Reorganize()
	if c.recycle != nil {
		c.isolated(st)
	}
	st.Reorganize = time.Since(t1)
	st.batch = Batch{} // the caller's buffers and sinks are not the core's to keep
	c.stats.Steps++
	if st.wait != nil {
		c.pending = st
	}
}

// Finish waits for the pending step's match, if any, and returns that
// step, or nil. Callers finish before they use the matcher or the graph
// otherwise, and before they need every step's matches.
func (c *Core) Finish() *Step {
	st := c.pending
	if st == nil {
		return nil
	}
	c.pending = nil
	t0 := time.Now()
	st.finish(c.cfg.Matcher)
	waited := time.Since(t0)
	st.Match += waited
	c.stats.Overlapped++
	c.stats.Waited += waited
	return st
}

// finish runs the step's wait once.
func (st *Step) finish(m incremental.Matcher) {
	st.once.Do(func() {
		if st.wait == nil {
			return
		}
		st.counts, st.err = st.wait()
		st.wait = nil
		// Before the next step's match, which places its queries anew.
		st.Devices = m.Devices(nil, st.nq)
		if st.stop {
			m.SetStop(nil)
		}
	})
}

// Advance tells the core that a step's output is delivered: the vertices
// it left without edges may now go to new accounts (Recycler).
func (c *Core) Advance(st *Step) {
	if c.recycle != nil {
		c.recycle.hand(st.Seq, st.Isolated)
	}
}

// expire makes the step's updates: the window's expiries, then the
// batch's. It returns the event time of each update, 0 for an expiry.
func (c *Core) expire(st *Step, b Batch) []int64 {
	st.Updates = b.Updates
	if c.expiry == nil {
		return b.Times
	}
	var ex []graph.Update
	if cut, ok := c.expiry.Cutoff(); ok && c.store != nil {
		ex = c.store.Expire(cut, ex)
	}
	ex = c.expiry.Expire(ex)
	if len(ex) == 0 {
		return b.Times
	}
	st.Expired = len(ex)
	st.Updates = append(ex, b.Updates...)
	return append(make([]int64, len(ex), len(st.Updates)), b.Times...)
}

// track records the window's last-seen times of the edges the batch
// changed; an expiry is the window's own and changes nothing there.
func (c *Core) track(st *Step, times []int64) {
	if c.expiry == nil {
		return
	}
	var refused []bool
	if len(st.Rejects) > 0 {
		refused = make([]bool, len(st.Updates))
		for _, r := range st.Rejects {
			refused[r.Index] = true
		}
	}
	for i, u := range st.Updates[st.Expired:] {
		i += st.Expired
		if (u.Op != graph.Insert && u.Op != graph.Delete) || (refused != nil && refused[i]) {
			continue
		}
		e := graph.Edge{Src: u.Src, Dst: u.Dst, Label: u.Label}
		if u.Op == graph.Insert {
			c.expiry.Observe(e, times[i])
		} else {
			c.expiry.Forget(e)
		}
	}
}

// match runs the batch's queries on its changes. Where the matcher can
// overlap (incremental.Overlapper) and no binder reads the transfers beside
// the graph, it begins the match and leaves the rest to Finish.
func (c *Core) match(st *Step, b Batch) {
	delta := st.Delta
	if b.Own != nil {
		delta = b.Own(delta)
	}
	if len(b.Queries) == 0 || len(delta) == 0 {
		return
	}
	st.Matched, st.nq = true, len(b.Queries)
	m := c.cfg.Matcher
	if b.Stop != nil {
		m.SetStop(b.Stop)
		st.stop = true
	}
	o, overlaps := m.(incremental.Overlapper)
	switch {
	case c.binder != nil:
		st.wait = done(c.binder.Match(c.g, delta, b.Queries, b.Mode, b.Bound))
	case overlaps:
		st.wait = o.Begin(c.g, delta, b.Queries, b.Mode, b.Sink)
		return
	default:
		st.wait = done(m.Match(c.g, delta, b.Queries, b.Mode, b.Sink))
	}
	st.finish(m)
}

func done(counts []incremental.Counts, err error) func() ([]incremental.Counts, error) {
	return func() ([]incremental.Counts, error) { return counts, err }
}

// isolated lists the endpoints of the batch's deleted edges that have no
// edge left.
func (c *Core) isolated(st *Step) {
	for _, ch := range st.Delta {
		if ch.Sign > 0 {
			continue
		}
		for _, v := range [2]graph.VertexID{ch.Src, ch.Dst} {
			if c.g.Isolated(v) {
				st.Isolated = append(st.Isolated, v)
			}
		}
	}
	slices.Sort(st.Isolated)
	st.Isolated = slices.Compact(st.Isolated)
}

// forget removes the recycled vertices from the graph before their ids'
// next batch. A vertex already forgotten (ForgetOutstanding) is skipped.
func (c *Core) forget(vs []graph.VertexID) error {
	if len(vs) == 0 {
		return nil
	}
	if c.recycle == nil {
		return errors.New("engine: recycled ids without a recycler")
	}
	return c.recycle.forget(vs, c.forgetVertex)
}

// ForgetOutstanding forgets every vertex whose id the interning stage
// released and no step has forgotten yet, so that the graph agrees with
// the dictionary: before a checkpoint, and before a new generation
// re-interns. The interning stage must be held still, and no step pending.
func (c *Core) ForgetOutstanding() error {
	if c.recycle == nil {
		return nil
	}
	return c.recycle.forgetOutstanding(c.forgetVertex)
}

// forgetVertex clears vertex v, isolated, for its id's reuse: its label in
// the graph and its properties in the store.
func (c *Core) forgetVertex(v graph.VertexID) error {
	if err := c.g.Forget(v); err != nil {
		return fmt.Errorf("recycling vertex %d: %w", v, err)
	}
	if c.store != nil {
		c.store.Forget(v)
	}
	return nil
}
