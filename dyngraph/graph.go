// Package dyngraph holds the evolving data graph: per-vertex neighbour lists
// in large off-heap arenas, laid out so that one array answers all three views
// the delta rules need (old, new, stable) while a batch is being matched.
//
// The life of a batch is Apply → (matching reads the views) → Reorganize.
//
//   - Apply normalises the batch (docs/architecture.md), marks deleted neighbours with
//     a tombstone bit in the sorted part of each list, and appends inserted
//     neighbours after it. It returns ΔE, each edge once with its sign.
//   - While the batch is pending, Adj exposes the raw parts: old = the sorted
//     part including tombstones, stable = the sorted part without them, new =
//     stable plus the appended part.
//   - Reorganize merges every touched list back into one sorted run without
//     tombstones, in time linear in the list.
//
// Each list is sorted by (neighbour, edge label). The edge labels live in a
// parallel array that only exists once a second edge label has been seen: the
// peers' datasets and most deployments have a single edge label, and for them
// the graph costs one 32-bit word per edge direction plus capacity slack.
//
// A Graph is not safe for concurrent mutation. Between Apply and Reorganize it
// is read-only and any number of goroutines may read it.
package dyngraph

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"unsafe"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/internal/hostmem"
)

// Tombstone is the bit that marks a deleted neighbour in the sorted part of a
// list. Vertex ids stay below graph.MaxVertices = 2^31, so it is always free.
const Tombstone uint32 = 1 << 31

// IDMask strips the tombstone bit from a neighbour entry.
const IDMask = Tombstone - 1

// Options configure a Graph.
type Options struct {
	// Directed graphs keep an out-list and an in-list per vertex.
	Directed bool
	// Alloc backs the arenas. Nil means hostmem.Mmap.
	Alloc hostmem.Allocator
	// SlabEntries is the size of one arena slab in neighbour entries. A list
	// larger than a slab gets a slab of its own. Zero means 1<<24 (64 MiB).
	SlabEntries int
	// DefaultVertexLabel is the label of a vertex first seen in an edge
	// update that gives no label.
	DefaultVertexLabel graph.Label
	// Workers bounds the goroutines that Apply and Reorganize use on large
	// batches; zero means GOMAXPROCS.
	Workers int
}

// DefaultOptions returns the options of an undirected graph on mmap'd arenas.
func DefaultOptions() Options {
	return Options{Alloc: hostmem.Mmap{}, SlabEntries: 1 << 24}
}

func (o *Options) validate() error {
	if o.Alloc == nil {
		o.Alloc = hostmem.Mmap{}
	}
	if o.SlabEntries == 0 {
		o.SlabEntries = 1 << 24
	}
	if o.SlabEntries < 1024 || o.SlabEntries > 1<<30 || o.SlabEntries&(o.SlabEntries-1) != 0 {
		return fmt.Errorf("dyngraph: SlabEntries %d must be a power of two in [2^10, 2^30]", o.SlabEntries)
	}
	if o.Workers < 0 {
		return fmt.Errorf("dyngraph: Workers %d is negative", o.Workers)
	}
	if o.DefaultVertexLabel >= graph.NoLabel {
		return errors.New("dyngraph: DefaultVertexLabel must be a concrete label")
	}
	return nil
}

// list is one vertex's neighbour list in one direction. It is the per-vertex
// table entry of docs/architecture.md: location, length, appended start, capacity.
type list struct {
	slab uint32 // index into Graph.slabs
	off  uint32 // first entry within the slab
	n    uint32 // entries in use: sorted part then appended part
	app  uint32 // start of the appended part; n when there is none
	cap  uint32 // allocated entries: zero or a power of two
	tomb uint32 // tombstones in the sorted part
	want uint32 // insertions reserved by the batch being applied
}

type slab struct {
	raw    []byte   // as returned by the allocator
	ids    []uint32 // raw viewed as entries
	lblRaw []byte
	lbls   []uint32 // parallel edge labels; nil while the graph has one edge label
	used   uint32   // bump pointer in entries
}

