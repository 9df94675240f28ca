package incremental

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// The static search walks a candidate space depth first. Its work is split
// wherever it lies, not only among the roots: a worker with nothing to do
// says so (tasks.hungry), and a busy worker then hands over half of the
// candidates it has yet to try at its shallowest level that has any, with
// the partial match above them. A query's matches may all hang off a few
// roots (a labelled vertex with one candidate), and splitting the roots
// alone would then leave all workers but those few idle.

// StaticStats describes the work of the last Static call.
type StaticStats struct {
	// Splits is the number of subtrees that busy workers handed to idle
	// ones: with one worker, zero.
	Splits int64
	// Pruned is the number of walks that a failing set ended before their
	// last candidate.
	Pruned int64
}

// StaticStats returns the stats of the last Static call.
func (c *CPU) StaticStats() StaticStats { return c.static }

// task is a subtree to search: the candidate indexes of levels 0..depth-1
// (prefix) and the candidates of level depth still to try.
type task struct {
	prefix []uint32
	cands  []uint32
}

// tasks is the work shared by the workers of one search.
type tasks struct {
	mu      sync.Mutex
	wake    sync.Cond
	queue   []task
	idle    int // workers waiting in get
	workers int
	done    bool
	// hungry is idle less the queued tasks, read without the lock on every
	// step of every worker: a plain load of a line that changes only when a
	// worker runs dry.
	hungry atomic.Int32
	halted atomic.Bool // a stop ended the search
}

// get returns the next task, waiting while other workers may still donate
// one; false when the search is over.
func (t *tasks) get() (task, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(t.queue) == 0 && !t.done {
		t.idle++
		if t.idle == t.workers {
			t.done = true
			t.wake.Broadcast()
			break
		}
		t.hungry.Store(int32(t.idle))
		t.wake.Wait()
		t.idle--
	}
	if len(t.queue) == 0 {
		return task{}, false
	}
	k := len(t.queue) - 1
	tk := t.queue[k]
	t.queue = t.queue[:k]
	t.hungry.Store(int32(max(0, t.idle-len(t.queue))))
	return tk, true
}

// wanted locks t and reports whether an idle worker still lacks a task; if
// so the caller must put one, else t is unlocked. Busy workers that saw
// hungry at once then hand over one task in all, not one each.
func (t *tasks) wanted() bool {
	t.mu.Lock()
	if t.idle > len(t.queue) {
		return true
	}
	t.mu.Unlock()
	return false
}

// put queues tk for an idle worker and unlocks t, which wanted locked.
func (t *tasks) put(tk task) {
	t.queue = append(t.queue, tk)
	t.hungry.Store(int32(max(0, t.idle-len(t.queue))))
	t.wake.Signal()
	t.mu.Unlock()
}

// halt ends the search: queued tasks are dropped and waiting workers leave.
func (t *tasks) halt() {
	t.halted.Store(true)
	t.mu.Lock()
	t.queue, t.done = nil, true
	t.hungry.Store(0)
	t.wake.Broadcast()
	t.mu.Unlock()
}

// finder is one worker of the static search, reused across queries and
// calls.
type finder struct {
	_    [cacheLine]byte // see padded
	id   int
	sp   *space
	plan *query.Plan
	mode Mode
	sink Sink
	qi   int
	work *tasks
	stop func(q int) bool

	steps   uint32
	stopped bool
	count   graph.Count
	splits  int64
	pruned  int64

	idx      [query.MaxVertices]uint32 // candidate index at each depth
	out      [query.MaxVertices]graph.VertexID
	cand     [query.MaxVertices][]uint32
	pos, end [query.MaxVertices]int      // per depth: the candidate being tried, and the end of those kept (donate lowers it)
	base     int                         // depth of the task being searched
	lists    [query.MaxVertices][]uint32 // candidates' scratch: the constraints' lists
	scratch  [query.MaxVertices][]uint32 // unbuilt lists, per constraint (space.list)
	acc      [maxRowWords]uint64         // candidatesRows' intersection
	visited  []uint64                    // bitset over data vertices: placed in the partial match
	owner    []uint8                     // per data vertex: the depth it was last placed at

	// Failing sets (DP-iso): anc[d] holds depth d and the depths that its
	// constraints read, transitively; ordAnc[d] the anc of the depths its
	// symmetry conditions read; conf[d] the failing sets of the candidates
	// of depth d that the vertex checks dropped; gave[d] whether candidates
	// of depth d went to another worker.
	anc, ordAnc, conf [query.MaxVertices]uint64
	gave              [query.MaxVertices]bool

	// Counting the independent tail (tail.go): its first depth, or the
	// last depth where it is not counted; its groups (TailGroups); per
	// depth the candidates as data vertices.
	tail   int
	groups [][]int
	sets   [query.MaxVertices][]graph.VertexID
	picks
	_ [cacheLine]byte
}

