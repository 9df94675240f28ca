package incremental

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// Metamorphic tests (STYLE.md 12): on graphs far beyond the brute-force
// oracle's reach (hundreds to thousands of vertices, uniform and R-MAT
// power-law, several vertex labels, one or two edge labels, both directions)
// the engine must agree with itself under transformations that cannot
// change the answer:
//
//   - any worker count gives the same per-batch counts;
//   - any batch size gives the same net count over a stream, and that net
//     count is the change of the static count across the stream;
//   - a batch followed by its inverse gives equal and opposite counts;
//   - Enumerate emits exactly the count-mode totals, each (sign, map) once,
//     and every emitted map is a match that flipped;
//   - instances × |Aut| = embeddings, per batch.
//
// Every scenario compiles each random pattern twice, under embeddings and
// under instances semantics: queries[2i] and queries[2i+1].

// mmConfig describes one family of scenarios.
type mmConfig struct {
	name     string
	directed bool
	multi    bool // two edge labels, with parallel edges between the same pairs
	// lateMulti keeps the second edge label out of the initial graph: the
	// stream brings it, so the graph grows label arrays mid-stream.
	lateMulti bool
	// newLabel, when set, is the label of the vertices that the stream
	// introduces. With one initial vertex label (nvl = 1, "B") and newLabel
	// "A", the graph's list order changes mid-stream from ids to (label,
	// id), with the new label sorting first.
	newLabel string
	powerLaw bool // R-MAT with 2^scale vertices; else nv uniform vertices
	scale    int
	nv       int
	ne       int // edge draws
	nvl      int // vertex labels, skewed
	patterns int
	stream   int // stream length in updates
}

var mmConfigs = []mmConfig{
	{name: "undirected-uniform", nv: 1500, ne: 4500, nvl: 3, patterns: 6, stream: 500},
	{name: "undirected-rmat", powerLaw: true, scale: 10, ne: 4000, nvl: 2, patterns: 6, stream: 500},
	{name: "directed-rmat", directed: true, powerLaw: true, scale: 11, ne: 6000, nvl: 3, patterns: 6, stream: 500},
	{name: "undirected-multilabel", multi: true, nv: 600, ne: 2000, nvl: 2, patterns: 6, stream: 400},
	{name: "directed-multilabel-rmat", directed: true, multi: true, powerLaw: true, scale: 10, ne: 3000, nvl: 3, patterns: 6, stream: 400},
	{name: "directed-onelabel", directed: true, nv: 800, ne: 2400, nvl: 1, patterns: 5, stream: 400},
	{name: "undirected-late-multilabel", multi: true, lateMulti: true, nv: 800, ne: 2400, nvl: 2, patterns: 5, stream: 400},
	{name: "directed-late-vertexlabel", directed: true, nv: 600, ne: 2400, nvl: 1, newLabel: "A", patterns: 5, stream: 600},
}

// mmStaticLimit bounds a pattern's embeddings in the initial graph, so that
// Enumerate stays cheap; patterns above it are redrawn.
const mmStaticLimit = 50_000

type mmScenario struct {
	cfg      mmConfig
	seed     uint64
	labels   *graph.Dict
	vlabel   []graph.Label
	initial  []graph.Update // AddVertex for every vertex, then the edges
	present  map[mmEdge]bool
	adj      [][]uint32 // initial graph, undirected, for treeHoms
	stream   []graph.Update
	patterns []*query.Pattern
	queries  []*query.Query // embeddings and instances of each pattern
	static0  []graph.Count  // static counts of queries in the initial graph
}

type mmEdge struct{ a, b, l uint32 }

func (s *mmScenario) String() string { return fmt.Sprintf("%s/seed=%d", s.cfg.name, s.seed) }

func (s *mmScenario) key(a, b, l uint32) mmEdge {
	if !s.cfg.directed && a > b {
		a, b = b, a
	}
	return mmEdge{a, b, l}
}

func mmUpdate(op graph.Op, e mmEdge) graph.Update {
	return graph.Update{Op: op, Src: e.a, Dst: e.b, Label: e.l, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}
}

// mmRMAT draws one R-MAT edge over 2^scale vertices. The quadrant
// probabilities are milder than Graph500's (0.57, 0.19, 0.19, 0.05) so that
// the hubs of these small graphs stay at a few hundred neighbours and
// 6-vertex wildcard patterns stay countable.
func mmRMAT(r *rand.Rand, scale int) (uint32, uint32) {
	var s, d uint32
	for range scale {
		s, d = s<<1, d<<1
		switch p := r.Float64(); {
		case p < 0.50:
		case p < 0.70:
			d |= 1
		case p < 0.90:
			s |= 1
		default:
			s, d = s|1, d|1
		}
	}
	return s, d
}

