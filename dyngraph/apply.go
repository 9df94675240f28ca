package dyngraph

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/gcsm/gcsm/graph"
)

// edgeKey identifies a data edge; on undirected graphs a < b.
type edgeKey struct{ a, b, l uint32 }

type normState struct {
	key         edgeKey
	before, now bool
	flipped     bool // the state changed at least once inside the batch
	renewed     bool // present before and after, with other parallel edges: see Folder
}

// Folder decides what edge updates do to their pairs when a pair of vertices
// may carry several parallel edges (package bundle's transfers). The graph
// keeps one entry per pair and label; the folder keeps the parallel edges.
type Folder interface {
	// Fold folds an admitted edge update into the folder's state of its
	// pair and says whether the pair is present after it. An error refuses
	// the update, which must then have changed nothing.
	Fold(u *graph.Update, f Folding) (bool, error)
	// Renewed says whether pair e, present before and after the batch,
	// changed its parallel edges. It then enters ΔE twice, deleted and
	// inserted, so that the engine finds the matches through it in the old
	// and the new graph: the bound edges, not the pair, tell them apart.
	Renewed(e graph.Edge) bool
	// SetVertex folds a SetVertex update into the vertex's properties and
	// says whether a value the matches read changed. Every pair of the
	// vertex then renews (see Renewed), so that the engine finds each match
	// through it in the old and the new graph, and the values tell them
	// apart.
	SetVertex(u *graph.Update) bool
	// SetEdge folds a SetEdge update into its transfer's properties. It
	// returns the transfer's pair and whether a value the matches read
	// changed on a transfer present before the batch (the pair then
	// renews); an error refuses the update, which must then have changed
	// nothing.
	SetEdge(u *graph.Update) (pair graph.Edge, changed bool, err error)
}

// ApplyStats counts what a batch did (docs/architecture.md, Batch normalisation).
type ApplyStats struct {
	Updates   int // updates in the batch, vertices included
	Inserted  int // edges absent before and present after: in ΔE with +
	Deleted   int // edges present before and absent after: in ΔE with -
	Refreshed int // insertions of an edge present at that point
	Missing   int // deletions of an edge absent at that point
	Cancelled int // edges whose operations changed them and then changed them back
	Renewed   int // pairs present before and after whose parallel edges or values changed: in ΔE twice
	Sets      int // property sets applied (of a vertex or a transfer), whether or not a kept value changed
	Vertices  int // vertices that did not exist before the batch
	Rejected  int // updates refused: see Rejects
}

// Reject is an update that Apply refused, with its index in the batch.
type Reject struct {
	Index int
	Err   error // ErrSelfLoop, *LabelConflictError, or an out-of-range error
}

// Apply normalises the batch and applies it, leaving the graph pending: the
// old, stable and new views of every touched list are readable until
// Reorganize. It returns ΔE (every changed edge once, in order of first
// appearance in the batch) and the updates it refused; both slices belong to
// the graph and are valid until the next Apply.
//
// Invalid updates (self-loops, label conflicts) are refused one by one; the
// rest of the batch is applied. An error is returned only when memory for the
// arenas cannot be had, and then the graph must be discarded.
func (g *Graph) Apply(batch []graph.Update) ([]graph.Change, []Reject, ApplyStats, error) {
	return g.ApplyFolded(batch, nil)
}