// found is the failing set of a subtree that holds a match, or whose
// outcome is not known here: it contains every depth, so it prunes nothing.
const found = ^uint64(0)

// search runs sp's plan for query qi on the CPU's workers and returns the
// number of matches it walked (before any CountFactor).
func (c *CPU) search(g *dyngraph.Graph, sp *space, qi int, mode Mode, sink Sink) graph.Count {
	n := c.workers()
	for len(c.finders) < n {
		c.finders = append(c.finders, &finder{id: len(c.finders)})
	}
	work := &tasks{workers: n}
	work.wake.L = &work.mu
	roots := make([]uint32, len(sp.verts[0]))
	for i := range roots {
		roots[i] = uint32(i)
	}
	work.queue = []task{{cands: roots}}
	words := (g.NumVertices() + 63) / 64
	var wg sync.WaitGroup
	for _, f := range c.finders[:n] {
		// Cleared for each search, so that a stopped one leaves nothing
		// behind: a 1.2 MiB clear on ten million vertices.
		if len(f.visited) != words {
			f.visited = padded[uint64](words)
		} else {
			clear(f.visited)
		}
		if len(f.owner) != g.NumVertices() {
			f.owner = padded[uint8](g.NumVertices()) // read only where visited is set
		}
		f.sp, f.plan, f.mode, f.sink, f.qi, f.work, f.stop = sp, sp.plan, mode, sink, qi, work, c.stop
		f.failing()
		f.tail, f.groups = len(sp.plan.Levels)-1, nil
		if mode == Count {
			f.tail = IndependentTail(sp.plan)
			f.groups = TailGroups(sp.plan, f.tail)
		}
		f.count, f.splits, f.pruned, f.stopped = graph.Count{}, 0, 0, false
		wg.Go(func() {
			for {
				tk, ok := work.get()
				if !ok {
					break
				}
				f.run(tk)
			}
			f.sp, f.plan, f.work, f.sink = nil, nil, nil, nil
		})
	}
	wg.Wait()
	var total graph.Count
	for _, f := range c.finders[:n] {
		total = total.Add(f.count)
		c.static.Splits += f.splits
		c.static.Pruned += f.pruned
	}
	return total
}

// run searches the subtree of tk.
func (f *finder) run(tk task) {
	if f.stop != nil && (f.work.halted.Load() || f.stop(f.qi)) {
		f.work.halt()
		return
	}
	d := len(tk.prefix)
	for k, x := range tk.prefix {
		f.place(k, x)
	}
	f.base = d
	f.cand[d] = append(room(f.cand[d][:0], len(tk.cands)), tk.cands...)
	f.walk(d)
	for k := range d {
		f.unplace(k)
	}
}

func (f *finder) place(d int, x uint32) {
	v := f.sp.verts[d][x]
	f.idx[d] = x
	f.out[f.plan.Levels[d].Vertex] = v
	f.visited[v>>6] |= 1 << (v & 63)
	f.owner[v] = uint8(d)
}

// failing computes anc and ordAnc of the plan.
func (f *finder) failing() {
	for d := range f.plan.Levels {
		lv := &f.plan.Levels[d]
		f.anc[d], f.ordAnc[d] = 1<<d, 0
		for _, c := range lv.Cons {
			f.anc[d] |= f.anc[c.From]
		}
		for _, k := range lv.Above {
			f.ordAnc[d] |= f.anc[k]
		}
		for _, k := range lv.Below {
			f.ordAnc[d] |= f.anc[k]
		}
	}
}

func (f *finder) unplace(d int) {
	v := f.sp.verts[d][f.idx[d]]
	f.visited[v>>6] &^= 1 << (v & 63)
}