func newMMScenario(t testing.TB, cfg mmConfig, seed uint64) *mmScenario {
	t.Helper()
	h := uint64(14695981039346656037) // FNV-1a of the name: one stream per config
	for _, c := range []byte(cfg.name) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	r := rand.New(rand.NewPCG(seed, h))
	s := &mmScenario{cfg: cfg, seed: seed, labels: graph.NewDict(), present: map[mmEdge]bool{}}
	vnames := []string{"A", "B", "C"}[:cfg.nvl]
	newNames := vnames
	if cfg.newLabel != "" {
		vnames, newNames = []string{"B"}, []string{cfg.newLabel}
	}
	enames := []string{"x"}
	if cfg.multi {
		enames = []string{"x", "y"}
	}
	for _, n := range []string{"A", "B", "C", "x", "y"} {
		s.labels.Intern(n)
	}
	nv := cfg.nv
	if cfg.powerLaw {
		nv = 1 << cfg.scale
	}
	// Skewed vertex labels: about 55%, 30%, 15%.
	weights := []float64{0.55, 0.30, 0.15}[:cfg.nvl]
	var sum float64
	for _, w := range weights {
		sum += w
	}
	s.vlabel = make([]graph.Label, nv)
	for v := range s.vlabel {
		p := r.Float64() * sum
		i := 0
		for i < len(weights)-1 && p >= weights[i] {
			p -= weights[i]
			i++
		}
		s.vlabel[v] = s.labels.Intern(vnames[i])
		s.initial = append(s.initial, graph.Update{Op: graph.AddVertex, Src: uint32(v), SrcLabel: s.vlabel[v]})
	}
	// Hubs at random ids, not all at the bottom of the id space.
	perm := r.Perm(nv)
	label := func() uint32 { return s.labels.Intern(enames[r.IntN(len(enames))]) }
	var edges []mmEdge
	add := func(e mmEdge) {
		if e.a == e.b {
			return
		}
		k := s.key(e.a, e.b, e.l)
		if !s.present[k] {
			s.present[k] = true
			edges = append(edges, k)
		}
	}
	for range cfg.ne {
		var a, b uint32
		if cfg.powerLaw {
			a, b = mmRMAT(r, cfg.scale)
			a, b = uint32(perm[a]), uint32(perm[b])
		} else {
			a, b = uint32(r.IntN(nv)), uint32(r.IntN(nv))
		}
		e := mmEdge{a, b, label()}
		add(e)
		// The cases where several data edges decide one query edge: the
		// reverse of a directed edge (undirected query edges) and the
		// same pair under the other label (wildcard query edges).
		if cfg.directed && r.IntN(6) == 0 {
			add(mmEdge{b, a, label()})
		}
		if cfg.multi && r.IntN(8) == 0 {
			add(mmEdge{a, b, s.labels.Intern("x") + s.labels.Intern("y") - e.l})
		}
	}

	// The stream (docs/benchmarks.md, Workloads): some edges are taken out of the initial
	// graph and inserted by the stream, as many present ones are deleted,
	// interleaved; plus noise: refreshes of present edges, deletions of
	// absent ones, duplicates, and fresh edges inserted and later deleted
	// (or present ones deleted and later re-inserted), which cancel inside
	// large batches.
	r.Shuffle(len(edges), func(i, j int) { edges[i], edges[j] = edges[j], edges[i] })
	n := min(cfg.stream, len(edges)/3)
	nIns, nDel := n*2/5, n*2/5
	if cfg.lateMulti {
		// The stream inserts up to nIns/2 edges of label y; the others
		// of that label are dropped.
		y := s.labels.Intern("y")
		var ys, xs []mmEdge
		for _, e := range edges {
			if e.l == y {
				ys = append(ys, e)
			} else {
				xs = append(xs, e)
			}
		}
		for _, e := range ys[min(nIns/2, len(ys)):] {
			delete(s.present, e)
		}
		edges = append(ys[:min(nIns/2, len(ys))], xs...)
		r.Shuffle(nIns, func(i, j int) { edges[i], edges[j] = edges[j], edges[i] })
	}
	streamIns, streamDel, rest := edges[:nIns], edges[nIns:nIns+nDel], edges[nIns+nDel:]
	for _, e := range streamIns {
		delete(s.present, e)
	}
	for _, e := range edges {
		if s.present[e] {
			s.initial = append(s.initial, mmUpdate(graph.Insert, e))
		}
	}
	// An item is one op, or one of an ordered pair (id > 0) that takes two
	// random slots: the earlier slot gets the first op.
	type item struct {
		id            int
		first, second graph.Update
	}
	var items []item
	single := func(u graph.Update) { items = append(items, item{first: u}) }
	pair := func(a, b graph.Update) {
		id := len(items) + 1
		items = append(items, item{id, a, b}, item{id, a, b})
	}
	for _, e := range streamIns {
		single(mmUpdate(graph.Insert, e))
	}
	for _, e := range streamDel {
		single(mmUpdate(graph.Delete, e))
	}
	fresh := func() mmEdge {
		for {
			a, b := uint32(r.IntN(nv)), uint32(r.IntN(nv))
			if e := s.key(a, b, label()); a != b && !s.present[e] {
				return e
			}
		}
	}
	newVertex := uint32(nv)
	newLabelOf := map[uint32]graph.Label{}
	// endpoint returns a vertex for an edge of case 5 with the label to
	// give it: a new one, or one the stream introduced before.
	endpoint := func() (uint32, graph.Label) {
		if len(newLabelOf) > 0 && r.IntN(2) == 0 {
			v := uint32(nv + r.IntN(len(newLabelOf)))
			return v, newLabelOf[v]
		}
		v := newVertex
		newVertex++
		newLabelOf[v] = s.labels.Intern(newNames[r.IntN(len(newNames))])
		return v, newLabelOf[v]
	}
	for range n - nIns - nDel {
		k := r.IntN(6)
		if cfg.newLabel != "" && r.IntN(2) == 0 {
			k = 5
		}
		switch k {
		case 0: // refresh
			single(mmUpdate(graph.Insert, rest[r.IntN(len(rest))]))
		case 1: // delete an absent edge
			single(mmUpdate(graph.Delete, fresh()))
		case 2: // duplicate of a stream op
			single(items[r.IntN(len(items))].first)
		case 3: // flap a fresh edge
			e := fresh()
			pair(mmUpdate(graph.Insert, e), mmUpdate(graph.Delete, e))
		case 4: // delete and re-insert a present edge
			e := rest[r.IntN(len(rest))]
			pair(mmUpdate(graph.Delete, e), mmUpdate(graph.Insert, e))
		case 5: // an edge to a vertex the graph has not seen, with its label
			v, l := endpoint()
			u := mmUpdate(graph.Insert, mmEdge{uint32(r.IntN(nv)), v, label()})
			u.DstLabel = l
			if w, lw := endpoint(); r.IntN(2) == 0 && w != v {
				u.Src, u.SrcLabel = w, lw
			}
			if r.IntN(2) == 0 {
				u.Src, u.Dst, u.SrcLabel, u.DstLabel = u.Dst, u.Src, u.DstLabel, u.SrcLabel
			}
			single(u)
		}
	}
	r.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	seen := map[int]bool{}
	for _, it := range items {
		u := it.first
		if it.id > 0 {
			if seen[it.id] {
				u = it.second
			}
			seen[it.id] = true
		}
		s.stream = append(s.stream, u)
	}

	// Patterns: 3 to 6 vertices over the labels and the wildcard. On
	// directed graphs about half the patterns get an undirected edge and on
	// multi-label graphs a wildcard edge, the first pattern always.
	g := s.load(t)
	defer g.Close()
	if g.MultiLabel() != (cfg.multi && !cfg.lateMulti) {
		t.Fatalf("%v: initial graph multi-label: %v", s, g.MultiLabel())
	}
	cpu := &CPU{}
	vl := append(slices.Clone(vnames), "")
	if cfg.newLabel != "" {
		vl = append(vl, cfg.newLabel)
	}
	el := []string{"x", "x", ""}
	if cfg.multi {
		el = []string{"x", "y", ""}
	}
	for len(s.patterns) < cfg.patterns {
		var p *query.Pattern
		var qs []*query.Query
		var counts []graph.Count
		for try := 0; ; try++ {
			p = randomPattern(r, 3+r.IntN(4), vl, el, cfg.directed)
			if cfg.directed && (len(s.patterns) == 0 || r.IntN(2) == 0) {
				p.Edges[r.IntN(len(p.Edges))].Directed = false
			}
			if cfg.multi && (len(s.patterns) == 0 || r.IntN(2) == 0) {
				e := &p.Edges[r.IntN(len(p.Edges))]
				e.Label, e.Wildcard = "", true
			}
			if try < 50 && s.treeHoms(p) > mmTreeHomLimit {
				continue
			}
			qs = nil
			for _, sem := range []query.Semantics{query.Embeddings, query.Instances} {
				q, err := query.Compile(p, s.labels, cfg.directed, sem)
				if err != nil {
					t.Fatal(err)
				}
				qs = append(qs, q)
			}
			var err error
			counts, err = cpu.Static(g, qs, Count, nil)
			if err != nil {
				t.Fatal(err)
			}
			usesNew := false
			for _, v := range p.Vertices {
				usesNew = usesNew || (cfg.newLabel != "" && v.Label == cfg.newLabel)
			}
			if counts[0].Cmp(graph.CountOf(mmStaticLimit)) <= 0 && (!counts[0].IsZero() || try >= 20 || usesNew) {
				break
			}
			if try == 100 {
				t.Fatalf("%v: no pattern with at most %d embeddings in 100 draws", s, mmStaticLimit)
			}
		}
		s.patterns = append(s.patterns, p)
		s.queries = append(s.queries, qs...)
		s.static0 = append(s.static0, counts...)
	}
	return s
}

