package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/output"
	"github.com/gcsm/gcsm/query"
)

// A new query's initial matches (initial: true) are found beside the
// stream, never in front of it: a 12-clique on a dense graph of 400
// accounts would otherwise hold the run loop for minutes while every other
// query's alerts wait.
//
// Exactness. At registration, on the run loop between batches, the run
// copies the graph (and the id dictionary, which names its vertices, and
// the transfers a query over transfers binds): G_r, the graph of batch r.
// The query's deltas count from batch r+1, as before. One goroutine
// enumerates the copy on one core, under the run's limits, and hands the
// matches back to the run loop, which queues them for output behind the
// batches already matched, so the output keeps graph order. A match m of
// G_r is stale if a delta of m (same key) was built since r: that delta is
// newer and the consumer has it. The build stage, which builds every
// batch's events in batch order, records the keys of the query's deltas
// until the initial batch comes, and drops the initial events so
// superseded. What remains are matches of G_r with no later delta, which
// are still matches of the graph the consumer sees, and each key's last
// event stays its newest. A run cut short reports only real matches of
// G_r: fewer, never wrong ones.
//
// Why a copy rather than enumerating the live graph in slices between
// batches: the live graph changes under a sliced enumeration, whose result
// would then be a match set of no one graph. The copy costs one pass over
// the graph on the run loop (dyngraph's checkpoint encoding, about a
// checkpoint's time) and its memory, which counts against
// initial.max_memory.

// initialRun is one query's initial enumeration, from registration until
// its matches are delivered or it is given up.
type initialRun struct {
	st     *standing
	batch  uint64 // r: the copy is the graph as of this batch
	cancel context.CancelCauseFunc
	done   chan struct{} // closed once result is final
	result InitialResult

	// Set by the enumerating goroutine before it hands the run back.
	mt  *matched // nil if nothing was kept
	cut string   // why the enumeration stopped early; "" if it did not

	// touched are the keys of the query's delta events built since r, by
	// the build stage (one goroutine; the run loop, when no build stage
	// runs, in its place).
	mu      sync.Mutex
	touched map[string]struct{}
}

// InitialResult is what POST /queries answers of the initial run.
type InitialResult struct {
	// Reported counts the initial events written.
	Reported int `json:"reported"`
	// CutShort says the run stopped before it had every match; Reason
	// says why: max_matches, max_time, max_memory, deleted, client_gone
	// or stopping.
	CutShort bool   `json:"cut_short"`
	Reason   string `json:"reason,omitempty"`
}

var (
	errInitialDeleted = errors.New("the query was deleted")
	errClientGone     = errors.New("the client went away")
)

// touch records the keys of delta events of the run's query.
func (run *initialRun) touch(events []output.Event) {
	run.mu.Lock()
	defer run.mu.Unlock()
	for i := range events {
		run.touched[events[i].Key] = struct{}{}
	}
}

// fresh keeps the initial events no delta has superseded, in place.
func (run *initialRun) fresh(events []output.Event) []output.Event {
	run.mu.Lock()
	defer run.mu.Unlock()
	return slices.DeleteFunc(events, func(ev output.Event) bool {
		_, ok := run.touched[ev.Key]
		return ok
	})
}

// finish makes the result final and tells the waiting POST.
func (run *initialRun) finish(reported int, reason string) {
	run.result = InitialResult{Reported: reported, CutShort: reason != "", Reason: reason}
	close(run.done)
}

// snapshotBytes estimates what a copy of the graph and its names holds:
// both directions' list entries (8 bytes with a label) and a vertex's row,
// label and name. It decides before copying whether the copy fits.
func snapshotBytes(g *dyngraph.Graph) int64 {
	return 16*g.NumEdges() + 64*int64(g.NumVertices())
}

// matchBytes estimates what one kept initial match of q holds until it is
// delivered: the collector's record, its event and bindings, and its key.
func matchBytes(q *query.Query) int64 {
	n := int64(q.N())
	nb := int64(len(q.Bindings))
	return int64(unsafe.Sizeof(found{})+unsafe.Sizeof(ref{})+unsafe.Sizeof(output.Event{})) +
		n*int64(4+unsafe.Sizeof(output.Binding{})) + nb*int64(unsafe.Sizeof(transfer{})+unsafe.Sizeof(output.Transfer{})) +
		64 + 24*n + 24*nb // key: the name, then each binding's variable and id
}

// startInitial copies the graph for st's initial run and starts it; the
// run loop receives it on s.initialDone once enumerated. It runs on the
// loop, between batches, with delivery drained.
func (s *Service) startInitial(st *standing) (*initialRun, error) {
	rctx, cancel := context.WithCancelCause(s.initialCtx)
	run := &initialRun{st: st, batch: s.batch, cancel: cancel, done: make(chan struct{}), touched: map[string]struct{}{}}
	budget := int64(s.cfg.Initial.MaxMemory)
	copyBytes := snapshotBytes(s.core.Graph())
	if copyBytes >= budget {
		cancel(nil)
		s.initialEnded(run, 0, "max_memory")
		return run, nil
	}
	t0 := time.Now()
	g, names, store, err := s.core.Snapshot()
	if err != nil {
		cancel(nil)
		return nil, fmt.Errorf("cannot copy the graph for the initial matches: %w", err)
	}
	s.log.Info().Str("query", st.cfg.Name).Dur("took", time.Since(t0)).Int64("edges", g.NumEdges()).Msg("graph copied for the initial matches")
	maxMatches, maxTime := s.cfg.Initial.MaxMatches, s.cfg.Initial.MaxTime
	if st.cfg.MaxMatchesPerBatch > 0 {
		maxMatches = st.cfg.MaxMatchesPerBatch
	}
	if st.cfg.MaxTime > 0 {
		maxTime = st.cfg.MaxTime
	}
	memMatches := (budget - copyBytes) / matchBytes(st.q)
	st.initial.Store(run)
	s.initialWG.Go(func() {
		defer cancel(nil)
		run.enumerate(rctx, g, names, store, min(maxMatches, memMatches), maxTime, memMatches < maxMatches)
		select {
		case s.initialDone <- run:
		case <-s.initialCtx.Done():
			st.initial.Store(nil)
			s.initialEnded(run, 0, "stopping")
		}
	})
	return run, nil
}