// ApplyFolded is Apply with f deciding each edge update's effect on its
// pair (see Folder); a nil f is Apply.
func (g *Graph) ApplyFolded(batch []graph.Update, f Folder) ([]graph.Change, []Reject, ApplyStats, error) {
	if g.pending {
		panic("BUG: dyngraph.Apply called before Reorganize")
	}
	st := ApplyStats{Updates: len(batch)}
	var rejects []Reject
	g.norm.reset(len(batch))
	g.state = g.state[:0]
	g.delta = g.delta[:0]
	nv := g.vertices
	g.presence(batch)

	g.folder = f
	defer func() { g.folder = nil }()
	for i := range batch {
		u := &batch[i]
		err := g.normalise(u, i, &st)
		if err != nil {
			if !refusal(err) {
				return nil, nil, st, err
			}
			rejects = append(rejects, Reject{Index: i, Err: err})
		}
	}
	st.Rejected = len(rejects)
	st.Vertices = g.vertices - nv
	if f != nil {
		for i := range g.state {
			s := &g.state[i]
			s.renewed = s.before && s.now && f.Renewed(graph.Edge{Src: s.key.a, Dst: s.key.b, Label: s.key.l})
		}
	}

	g.splitSides(g.listWorkers())
	if err := g.reserve(); err != nil {
		return nil, nil, st, err
	}
	for i := range g.state {
		s := &g.state[i]
		switch {
		case s.renewed:
			st.Renewed++
			e := graph.Edge{Src: s.key.a, Dst: s.key.b, Label: s.key.l}
			g.delta = append(g.delta, graph.Change{Edge: e, Sign: graph.Negative}, graph.Change{Edge: e, Sign: graph.Positive})
		case s.before == s.now:
			if s.flipped {
				st.Cancelled++
			}
			continue
		case s.now:
			st.Inserted++
			g.edges++
			g.delta = append(g.delta, graph.Change{Edge: graph.Edge{Src: s.key.a, Dst: s.key.b, Label: s.key.l}, Sign: graph.Positive})
		default:
			st.Deleted++
			g.edges--
			g.delta = append(g.delta, graph.Change{Edge: graph.Edge{Src: s.key.a, Dst: s.key.b, Label: s.key.l}, Sign: graph.Negative})
		}
	}
	g.writeLists()
	g.each(len(g.touched), (*Graph).sortAppended)
	g.pending = true
	g.epoch++
	return g.delta, rejects, st, nil
}

// sortAppended sorts the appended parts of touched lists lo to hi.
func (g *Graph) sortAppended(sc *scratch, lo, hi int) {
	o := g.Order()
	for _, t := range g.touched[lo:hi] {
		l := g.listOf(t)
		s := &g.slabs[l.slab]
		var lb []uint32
		if s.lbls != nil {
			lb = s.lbls[l.off+l.app : l.off+l.n]
		}
		sc.sortPart(o, s.ids[l.off+l.app:l.off+l.n], lb)
	}
}

var errRange = errors.New("vertex id out of range")

// refusal tells an update's own fault, which refuses just that update, from
// a failure of the graph (out of memory), which ends the batch.
func refusal(err error) bool {
	var lc *LabelConflictError
	var r refused
	return errors.Is(err, ErrSelfLoop) || errors.As(err, &lc) || errors.Is(err, errRange) || errors.As(err, &r) ||
		errors.Is(err, graph.ErrUnknownVertex) || errors.Is(err, graph.ErrUnknownTransfer)
}

// refused is a Folder's refusal of one update.
type refused struct{ err error }

func (r refused) Error() string { return r.err.Error() }
func (r refused) Unwrap() error { return r.err }

// normalise admits u, the batch's i-th update, and folds it into the
// batch's per-edge state.
func (g *Graph) normalise(u *graph.Update, i int, st *ApplyStats) error {
	if err := g.admit(u); err != nil || u.Op == graph.AddVertex {
		return err
	}
	switch u.Op {
	case graph.SetVertex:
		st.Sets++
		if g.folder != nil && g.folder.SetVertex(u) {
			g.renewAround(u.Src)
		}
		return nil
	case graph.SetEdge:
		err := g.setEdge(u)
		if err == nil {
			st.Sets++
		}
		return err
	}
	return g.fold(u, i, st)
}

// setEdge folds a SetEdge update. Without a folder the graph keeps no
// transfers, so no id names one.
func (g *Graph) setEdge(u *graph.Update) error {
	if g.folder == nil || u.Tx == nil {
		id := ""
		if u.Tx != nil {
			id = u.Tx.ID
		}
		return fmt.Errorf("%w %q", graph.ErrUnknownTransfer, id)
	}
	e, changed, err := g.folder.SetEdge(u)
	if err != nil {
		return refused{err}
	}
	if changed {
		g.stateOf(edgeKey{e.Src, e.Dst, e.Label}, true)
	}
	return nil
}