// mmTreeHomLimit bounds the homomorphisms of a pattern's spanning tree in
// the initial graph (labels kept, edge labels and directions ignored): an
// upper bound on its embeddings and, roughly, on the static matcher's work.
// Patterns above it are redrawn without running the matcher, which on a hub
// of an R-MAT graph could take minutes for a 6-vertex wildcard star.
const mmTreeHomLimit = 5e6

// treeHoms counts the homomorphisms of a BFS spanning tree of p into the
// initial graph, bottom-up: hom[u][v] is the number of maps of u's subtree
// with u on v.
func (s *mmScenario) treeHoms(p *query.Pattern) float64 {
	nv := len(s.vlabel)
	if s.adj == nil {
		s.adj = make([][]uint32, nv)
		for e := range s.present {
			s.adj[e.a] = append(s.adj[e.a], e.b)
			s.adj[e.b] = append(s.adj[e.b], e.a)
		}
	}
	n := len(p.Vertices)
	parent := make([]int, n)
	for i := range parent {
		parent[i] = -1
	}
	order := []int{0}
	parent[0] = 0
	for i := 0; i < len(order); i++ {
		u := order[i]
		for _, e := range p.Edges {
			for _, w := range [][2]int{{e.From, e.To}, {e.To, e.From}} {
				if w[0] == u && parent[w[1]] < 0 {
					parent[w[1]] = u
					order = append(order, w[1])
				}
			}
		}
	}
	hom := make([][]float64, n)
	for i := len(order) - 1; i >= 0; i-- {
		u := order[i]
		h := make([]float64, nv)
		var lbl graph.Label = graph.Wildcard
		if !p.Vertices[u].Wildcard {
			lbl = s.labels.Intern(p.Vertices[u].Label)
		}
		for v := range h {
			if lbl == graph.Wildcard || s.vlabel[v] == lbl {
				h[v] = 1
			}
		}
		for _, c := range order[i+1:] {
			if parent[c] != u {
				continue
			}
			for v := range h {
				if h[v] == 0 {
					continue
				}
				var sum float64
				for _, w := range s.adj[v] {
					sum += hom[c][w]
				}
				h[v] *= sum
			}
		}
		hom[u] = h
	}
	var total float64
	for _, x := range hom[0] {
		total += x
	}
	return total
}

