package sampler

import (
	"math"
	"math/bits"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// The matching tree of a term (paper IV-A, Fig. 4) as the incremental CPU
// walker builds it:
//
//   - the root, at depth 1, is one orientation (x, y) of an update edge
//     mapped onto the term's query edge: plan levels 0 and 1 placed;
//   - a node at depth d has plan levels 0..d placed, and its children are
//     the candidates of level d+1: the intersection of the lists of level
//     d+1's constraints, each in the view of its query edge (docs/architecture.md),
//     filtered by vertex label, injectivity and symmetry breaking;
//   - a node reads the lists of level d+1's constraints (the lists of the
//     matched vertices that constrain the next query vertex); the root also
//     reads the lists the walker probes before it starts (the flip check and
//     level 1's constraints). A list read twice by one node counts once.
//   - the leaves, full matches at depth n-1, read nothing, so the walks never
//     create them: the last level's candidate set is read (counted, in Count
//     mode) but not enumerated.
//
// The candidate sets are computed exactly as the walker computes them, with
// the same views and filters, so the estimate is of the reads the matchers
// really make, and Exact is the walker's tree. A candidate is found through
// a slot of the driver (the constraint whose lists, within the level's label
// range, are shortest): every entry of the driver's lists that its view can
// hold is a slot, and each candidate owns exactly one (see slot). A walk at
// a node picks one of D slots uniformly (D >= any slot count) and continues
// iff the slot is a candidate's; so it reaches each child with probability
// exactly 1/D, as in the paper, without computing the whole candidate set.
// Weighted walks (Options.Weighted) pick one of the node's own L slots
// instead, and what each stands for is multiplied by L (walker.wt).

// u128 is an unsigned 128-bit accumulator. A walk step at depth d adds
// B·D^(d-1) to each list it reads; integers make the sum independent of the
// order in which workers add, and 128 bits hold D^(n-2)·M for any realistic
// D and pattern size. Arithmetic saturates instead of wrapping.
type u128 struct{ hi, lo uint64 }

var u128Max = u128{^uint64(0), ^uint64(0)}

func (a u128) add(b u128) u128 {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, c := bits.Add64(a.hi, b.hi, c)
	if c != 0 {
		return u128Max
	}
	return u128{hi, lo}
}

func (a u128) mul(b uint64) u128 {
	h1, lo := bits.Mul64(a.lo, b)
	h2, l2 := bits.Mul64(a.hi, b)
	hi, c := bits.Add64(h1, l2, 0)
	if h2 != 0 || c != 0 {
		return u128Max
	}
	return u128{hi, lo}
}

func (a u128) isZero() bool { return a.hi == 0 && a.lo == 0 }

func (a u128) float() float64 { return float64(a.hi)*0x1p64 + float64(a.lo) }

// config is what every walker of a pass shares, read-only.
type config struct {
	g        *dyngraph.Graph
	vl       []graph.Label
	ord      dyngraph.Order
	multi    bool
	directed bool
	delta    []graph.Change
	queries  []*query.Query
	live     []bool // per query: can match on the graph's edge labels
	plans    Plans
	// terms are the live queries' terms: a unit of work is a term at an
	// update edge, unit u = ci·len(terms) + j.
	terms []termRef

	exact  bool   // visit every node once (Exact) instead of sampling
	leaves bool   // tests: also count the leaves (matches)
	walks  uint64 // M of this pass
	pRoot  float64
	d      uint64                  // D: no driver has more slots
	pow    [query.MaxVertices]u128 // pow[d] = D^(d-1)
	// boost is K (Options.Boost): sums count in units of 1/K, so every
	// walk's step adds powK[d] = K·D^(d-1), but a boosted one, K times as
	// many, pow[d].
	boost uint64
	powK  [query.MaxVertices]u128
	// weighted: a walk picks one of the node's own L slots, not one of D,
	// and carries the product of the L's (Options.Weighted).
	weighted bool
	seed     uint64
	pass     int
}

// slotSet is a driver's slots: up to four list parts (out/in × sorted/
// appended), each cut to the level's label range, with their edge labels
// on multi-label graphs.
type slotSet struct {
	p     [4][]uint32
	lbl   [4][]graph.Label
	n     int // parts in use
	total int
	drv   int // the driver's constraint
	// simple: the driver reads one list with at most one entry per
	// neighbour that can satisfy it (the CPU walker's driveSimple), so an
	// entry of the right label and tombstone state is itself the proof,
	// and the candidate's only slot.
	simple bool
	label  graph.Label
	vw     query.View
}

func (s *slotSet) add(part []uint32, lbl []graph.Label) {
	if len(part) == 0 {
		return
	}
	s.p[s.n], s.lbl[s.n] = part, lbl
	s.n++
	s.total += len(part)
}

// walker walks the trees of whole update edges. All its state is reused
// from edge to edge and from batch to batch; after warm-up a walk allocates
// nothing.
type walker struct {
	c   *config
	rng rng

	q     *query.Query
	plan  *query.Plan
	sign  graph.Sign
	views [query.MaxVertices][query.MaxVertices]query.View

	m     [query.MaxVertices]graph.VertexID
	adj   [query.MaxVertices][query.MaxVertices][2]dyngraph.Adj
	nadj  [query.MaxVertices][query.MaxVertices]int8
	adjOf [query.MaxVertices][query.MaxVertices]uint32 // vertex+1 whose lists adj holds; 0: none
	sl    [query.MaxVertices]slotSet
	// wt[d] is what one walk at the current node of depth d stands for:
	// K·D^(d-1) (the paper's), or, with config.weighted, the product of
	// the slot counts on the node's path; D^(d-1) at boosted depth.
	wt [query.MaxVertices]u128
	// boosted is the level whose candidates get K walks for each of the
	// paper's (config.boost): a four-vertex term's second; 0 for none.
	boosted int

	// The distinct lists the current node reads.
	nk  [2*query.MaxVertices + 2]uint32
	nnk int

	// Sampling: Σ B·D^(d-1) per list, over the pass.
	acc sums
	// cuts remembers label ranges of long list parts (labelRange).
	cuts cutCache
	// Exact: reads per list.
	ex []uint64

	steps int64
	roots int64 // steps at the roots
	// tree is Σ B·D^(d-1) over the nodes visited: the same estimator as a
	// list's, of the number of nodes, which is the matching's work.
	tree   u128
	nodes  [query.MaxVertices]uint64 // tests: nodes per depth (exact)
	nleafs uint64                    // tests: leaves (exact, with c.leaves)
}

func (w *walker) key(v graph.VertexID, in bool) uint32 {
	return ListKey(v, in, w.c.directed)
}

// termRef names term t of query q.
type termRef struct{ q, t int32 }

// units is the number of work units of a pass.
func (c *config) units() int { return len(c.delta) * len(c.terms) }

// runUnit walks the trees of unit u: one term rooted at one update edge, in
// both orientations. Units, not edges, are what the workers share: one edge
// at a hub can hold most of a small batch's work, and its terms at least
// go to different workers. Each unit draws from its own random stream, so
// the estimate does not depend on which worker runs it.
func (w *walker) runUnit(u int) {
	c := w.c
	ch := &c.delta[u/len(c.terms)]
	tr := c.terms[u%len(c.terms)]
	q := c.queries[tr.q]
	e := q.Edges[tr.t]
	if e.Label != graph.Wildcard && e.Label != ch.Label {
		return
	}
	if !c.exact {
		w.rng.seed(c.seed, c.pass, u)
	}
	plans := q.Terms
	if c.plans == CountTerms {
		plans = q.CountTerms
	}
	w.setUnit(q, &plans[tr.t], ch.Sign)
	w.root(e, ch, ch.Src, ch.Dst)
	if !e.Directed {
		w.root(e, ch, ch.Dst, ch.Src)
	}
}

func (w *walker) setUnit(q *query.Query, p *query.Plan, sign graph.Sign) {
	w.q, w.plan, w.sign = q, p, sign
	w.boosted = 0
	if w.c.boost > 1 && len(p.Levels) == 4 {
		w.boosted = 2
	}
	for d := range p.Levels {
		for i, con := range p.Levels[d].Cons {
			w.views[d][i] = query.TermView(con.Edge, p.Edge, sign)
			w.adjOf[d][i] = 0
		}
	}
}

// root is the tree node of orientation (x, y): the walker's orient.
func (w *walker) root(e query.QEdge, ch *graph.Change, x, y graph.VertexID) {
	c := w.c
	lv := w.plan.Levels
	if (lv[0].Label != graph.Wildcard && c.vl[x] != lv[0].Label) ||
		(lv[1].Label != graph.Wildcard && c.vl[y] != lv[1].Label) {
		return // not a node: the walker reads nothing for it
	}
	b := uint64(1)
	if !c.exact {
		if b = w.rng.round(float64(c.walks) * c.pRoot); b == 0 {
			return
		}
	}
	w.m[0], w.m[1] = x, y
	w.wt[1] = u128{lo: max(c.boost, 1)}
	if !w.admissible(1, y) {
		return
	}
	w.nnk = 0
	if (c.multi && e.Label == graph.Wildcard) || (w.q.Directed && !e.Directed) {
		w.addKey(w.key(x, false))
		if w.q.Directed && !e.Directed {
			w.addKey(w.key(x, true))
		}
		if !w.c.g.StandsForFlip(ch, x, y, e.Label, w.q.Directed && !e.Directed) {
			w.visit(1, b)
			w.flush(1, b)
			return
		}
	}
	w.loadLists(1, true)
	for i := range lv[1].Cons {
		if !w.check(1, i, y) {
			w.visit(1, b)
			w.flush(1, b)
			return
		}
	}
	w.node(1, b)
}

// node visits the node at depth d (levels 0..d placed) that b walks reached.
func (w *walker) node(d int, b uint64) {
	w.visit(d, b)
	n := len(w.plan.Levels)
	if d+1 < n {
		// Below the last reading depth only the keys are needed: the
		// lists themselves are opened only to find children.
		w.loadLists(d+1, d+2 < n || w.c.leaves)
	}
	w.flush(d, b)
	switch {
	case d+2 < n:
		w.expand(d+1, b)
	case d+1 == n-1 && w.c.leaves:
		w.countLeaves(d + 1)
	case d == n-1 && w.c.leaves:
		w.nleafs++ // a one-edge pattern: the root is the match
	}
}

// visit counts a node at depth d that b walks reached.
func (w *walker) visit(d int, b uint64) {
	w.steps++
	if d == 1 {
		w.roots++
	}
	if w.c.exact {
		w.nodes[d]++
		return
	}
	w.tree = w.tree.add(w.wt[d].mul(b))
}

// loadLists fetches the lists of level lv's constraints and notes them as
// read by the current node.
//
// The lists stay loaded while the constraining vertex does not change, as
// in the CPU walker: deep levels often hang off a vertex placed long before.
// That took a quarter off a sampled step. With open false only the keys
// are noted.
func (w *walker) loadLists(lv int, open bool) {
	g := w.c.g
	for i := range w.plan.Levels[lv].Cons {
		con := &w.plan.Levels[lv].Cons[i]
		x := w.m[con.From]
		switch con.Dir {
		case query.Out:
			w.addKey(w.key(x, false))
		case query.In:
			w.addKey(w.key(x, true))
		default:
			w.addKey(w.key(x, false))
			w.addKey(w.key(x, true))
		}
		if !open || w.adjOf[lv][i] == x+1 {
			continue
		}
		w.adjOf[lv][i] = x + 1
		a := &w.adj[lv][i]
		switch con.Dir {
		case query.Out:
			a[0], w.nadj[lv][i] = g.Out(x), 1
		case query.In:
			a[0], w.nadj[lv][i] = g.In(x), 1
		default:
			a[0], a[1], w.nadj[lv][i] = g.Out(x), g.In(x), 2
		}
	}
}

func (w *walker) addKey(k uint32) {
	for _, have := range w.nk[:w.nnk] {
		if have == k {
			return
		}
	}
	w.nk[w.nnk] = k
	w.nnk++
}

// flush credits the current node's reads: b walks at depth d stand for
// b·|ΔE|·D^(d-1)/M reads each (formula 3); the common factor |ΔE|/M is
// applied when the estimate is read out.
func (w *walker) flush(d int, b uint64) {
	if w.c.exact {
		for _, k := range w.nk[:w.nnk] {
			w.ex[k]++
		}
		w.nnk = 0
		return
	}
	add := w.wt[d].mul(b)
	for _, k := range w.nk[:w.nnk] {
		w.acc.add(k, add)
	}
	w.nnk = 0
}

// check applies constraint i of level lv to candidate v.
func (w *walker) check(lv, i int, v uint32) bool {
	con := &w.plan.Levels[lv].Cons[i]
	var inOld, inNew bool
	for k := 0; k < int(w.nadj[lv][i]); k++ {
		o, n, _ := w.c.ord.Probe(&w.adj[lv][i][k], v, con.Label)
		inOld, inNew = inOld || o, inNew || n
	}
	return w.views[lv][i].Holds(inOld, inNew)
}

// admissible applies level lv's vertex checks: label, injectivity and
// symmetry breaking.
func (w *walker) admissible(lv int, v uint32) bool {
	l := &w.plan.Levels[lv]
	if l.Label != graph.Wildcard && w.c.vl[v] != l.Label {
		return false
	}
	for k := 0; k < lv; k++ {
		if w.m[k] == v {
			return false
		}
	}
	for _, a := range l.Above {
		if v <= w.m[a] {
			return false
		}
	}
	for _, b := range l.Below {
		if v >= w.m[b] {
			return false
		}
	}
	return true
}

// slots picks level lv's driver and returns its number of slots.
func (w *walker) slots(lv int) int {
	l := &w.plan.Levels[lv]
	best := -1
	for i := range l.Cons {
		con := &l.Cons[i]
		s := slotSet{drv: i, vw: w.views[lv][i], label: con.Label,
			simple: con.Dir != query.Any && (!w.c.multi || con.Label != graph.Wildcard)}
		for k := 0; k < int(w.nadj[lv][i]); k++ {
			a := &w.adj[lv][i][k]
			s.add(w.labelRange(a.Sorted, a.SortedLabels, l.Label))
			if s.vw == query.ViewNew {
				// Appended entries exist only in the new view.
				s.add(w.labelRange(a.Appended, a.AppendedLabels, l.Label))
			}
		}
		if best < 0 || s.total < w.sl[lv].total {
			best, w.sl[lv] = i, s
		}
	}
	return w.sl[lv].total
}

// labelRange cuts a list part, and its edge labels, to the neighbours of
// vertex label l.
func (w *walker) labelRange(part []uint32, lbl []graph.Label, l graph.Label) ([]uint32, []graph.Label) {
	if l == graph.Wildcard || len(part) == 0 {
		return part, lbl
	}
	lo, hi := w.cuts.rangeOf(w.c.ord, part, l)
	if lbl != nil {
		lbl = lbl[lo:hi]
	}
	return part[lo:hi], lbl
}

// slot returns the vertex of slot j of level lv's driver, whether the slot
// is that vertex's one slot, and whether the entry proves the driver's
// constraint. A simple driver's slot is the vertex's entry with the
// constraint's label, in the view's tombstone state; any other driver's
// is the vertex's first entry, and its constraint is checked like the
// others.
func (w *walker) slot(lv, j int) (v uint32, ok, proven bool) {
	s := &w.sl[lv]
	p := 0
	for j >= len(s.p[p]) {
		j -= len(s.p[p])
		p++
	}
	part := s.p[p]
	e := part[j]
	v = e & dyngraph.IDMask
	if s.simple {
		if e&dyngraph.Tombstone != 0 && s.vw != query.ViewOld {
			return v, false, false
		}
		if lbl := s.lbl[p]; lbl != nil && s.label != graph.Wildcard && lbl[j] != s.label {
			return v, false, false
		}
		return v, true, true
	}
	if j > 0 && part[j-1]&dyngraph.IDMask == v {
		return v, false, false
	}
	for q := 0; q < p; q++ {
		if _, found := w.c.ord.Search(s.p[q], v); found {
			return v, false, false
		}
	}
	return v, true, false
}

// candidate reports whether slot j of level lv holds a candidate.
func (w *walker) candidate(lv, j int) (uint32, bool) {
	v, ok, proven := w.slot(lv, j)
	if !ok || !w.admissible(lv, v) {
		return v, false
	}
	drv := w.sl[lv].drv
	for i := range w.plan.Levels[lv].Cons {
		if (i != drv || !proven) && !w.check(lv, i, v) {
			return v, false
		}
	}
	return v, true
}

// expand sends the b walks at the current node on to level lv's candidates.
// In exact mode it visits every candidate once.
//
// Each walk picks one of S slots, S = D (the paper's walks) or the driver's
// own L (weighted ones), and goes on iff the slot is a candidate's; slots
// past L are never candidates. The b walks pick systematically rather than
// independently: a comb of b teeth, spaced S/b apart from a uniform random
// offset, and slot j takes the teeth that fall in [j, j+1). Each slot then
// gets b/S walks in expectation, as the paper's Bin(b, 1/D) per child
// gives, so the estimate stays unbiased; but the counts vary far less than
// independent picks' (by less than one walk per slot, and a slot the comb
// passes over is one of a spread-out sample of the list rather than a
// clump), which is what sampled coverage needs when walks are few. The
// comb costs O(teeth) when walks are sparse and O(L) when they are dense.
func (w *walker) expand(lv int, b uint64) {
	L := w.slots(lv)
	if L == 0 {
		return
	}
	if w.c.exact {
		for j := range L {
			if v, ok := w.candidate(lv, j); ok {
				w.m[lv] = v
				w.node(lv, 1)
			}
		}
		return
	}
	if uint64(L) > w.c.d {
		panic("BUG: sampler: a driver has more slots than the maximum degree")
	}
	S := w.c.d
	switch {
	case w.c.weighted:
		S = uint64(L)
		w.wt[lv] = w.wt[lv-1].mul(uint64(L))
	case lv == w.boosted:
		b *= w.c.boost // at most 2^40·2^20
		w.wt[lv] = w.c.pow[lv]
	default:
		w.wt[lv] = w.c.powK[lv]
	}
	r := float64(b) / float64(S) // teeth per slot
	u := w.rng.float64()
	if r*8 <= 1 {
		// Sparse: at least 8 slots between teeth, so each tooth is its own
		// slot. Tooth i lies at (i+u)/r.
		for i := 0; ; i++ {
			x := (float64(i) + u) / r
			if x >= float64(L) {
				return
			}
			w.try(lv, int(x), 1)
		}
	}
	// Dense: slot j holds the teeth i with j·r-u <= i < (j+1)·r-u.
	prev := math.Ceil(-u)
	for j := range L {
		next := math.Ceil(float64(j+1)*r - u)
		if c := next - prev; c > 0 {
			w.try(lv, j, uint64(c))
		}
		prev = next
	}
}

// try sends b walks to slot j of level lv, if it holds a candidate.
func (w *walker) try(lv, j int, b uint64) {
	if v, ok := w.candidate(lv, j); ok {
		w.m[lv] = v
		w.node(lv, b)
	}
}

// countLeaves counts the candidates of the last level: the matches under
// the current node (tests compare them with a brute-force delta).
func (w *walker) countLeaves(lv int) {
	L := w.slots(lv)
	for j := range L {
		if _, ok := w.candidate(lv, j); ok {
			w.nleafs++
		}
	}
}
