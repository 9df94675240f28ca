package incremental

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// CPU is the multicore executor. The zero value uses every core.
type CPU struct {
	// Workers is the number of goroutines; zero means GOMAXPROCS.
	Workers int
	// SpaceEntries bounds the static matcher's candidate space, in list
	// entries of 4 bytes; zero means DefaultSpaceEntries. Past it, the
	// search reads the rest of the lists from the graph as it goes.
	SpaceEntries int

	pool    []*walker // reused across batches; one per worker
	finders []*finder // the static search's workers, reused likewise
	filter  EdgeFilter
	static  StaticStats
	prof    *profiles // the static filter's, for the last graph version it saw
	stop    func(q int) bool
	blocks  []block // Match's, kept from batch to batch
	nlf     neighbourLabels
	// counting holds the counting terms of the queries last matched in
	// Count mode, by position (countwalk.go).
	counting []queryTerms
}

// SetStop implements Matcher: Match's workers call stop now and then, and
// Static honours it too (bench static's --timeout).
func (c *CPU) SetStop(stop func(q int) bool) { c.stop = stop }

var _ Matcher = (*CPU)(nil)

func (c *CPU) workers() int {
	if c.Workers > 0 {
		return c.Workers
	}
	return runtime.GOMAXPROCS(0)
}

func (c *CPU) walkers(g *dyngraph.Graph, mode Mode, sink Sink) []*walker {
	n := c.workers()
	for len(c.pool) < n {
		c.pool = append(c.pool, &walker{id: len(c.pool), closing: map[uint64]closingCount{}})
	}
	ws := c.pool[:n]
	for _, w := range ws {
		w.filter = c.filter
		w.g, w.vl, w.multi, w.ord = g, g.VertexLabels(), g.MultiLabel(), g.Order()
		w.mode, w.sink, w.stop, w.stopped = mode, sink, nil, false
	}
	return ws
}

// unitChunk is the fewest work units a worker claims at once. Units vary
// by orders of magnitude in cost, so the tail of a batch goes out in small
// chunks that balance across workers; while many units remain a claim takes
// a share of them (guided self-scheduling) up to maxChunk, as on a sparse
// graph most units end at once and one shared counter claimed per few units
// would be the contended part of the batch on many cores. maxChunk bounds
// how many costly units one claim can hold.
const unitChunk, maxChunk = 4, 64

// claim takes the next chunk of units below total from next, and returns
// its bounds; lo >= total when none is left.
func claim(next *atomic.Int64, total int64, workers int) (lo, hi int64) {
	n := min(max(unitChunk, (total-next.Load())/int64(8*workers)), maxChunk)
	lo = next.Add(n) - n
	return lo, min(lo+n, total)
}

// Match implements Matcher.
func (c *CPU) Match(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode Mode, sink Sink) ([]Counts, error) {
	if !g.Pending() && len(delta) > 0 {
		return nil, fmt.Errorf("incremental: Match on a graph with no pending batch")
	}
	if mode == Enumerate && sink == nil {
		return nil, fmt.Errorf("incremental: Enumerate needs a sink")
	}
	res := make([]Counts, len(queries))
	// A unit is (query, term, change). Terms of queries that cannot match on
	// this graph's edge labels are left out up front.
	blocks := c.blocks[:0]
	for qi, q := range queries {
		if !edgeLabelsPossible(g, q) {
			continue
		}
		for t := range q.Terms {
			blocks = append(blocks, block{qi, t})
		}
	}
	c.blocks = blocks
	total := int64(len(blocks)) * int64(len(delta))
	if total == 0 {
		return res, nil
	}
	ws := c.walkers(g, mode, sink)
	var counting []queryTerms
	var nlf []uint64
	if mode == Count {
		counting = c.countingTerms(g, queries)
		nlf = c.nlf.update(g)
	}
	for _, w := range ws {
		w.stop, w.counting, w.nlf = c.stop, counting, nlf
	}
	if len(ws) == 1 {
		// One worker walks the units in order on the caller's goroutine,
		// with nothing to share: one update at a time on one worker, the
		// closures and counters of runUnits were a share of the batch.
		w := ws[0]
		for _, b := range blocks {
			for ci := range delta {
				w.count = graph.Count{}
				w.runTerm(b.qi, queries[b.qi], b.term, &delta[ci])
				add(res, b.qi, delta[ci].Sign, w.count)
			}
		}
		return res, nil
	}
	if total < int64(len(ws))*splitBelow {
		return c.matchSplit(ws, blocks, delta, queries, res), nil
	}
	unit := func(u int64) (int, int, *graph.Change) {
		b := blocks[u/int64(len(delta))]
		return b.qi, b.term, &delta[u%int64(len(delta))]
	}
	return runUnits(ws, total, unit, queries, res), nil
}