// load builds the initial graph.
func (s *mmScenario) load(t testing.TB) *dyngraph.Graph {
	t.Helper()
	g := newTestGraph(s.cfg.directed)
	if _, rej, _, err := g.Apply(s.initial); err != nil || len(rej) > 0 {
		t.Fatalf("%v: loading: %v, %d rejects", s, err, len(rej))
	}
	g.Reorganize()
	return g
}

func (s *mmScenario) describe(qi int) string {
	q := s.queries[qi]
	return fmt.Sprintf("%v query %d (%v, |Aut|=%d) %s", s, qi, q.Semantics, q.Automorphisms, describe(q))
}

// mmScenarios returns the scenarios of every config: with -short one seed
// each, with a third of the stream and 4 patterns (the metamorphic tests
// take about 3 s on 2 cores); otherwise two seeds each (about 18 s). They
// are built once per test binary and only read afterwards.
func mmScenarios(t *testing.T) []*mmScenario {
	t.Helper()
	if mmCache == nil {
		seeds := mmSeeds
		if testing.Short() {
			seeds = 1
		}
		var all []*mmScenario
		for _, cfg := range mmConfigs {
			if testing.Short() {
				cfg.stream, cfg.patterns = cfg.stream/3, 4
			}
			for seed := range seeds {
				all = append(all, newMMScenario(t, cfg, uint64(seed+1)))
			}
		}
		mmCache = all
	}
	return mmCache
}

var mmCache []*mmScenario

// mmSeeds is the number of seeds per config without -short.
var mmSeeds = 2