// Graph is the dynamic data graph.
type Graph struct {
	opts Options

	vlabel []graph.Label // per vertex
	out    []list        // per vertex; the only list on undirected graphs
	in     []list        // per vertex on directed graphs

	// spare is the vertex table's next, larger arrays, being made ready off
	// the apply path (growTable); nil when none is.
	spare *spareTable

	slabs []slab
	free  [32][]loc // free chunks by log2 of their size

	// oneVLabel holds while every vertex has the same label, firstVLabel;
	// see Order.
	oneVLabel   bool
	firstVLabel graph.Label
	born        []uint64 // bitset: ids that an update has mentioned
	vertices    int      // born vertices
	labelled    uint64   // vertex births and forgettings: see LabelEpoch
	// relabels logs the vertices of the latest births and forgettings, the
	// first at label epoch relabelsFrom (Relabelled).
	relabels     []graph.VertexID
	relabelsFrom uint64
	epoch        uint64 // batches applied
	// maxLen bounds every list's length from above once maxKnown is set
	// (MaxDegreeBound): Apply raises it, nothing lowers it.
	maxLen   uint32
	maxKnown bool

	// Edge labels: while multiLabel is false every edge carries edgeLabel and
	// no label arrays exist.
	multiLabel bool
	haveLabel  bool
	edgeLabel  graph.Label
	edges      int64

	pending bool
	touched []touch // lists with tombstones or appended entries
	moves   []move  // lists reserve moved to larger chunks
	delta   []graph.Change
	norm    normTable // edge → index into state during Apply
	state   []normState
	folder  Folder         // during ApplyFolded
	batch   []graph.Update // the batch being applied, for lookUp
	pres    []bool         // per update of the batch: its edge was in the graph before
	scr     []scratch      // per worker
	// writeLists' per-change flags (gather), and the list workers'
	// findings and longest lists
	first   []bool
	found   [][]int32
	longest []uint32
	// reserve's lists to move: per worker, all of them, and per side of
	// the batch's changes 1 + the index of its move in growAll, or 0
	grows   [][]grow
	growAll []grow
	growAt  []int32
	// splitSides' grouping of the batch's list writes by worker
	owned, ownedAt, ownedNext []int32
	shrinks                   []bool // Reorganize's: touched lists that leave their chunk
	// parallelMin is parallelMin but for tests, which lower it to run
	// the parallel paths on small batches.
	parallelMin int
}

type loc struct{ slab, off uint32 }

type touch struct {
	v  graph.VertexID
	in bool
}

// New returns an empty graph.
func New(opts Options) (*Graph, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return &Graph{opts: opts, oneVLabel: true, parallelMin: parallelMin}, nil
}

// Close returns the arenas to the allocator. The graph is unusable after.
func (g *Graph) Close() error {
	var errs []error
	for _, s := range g.slabs {
		errs = append(errs, g.opts.Alloc.Free(s.raw))
		if s.lblRaw != nil {
			errs = append(errs, g.opts.Alloc.Free(s.lblRaw))
		}
	}
	g.slabs = nil
	return errors.Join(errs...)
}

// Directed reports whether the graph is directed.
func (g *Graph) Directed() bool { return g.opts.Directed }

// NumVertices is one more than the largest vertex id seen: the size of the
// vertex table. Ids never mentioned in between are rows without edges.
func (g *Graph) NumVertices() int { return len(g.vlabel) }

// NumEdges is the number of present edges (after the pending batch).
func (g *Graph) NumEdges() int64 { return g.edges }

// VertexLabel returns the label of v. v must be below NumVertices.
func (g *Graph) VertexLabel(v graph.VertexID) graph.Label { return g.vlabel[v] }

// VertexLabels returns the label of every vertex, indexed by id. The slice
// belongs to the graph and is valid until the next Apply.
func (g *Graph) VertexLabels() []graph.Label { return g.vlabel }