// walk tries each candidate in f.cand[d] at depth d and searches below it,
// and returns the failing set of the partial match above d: the depths
// whose data vertices explain why it has no match, or found. A candidate
// whose subtree fails for reasons that do not include depth d ends the
// walk (DP-iso's failing-set pruning): every other candidate would fail
// alike.
func (f *finder) walk(d int) uint64 {
	if d == f.tail {
		if d == len(f.plan.Levels)-1 {
			f.emit(d)
		} else {
			f.countTail(d)
		}
		return found
	}
	f.pos[d], f.end[d], f.gave[d] = 0, len(f.cand[d]), false
	fs := uint64(0)
	for ; f.pos[d] < f.end[d]; f.pos[d]++ {
		if f.halting(1) {
			return found
		}
		if f.work.hungry.Load() > 0 {
			f.donate(d)
		}
		f.place(d, f.cand[d][f.pos[d]])
		c := f.descend(d + 1)
		f.unplace(d)
		if c&(1<<d) == 0 {
			if f.pos[d]+1 < f.end[d] {
				f.pruned++
			}
			return c
		}
		fs |= c
	}
	if f.gave[d] {
		return found // the candidates given away may have matches
	}
	return fs | f.conf[d]
}

// emit reports the matches that the candidates of the last depth d complete.
func (f *finder) emit(d int) {
	cands := f.cand[d]
	if f.halting(uint32(len(cands))) {
		return
	}
	f.count = f.count.AddUint64(uint64(len(cands)))
	if f.mode == Count {
		return
	}
	out, u, verts := f.out[:len(f.plan.Levels)], f.plan.Levels[d].Vertex, f.sp.verts[d]
	for _, x := range cands {
		out[u] = verts[x]
		f.sink(f.id, f.qi, graph.Positive, out)
	}
}

// halting counts n steps and, each time the count passes a multiple of
// stopEvery, asks whether the search is to stop; it reports whether it is.
func (f *finder) halting(n uint32) bool {
	if f.stop == nil {
		return false
	}
	before := f.steps
	f.steps += n
	if f.steps/stopEvery != before/stopEvery && (f.work.halted.Load() || f.stop(f.qi)) {
		f.stopped = true
		f.work.halt()
	}
	return f.stopped
}

// descend computes the candidates of depth d and walks them; it returns
// the failing set of the partial match above d (walk).
func (f *finder) descend(d int) uint64 {
	f.conf[d] = 0
	buf := f.candidates(d, f.cand[d][:0])
	f.cand[d] = buf
	if len(buf) > 0 {
		return f.walk(d)
	}
	return f.anc[d] | f.conf[d]
}

// drop adds to conf[d] the failing set of candidate v of depth d, which
// failed the vertex checks: anc of d and of the depth that holds v, or of
// the depths that the symmetry conditions read. It stays out of the
// candidate loops, which inline the checks themselves.
func (f *finder) drop(d int, lv *query.Level, v graph.VertexID) {
	if f.visited[v>>6]&(1<<(v&63)) != 0 {
		f.conf[d] |= f.anc[d] | f.anc[f.owner[v]]
	} else {
		f.conf[d] |= f.anc[d] | f.ordAnc[d]
	}
}

// donate hands to an idle worker half of the candidates still to try, past
// the current one, at the shallowest depth of this task that has any. walk
// never asks at the last depth: its candidates are single matches, not
// worth a hand-over.
func (f *finder) donate(d int) {
	k := f.base
	for k <= d && f.end[k]-f.pos[k] < 2 { // the current one stays here
		k++
	}
	if k > d || !f.work.wanted() {
		return
	}
	give := (f.end[k] - f.pos[k]) / 2
	cut := f.end[k] - give
	tk := task{prefix: make([]uint32, k), cands: make([]uint32, give)}
	copy(tk.prefix, f.idx[:k])
	copy(tk.cands, f.cand[k][cut:f.end[k]])
	f.end[k], f.gave[k] = cut, true
	f.splits++
	f.work.put(tk)
}