// replay runs the stream in batches of bs on a fresh graph with cpu in count
// mode and returns the summed counts per query. pending, when not nil, is
// called with the graph still pending; after, when not nil, once the batch
// is reorganized. Every batch is checked for instances × |Aut| =
// embeddings.
func (s *mmScenario) replay(t *testing.T, cpu *CPU, bs int,
	pending func(bi int, g *dyngraph.Graph, delta []graph.Change, c []Counts),
	after func(bi int, g *dyngraph.Graph, c []Counts)) []Counts {
	t.Helper()
	g := s.load(t)
	defer g.Close()
	total := make([]Counts, len(s.queries))
	for bi, lo := 0, 0; lo < len(s.stream); bi, lo = bi+1, lo+bs {
		batch := s.stream[lo:min(lo+bs, len(s.stream))]
		delta, rej, _, err := g.Apply(batch)
		if err != nil || len(rej) > 0 {
			t.Fatalf("%v: batch %d: %v, %d rejects", s, bi, err, len(rej))
		}
		c, err := cpu.Match(g, delta, s.queries, Count, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.checkAut(t, fmt.Sprintf("batch size %d, batch %d", bs, bi), c)
		if pending != nil {
			pending(bi, g, delta, c)
		}
		g.Reorganize()
		if after != nil {
			after(bi, g, c)
		}
		for qi := range c {
			total[qi].Add(c[qi])
		}
	}
	return total
}

func (s *mmScenario) static(t *testing.T, g *dyngraph.Graph) []graph.Count {
	t.Helper()
	c, err := (&CPU{}).Static(g, s.queries, Count, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.checkAutStatic(t, c)
	return c
}

// checkAut checks instances × |Aut| = embeddings on every pattern.
func (s *mmScenario) checkAut(t *testing.T, where string, c []Counts) {
	t.Helper()
	for i := 0; i < len(c); i += 2 {
		aut := uint64(s.queries[i+1].Automorphisms)
		if c[i].Positive != c[i+1].Positive.MulUint64(aut) || c[i].Negative != c[i+1].Negative.MulUint64(aut) {
			t.Fatalf("%s, %s: embeddings %+v, instances %+v × |Aut| %d", s.describe(i+1), where, c[i], c[i+1], aut)
		}
	}
}

func (s *mmScenario) checkAutStatic(t *testing.T, c []graph.Count) {
	t.Helper()
	for i := 0; i < len(c); i += 2 {
		if aut := uint64(s.queries[i+1].Automorphisms); c[i] != c[i+1].MulUint64(aut) {
			t.Fatalf("%s: static embeddings %d, instances %d × |Aut| %d", s.describe(i+1), c[i], c[i+1], aut)
		}
	}
}

// TestMetamorphicWorkers: 1, 2, 3 and 8 workers give the same counts on
// every batch, in count mode and in Enumerate mode, and the same static
// counts. Each query is also run on its own with 8 workers: a small batch
// of one query has fewer units than workers × splitBelow, so Match splits
// it into seeds (matchSplit).
func TestMetamorphicWorkers(t *testing.T) {
	for _, s := range mmScenarios(t) {
		g := s.load(t)
		for _, w := range []int{1, 3, 8} {
			got, err := (&CPU{Workers: w}).Static(g, s.queries, Count, nil)
			if err != nil {
				t.Fatal(err)
			}
			for qi := range got {
				if got[qi] != s.static0[qi] {
					t.Fatalf("%s: static count on %d workers %d, on GOMAXPROCS %d", s.describe(qi), w, got[qi], s.static0[qi])
				}
			}
		}
		g.Close()
		for _, bs := range []int{3, 200} {
			s.replay(t, &CPU{Workers: 1}, bs, func(bi int, g *dyngraph.Graph, delta []graph.Change, want []Counts) {
				where := fmt.Sprintf("batch size %d, batch %d", bs, bi)
				for _, w := range []int{2, 3, 8} {
					cpu := &CPU{Workers: w}
					got, err := cpu.Match(g, delta, s.queries, Count, nil)
					if err != nil {
						t.Fatal(err)
					}
					for qi := range want {
						if got[qi] != want[qi] {
							t.Fatalf("%s, %s: %d workers count %+v, 1 worker %+v", s.describe(qi), where, w, got[qi], want[qi])
						}
					}
				}
				if bs > 7 || bi%2 != 0 {
					return
				}
				split := &CPU{Workers: 8}
				for qi := range want {
					got, err := split.Match(g, delta, s.queries[qi:qi+1], Count, nil)
					if err != nil {
						t.Fatal(err)
					}
					if got[0] != want[qi] {
						t.Fatalf("%s, %s: alone on 8 workers count %+v, with the others on 1 worker %+v", s.describe(qi), where, got[0], want[qi])
					}
				}
				if bi%4 != 0 {
					return
				}
				got, err := split.Match(g, delta, s.queries, Enumerate, func(int, int, graph.Sign, []graph.VertexID) {})
				if err != nil {
					t.Fatal(err)
				}
				for qi := range want {
					if got[qi] != want[qi] {
						t.Fatalf("%s, %s: 8 workers enumerate %+v, 1 worker count %+v", s.describe(qi), where, got[qi], want[qi])
					}
				}
			}, nil)
		}
	}
}

// TestMetamorphicBatchSize: the net count over the stream is the same for
// every batch size and equals the change of the static count. For the large
// batch sizes it is also checked batch by batch against the static matcher.
func TestMetamorphicBatchSize(t *testing.T) {
	for _, s := range mmScenarios(t) {
		g := s.load(t)
		if _, _, _, err := g.Apply(s.stream); err != nil {
			t.Fatal(err)
		}
		g.Reorganize()
		static1 := s.static(t, g)
		g.Close()
		for _, bs := range []int{1, 3, 64, 250, 1000, len(s.stream)} {
			prev := s.static0
			total := s.replay(t, &CPU{}, bs, nil, func(bi int, g *dyngraph.Graph, c []Counts) {
				if bs < 250 {
					return
				}
				now := s.static(t, g)
				for qi := range c {
					// +p -n moved the count from prev to now: p + prev = now + n.
					if c[qi].Positive.Add(prev[qi]) != now[qi].Add(c[qi].Negative) {
						t.Fatalf("%s, batch size %d, batch %d: +%d -%d, but the static count went %d → %d",
							s.describe(qi), bs, bi, c[qi].Positive, c[qi].Negative, prev[qi], now[qi])
					}
				}
				prev = now
			})
			for qi := range total {
				if total[qi].Positive.Add(s.static0[qi]) != static1[qi].Add(total[qi].Negative) {
					t.Fatalf("%s, batch size %d: stream total +%d -%d, but the static count went %d → %d",
						s.describe(qi), bs, total[qi].Positive, total[qi].Negative, s.static0[qi], static1[qi])
				}
			}
		}
	}
}

// TestMetamorphicInverse: a batch followed by its inverse gives equal and
// opposite counts, and the graph's static counts return to where they were.
// Three kinds of batches: stream slices (mixed inserts and deletes, inverted
// from the ΔE that Apply returned); fresh edges only, many of them parallel
// to present edges (other label, reverse direction) or to each other, which
// must have no negatives and whose deletion has no positives; and a batch
// that inserts and deletes the same fresh edges, which cancels entirely.
func TestMetamorphicInverse(t *testing.T) {
	for _, s := range mmScenarios(t) {
		r := rand.New(rand.NewPCG(s.seed, 99))
		g := s.load(t)
		cpu := &CPU{}
		apply := func(what string, batch []graph.Update) ([]graph.Change, []Counts) {
			t.Helper()
			delta, rej, _, err := g.Apply(batch)
			if err != nil || len(rej) > 0 {
				t.Fatalf("%v: %s: %v, %d rejects", s, what, err, len(rej))
			}
			c, err := cpu.Match(g, delta, s.queries, Count, nil)
			if err != nil {
				t.Fatal(err)
			}
			s.checkAut(t, what, c)
			delta = slices.Clone(delta)
			g.Reorganize()
			return delta, c
		}
		roundTrip := func(what string, batch []graph.Update, fresh bool) {
			t.Helper()
			delta, c1 := apply(what, batch)
			var inv []graph.Update
			for i := len(delta) - 1; i >= 0; i-- {
				op := graph.Delete
				if delta[i].Sign < 0 {
					op = graph.Insert
				}
				inv = append(inv, mmUpdate(op, mmEdge{delta[i].Src, delta[i].Dst, delta[i].Label}))
			}
			delta2, c2 := apply(what+" inverse", inv)
			if len(delta2) != len(delta) {
				t.Fatalf("%v: %s: ΔE has %d changes, its inverse %d", s, what, len(delta), len(delta2))
			}
			for qi := range c1 {
				if c1[qi].Positive != c2[qi].Negative || c1[qi].Negative != c2[qi].Positive {
					t.Fatalf("%s, %s: batch +%d -%d, inverse +%d -%d", s.describe(qi), what,
						c1[qi].Positive, c1[qi].Negative, c2[qi].Positive, c2[qi].Negative)
				}
				if fresh && !c1[qi].Negative.IsZero() {
					t.Fatalf("%s, %s: inserting absent edges lost %d matches", s.describe(qi), what, c1[qi].Negative)
				}
			}
		}

		for _, size := range []int{1, 2, 10, 100, len(s.stream)} {
			lo := r.IntN(len(s.stream) - size + 1)
			roundTrip(fmt.Sprintf("stream[%d:%d]", lo, lo+size), s.stream[lo:lo+size], false)
		}

		// Fresh edges, as one insert batch and then the same updates as
		// deletions.
		var ins []graph.Update
		taken := map[mmEdge]bool{}
		addFresh := func(a, b, l uint32) {
			if e := s.key(a, b, l); a != b && !s.present[e] && !taken[e] {
				taken[e] = true
				ins = append(ins, mmUpdate(graph.Insert, e))
			}
		}
		x, y := s.labels.Intern("x"), s.labels.Intern("y")
		var presentEdges []mmEdge
		for e := range s.present {
			presentEdges = append(presentEdges, e)
		}
		slices.SortFunc(presentEdges, func(a, b mmEdge) int {
			return cmpEdge(a, b)
		})
		nv := len(s.vlabel)
		for range 150 {
			e := presentEdges[r.IntN(len(presentEdges))]
			switch r.IntN(4) {
			case 0: // reverse of a present edge
				addFresh(e.b, e.a, e.l)
			case 1: // same pair, other label
				if s.cfg.multi {
					addFresh(e.a, e.b, x+y-e.l)
				}
			case 2: // a new pair, both ways and both labels at once
				a, b := uint32(r.IntN(nv)), uint32(r.IntN(nv))
				addFresh(a, b, x)
				addFresh(b, a, x)
				if s.cfg.multi {
					addFresh(a, b, y)
				}
			case 3: // near a present edge: closes paths into cycles
				addFresh(e.a, uint32(r.IntN(nv)), x)
			}
		}
		for _, size := range []int{1, 3, 30, len(ins)} {
			lo := r.IntN(len(ins) - size + 1)
			batch := ins[lo : lo+size]
			_, c1 := apply(fmt.Sprintf("fresh[%d:%d]", lo, lo+size), batch)
			del := slices.Clone(batch)
			for i := range del {
				del[i].Op = graph.Delete
			}
			_, c2 := apply(fmt.Sprintf("fresh[%d:%d] deleted", lo, lo+size), del)
			for qi := range c1 {
				if !c1[qi].Negative.IsZero() || !c2[qi].Positive.IsZero() || c1[qi].Positive != c2[qi].Negative {
					t.Fatalf("%s, fresh[%d:%d]: insertions +%d -%d, their deletion +%d -%d",
						s.describe(qi), lo, lo+size, c1[qi].Positive, c1[qi].Negative, c2[qi].Positive, c2[qi].Negative)
				}
			}
			roundTrip(fmt.Sprintf("fresh[%d:%d] round trip", lo, lo+size), batch, true)
		}

		// After all the round trips the graph is the initial one again.
		if now := s.static(t, g); !slices.Equal(now, s.static0) {
			t.Fatalf("%v: static counts %v after the round trips, %v before", s, now, s.static0)
		}

		// Insert and delete inside one batch: nothing changes.
		flap := slices.Clone(ins)
		for _, u := range ins {
			u.Op = graph.Delete
			flap = append(flap, u)
		}
		delta, c := apply("flap", flap)
		if len(delta) != 0 {
			t.Fatalf("%v: a batch that inserts and deletes the same edges has ΔE %v", s, delta)
		}
		for qi := range c {
			if c[qi] != (Counts{}) {
				t.Fatalf("%s: a batch that cancels out has counts %+v", s.describe(qi), c[qi])
			}
		}
		g.Close()
	}
}

func cmpEdge(a, b mmEdge) int {
	switch {
	case a.a != b.a:
		return int(a.a) - int(b.a)
	case a.b != b.b:
		return int(a.b) - int(b.b)
	}
	return int(a.l) - int(b.l)
}

// mmMatch is one emitted map, comparable.
type mmMatch struct {
	q    int
	sign graph.Sign
	m    [6]graph.VertexID
}

// TestMetamorphicEnumerate: Enumerate emits exactly as many matches as
// count mode counts, never the same (sign, map) twice in a batch, and each
// map is a match of its query that holds after the batch and not before
// (positive) or before and not after (negative), and meets the
// symmetry-breaking conditions under instances semantics. The static
// matcher's enumeration is checked the same way.
func TestMetamorphicEnumerate(t *testing.T) {
	const workers = 3
	// At most this many maps per batch are checked against the graph; all
	// are checked for duplicates.
	const verify = 20_000
	for _, s := range mmScenarios(t) {
		var bufs [8][]mmMatch
		qoff := 0 // added to the sink's q when queries run one at a time
		sink := func(w, q int, sign graph.Sign, m []graph.VertexID) {
			mm := mmMatch{q: q + qoff, sign: sign}
			copy(mm.m[:], m)
			bufs[w] = append(bufs[w], mm)
		}
		collect := func(where string, g *dyngraph.Graph, static bool, want []Counts) {
			t.Helper()
			seen := make(map[mmMatch]bool)
			got := make([]Counts, len(want))
			checked := 0
			for w := range bufs {
				for _, mm := range bufs[w] {
					if seen[mm] {
						t.Fatalf("%s, %s: %v %v emitted twice", s.describe(mm.q), where, mm.sign, mm.m[:s.queries[mm.q].N()])
					}
					seen[mm] = true
					if mm.sign > 0 {
						got[mm.q].Positive = got[mm.q].Positive.AddUint64(1)
					} else {
						got[mm.q].Negative = got[mm.q].Negative.AddUint64(1)
					}
					if checked < verify {
						checked++
						s.verify(t, where, g, static, mm)
					}
				}
				bufs[w] = bufs[w][:0]
			}
			for qi := range want {
				if got[qi] != want[qi] {
					t.Fatalf("%s, %s: enumerated +%d -%d, count mode +%d -%d", s.describe(qi), where,
						got[qi].Positive, got[qi].Negative, want[qi].Positive, want[qi].Negative)
				}
			}
		}

		g := s.load(t)
		cpu := &CPU{Workers: workers}
		sc, err := cpu.Static(g, s.queries, Enumerate, sink)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]Counts, len(sc))
		for qi := range sc {
			if sc[qi] != s.static0[qi] {
				t.Fatalf("%s: static enumerate returned %d, count mode %d", s.describe(qi), sc[qi], s.static0[qi])
			}
			want[qi].Positive = sc[qi]
		}
		collect("static", g, true, want)
		g.Close()

		// Batches of 4 run each query alone on 8 workers, which splits
		// them (matchSplit); the others run all queries on 3 workers.
		split := &CPU{Workers: 8}
		for _, bs := range []int{4, 8, len(s.stream)} {
			s.replay(t, &CPU{}, bs, func(bi int, g *dyngraph.Graph, delta []graph.Change, want []Counts) {
				where := fmt.Sprintf("batch size %d, batch %d", bs, bi)
				if bs == 4 {
					for qi := range want {
						qoff = qi
						got, err := split.Match(g, delta, s.queries[qi:qi+1], Enumerate, sink)
						if err != nil {
							t.Fatal(err)
						}
						if got[0] != want[qi] {
							t.Fatalf("%s, %s: enumerate alone on 8 workers returned %+v, count mode %+v", s.describe(qi), where, got[0], want[qi])
						}
					}
					qoff = 0
				} else {
					got, err := cpu.Match(g, delta, s.queries, Enumerate, sink)
					if err != nil {
						t.Fatal(err)
					}
					for qi := range want {
						if got[qi] != want[qi] {
							t.Fatalf("%s, %s: enumerate returned %+v, count mode %+v", s.describe(qi), where, got[qi], want[qi])
						}
					}
				}
				collect(where, g, false, want)
			}, nil)
		}
	}
}

