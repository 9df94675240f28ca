package incremental

import (
	"slices"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// walker is one worker's state: the partial match, a candidate buffer per
// depth and the lists of the constraints being intersected. Everything is
// reused from unit to unit, so the walk allocates only when a candidate
// buffer first grows past its high-water mark.
type walker struct {
	id    int
	g     *dyngraph.Graph
	vl    []graph.Label
	ord   dyngraph.Order
	multi bool

	mode Mode
	sink Sink
	// stop, when set, is asked every stopEvery steps whether the unit's
	// query is to be abandoned (CPU.SetStop); stopped ends the unit's walk.
	stop    func(q int) bool
	stopped bool
	steps   uint32

	// The unit being walked.
	qi    int
	q     *query.Query
	plan  *query.Plan
	sign  graph.Sign
	views [query.MaxVertices][query.MaxVertices]query.View // per level, per constraint

	m    [query.MaxVertices]graph.VertexID // data vertex at each depth
	out  [query.MaxVertices]graph.VertexID // data vertex of each query vertex
	cand [query.MaxVertices][]graph.VertexID
	// The lists of each level's constraints, with the data vertex they
	// belong to plus one (zero: none yet). Within a unit the same vertex
	// recurs at a level for many partial matches (in a tree query the
	// last vertex hangs off a vertex placed long before), so the lists and
	// the last level's count are kept until the vertex changes. On the
	// human suite this halved matching time.
	adj      [query.MaxVertices][query.MaxVertices][2]dyngraph.Adj
	nadj     [query.MaxVertices][query.MaxVertices]int
	adjOf    [query.MaxVertices][query.MaxVertices]uint32
	lastN    [query.MaxVertices]int64 // countLast's fast-path count for adjOf
	lastNSet [query.MaxVertices]bool
	// While a driver's label range is walked in ascending order, the
	// other constraints' lists that hold no pending change are searched
	// forward from where the last candidate left them (seek.go).
	seeking        [query.MaxVertices][query.MaxVertices]bool
	seekAt, seekTo [query.MaxVertices][query.MaxVertices]int32

	count    graph.Count
	pos, neg []graph.Count // per query, runUnits' counts

	// Counting a term (countwalk.go): the CPU's counting terms, and the
	// unit's counted tail, its groups and the factor its count takes.
	counting []queryTerms
	tail     int
	groups   [][]int
	factor   int64
	picks
	// raw makes the vertex checks leave out injectivity, for a tail
	// level's candidates kept while its lists are (rawKept).
	raw     bool
	rawKept [query.MaxVertices]bool
	// closing keeps a cycle's closing counts per pair (countClosing) for
	// the unit numbered unit.
	closing map[uint64]closingCount
	unit    uint64
	// nlf is the CPU's neighbour label masks, need the unit's per level
	// (nlf.go); need is nil where the filter is off.
	nlf  []uint64
	need []uint64

	// filter is the CPU's EdgeFilter; qf is the unit's query's, and filt
	// says which constraints of each level it filters.
	filter EdgeFilter
	qf     QueryFilter
	filt   [query.MaxVertices][query.MaxVertices]bool

	// collect, when set, makes orient stop at level 2 and record seeds for
	// a split batch (see matchSplit); ch is the change being seeded.
	collect *[]seed
	ch      int32
}

// setUnit prepares the walker for units of plan p of query q with the given
// sign; term is the plan's update edge or -1 for a static plan.
func (w *walker) setUnit(qi int, q *query.Query, p *query.Plan, sign graph.Sign) {
	w.qi, w.q, w.plan, w.sign = qi, q, p, sign
	w.unit++
	w.tail, w.groups, w.factor, w.need = len(p.Levels), nil, 1, nil
	w.stopped = w.stop != nil && w.stop(qi)
	w.qf = nil
	if w.filter != nil && p.Edge >= 0 {
		w.qf = w.filter.For(q)
	}
	for d := range p.Levels {
		w.lastNSet[d], w.rawKept[d] = false, false
		for c, con := range p.Levels[d].Cons {
			w.filt[d][c] = w.qf != nil && w.qf.Filtered(con.Edge)
			w.adjOf[d][c] = 0
			if p.Edge < 0 {
				w.views[d][c] = query.ViewNew
			} else {
				w.views[d][c] = query.TermView(con.Edge, p.Edge, sign)
			}
		}
	}
}

// simple reports whether a constraint's view can be read entry by entry: one
// list, and either one edge label in the graph or a concrete label, so that
// at most one entry per neighbour can satisfy it.
func (w *walker) simple(c *query.Constraint) bool {
	return c.Dir != query.Any && (!w.multi || c.Label != graph.Wildcard)
}

// loadLists fetches the lists of every constraint of level d, unless they
// are those of the vertices already cached.
func (w *walker) loadLists(d int) {
	for i := range w.plan.Levels[d].Cons {
		c := &w.plan.Levels[d].Cons[i]
		x := w.m[c.From]
		if w.adjOf[d][i] == x+1 {
			continue
		}
		w.adjOf[d][i] = x + 1
		w.lastNSet[d], w.rawKept[d] = false, false
		a := &w.adj[d][i]
		switch c.Dir {
		case query.Out:
			a[0], w.nadj[d][i] = w.g.Out(x), 1
		case query.In:
			a[0], w.nadj[d][i] = w.g.In(x), 1
		default:
			a[0], a[1], w.nadj[d][i] = w.g.Out(x), w.g.In(x), 2
		}
	}
}

// check applies constraint i of level d to candidate v.
func (w *walker) check(d, i int, v uint32) bool {
	if w.seeking[d][i] {
		in := w.seek(d, i, v)
		return w.views[d][i].HoldsEntry(in, in, in)
	}
	c := &w.plan.Levels[d].Cons[i]
	if w.nadj[d][i] == 1 && (!w.multi || c.Label != graph.Wildcard) {
		return w.views[d][i].HoldsEntry(w.ord.Probe(&w.adj[d][i][0], v, c.Label))
	}
	var inOld, inNew bool
	for k := 0; k < w.nadj[d][i]; k++ {
		o, n, _ := w.ord.Probe(&w.adj[d][i][k], v, c.Label)
		inOld, inNew = inOld || o, inNew || n
	}
	return w.views[d][i].Holds(inOld, inNew)
}

// admissible applies the vertex checks of level d (label, injectivity,
// symmetry breaking) to v.
func (w *walker) admissible(d int, v uint32) bool {
	lv := &w.plan.Levels[d]
	if lv.Label != graph.Wildcard && w.vl[v] != lv.Label {
		return false
	}
	if w.need != nil && w.nlf[v]&w.need[d] != w.need[d] {
		return false
	}
	if !w.raw {
		for k := 0; k < d; k++ {
			if w.m[k] == v {
				return false
			}
		}
	}
	for _, a := range lv.Above {
		if v <= w.m[a] {
			return false
		}
	}
	for _, b := range lv.Below {
		if v >= w.m[b] {
			return false
		}
	}
	return true
}

// extend places levels d.. of the plan given levels 0..d-1.
func (w *walker) extend(d int) {
	if w.stop != nil {
		if w.steps++; w.steps%stopEvery == 0 && w.stop(w.qi) {
			w.stopped = true
		}
		if w.stopped {
			return
		}
	}
	n := len(w.plan.Levels)
	if d == n {
		w.emit()
		return
	}
	if d == w.tail {
		w.count = w.count.Add(w.countTail(d))
		return
	}
	w.loadLists(d)
	if w.mode == Count && d == n-1 {
		w.count = w.count.AddUint64(uint64(w.countLast(d)))
		return
	}
	buf := w.candidates(d, w.cand[d][:0])
	w.cand[d] = buf
	for _, v := range buf {
		if w.stopped {
			return
		}
		w.m[d] = v
		w.extend(d + 1)
	}
}

// stopEvery is how many steps a walker takes between two calls of its stop
// function: a few microseconds of walking, so a stop takes effect at once
// while the call stays off the profile.
const stopEvery = 1024

func (w *walker) emit() {
	w.count = w.count.AddUint64(1)
	if w.mode != Enumerate {
		return
	}
	for d := range w.plan.Levels {
		w.out[w.plan.Levels[d].Vertex] = w.m[d]
	}
	w.sink(w.id, w.qi, w.sign, w.out[:len(w.plan.Levels)])
}

// countLast counts the candidates of the last level without enumerating
// them. With a single constraint and no filter beyond the vertex label, the
// count is the size of the label's range of the list in the constraint's
// view, less the matched vertices in it.
func (w *walker) countLast(d int) int64 {
	lv := &w.plan.Levels[d]
	if len(lv.Cons) == 1 && !w.multi && w.nadj[d][0] == 1 &&
		len(lv.Above) == 0 && len(lv.Below) == 0 {
		a := &w.adj[d][0][0]
		vw := w.views[d][0]
		if !w.lastNSet[d] {
			w.lastN[d], w.lastNSet[d] = int64(w.viewCount(a, vw, lv.Label)), true
		}
		n := w.lastN[d]
		for k := 0; k < d; k++ {
			v := w.m[k]
			if lv.Label != graph.Wildcard && w.vl[v] != lv.Label {
				continue
			}
			if vw.HoldsEntry(w.ord.Probe(a, v, graph.Wildcard)) {
				n--
			}
		}
		return n
	}
	if len(lv.Cons) == 2 && len(lv.Above) == 0 && len(lv.Below) == 0 {
		return w.countClosing(d)
	}
	buf := w.candidates(d, w.cand[d][:0])
	w.cand[d] = buf
	return int64(len(buf))
}

// countClosing counts the candidates of a last level that closes a cycle:
// the intersection of two lists. The same two vertices recur under many
// partial matches (a 5-cycle's closing vertex joins the ends of two paths
// out of the update edge, and the ends repeat across the middles), so the
// intersection's size, taken without the injectivity check, is kept per
// pair for the unit, and the placed vertices in it are taken off each
// time. On the wiki-Vote suite's 5-cycle with a pendant (Q_6) it cut a
// third of the matching time.
func (w *walker) countClosing(d int) int64 {
	lv := &w.plan.Levels[d]
	key := uint64(w.m[lv.Cons[0].From])<<32 | uint64(w.m[lv.Cons[1].From])
	e, ok := w.closing[key]
	if !ok || e.unit != w.unit {
		w.raw = true
		buf := w.candidates(d, w.cand[d][:0])
		w.raw = false
		w.cand[d] = buf
		if len(w.closing) >= maxClosing {
			clear(w.closing)
		}
		e = closingCount{w.unit, int64(len(buf))}
		w.closing[key] = e
	}
	n := e.n
	w.raw = true
	for k := 0; k < d; k++ {
		if w.accept(d, -1, w.m[k], true) {
			n--
		}
	}
	w.raw = false
	return n
}

// closingCount is a closing level's count for a pair of vertices, valid
// in the unit it was taken in.
type closingCount struct {
	unit uint64
	n    int64
}

// maxClosing bounds the pairs a walker keeps, a few tens of MiB.
const maxClosing = 1 << 20

// viewCount is the number of entries of a in view vw whose vertex has label
// l (any label for graph.Wildcard), on a single-edge-label graph.
func (w *walker) viewCount(a *dyngraph.Adj, vw query.View, l graph.Label) int {
	if l == graph.Wildcard {
		return viewSize(a, vw)
	}
	lo, hi := w.ord.Range(a.Sorted, l)
	n := hi - lo
	if vw != query.ViewOld && a.Tombstones > 0 {
		for _, e := range a.Sorted[lo:hi] {
			if e&dyngraph.Tombstone != 0 {
				n--
			}
		}
	}
	if vw == query.ViewNew {
		lo, hi := w.ord.Range(a.Appended, l)
		n += hi - lo
	}
	return n
}

// candidates appends to dst every data vertex that can be placed at level d:
// the intersection of the constraints' lists, each in its own view, filtered
// by the vertex checks. The driver is the shortest list; the others are
// probed by binary search, so the cost is O(min · k · log max), the
// worst-case-optimal bound up to the log factor.
func (w *walker) candidates(d int, dst []graph.VertexID) []graph.VertexID {
	lv := &w.plan.Levels[d]
	drv, best := 0, -1
	for i := range lv.Cons {
		size := 0
		for k := 0; k < w.nadj[d][i]; k++ {
			size += len(w.adj[d][i][k].Sorted) + len(w.adj[d][i][k].Appended)
		}
		if best < 0 || size < best {
			drv, best = i, size
		}
	}
	if w.simple(&lv.Cons[drv]) {
		return w.driveSimple(d, drv, dst)
	}
	return w.driveGeneral(d, drv, dst)
}

func (w *walker) accept(d, drv int, v uint32, checkDriver bool) bool {
	if !w.admissible(d, v) {
		return false
	}
	for i := range w.plan.Levels[d].Cons {
		if (i != drv || checkDriver) && !w.check(d, i, v) {
			return false
		}
	}
	return w.qf == nil || w.pairsHold(d, v)
}

// driveSimple walks the driver's entries in its view, within the range of
// the level's vertex label; each entry is itself proof that the driver
// constraint holds.
func (w *walker) driveSimple(d, drv int, dst []graph.VertexID) []graph.VertexID {
	lv := &w.plan.Levels[d]
	c := &lv.Cons[drv]
	a := &w.adj[d][drv][0]
	vw := w.views[d][drv]
	dst = w.driveRange(d, drv, a.Sorted, a.SortedLabels, c.Label, vw == query.ViewOld, dst)
	if vw == query.ViewNew {
		dst = w.driveRange(d, drv, a.Appended, a.AppendedLabels, c.Label, false, dst)
	}
	return dst
}

func (w *walker) driveRange(d, drv int, part []uint32, lbls []graph.Label, elabel graph.Label, tombstones bool, dst []graph.VertexID) []graph.VertexID {
	lo, hi := 0, len(part)
	if l := w.plan.Levels[d].Label; l != graph.Wildcard {
		lo, hi = w.ord.Range(part, l)
		w.seekFrom(d, drv, l)
		defer w.seekOff(d)
	}
	for i := lo; i < hi; i++ {
		e := part[i]
		if e&dyngraph.Tombstone != 0 && !tombstones {
			continue
		}
		if lbls != nil && elabel != graph.Wildcard && lbls[i] != elabel {
			continue
		}
		if v := e & dyngraph.IDMask; w.accept(d, drv, v, false) {
			dst = append(dst, v)
		}
	}
	return dst
}

// driveGeneral handles a driver that spans two lists or matches any of
// several edge labels: one neighbour may have several entries, and whether
// the constraint holds depends on all of them. It collects the distinct
// neighbours, then checks the driver like any other constraint.
func (w *walker) driveGeneral(d, drv int, dst []graph.VertexID) []graph.VertexID {
	start := len(dst)
	for k := 0; k < w.nadj[d][drv]; k++ {
		a := &w.adj[d][drv][k]
		for _, e := range a.Sorted {
			dst = append(dst, e&dyngraph.IDMask)
		}
		if w.views[d][drv] == query.ViewNew {
			dst = append(dst, a.Appended...)
		}
	}
	seg := dst[start:]
	slices.Sort(seg)
	seg = slices.Compact(seg)
	out := dst[:start]
	for _, v := range seg {
		if w.accept(d, drv, v, true) {
			out = append(out, v)
		}
	}
	return out
}