// EdgeLabel reports the single edge label of the graph. ok is false when the
// graph has seen more than one edge label (then Adj carries label arrays) or
// no edge at all.
func (g *Graph) EdgeLabel() (l graph.Label, ok bool) {
	return g.edgeLabel, g.haveLabel && !g.multiLabel
}

// MultiLabel reports whether lists carry per-entry edge labels.
func (g *Graph) MultiLabel() bool { return g.multiLabel }

// Pending reports whether a batch has been applied and not yet reorganized.
func (g *Graph) Pending() bool { return g.pending }

// Delta is the pending batch's changes, as Apply returned them, whatever
// share of them a caller matches; nil when no batch is pending. The slice
// belongs to the graph.
func (g *Graph) Delta() []graph.Change {
	if !g.pending {
		return nil
	}
	return g.delta
}

// Adj is the raw view of one neighbour list. The slices alias the arenas: they
// are valid until the next Apply or Reorganize and must not be modified.
type Adj struct {
	// Sorted is the part present before the batch, sorted by (id, label).
	// Entries with the Tombstone bit set were deleted by the pending batch.
	Sorted []uint32
	// Appended holds the neighbours inserted by the pending batch, sorted.
	Appended []uint32
	// SortedLabels and AppendedLabels are the parallel edge labels; nil
	// unless MultiLabel.
	SortedLabels, AppendedLabels []graph.Label
	// Tombstones counts the tombstoned entries of Sorted.
	Tombstones int
}

// Out returns the out-list of v (the only list on undirected graphs).
func (g *Graph) Out(v graph.VertexID) Adj { return g.adj(&g.out[v]) }

// In returns the in-list of v on a directed graph; on undirected graphs it is
// the same list as Out.
func (g *Graph) In(v graph.VertexID) Adj {
	if !g.opts.Directed {
		return g.adj(&g.out[v])
	}
	return g.adj(&g.in[v])
}

func (g *Graph) adj(l *list) Adj {
	if l.cap == 0 {
		return Adj{}
	}
	s := &g.slabs[l.slab]
	ids := s.ids[l.off : l.off+l.n : l.off+l.n]
	a := Adj{Sorted: ids[:l.app], Appended: ids[l.app:], Tombstones: int(l.tomb)}
	if s.lbls != nil {
		lb := s.lbls[l.off : l.off+l.n : l.off+l.n]
		a.SortedLabels, a.AppendedLabels = lb[:l.app], lb[l.app:]
	}
	return a
}

// Degree returns the number of present neighbour entries of v in the new
// view, out-list plus in-list on directed graphs.
func (g *Graph) Degree(v graph.VertexID) int {
	d := int(g.out[v].n - g.out[v].tomb)
	if g.opts.Directed {
		d += int(g.in[v].n - g.in[v].tomb)
	}
	return d
}

// MaxDegree returns the largest list length (entries in use, any view).
func (g *Graph) MaxDegree() int {
	m := uint32(0)
	for i := range g.out {
		m = max(m, g.out[i].n)
	}
	for i := range g.in {
		m = max(m, g.in[i].n)
	}
	return int(m)
}

// MaxDegreeBound is at least MaxDegree and costs O(1) after its first call:
// the longest list since then, deletions not subtracted. A sampler that
// draws with probability 1/D stays unbiased with any D of at least the
// longest list, and a pass over the vertex table (MaxDegree) every batch cost
// 30 ms on a graph of 8M vertices.
func (g *Graph) MaxDegreeBound() int {
	if !g.maxKnown {
		g.maxLen, g.maxKnown = uint32(g.MaxDegree()), true
	}
	return int(g.maxLen)
}

// spareTable holds arrays for the vertex table, made and touched page by
// page by a goroutine of their own, which closes ready when done.
type spareTable struct {
	ready   chan struct{}
	vlabel  []graph.Label
	out, in []list
}