// verify checks one emitted map against the graph's raw lists, read without
// any of the walker's machinery. A static match must hold; a delta must have
// flipped.
func (s *mmScenario) verify(t *testing.T, where string, g *dyngraph.Graph, static bool, mm mmMatch) {
	t.Helper()
	q := s.queries[mm.q]
	m := mm.m[:q.N()]
	fail := func(why string) {
		t.Helper()
		t.Fatalf("%s, %s: emitted %v %v, which %s", s.describe(mm.q), where, mm.sign, m, why)
	}
	for u, v := range m {
		if int(v) >= g.NumVertices() {
			fail("maps to a vertex out of range")
		}
		if q.Labels[u] != graph.Wildcard && g.VertexLabel(v) != q.Labels[u] {
			fail(fmt.Sprintf("puts query vertex %d on a vertex of another label", u))
		}
		for _, w := range m[:u] {
			if w == v {
				fail("is not injective")
			}
		}
	}
	for _, lt := range q.Less {
		if m[lt[0]] >= m[lt[1]] {
			fail(fmt.Sprintf("breaks the symmetry condition f(%d) < f(%d)", lt[0], lt[1]))
		}
	}
	before, after := mmHolds(g, q, m, true), mmHolds(g, q, m, false)
	switch {
	case static:
		if !after {
			fail("does not hold")
		}
	case mm.sign > 0 && (!after || before):
		fail(fmt.Sprintf("holds before the batch: %v, after: %v", before, after))
	case mm.sign < 0 && (after || !before):
		fail(fmt.Sprintf("holds before the batch: %v, after: %v", before, after))
	}
}