// enumerate finds the matches of run's query in g on one core, keeping at
// most maxMatches, for at most maxTime or until ctx ends; memBound says
// that maxMatches is the memory budget's. It closes g.
func (run *initialRun) enumerate(ctx context.Context, g *dyngraph.Graph, names *graph.IDs, store *bundle.Store, maxMatches int64, maxTime time.Duration, memBound bool) {
	defer g.Close()
	st := run.st
	c := newCollector([]*standing{st})
	c.limits[0].max, c.limits[0].maxTime = maxMatches, maxTime
	// One worker: on a 2-core machine the stream keeps the other core.
	cpu := &incremental.CPU{Workers: 1}
	cpu.SetStop(func(q int) bool { return ctx.Err() != nil || c.stop(q) })
	var err error
	if store != nil {
		b := &incremental.Binder{Matcher: cpu, Store: store, VertexMatches: true}
		b.Register([]*query.Query{st.q})
		_, err = b.Static(g, []*query.Query{st.q}, incremental.Enumerate, c.boundSink(func() *incremental.Binder { return b }))
	} else {
		_, err = cpu.Static(g, []*query.Query{st.q}, incremental.Enumerate, c.sink)
	}
	switch h := c.limits[0].hit.Load(); {
	case ctx.Err() != nil:
		run.cut = "stopping"
		switch context.Cause(ctx) {
		case errInitialDeleted:
			run.cut = "deleted"
		case errClientGone:
			run.cut = "client_gone"
		}
	case err != nil:
		// Static refuses only a pending graph or a nil sink: neither
		// happens on a copy with a collector.
		panic(fmt.Sprintf("BUG: static matching of a graph copy: %v", err))
	case h == 1 && memBound:
		run.cut = "max_memory"
	case h != 0:
		run.cut = limitNames[h-1]
		if h == 1 {
			run.cut = "max_matches"
		}
	}
	kept := 0
	for _, w := range c.all() {
		kept += len(w.found)
	}
	if kept > 0 {
		run.mt = &matched{c: c, queries: []*standing{st}, batch: run.batch, initial: true, n: kept, bound: store != nil, maxN: st.q.N(), names: names}
	}
}

// takeInitial turns an enumerated run into a batch for delivery, or ends
// the run when there is nothing to deliver. It runs on the run loop.
func (s *Service) takeInitial(run *initialRun) *batchState {
	if !slices.Contains(s.queries, run.st) {
		s.initialEnded(run, 0, "deleted")
		return nil
	}
	if run.mt == nil || run.cut == "deleted" {
		run.st.initial.Store(nil)
		s.initialEnded(run, 0, run.cut)
		return nil
	}
	return &batchState{id: run.batch, matched: run.mt, initial: run, logOffset: -1, queued: time.Now()}
}

// deliverInitial delivers an initial batch where no pipeline runs (a
// standby, a group forming): no delta is in flight, so order holds.
func (s *Service) deliverInitial(ctx context.Context, run *initialRun) error {
	b := s.takeInitial(run)
	if b == nil {
		return nil
	}
	if err := s.deliver(ctx, b); err != nil {
		s.initialEnded(run, 0, "stopping")
		return err
	}
	s.initialDelivered(b)
	return nil
}

// initialDelivered accounts for an initial batch acknowledged.
func (s *Service) initialDelivered(b *batchState) {
	run := b.initial
	n := len(b.events)
	run.st.Appeared += int64(n)
	if n > 0 {
		s.met.matches.WithLabelValues(run.st.cfg.Name, output.Appeared).Add(float64(n))
	}
	s.mu.Lock()
	s.progress.Events += int64(n - b.diverted - b.lost)
	s.progress.DeadLetters += int64(b.diverted)
	s.mu.Unlock()
	s.publishQueries()
	s.initialEnded(run, n, run.cut)
	s.recycleSlab(b)
}

// initialEnded logs and counts the end of a run and answers its POST.
func (s *Service) initialEnded(run *initialRun, reported int, reason string) {
	result := reason
	if result == "" {
		result = "complete"
		s.log.Info().Str("query", run.st.cfg.Name).Int("matches", reported).Uint64("batch", run.batch).Msg("initial matches emitted")
	} else {
		s.log.Warn().Str("query", run.st.cfg.Name).Int("matches", reported).Uint64("batch", run.batch).Str("reason", reason).
			Msg("initial matches cut short: those emitted are matches of the graph at registration, but not all of them")
	}
	s.met.initialRuns.WithLabelValues(result).Inc()
	run.finish(reported, reason)
}