// spareFrom is the smallest table that makes ready a spare: below it a
// growth costs less than starting a goroutine.
const spareFrom = 1 << 16

// growTable makes room in the vertex table for n vertices. It doubles the
// table: append grows a large slice by a quarter, and a stream that keeps
// naming new accounts spent a sixth of its serial apply copying the table.
// Once the table is three quarters full its next arrays are made ready in
// the background (prepareSpare): doubling a large table in place stops the
// run loop while the kernel first touches the new pages, and such stops
// would be the service's worst alert latencies.
func (g *Graph) growTable(n int) {
	if sp := g.spare; sp != nil {
		g.spare = nil
		<-sp.ready
		if cap(sp.vlabel) >= n {
			g.vlabel = append(sp.vlabel, g.vlabel...)
			g.out = append(sp.out, g.out...)
			if g.opts.Directed {
				g.in = append(sp.in, g.in...)
			}
			return
		}
	}
	c := max(n, 2*cap(g.vlabel))
	g.vlabel = slices.Grow(g.vlabel, c-len(g.vlabel))
	g.out = slices.Grow(g.out, c-len(g.out))
	if g.opts.Directed {
		g.in = slices.Grow(g.in, c-len(g.in))
	}
}

// prepareSpare starts making the table's next arrays when it is three
// quarters full and large enough to be worth it.
func (g *Graph) prepareSpare() {
	c := cap(g.vlabel)
	if g.spare != nil || c < spareFrom || len(g.vlabel) < c/4*3 {
		return
	}
	sp := &spareTable{ready: make(chan struct{})}
	g.spare = sp
	directed := g.opts.Directed
	go func() {
		defer close(sp.ready)
		sp.vlabel = touched(make([]graph.Label, 0, 2*c))
		sp.out = touched(make([]list, 0, 2*c))
		if directed {
			sp.in = touched(make([]list, 0, 2*c))
		}
	}()
}

// touched writes a zero into each page of s's backing array, so that the
// kernel maps the pages now, and returns s.
func touched[T any](s []T) []T {
	full := s[:cap(s)]
	var zero T
	step := max(1, 4096/int(max(unsafe.Sizeof(zero), 1)))
	for i := 0; i < len(full); i += step {
		full[i] = zero
	}
	return s
}

// ensureVertex makes v exist, with label l (or the default when l is
// NoLabel), and reports a conflict when v exists with another label.
//
// Ids below v that were never mentioned get table rows too, but they are not
// born: their first mention still sets their label.
func (g *Graph) ensureVertex(v graph.VertexID, l graph.Label) error {
	if v >= graph.MaxVertices {
		return fmt.Errorf("vertex id %d out of range", v)
	}
	if g.exists(v) {
		if l != graph.NoLabel && g.vlabel[v] != l {
			return &LabelConflictError{Vertex: v, Have: g.vlabel[v], Got: l}
		}
		return nil
	}
	if n := int(v) + 1; n > cap(g.vlabel) {
		g.growTable(n)
	}
	for len(g.vlabel) <= int(v) {
		g.vlabel = append(g.vlabel, g.opts.DefaultVertexLabel)
		g.out = append(g.out, list{})
		if g.opts.Directed {
			g.in = append(g.in, list{})
		}
		if len(g.vlabel)%64 == 1 {
			g.born = append(g.born, 0)
		}
	}
	g.prepareSpare()
	if l == graph.NoLabel {
		l = g.opts.DefaultVertexLabel
	}
	g.vlabel[v] = l
	g.born[v/64] |= 1 << (v % 64)
	g.vertices++
	g.relabel(v)
	if g.vertices == 1 {
		g.firstVLabel = l
	} else if l != g.firstVLabel {
		g.oneVLabel = false
	}
	return nil
}