// mmHolds reports whether every query edge holds under m in the graph before
// the pending batch (old) or after it. With no pending batch both are the
// current graph.
func mmHolds(g *dyngraph.Graph, q *query.Query, m []graph.VertexID, old bool) bool {
	for _, e := range q.Edges {
		a, b := m[e.A], m[e.B]
		ok := mmListHas(g, g.Out(a), b, e.Label, old)
		if !ok && q.Directed && !e.Directed {
			ok = mmListHas(g, g.In(a), b, e.Label, old)
		}
		if !ok {
			return false
		}
	}
	return true
}

func mmListHas(g *dyngraph.Graph, a dyngraph.Adj, w graph.VertexID, label graph.Label, old bool) bool {
	if !g.MultiLabel() && label != graph.Wildcard {
		if l, ok := g.EdgeLabel(); !ok || l != label {
			return false
		}
	}
	for i, e := range a.Sorted {
		if e&dyngraph.IDMask != w {
			continue
		}
		if a.SortedLabels != nil && label != graph.Wildcard && a.SortedLabels[i] != label {
			continue
		}
		if old || e&dyngraph.Tombstone == 0 {
			return true
		}
	}
	if old {
		return false
	}
	for i, e := range a.Appended {
		if e == w && (a.AppendedLabels == nil || label == graph.Wildcard || a.AppendedLabels[i] == label) {
			return true
		}
	}
	return false
}