// renewAround gives every pair of v, as the graph held it before the batch,
// a state in the batch, present before and after: the folder's Renewed then
// renews it, as v's properties changed. Pairs the batch inserts need no
// renewal, and pairs it already touched keep their state.
func (g *Graph) renewAround(v graph.VertexID) {
	sides := []bool{true}
	if g.opts.Directed {
		sides = append(sides, false)
	}
	for _, out := range sides {
		a := g.Out(v)
		if !out {
			a = g.In(v)
		}
		for i, w := range a.Sorted {
			l := g.edgeLabel
			if a.SortedLabels != nil {
				l = a.SortedLabels[i]
			}
			k := edgeKey{v, w, l}
			if !out {
				k.a, k.b = w, v
			}
			if !g.opts.Directed && k.a > k.b {
				k.a, k.b = k.b, k.a
			}
			g.stateOf(k, true)
		}
	}
}

// stateOf returns the batch's state of edge k, adding one, present before
// and now as present says, if the batch has none. It grows the table past
// the batch's own edges, which renewals around a vertex can outnumber.
func (g *Graph) stateOf(k edgeKey, present bool) *normState {
	if 2*(len(g.state)+1) > int(g.norm.mask+1) {
		g.norm.grow(g.state)
	}
	idx, ok := g.norm.find(k, len(g.state))
	if !ok {
		g.state = append(g.state, normState{key: k, before: present, now: present})
	}
	return &g.state[idx]
}

// presence looks every edge update of a large batch up in the graph, in
// parallel, before the serial fold; on small batches it leaves g.pres empty
// and fold looks up as it goes. The answers are the fold's: lists do not
// change during normalisation, a vertex born in the batch has no edges
// yet, and the edge-label state that the fold may change (noteEdgeLabel)
// only decides how present searches, not what it finds, because every edge
// in the graph before the batch carries the single label when there is one.
func (g *Graph) presence(batch []graph.Update) {
	g.pres = g.pres[:0]
	if len(batch) < g.parallelMin || g.workers() <= 1 {
		return
	}
	if cap(g.pres) < len(batch) {
		g.pres = make([]bool, len(batch))
	} else {
		g.pres = g.pres[:len(batch)]
		clear(g.pres)
	}
	g.batch = batch
	g.each(len(batch), (*Graph).lookUp)
	g.batch = nil
}

// lookUp fills g.pres for updates lo to hi of g.batch.
func (g *Graph) lookUp(_ *scratch, lo, hi int) {
	for i := lo; i < hi; i++ {
		u := &g.batch[i]
		if u.Op != graph.Insert && u.Op != graph.Delete {
			continue
		}
		k := g.key(u)
		// An id without a table row has no edges; checking it also keeps
		// the order's label lookup in range.
		if int(k.a) < len(g.vlabel) && int(k.b) < len(g.vlabel) {
			g.pres[i] = g.present(k)
		}
	}
}

// key is the edge of an edge update; on undirected graphs a < b.
func (g *Graph) key(u *graph.Update) edgeKey {
	k := edgeKey{u.Src, u.Dst, u.Label}
	if !g.opts.Directed && k.a > k.b {
		k.a, k.b = k.b, k.a
	}
	return k
}