// Forget removes vertex v, which must have no edges, so that its id can
// be born again, with any label (a service recycles the ids of accounts
// that left its window). It must not be called while a batch is pending.
// Forgetting a vertex that does not exist does nothing.
func (g *Graph) Forget(v graph.VertexID) error {
	if g.pending {
		return errors.New("dyngraph: Forget while a batch is pending")
	}
	if !g.exists(v) {
		return nil
	}
	if g.out[v].n != 0 || (g.opts.Directed && g.in[v].n != 0) {
		return fmt.Errorf("dyngraph: Forget of vertex %d, which has edges", v)
	}
	g.born[v/64] &^= 1 << (v % 64)
	g.vlabel[v] = g.opts.DefaultVertexLabel
	g.vertices--
	g.relabel(v)
	return nil
}

// Isolated reports whether v exists and has no edges.
func (g *Graph) Isolated(v graph.VertexID) bool {
	return g.exists(v) && g.out[v].n == 0 && (!g.opts.Directed || g.in[v].n == 0)
}

// exists reports whether v has been mentioned by an update.
func (g *Graph) exists(v graph.VertexID) bool {
	return int(v) < len(g.vlabel) && g.born[v/64]&(1<<(v%64)) != 0
}

// LabelConflictError is an update that gives an existing vertex another label.
type LabelConflictError struct {
	Vertex    graph.VertexID
	Have, Got graph.Label
}

func (e *LabelConflictError) Error() string {
	return fmt.Sprintf("label conflict: vertex %d has label %d, update says %d", e.Vertex, e.Have, e.Got)
}

// ErrSelfLoop rejects an edge from a vertex to itself.
var ErrSelfLoop = errors.New("self-loop")

// AddVertex introduces v with label l, or checks that it has that label.
func (g *Graph) AddVertex(v graph.VertexID, l graph.Label) error {
	if l >= graph.NoLabel {
		return fmt.Errorf("vertex %d: label must be concrete", v)
	}
	return g.ensureVertex(v, l)
}

// --- arena allocation ---

func log2(n uint32) int { return bits.Len32(n) - 1 }

// roundCap returns the capacity class for n entries: a power of two, at least 4.
// roundCap returns the capacity class for n entries: the next power of two.
func roundCap(n uint32) uint32 {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len32(n-1)
}

func (g *Graph) alloc(c uint32) (loc, error) {
	k := log2(c)
	if f := g.free[k]; len(f) > 0 {
		l := f[len(f)-1]
		g.free[k] = f[:len(f)-1]
		return l, nil
	}
	if n := len(g.slabs); n > 0 {
		s := &g.slabs[n-1]
		if uint64(s.used)+uint64(c) <= uint64(len(s.ids)) {
			l := loc{uint32(n - 1), s.used}
			s.used += c
			return l, nil
		}
		g.retireTail(n - 1)
	}
	size := max(uint32(g.opts.SlabEntries), c)
	raw, err := g.opts.Alloc.Alloc(int(size) * 4)
	if err != nil {
		return loc{}, err
	}
	s := slab{raw: raw, ids: hostmem.Uint32s(raw), used: c}
	if g.multiLabel {
		if err := g.addLabelArray(&s); err != nil {
			_ = g.opts.Alloc.Free(raw)
			return loc{}, err
		}
	}
	g.slabs = append(g.slabs, s)
	return loc{uint32(len(g.slabs) - 1), 0}, nil
}

// retireTail hands the unused end of a full slab to the free lists in
// power-of-two chunks, so that no arena space is stranded.
func (g *Graph) retireTail(i int) {
	s := &g.slabs[i]
	rest := uint32(len(s.ids)) - s.used
	for rest > 0 {
		c := uint32(1) << log2(rest)
		// Chunks must be aligned to their size only for tidiness; the
		// allocator never requires it, so carve the largest first.
		g.free[log2(c)] = append(g.free[log2(c)], loc{uint32(i), s.used})
		s.used += c
		rest -= c
	}
}

func (g *Graph) release(l *list) {
	if l.cap == 0 {
		return
	}
	g.free[log2(l.cap)] = append(g.free[log2(l.cap)], loc{l.slab, l.off})
}