// candidates appends to dst the candidate indexes of depth d that every
// constraint's list holds and the vertex checks admit: the shortest list
// drives, the others are searched from where the last search ended (both
// ascend), so an intersection costs O(min · k · log).
func (f *finder) candidates(d int, dst []uint32) []uint32 {
	if f.sp.rows[d] != nil {
		return f.candidatesRows(d, dst)
	}
	lv := &f.plan.Levels[d]
	sp := f.sp
	lists := &f.lists
	drv := 0
	for ci := range lv.Cons {
		l := sp.list(d, ci, f.idx[lv.Cons[ci].From], &f.scratch[ci])
		if len(l) == 0 {
			return dst
		}
		lists[ci] = l
		if len(l) < len(lists[drv]) {
			drv = ci
		}
	}
	nc := len(lv.Cons)
	verts := sp.verts[d]
	dst = room(dst, len(lists[drv]))
	if nc == 1 {
		// The commonest depth, kept to the bare loop when it can be.
		if len(lv.Above)+len(lv.Below) == 0 {
			for _, x := range lists[0] {
				if v := verts[x]; f.visited[v>>6]&(1<<(v&63)) == 0 {
					dst = append(dst, x)
				} else {
					f.conf[d] |= f.anc[d] | f.anc[f.owner[v]]
				}
			}
			return dst
		}
		for _, x := range lists[0] {
			if v := verts[x]; f.visited[v>>6]&(1<<(v&63)) == 0 && f.ordered(lv, v) {
				dst = append(dst, x)
			} else {
				f.drop(d, lv, v)
			}
		}
		return dst
	}
	if nc == 2 && len(lists[1-drv]) <= 8*len(lists[drv]) {
		// Lists of like lengths: a merge beats searching one in the other.
		a, b := lists[0], lists[1]
		for i, j := 0, 0; i < len(a) && j < len(b); {
			switch x, y := a[i], b[j]; {
			case x < y:
				i++
			case x > y:
				j++
			default:
				if v := verts[x]; f.visited[v>>6]&(1<<(v&63)) == 0 && f.ordered(lv, v) {
					dst = append(dst, x)
				} else {
					f.drop(d, lv, v)
				}
				i++
				j++
			}
		}
		return dst
	}
next:
	for _, x := range lists[drv] {
		for ci := 0; ci < nc; ci++ {
			if ci == drv {
				continue
			}
			l := lists[ci]
			i := lowerBound(l, x)
			if i == len(l) {
				break next
			}
			lists[ci] = l[i:]
			if l[i] != x {
				continue next
			}
		}
		if v := verts[x]; f.visited[v>>6]&(1<<(v&63)) == 0 && f.ordered(lv, v) {
			dst = append(dst, x)
		} else {
			f.drop(d, lv, v)
		}
	}
	return dst
}

// ordered applies level lv's symmetry-breaking conditions to data vertex v.
func (f *finder) ordered(lv *query.Level, v graph.VertexID) bool {
	for _, a := range lv.Above {
		if v <= f.sp.verts[a][f.idx[a]] {
			return false
		}
	}
	for _, b := range lv.Below {
		if v >= f.sp.verts[b][f.idx[b]] {
			return false
		}
	}
	return true
}

// candidatesRows is candidates for a depth with bitset rows: the AND of the
// constraints' rows, filtered by the vertex checks.
func (f *finder) candidatesRows(d int, dst []uint32) []uint32 {
	lv := &f.plan.Levels[d]
	sp := f.sp
	acc := f.acc[:sp.words[d]]
	copy(acc, sp.row(d, 0, f.idx[lv.Cons[0].From]))
	for ci := 1; ci < len(lv.Cons); ci++ {
		for i, w := range sp.row(d, ci, f.idx[lv.Cons[ci].From]) {
			acc[i] &= w
		}
	}
	verts := sp.verts[d]
	dst = room(dst, 64*len(acc))
	for wi, word := range acc {
		for word != 0 {
			b := word & -word
			word &^= b
			x := uint32(wi*64 + bits.TrailingZeros64(b))
			if v := verts[x]; f.visited[v>>6]&(1<<(v&63)) == 0 && f.ordered(lv, v) {
				dst = append(dst, x)
			} else {
				f.drop(d, lv, v)
			}
		}
	}
	return dst
}

// The finders' buffers are written on every step of the search. Where one
// shares a cache line with another finder's, the two cores trade the line
// back and forth and the workers stop scaling with the cores
// (docs/experiments.md, "16 workers against one"). So every buffer a
// finder writes keeps a cache line of its own memory on each side (padded,
// room), and the finder itself begins and ends with one.
const cacheLine = 64

// padded returns n zero values of T with a cache line of unused memory on
// each side.
func padded[T any](n int) []T {
	var z T
	pad := (cacheLine + int(unsafe.Sizeof(z)) - 1) / int(unsafe.Sizeof(z))
	return make([]T, n+2*pad)[pad : pad+n : pad+n]
}

// room returns dst with room for n more entries, moving it to a padded
// array when it has not: append would place the new array anywhere.
func room(dst []uint32, n int) []uint32 {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	nd := padded[uint32](max(2*cap(dst), len(dst)+n))
	return nd[:copy(nd, dst)]
}

// lowerBound is the index of the first entry of l not below x.
func lowerBound(l []uint32, x uint32) int {
	lo, hi := 0, len(l)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if l[m] < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