// admit validates u and creates the vertices it names; it refuses
// self-loops, label conflicts and ids or labels out of range.
func (g *Graph) admit(u *graph.Update) error {
	switch u.Op {
	case graph.AddVertex:
		if u.Src >= graph.MaxVertices {
			return fmt.Errorf("%w: %d", errRange, u.Src)
		}
		if u.SrcLabel == graph.Wildcard {
			return fmt.Errorf("%w: vertex %d: the wildcard is not a data label", errRange, u.Src)
		}
		return g.ensureVertex(u.Src, u.SrcLabel)
	case graph.SetVertex:
		if !g.exists(u.Src) {
			return fmt.Errorf("%w %d", graph.ErrUnknownVertex, u.Src)
		}
		return nil
	case graph.SetEdge:
		return nil
	case graph.Insert, graph.Delete:
	default:
		return fmt.Errorf("%w: unknown op %v", errRange, u.Op)
	}
	if u.Src == u.Dst {
		return ErrSelfLoop
	}
	if u.Src >= graph.MaxVertices || u.Dst >= graph.MaxVertices {
		return fmt.Errorf("%w: edge %d-%d", errRange, u.Src, u.Dst)
	}
	if u.Label >= graph.NoLabel {
		return fmt.Errorf("%w: edge %d-%d has no concrete label", errRange, u.Src, u.Dst)
	}
	if u.SrcLabel == graph.Wildcard || u.DstLabel == graph.Wildcard {
		return fmt.Errorf("%w: edge %d-%d: the wildcard is not a data label", errRange, u.Src, u.Dst)
	}
	// Check both labels before creating either vertex, so that a refused
	// update leaves no trace.
	for _, p := range [2]struct {
		v graph.VertexID
		l graph.Label
	}{{u.Src, u.SrcLabel}, {u.Dst, u.DstLabel}} {
		if g.exists(p.v) && p.l != graph.NoLabel && g.vlabel[p.v] != p.l {
			return &LabelConflictError{Vertex: p.v, Have: g.vlabel[p.v], Got: p.l}
		}
	}
	if err := g.ensureVertex(u.Src, u.SrcLabel); err != nil {
		return err
	}
	return g.ensureVertex(u.Dst, u.DstLabel)
}

// fold applies an admitted edge update, the batch's i-th, to the batch's
// state of its edge.
func (g *Graph) fold(u *graph.Update, i int, st *ApplyStats) error {
	k := g.key(u)
	if 2*(len(g.state)+1) > int(g.norm.mask+1) {
		g.norm.grow(g.state)
	}
	idx, ok := g.norm.find(k, len(g.state))
	if !ok {
		var p bool
		if len(g.pres) != 0 {
			p = g.pres[i]
		} else {
			p = g.present(k)
		}
		g.state = append(g.state, normState{key: k, before: p, now: p})
	}
	s := &g.state[idx]
	if g.folder != nil {
		return g.foldPair(s, u)
	}
	if u.Op == graph.Insert {
		if s.now {
			st.Refreshed++
			return nil
		}
		if err := g.noteEdgeLabel(k.l); err != nil {
			return err
		}
		s.now, s.flipped = true, true
		return nil
	}
	if !s.now {
		st.Missing++
		return nil
	}
	s.now, s.flipped = false, true
	return nil
}

// Folding is what the graph tells a Folder about an update.
type Folding struct {
	Pair   graph.Edge // the update's edge; on undirected graphs Src < Dst
	Before bool       // the pair was present before the batch
	// Bare says, for the update's Src and Dst, that the vertex had no edges
	// before the batch: no match of the old graph passes through it.
	Bare [2]bool
}

// foldPair is fold when a Folder decides the pair's presence.
func (g *Graph) foldPair(s *normState, u *graph.Update) error {
	now, err := g.folder.Fold(u, Folding{
		Pair:   graph.Edge{Src: s.key.a, Dst: s.key.b, Label: s.key.l},
		Before: s.before,
		Bare:   [2]bool{g.bare(u.Src), g.bare(u.Dst)},
	})
	if err != nil {
		return refused{err}
	}
	if now && !s.now {
		if err := g.noteEdgeLabel(s.key.l); err != nil {
			return err
		}
	}
	if now != s.now {
		s.now, s.flipped = now, true
	}
	return nil
}

// bare says whether v had no edges before the batch; it runs during
// normalisation, when the lists still hold the graph before the batch.
func (g *Graph) bare(v graph.VertexID) bool {
	return g.out[v].n == 0 && (!g.opts.Directed || g.in[v].n == 0)
}

// present looks k up in the graph before the batch. It runs during
// normalisation, when every list is still clean (no tombstones, nothing
// appended).
func (g *Graph) present(k edgeKey) bool {
	if !g.multiLabel && (!g.haveLabel || k.l != g.edgeLabel) {
		return false
	}
	a := g.Out(k.a)
	_, ok := g.Order().search(a.Sorted, a.SortedLabels, k.b, k.l)
	return ok
}