func (g *Graph) addLabelArray(s *slab) error {
	raw, err := g.opts.Alloc.Alloc(len(s.ids) * 4)
	if err != nil {
		return err
	}
	s.lblRaw, s.lbls = raw, hostmem.Uint32s(raw)
	if g.edgeLabel != 0 {
		for i := range s.lbls {
			s.lbls[i] = g.edgeLabel
		}
	}
	return nil
}

// becomeMultiLabel gives every slab a parallel label array, filled with the
// one label every existing edge has. It runs once, when a second edge label
// arrives, and costs one pass over the arenas.
func (g *Graph) becomeMultiLabel() error {
	for i := range g.slabs {
		if err := g.addLabelArray(&g.slabs[i]); err != nil {
			return fmt.Errorf("dyngraph: label arrays: %w", err)
		}
	}
	g.multiLabel = true
	return nil
}

func (g *Graph) noteEdgeLabel(l graph.Label) error {
	switch {
	case !g.haveLabel:
		g.haveLabel, g.edgeLabel = true, l
	case !g.multiLabel && l != g.edgeLabel:
		return g.becomeMultiLabel()
	}
	return nil
}

// growTo moves l to a chunk of c entries, a capacity class above its length.
func (g *Graph) growTo(l *list, c uint32) error {
	nl, err := g.alloc(c)
	if err != nil {
		return fmt.Errorf("dyngraph: growing a list to %d entries: %w", c, err)
	}
	if l.cap != 0 {
		src, dst := &g.slabs[l.slab], &g.slabs[nl.slab]
		copy(dst.ids[nl.off:nl.off+l.n], src.ids[l.off:l.off+l.n])
		if src.lbls != nil {
			copy(dst.lbls[nl.off:nl.off+l.n], src.lbls[l.off:l.off+l.n])
		}
		g.release(l)
	}
	l.slab, l.off, l.cap = nl.slab, nl.off, c
	return nil
}

// Stats describes the graph's size and memory.
type Stats struct {
	Vertices int
	Edges    int64
	// Entries is the number of neighbour entries in use (two per undirected
	// edge, one per direction of a directed edge).
	Entries int64
	// CapacityEntries is the sum of list capacities; the difference to
	// Entries is doubling slack.
	CapacityEntries int64
	// ArenaBytes is what the arenas hold, label arrays included.
	ArenaBytes int64
	// TableBytes is the per-vertex table: labels and list headers.
	TableBytes int64
	Slabs      int
	MultiLabel bool
	Allocator  string
}

// Stats returns the current sizes.
func (g *Graph) Stats() Stats {
	st := Stats{Vertices: g.vertices, Edges: g.edges, Slabs: len(g.slabs), MultiLabel: g.multiLabel, Allocator: g.opts.Alloc.Name()}
	for _, ls := range [][]list{g.out, g.in} {
		for i := range ls {
			st.Entries += int64(ls[i].n)
			st.CapacityEntries += int64(ls[i].cap)
		}
	}
	for _, s := range g.slabs {
		st.ArenaBytes += int64(len(s.raw) + len(s.lblRaw))
	}
	const listBytes = 28
	st.TableBytes = int64(len(g.vlabel))*4 + int64(len(g.out)+len(g.in))*listBytes
	return st
}

// HasEdge reports whether (src, dst, label) is present in the new view.
func (g *Graph) HasEdge(src, dst graph.VertexID, label graph.Label) bool {
	if int(src) >= len(g.vlabel) || int(dst) >= len(g.vlabel) {
		return false
	}
	if !g.multiLabel && (!g.haveLabel || label != g.edgeLabel) {
		return false // without label arrays, the search below sees ids only
	}
	a, o := g.Out(src), g.Order()
	if i, ok := o.search(a.Sorted, a.SortedLabels, dst, label); ok && a.Sorted[i]&Tombstone == 0 {
		return true
	}
	_, ok := o.search(a.Appended, a.AppendedLabels, dst, label)
	return ok
}