// runUnits runs units 0..total-1, as unit describes them, on the walkers,
// claimed unitChunk at a time, and adds the counts per query and sign to
// res.
func runUnits(ws []*walker, total int64, unit func(int64) (qi, term int, ch *graph.Change), queries []*query.Query, res []Counts) []Counts {
	var next atomic.Int64
	used := spread(ws, total, func(_ int, w *walker) {
		// Counted in the walker's own slices, added up at the end: small
		// slices of neighbouring workers share cache lines.
		w.pos, w.neg = zeroed(w.pos, len(queries)), zeroed(w.neg, len(queries))
		for {
			lo, hi := claim(&next, total, len(ws))
			if lo >= total {
				return
			}
			for u := lo; u < hi; u++ {
				qi, term, ch := unit(u)
				w.count = graph.Count{}
				w.runTerm(qi, queries[qi], term, ch)
				if ch.Sign > 0 {
					w.pos[qi] = w.pos[qi].Add(w.count)
				} else {
					w.neg[qi] = w.neg[qi].Add(w.count)
				}
			}
		}
	})
	for _, w := range ws[:used] {
		for qi := range queries {
			res[qi].Add(Counts{w.pos[qi], w.neg[qi]})
		}
	}
	return res
}

// zeroed is s with n zeros, reusing its array where it is large enough.
func zeroed[T graph.Count | uint64](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// spread runs work on as many of the walkers as units of unitChunk keep
// busy, the first on the caller's goroutine. One
// update at a time (the peers' mode), a batch is a few units: starting a
// goroutine, and waking an idle core for it, would cost more than the
// units themselves. It returns how many walkers it ran.
func spread(ws []*walker, units int64, work func(wi int, w *walker)) int {
	n := int(min(int64(len(ws)), (units+unitChunk-1)/unitChunk))
	var wg sync.WaitGroup
	for wi := 1; wi < n; wi++ {
		wg.Go(func() { work(wi, ws[wi]) })
	}
	work(0, ws[0])
	wg.Wait()
	return max(n, 1)
}

// wakeAfter is how long the caller works a split batch's seeds alone.
const wakeAfter = 50 * time.Microsecond

// splitBelow: a batch with fewer than splitBelow units per worker is split
// one level deeper. With one update per batch (the peers' mode) a batch has
// one unit per query edge and orientation, a few of which hold nearly all
// the work, so whole units would leave cores idle.
const splitBelow = 16

// block is a (query, term) pair; a unit is a block and one changed edge.
type block struct{ qi, term int }

// seed is a partial match of levels 0..2 of a term, the unit of a split batch.
type seed struct {
	qi, term, ch int32
	m            [3]graph.VertexID
}

// matchSplit runs a small batch in two phases: one walker maps the update
// edges and expands level 2 into seeds (finishing outright the terms of
// queries too small to split), then all walkers share the seeds.
func (c *CPU) matchSplit(ws []*walker, blocks []block, delta []graph.Change, queries []*query.Query, res []Counts) []Counts {
	w0 := ws[0]
	var seeds []seed
	w0.collect = &seeds
	for _, b := range blocks {
		for ci := range delta {
			w0.count, w0.ch = graph.Count{}, int32(ci)
			w0.runTerm(b.qi, queries[b.qi], b.term, &delta[ci])
			add(res, b.qi, delta[ci].Sign, w0.count)
		}
	}
	w0.collect = nil
	per := make([][]Counts, len(ws))
	var next atomic.Int64
	seedWork := func(wi int, w *walker, wake func()) {
		per[wi] = make([]Counts, len(queries))
		for {
			i0 := next.Add(unitChunk) - unitChunk
			if i0 >= int64(len(seeds)) {
				return
			}
			for _, sd := range seeds[i0:min(i0+unitChunk, int64(len(seeds)))] {
				q := queries[sd.qi]
				sign := delta[sd.ch].Sign
				w.setTerm(int(sd.qi), q, int(sd.term), sign)
				w.m[0], w.m[1], w.m[2] = sd.m[0], sd.m[1], sd.m[2]
				w.count = graph.Count{}
				w.extend(3)
				add(per[wi], int(sd.qi), sign, w.count.MulUint64(uint64(w.factor)))
			}
			if wake != nil {
				wake()
			}
		}
	}
	// The caller starts on the seeds alone and wakes the other walkers
	// only once they have taken it wakeAfter: one update at a time, most
	// batches' seeds are done by then, and waking 15 cores for them
	// doubled the human suite's matching on 16 workers (H200 machine),
	// while a hub's update seeds work for all of them.
	var wg sync.WaitGroup
	t0, woken := time.Now(), false
	seedWork(0, w0, func() {
		if woken || next.Load() >= int64(len(seeds)) || time.Since(t0) < wakeAfter {
			return
		}
		woken = true
		for wi := 1; wi < len(ws); wi++ {
			wg.Go(func() { seedWork(wi, ws[wi], nil) })
		}
	})
	wg.Wait()
	for wi := range per {
		for qi := range per[wi] {
			res[qi].Add(per[wi][qi])
		}
	}
	return res
}

func add(res []Counts, qi int, sign graph.Sign, n graph.Count) {
	if sign > 0 {
		res[qi].Positive = res[qi].Positive.Add(n)
	} else {
		res[qi].Negative = res[qi].Negative.Add(n)
	}
}

// edgeLabelsPossible is false when the graph has a single edge label and the
// query asks for another one on some edge: no match can exist, and the
// walkers may then skip label checks altogether on single-label graphs.
func edgeLabelsPossible(g *dyngraph.Graph, q *query.Query) bool {
	if g.MultiLabel() {
		return true
	}
	l, ok := g.EdgeLabel()
	if !ok {
		return false // no edges at all
	}
	for _, e := range q.Edges {
		if e.Label != graph.Wildcard && e.Label != l {
			return false
		}
	}
	return true
}

// runTerm walks term t of query q for one changed edge, in each orientation
// in which the change can play the term's query edge.
func (w *walker) runTerm(qi int, q *query.Query, t int, ch *graph.Change) {
	e := q.Edges[t]
	if e.Label != graph.Wildcard && e.Label != ch.Label {
		return
	}
	// Most changes of a stream cannot play a given query edge: their
	// endpoints' labels are not its ends'. One update at a time, that
	// check, before the unit is set up, is most of a batch's matching.
	if !w.ends(q, e, ch.Src, ch.Dst) && (e.Directed || !w.ends(q, e, ch.Dst, ch.Src)) {
		return
	}
	w.setTerm(qi, q, t, ch.Sign)
	w.orient(e, ch, ch.Src, ch.Dst)
	if !e.Directed {
		w.orient(e, ch, ch.Dst, ch.Src)
	}
	w.count = w.count.MulUint64(uint64(w.factor))
}

// ends says whether x and y have the labels of e's endpoints A and B.
func (w *walker) ends(q *query.Query, e query.QEdge, x, y graph.VertexID) bool {
	la, lb := q.Labels[e.A], q.Labels[e.B]
	return (la == graph.Wildcard || w.vl[x] == la) && (lb == graph.Wildcard || w.vl[y] == lb)
}

// orient maps the term edge's endpoints A→x, B→y and walks the rest.
func (w *walker) orient(e query.QEdge, ch *graph.Change, x, y graph.VertexID) {
	lv := w.plan.Levels
	if (lv[0].Label != graph.Wildcard && w.vl[x] != lv[0].Label) ||
		(lv[1].Label != graph.Wildcard && w.vl[y] != lv[1].Label) {
		return
	}
	if w.need != nil && (w.nlf[x]&w.need[0] != w.need[0] || w.nlf[y]&w.need[1] != w.need[1]) {
		return
	}
	w.m[0], w.m[1] = x, y
	if !w.admissible(1, y) {
		return
	}
	if w.qf != nil && ((w.qf.Filtered(w.plan.Edge) && !w.qf.Holds(w.id, w.plan.Edge, x, y, w.sign)) || !w.pairsHold(1, y)) {
		return
	}
	if (w.multi && e.Label == graph.Wildcard) || (w.q.Directed && !e.Directed) {
		if !w.g.StandsForFlip(ch, x, y, e.Label, w.q.Directed && !e.Directed) {
			return
		}
	}
	w.loadLists(1)
	for i := range lv[1].Cons {
		if !w.check(1, i, y) {
			return
		}
	}
	// A tail counted from level 2 on is quick: split no deeper.
	if w.collect == nil || len(lv) < 4 || w.tail <= 2 {
		w.extend(2)
		return
	}
	w.loadLists(2)
	buf := w.candidates(2, w.cand[2][:0])
	w.cand[2] = buf
	for _, v := range buf {
		*w.collect = append(*w.collect, seed{qi: int32(w.qi), term: int32(w.plan.Edge), ch: w.ch, m: [3]graph.VertexID{x, y, v}})
	}
}

// NumWorkers implements Matcher.
func (c *CPU) NumWorkers() int { return c.workers() }

// Follow implements Matcher: the CPU reads the host graph and keeps no copy.
func (c *CPU) Follow(*dyngraph.Graph) {}

// Devices implements Matcher: every query runs on the CPU.
func (c *CPU) Devices(dst []Device, n int) []Device {
	for range n {
		dst = append(dst, OnCPU)
	}
	return dst
}