func (g *Graph) listOf(t touch) *list {
	if t.in {
		return &g.in[t.v]
	}
	return &g.out[t.v]
}

// reserve grows every list that the batch inserts into once, to its final
// size rounded up to a power of two, instead of doubling it step by step:
// loading a graph through Apply spent a quarter of its time in those copies.
//
// A new list gets exactly its batch's need rounded up, not the average degree
// that the GCSM paper starts a list at: on power-law graphs most vertices have degree 1
// or 2, and starting them at the average would break the bound of at most
// 100% capacity slack.
//
// Counting and copying run on the workers, split by vertex as writeLists
// is; they were a third of the service's serial run loop on 16 cores. Only
// taking chunks from the allocator is serial, in the order of the lists'
// first insertions, so the arena layout does not depend on the worker
// count. The old chunks go back to the allocator after the copies, so that
// no copy reads a chunk that another list has just been given.
func (g *Graph) reserve() error {
	g.byOwner((*Graph).countWants)
	// Allocate in the order of the sides' first insertions. The serial
	// loop reads only the workers' findings: reading the list headers
	// here, which the workers had just written, cost about 100 ns a list,
	// and a stream of new accounts moves nearly every list it touches.
	w := len(g.ownedAt) - 1
	g.growAll = g.growAll[:0]
	at := zeroed(g.growAt, 2*len(g.state))
	g.growAt = at
	for _, gs := range g.grows[:w] {
		for _, e := range gs {
			g.growAll = append(g.growAll, e)
			at[e.j] = int32(len(g.growAll))
		}
	}
	g.moves = g.moves[:0]
	for j, p := range at {
		if p == 0 {
			continue
		}
		e := &g.growAll[p-1]
		to, err := g.alloc(e.c)
		if err != nil {
			return fmt.Errorf("dyngraph: growing a list to %d entries: %w", e.c, err)
		}
		t, _ := g.sideOf(j)
		g.moves = append(g.moves, move{t: t, from: e.from, cap: e.cap, to: to, c: e.c})
	}
	g.each(len(g.moves), (*Graph).copyMoved)
	for _, m := range g.moves {
		if m.cap != 0 {
			g.free[log2(m.cap)] = append(g.free[log2(m.cap)], m.from)
		}
	}
	return nil
}

// grow is a list that must move to a larger chunk, as a worker found it:
// its first insertion's side j, its new capacity c, and its old chunk.
type grow struct {
	j    int32
	c    uint32
	from loc
	cap  uint32
}

// countWants counts, for the lists of worker k, the batch's insertions into
// each list, and leaves in g.grows[k] the lists that must move to a larger
// chunk.
func (g *Graph) countWants(k int) {
	f := g.found[k][:0]
	for _, j := range g.owned[g.ownedAt[k]:g.ownedAt[k+1]] {
		s := &g.state[j/2]
		if !(s.now && !s.before) && !s.renewed {
			continue
		}
		t, _ := g.side(s, int(j%2))
		l := g.listOf(t)
		if l.want == 0 {
			f = append(f, j)
		}
		l.want++
	}
	gs := g.grows[k][:0]
	for _, j := range f {
		t, _ := g.sideOf(int(j))
		l := g.listOf(t)
		if l.n+l.want > l.cap {
			gs = append(gs, grow{j: j, c: roundCap(l.n + l.want), from: loc{l.slab, l.off}, cap: l.cap})
		}
		l.want = 0
	}
	g.found[k], g.grows[k] = f, gs
}

// move is a list that reserve gave a larger chunk: its old place, from, of
// cap entries (0: it had none), and its new one, to, of c entries.
type move struct {
	t        touch
	from, to loc
	cap, c   uint32
}