// TableWords is the size of one row of the per-vertex table that Table
// writes: slab, offset, length, appended start, tombstones.
const TableWords = 5

// Table appends the per-vertex table of the out-lists (in false) or in-lists
// (in true; the out-lists on undirected graphs) to dst, TableWords words per
// vertex. It is what an executor that reads the arenas in place (the GPU)
// needs to find a list; the layout of each list is the one Adj describes.
func (g *Graph) Table(dst []uint32, in bool) []uint32 {
	ls := g.out
	if in && g.opts.Directed {
		ls = g.in
	}
	for i := range ls {
		l := &ls[i]
		dst = append(dst, l.slab, l.off, l.n, l.app, l.tomb)
	}
	return dst
}

// NumSlabs is the number of arena slabs.
func (g *Graph) NumSlabs() int { return len(g.slabs) }

// Slab returns slab i's entries and, on a multi-label graph, its parallel
// edge labels (nil otherwise), as allocated: the memory the Allocator gave.
func (g *Graph) Slab(i int) (ids, labels []uint32) {
	return g.slabs[i].ids, g.slabs[i].lbls
}

// ListRef names one list: a vertex and whether it is the in-list.
type ListRef struct {
	V  graph.VertexID
	In bool
}

// Touched appends the lists the pending batch changed (tombstones or
// appended entries, possibly moved to a larger chunk) to dst. After
// Reorganize the same lists are rewritten again, so a mirror of the arenas
// must refresh them once more before the next batch.
func (g *Graph) Touched(dst []ListRef) []ListRef {
	for _, t := range g.touched {
		dst = append(dst, ListRef{t.v, t.in})
	}
	return dst
}

// Where returns the location of a list: slab, offset and length in entries.
func (g *Graph) Where(r ListRef) (slab, off, n uint32) {
	l := g.listOf(touch{r.V, r.In})
	return l.slab, l.off, l.n
}

// Row returns the table row of one list, as Table writes it.
func (g *Graph) Row(r ListRef) [TableWords]uint32 {
	l := g.listOf(touch{r.V, r.In && g.opts.Directed})
	return [TableWords]uint32{l.slab, l.off, l.n, l.app, l.tomb}
}

// Epoch counts the batches applied (Apply and Build), so that a copy of the
// graph kept elsewhere can tell whether it has seen every batch.
func (g *Graph) Epoch() uint64 { return g.epoch }

// Born is the number of vertices that updates have mentioned and Forget
// has not removed.
func (g *Graph) Born() int { return g.vertices }

// LabelEpoch changes whenever a vertex label is set or reset (a birth or a
// Forget), so a copy of VertexLabels is current while NumVertices and
// LabelEpoch are unchanged.
func (g *Graph) LabelEpoch() uint64 { return g.labelled }

// maxRelabels is how many of the latest births and forgettings the graph
// remembers for Relabelled: a copy further behind copies the labels whole.
const maxRelabels = 1 << 16

// relabel records that v's label was set or reset.
func (g *Graph) relabel(v graph.VertexID) {
	if len(g.relabels) == maxRelabels {
		n := copy(g.relabels, g.relabels[maxRelabels/2:])
		g.relabels = g.relabels[:n]
		g.relabelsFrom += maxRelabels / 2
	}
	g.relabels = append(g.relabels, v)
	g.labelled++
}

// Relabelled appends to dst the vertices whose label was set or reset since
// label epoch e (a value of LabelEpoch), a vertex once per change, and
// reports whether the graph still remembers them all; if not, a copy of
// VertexLabels as of e must be made again whole. Vertices past the copy's
// length are among them only if born since.
func (g *Graph) Relabelled(dst []graph.VertexID, e uint64) ([]graph.VertexID, bool) {
	if e < g.relabelsFrom || e > g.labelled {
		return dst, false
	}
	return append(dst, g.relabels[e-g.relabelsFrom:]...), true
}
