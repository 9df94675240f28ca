package service

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/output"
	"github.com/gcsm/gcsm/query"
)

// retract writes a disappeared event for every match st has in the graph
// now, under st's keys, and waits for their acknowledgement: a query
// replaced by another pattern leaves no key standing in a consumer that
// keeps each key's last event. It runs on the loop, between batches, with
// delivery drained, and returns how many it wrote.
//
// The matches are found again rather than remembered, which costs a static
// enumeration of the query on all cores while the stream waits, and no
// memory while the query stands. A match the query never announced (one
// standing before its registration, without initial: true) is retracted
// too; a consumer that never held its key can drop that event. No per-batch
// limit applies: a retraction cut short would leave keys standing for ever.
func (s *Service) retract(ctx context.Context, st *standing) (int, error) {
	c := newCollector([]*standing{st})
	c.limits[0].max, c.limits[0].maxTime = 0, 0
	cpu := &incremental.CPU{Workers: runtime.GOMAXPROCS(0)}
	var err error
	if s.core.Store() != nil {
		b := &incremental.Binder{Matcher: cpu, Store: s.core.Store(), VertexMatches: true}
		sink := c.boundSink(func() *incremental.Binder { return b })
		_, err = b.Static(s.core.Graph(), []*query.Query{st.q}, incremental.Enumerate, func(w, q int, _ graph.Sign, m []graph.VertexID, tx []bundle.Tx) {
			sink(w, q, -1, m, tx)
		})
	} else {
		_, err = cpu.Static(s.core.Graph(), []*query.Query{st.q}, incremental.Enumerate, func(w, q int, _ graph.Sign, m []graph.VertexID) {
			c.sink(w, q, -1, m)
		})
	}
	if err != nil {
		return 0, fmt.Errorf("cannot find the standing matches of query %q to retract: %w", st.cfg.Name, err)
	}
	kept := 0
	for _, w := range c.all() {
		kept += len(w.found)
	}
	if kept == 0 {
		return 0, nil
	}
	mt := &matched{c: c, queries: []*standing{st}, batch: s.batch, n: kept, bound: s.core.Store() != nil, maxN: st.q.N(), names: s.core.IDs()}
	b := &batchState{id: s.batch, matched: mt, logOffset: -1, queued: time.Now()}
	if err := s.deliver(ctx, b); err != nil {
		return 0, fmt.Errorf("cannot retract the standing matches of query %q: %w", st.cfg.Name, err)
	}
	n := len(b.events)
	st.Disappeared += int64(n)
	s.met.matches.WithLabelValues(st.cfg.Name, output.Disappeared).Add(float64(n))
	s.mu.Lock()
	s.progress.Events += int64(n - b.diverted - b.lost)
	s.progress.DeadLetters += int64(b.diverted)
	s.mu.Unlock()
	s.recycleSlab(b)
	s.log.Info().Str("query", st.cfg.Name).Int("matches", n).Msg("standing matches of the replaced pattern retracted")
	return n, nil
}

// replaceQuery registers c in place of the standing query i of the same
// name. Another pattern (another query.Pattern.Form) first has the old query's
// standing matches retracted under its keys, then c is registered as new,
// with its initial run if it asks for one; the same pattern keeps the
// query, and its keys, and takes c's limits. c is compiled before anything
// is retracted, so a pattern that does not compile leaves the old query
// standing. It runs on the loop, between batches, with delivery drained,
// and returns the query now standing, its initial run and the number of
// matches retracted.
func (s *Service) replaceQuery(ctx context.Context, i int, c QueryConfig) (*standing, *initialRun, int, error) {
	st, err := s.compileQuery(c, true)
	if err != nil {
		return nil, nil, 0, err
	}
	old := s.queries[i]
	if st.form == old.form {
		old.cfg = c
		s.publishQueries()
		return old, nil, 0, nil
	}
	n := 0
	if s.cfg.Cluster.Shards > 0 {
		// Every member holds the whole graph and would retract every
		// match, each a repeat of the others', while a member's output is
		// its shards' alone; and a member replaying from an older state
		// registers its queries again (takeShards).
		s.log.Warn().Str("query", c.Name).Msg("pattern changed in the configuration; a cluster member does not retract the old pattern's matches: their keys stay at their last event")
	} else {
		s.log.Info().Str("query", c.Name).Msg("query registered again with another pattern: retracting the old one's standing matches")
		if n, err = s.retract(ctx, old); err != nil {
			return nil, nil, 0, err
		}
	}
	s.removeQuery(i)
	run, err := s.addQuery(c)
	if err != nil {
		// It compiled above against the same labels and graph.
		panic(fmt.Sprintf("BUG: query %q compiled, then failed to register: %v", c.Name, err))
	}
	return s.queries[len(s.queries)-1], run, n, nil
}