// copyMoved moves lists lo to hi of g.moves to their new chunks.
func (g *Graph) copyMoved(_ *scratch, lo, hi int) {
	for _, m := range g.moves[lo:hi] {
		l := g.listOf(m.t)
		if m.cap != 0 && l.n != 0 {
			src, dst := &g.slabs[m.from.slab], &g.slabs[m.to.slab]
			copy(dst.ids[m.to.off:m.to.off+l.n], src.ids[m.from.off:m.from.off+l.n])
			if src.lbls != nil {
				copy(dst.lbls[m.to.off:m.to.off+l.n], src.lbls[m.from.off:m.from.off+l.n])
			}
		}
		l.slab, l.off, l.cap = m.to.slab, m.to.off, m.c
	}
}

// listWorkers is how many goroutines share the batch's list writes: one
// below g.parallelMin changed edges, where starting them costs more than
// the writes.
func (g *Graph) listWorkers() int {
	if len(g.state) < g.parallelMin {
		return 1
	}
	return min(g.workers(), max(1, 2*len(g.state)/g.parallelMin))
}

// splitSides groups the sides of the batch's changed edges by the worker
// that owns their list, in the batch's order within each group: worker k's
// are g.owned[g.ownedAt[k]:g.ownedAt[k+1]], as indices 2i+side (state i,
// side as in side). A worker owns the lists of the vertices that owner maps
// to it, so each list is written by one goroutine, in the batch's order.
// Grouping once here spares each worker a scan of every state for its own
// lists, a cost that would grow with the number of workers.
func (g *Graph) splitSides(w int) {
	g.ownedAt = zeroed(g.ownedAt, w+1)
	for i := range g.state {
		if s := &g.state[i]; s.renewed || s.before != s.now {
			for side := range 2 {
				t, _ := g.side(s, side)
				g.ownedAt[owner(t.v, w)+1]++
			}
		}
	}
	for k := range w {
		g.ownedAt[k+1] += g.ownedAt[k]
	}
	g.owned = zeroed(g.owned, int(g.ownedAt[w]))
	next := append(g.ownedNext[:0], g.ownedAt[:w]...)
	for i := range g.state {
		if s := &g.state[i]; s.renewed || s.before != s.now {
			for side := range 2 {
				t, _ := g.side(s, side)
				o := owner(t.v, w)
				g.owned[next[o]] = int32(2*i + side)
				next[o]++
			}
		}
	}
	g.ownedNext = next
	for len(g.found) < w {
		g.found = append(g.found, nil)
		g.grows = append(g.grows, nil)
	}
	if cap(g.longest) < w {
		g.longest = make([]uint32, w)
	}
	g.longest = g.longest[:w]
}

// owner is the worker of w that owns vertex v's lists. Vertices go in blocks
// of 16, so that the workers seldom write list headers that share a cache
// line; the multiplication spreads runs of consecutive blocks, which a
// service's dictionary hands out, over the workers.
func owner(v graph.VertexID, w int) int { return int(uint64((v>>4)*0x9E3779B1) * uint64(w) >> 32) }

// byOwner runs f(g, k) for every worker k of splitSides, on a goroutine
// each (on this one when there is one worker). f is a method expression,
// as in each, so that the serial path allocates nothing.
func (g *Graph) byOwner(f func(g *Graph, k int)) {
	w := len(g.ownedAt) - 1
	if w <= 1 {
		f(g, 0)
		return
	}
	var wg sync.WaitGroup
	for k := range w {
		wg.Go(func() { f(g, k) })
	}
	wg.Wait()
}

// gather returns, per side of the batch's changes (2i+side), whether a
// worker found it (g.found). The workers keep their own lists rather than
// writing these flags, because neighbouring flags belong to different
// workers, and the cores would trade their cache lines on every write
// (BenchmarkStream shows the cost with many workers).
func (g *Graph) gather() []bool {
	g.first = zeroed(g.first, 2*len(g.state))
	first := g.first
	for _, f := range g.found[:len(g.ownedAt)-1] {
		for _, j := range f {
			first[j] = true
		}
	}
	return first
}