// TestMetamorphicAutomorphisms: instances × |Aut| = embeddings on every
// batch (replay checks it) and statically, at batch sizes not used above.
// It also checks that the scenarios cover what they are meant to: patterns
// with nontrivial automorphisms, wildcard edges on multi-label graphs and
// undirected edges on directed graphs.
func TestMetamorphicAutomorphisms(t *testing.T) {
	var symmetric, wildEdge, undirEdge int
	for _, s := range mmScenarios(t) {
		s.checkAutStatic(t, s.static0)
		for _, bs := range []int{2, 16, 333} {
			s.replay(t, &CPU{}, bs, nil, nil)
		}
		for _, q := range s.queries {
			if q.Semantics != query.Instances {
				continue
			}
			if q.Automorphisms > 1 {
				symmetric++
			}
			for _, e := range q.Edges {
				if s.cfg.multi && e.Label == graph.Wildcard {
					wildEdge++
					break
				}
			}
			for _, e := range q.Edges {
				if s.cfg.directed && !e.Directed {
					undirEdge++
					break
				}
			}
		}
	}
	if symmetric == 0 || wildEdge == 0 || undirEdge == 0 {
		t.Fatalf("coverage: %d patterns with |Aut| > 1, %d wildcard-edge patterns on multi-label graphs, %d undirected-edge patterns on directed graphs",
			symmetric, wildEdge, undirEdge)
	}
}