// zeroed returns s resized to n zero elements, reusing its array when it
// is large enough.
func zeroed[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// sideOf is side j (2i+side) of the batch's changes: see side.
func (g *Graph) sideOf(j int) (touch, uint32) { return g.side(&g.state[j/2], j%2) }

// writeLists writes the batch's folded state into the lists: a deletion
// tombstones the edge's two entries, an insertion appends them, a renewal
// does both. A large batch splits the lists among workers by vertex; the
// touched lists keep the order of their first change, as one goroutine
// leaves them, so the result does not depend on the number of workers.
func (g *Graph) writeLists() {
	g.byOwner((*Graph).writeOwned)
	for j, f := range g.gather() {
		if f {
			t, _ := g.sideOf(j)
			g.touched = append(g.touched, t)
		}
	}
	g.maxLen = max(g.maxLen, slices.Max(g.longest[:len(g.ownedAt)-1]))
}

// writeOwned is writeLists for the lists of worker k. It leaves in
// g.found[k] the sides that were their list's first change in the batch.
func (g *Graph) writeOwned(k int) {
	f := g.found[k][:0]
	var longest uint32
	for _, j := range g.owned[g.ownedAt[k]:g.ownedAt[k+1]] {
		s := &g.state[j/2]
		t, other := g.side(s, int(j%2))
		if g.write(s, t, other) {
			f = append(f, j)
		}
		longest = max(longest, g.listOf(t).n)
	}
	g.found[k], g.longest[k] = f, longest
}

// side is one of the two lists an edge's change writes: the source's
// out-list (side 0) or the destination's in-list, or out-list on an
// undirected graph (side 1), and the vertex its entry names.
func (g *Graph) side(s *normState, side int) (touch, uint32) {
	if side == 0 {
		return touch{s.key.a, false}, s.key.b
	}
	return touch{s.key.b, g.opts.Directed}, s.key.a
}

// write applies state s to list t, whose entry names vertex other, and
// reports whether this was the list's first change in the batch.
func (g *Graph) write(s *normState, t touch, other uint32) bool {
	del := s.renewed || (s.before && !s.now)
	ins := s.renewed || (s.now && !s.before)
	if !del && !ins {
		return false
	}
	l := g.listOf(t)
	first := l.app == l.n && l.tomb == 0 // it was clean
	if del {
		g.tombstone(l, other, s.key.l)
	}
	if ins {
		g.appendEntry(l, other, s.key.l)
	}
	return first
}

// appendEntry appends an entry to l, which reserve made room for. It does
// not track the longest list: writeLists does.
func (g *Graph) appendEntry(l *list, id uint32, label graph.Label) {
	if l.n == l.cap {
		panic("BUG: dyngraph appending to a list that reserve did not grow")
	}
	s := &g.slabs[l.slab]
	s.ids[l.off+l.n] = id
	if s.lbls != nil {
		s.lbls[l.off+l.n] = label
	}
	l.n++
}

func (g *Graph) tombstone(l *list, id uint32, label graph.Label) {
	a := g.adj(l)
	i, ok := g.Order().search(a.Sorted, a.SortedLabels, id, label)
	if !ok || a.Sorted[i]&Tombstone != 0 {
		panic("BUG: dyngraph deleting an edge that is not in the sorted part")
	}
	a.Sorted[i] |= Tombstone
	l.tomb++
}

// Reorganize ends the pending batch: each touched list drops its tombstones
// and merges its appended part into the sorted part (linear in the list).
//
// A list left at a quarter of its capacity or less moves to a chunk of its
// length rounded up to a power of two, so its slack is back under 100%. The
// quarter, rather than a half, is hysteresis: a list that shrinks and grows
// around a power of two would otherwise be copied on every batch. Between
// the two points a shrinking list may hold up to 300% slack; Stats reports
// the real figure.
func (g *Graph) Reorganize() {
	if !g.pending {
		return
	}
	// Lists that keep their chunk merge in place, in parallel; those that
	// shrink or empty allocate and release arena space, which is serial, in
	// the same order as a serial pass so the arena layout does not depend
	// on the worker count.
	//
	// mergeKept marks the others in g.shrinks, so that this loop reads only
	// their headers: reading every touched list's header here, where the
	// workers' caches hold them, cost about half a millisecond a batch of
	// 4,096 updates.
	g.shrinks = zeroed(g.shrinks, len(g.touched))
	g.each(len(g.touched), (*Graph).mergeKept)
	o := g.Order()
	sc := &g.scratches(1)[0]
	for i, t := range g.touched {
		if g.shrinks[i] {
			g.merge(sc, o, g.listOf(t))
		}
	}
	g.touched = g.touched[:0]
	g.pending = false
}

// mergeKept merges those of touched lists lo to hi that keep their chunk,
// and marks the others in g.shrinks.
func (g *Graph) mergeKept(sc *scratch, lo, hi int) {
	o := g.Order()
	for i := lo; i < hi; i++ {
		if l := g.listOf(g.touched[i]); keepsChunk(l) {
			g.merge(sc, o, l)
		} else {
			g.shrinks[i] = true
		}
	}
}

// keepsChunk tells whether merge leaves l in its chunk: whether its merged
// length (every appended entry stays, every tombstone goes) is above a
// quarter of its capacity. A merged list answers the same.
func keepsChunk(l *list) bool { return l.n-l.tomb > l.cap/4 }

// merge merges l's appended part into its sorted part through sc's buffers.
// Only a list that does not keep its chunk touches the arena allocator.
func (g *Graph) merge(sc *scratch, o Order, l *list) {
	s := &g.slabs[l.slab]
	ids := s.ids[l.off : l.off+l.n]
	var lbls []uint32
	if s.lbls != nil {
		lbls = s.lbls[l.off : l.off+l.n]
	}
	sorted, app := ids[:l.app], ids[l.app:]
	sc.ids = sc.ids[:0]
	sc.lbls = sc.lbls[:0]
	if lbls == nil {
		sc.mergeIDs(o, sorted, app, l.tomb)
	} else {
		i, j := 0, 0
		for i < len(sorted) || j < len(app) {
			if i < len(sorted) && sorted[i]&Tombstone != 0 {
				i++
				continue
			}
			takeSorted := j == len(app) ||
				(i < len(sorted) && o.less(sorted[i], lbls[i], app[j], lbls[int(l.app)+j]))
			if takeSorted {
				sc.ids = append(sc.ids, sorted[i])
				sc.lbls = append(sc.lbls, lbls[i])
				i++
			} else {
				sc.ids = append(sc.ids, app[j])
				sc.lbls = append(sc.lbls, lbls[l.app+uint32(j)])
				j++
			}
		}
	}
	n := uint32(len(sc.ids))
	switch {
	case n == 0:
		g.release(l)
		*l = list{}
		return
	case n <= l.cap/4:
		if nl, err := g.alloc(roundCap(n)); err == nil {
			g.release(l)
			l.slab, l.off, l.cap = nl.slab, nl.off, roundCap(n)
			s = &g.slabs[l.slab]
		}
		// On allocation failure the list simply keeps its larger chunk.
	}
	copy(s.ids[l.off:l.off+n], sc.ids)
	if s.lbls != nil {
		copy(s.lbls[l.off:l.off+n], sc.lbls)
	}
	l.n, l.app, l.tomb = n, n, 0
}

// mergeIDs merges a list without label arrays into sc.ids. Each appended
// entry's place in the sorted part is found by binary search and the runs
// between are copied whole, because on power-law graphs a batch adds a few
// entries to lists of many thousands (the hubs), and copying those entry by
// entry dominated Reorganize. tomb is the number of tombstones in sorted.
func (sc *scratch) mergeIDs(o Order, sorted, app []uint32, tomb uint32) {
	i := 0
	run := func(p int) {
		part := sorted[i:p]
		for tomb > 0 {
			k := 0
			for k < len(part) && part[k]&Tombstone == 0 {
				k++
			}
			if k == len(part) {
				break
			}
			sc.ids = append(sc.ids, part[:k]...)
			part = part[k+1:]
			tomb--
		}
		sc.ids = append(sc.ids, part...)
		i = p
	}
	for _, a := range app {
		// Appended entries are never in the sorted part, tombstoned or
		// not, so ties cannot occur.
		run(i + o.lowerBound(sorted[i:], o.Key(a)))
		sc.ids = append(sc.ids, a)
	}
	run(len(sorted))
}
