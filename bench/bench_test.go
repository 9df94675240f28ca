package bench_test

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// rmatEdges collects the edges r generates.
func rmatEdges(t *testing.T, r bench.RMAT) []graph.Edge {
	t.Helper()
	var edges []graph.Edge
	err := r.Generate(func(src, dst, label uint32) error {
		edges = append(edges, graph.Edge{Src: src, Dst: dst, Label: label})
		return nil
	})
	if err != nil {
		t.Fatalf("Generate(%+v): %v", r, err)
	}
	return edges
}

// adjacency returns the symmetric adjacency lists of an undirected graph.
func adjacency(n int, edges []graph.Edge) [][]uint32 {
	adj := make([][]uint32, n)
	for _, e := range edges {
		adj[e.Src] = append(adj[e.Src], e.Dst)
		adj[e.Dst] = append(adj[e.Dst], e.Src)
	}
	return adj
}

func TestRMATDeterministic(t *testing.T) {
	r := bench.RMAT{Scale: 10, Edges: 5000, VertexLabels: 4, LabelSkew: 1.5, EdgeLabels: 3, Seed: 7}
	a, b := rmatEdges(t, r), rmatEdges(t, r)
	if !slices.Equal(a, b) {
		t.Error("two runs with the same seed gave different edges")
	}
	first := make([]uint32, 1<<r.Scale)
	for v := range first {
		first[v] = r.VertexLabel(uint32(v))
	}
	for v := range first {
		if got := r.VertexLabel(uint32(v)); got != first[v] {
			t.Fatalf("VertexLabel(%d) was %d, then %d", v, first[v], got)
		}
	}
	r.Seed++
	if slices.Equal(a, rmatEdges(t, r)) {
		t.Error("seeds 7 and 8 gave the same edges")
	}
}

func TestRMATSimpleGraph(t *testing.T) {
	r := bench.RMAT{Scale: 12, Edges: 16 << 12, EdgeLabels: 3, Seed: 1}
	edges := rmatEdges(t, r)
	if int64(len(edges)) != r.Edges {
		t.Fatalf("got %d edges, want %d", len(edges), r.Edges)
	}
	seen := make(map[[2]uint32]bool, len(edges))
	labels := make([]int, r.EdgeLabels)
	for _, e := range edges {
		switch {
		case e.Src >= e.Dst:
			t.Fatalf("edge %v: want src < dst, which also excludes self-loops", e)
		case e.Dst >= 1<<r.Scale:
			t.Fatalf("edge %v: vertex outside [0, 2^%d)", e, r.Scale)
		case e.Label >= uint32(r.EdgeLabels):
			t.Fatalf("edge %v: label outside [0, %d)", e, r.EdgeLabels)
		case seen[[2]uint32{e.Src, e.Dst}]:
			t.Fatalf("edge %v generated twice", e)
		}
		seen[[2]uint32{e.Src, e.Dst}] = true
		labels[e.Label]++
	}
	for l, c := range labels {
		if c == 0 {
			t.Errorf("edge label %d never used", l)
		}
	}
}

func TestRMATDegreeSkew(t *testing.T) {
	r := bench.RMAT{Scale: 14, Edges: 16 << 14, Seed: 3}
	deg := make([]int, 1<<r.Scale)
	for _, e := range rmatEdges(t, r) {
		deg[e.Src]++
		deg[e.Dst]++
	}
	avg := 2 * float64(r.Edges) / float64(len(deg))
	top := slices.Max(deg)
	if float64(top) < 20*avg {
		t.Errorf("max degree %d, average %.1f: want a power-law hub of at least 20 times the average", top, avg)
	}
	// The ids are scrambled, so the hub is not vertex 0.
	if hub := slices.Index(deg, top); hub == 0 {
		t.Errorf("the highest-degree vertex is 0: ids are not scrambled")
	}
}

func TestRMATTooDense(t *testing.T) {
	called := false
	err := bench.RMAT{Scale: 3, Edges: 29}.Generate(func(_, _, _ uint32) error { called = true; return nil })
	if err == nil || called {
		t.Errorf("29 edges on 8 vertices: got error %v and emit called %v, want an error before any edge", err, called)
	}
	// All 28 possible edges: the rarest pairs have a probability near
	// 0.05^2*0.19, so the draw limit runs out first.
	r := bench.RMAT{Scale: 3, Edges: 28, Seed: 1}
	var n int64
	err = r.Generate(func(_, _, _ uint32) error { n++; return nil })
	if err == nil || !strings.Contains(err.Error(), "too dense") || n >= r.Edges {
		t.Errorf("complete K8: got %d edges and error %v, want a shortfall error", n, err)
	}
}

func TestRMATEmitError(t *testing.T) {
	stop := errors.New("stop")
	n := 0
	err := bench.RMAT{Scale: 10, Edges: 1000}.Generate(func(_, _, _ uint32) error {
		if n++; n == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 10 {
		t.Errorf("got error %v after %d edges, want emit's error after 10", err, n)
	}
}

func TestRMATValidate(t *testing.T) {
	for _, r := range []bench.RMAT{
		{Scale: 0},
		{Scale: 32},
		{Scale: 4, Edges: -1},
		{Scale: 4, Edges: 121},
		{Scale: 4, A: 0.6, B: 0.3, C: 0.3},
		{Scale: 4, A: -0.1, B: 0.5},
		{Scale: 4, A: math.NaN()},
		{Scale: 4, VertexLabels: -1},
		{Scale: 4, EdgeLabels: -1},
		{Scale: 4, LabelSkew: 0.9},
		{Scale: 4, LabelSkew: 1},
		{Scale: 4, LabelSkew: math.Inf(1)},
	} {
		if err := r.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", r)
		}
	}
	for _, r := range []bench.RMAT{
		{Scale: 1, Edges: 1},
		{Scale: 31, Edges: 1 << 40},
		{Scale: 4, Edges: 120, A: 0.25, B: 0.25, C: 0.25, LabelSkew: 2},
	} {
		if err := r.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil", r, err)
		}
	}
}

func TestVertexLabelSkew(t *testing.T) {
	const n = 1 << 16
	count := func(r bench.RMAT) []int {
		c := make([]int, r.VertexLabels)
		for v := range uint32(n) {
			l := r.VertexLabel(v)
			if l >= uint32(r.VertexLabels) {
				t.Fatalf("VertexLabel(%d) = %d, outside [0, %d)", v, l, r.VertexLabels)
			}
			c[l]++
		}
		return c
	}

	zipf := count(bench.RMAT{Scale: 16, VertexLabels: 8, LabelSkew: 1.5, Seed: 5})
	for l := 1; l < 4; l++ {
		if zipf[l] >= zipf[l-1] {
			t.Errorf("label counts %v: want label %d rarer than label %d", zipf, l, l-1)
		}
	}
	// Label 0 against label 1 is 2^1.5 = 2.83 under Zipf with s = 1.5.
	if ratio := float64(zipf[0]) / float64(zipf[1]); ratio < 2.5 || ratio > 3.2 {
		t.Errorf("label counts %v: label 0 is %.2f times label 1, want about 2.83", zipf, ratio)
	}

	uniform := count(bench.RMAT{Scale: 16, VertexLabels: 8, Seed: 5})
	for l, c := range uniform {
		if want := n / 8; c < want*9/10 || c > want*11/10 {
			t.Errorf("uniform label counts %v: label %d is more than 10%% from %d", uniform, l, want)
		}
	}

	if l := (bench.RMAT{Scale: 4}).VertexLabel(3); l != 0 {
		t.Errorf("one label: VertexLabel = %d, want 0", l)
	}

	// Loaders call VertexLabel once a vertex, for up to 2^28 vertices.
	r := bench.RMAT{Scale: 16, VertexLabels: 100, LabelSkew: 1.5}
	if a := testing.AllocsPerRun(100, func() { r.VertexLabel(7) }); a != 0 {
		t.Errorf("VertexLabel allocates %v times a call, want 0", a)
	}
}

func TestSplitStream(t *testing.T) {
	edges := rmatEdges(t, bench.RMAT{Scale: 12, Edges: 10001, EdgeLabels: 2, Seed: 9})
	initial, stream := bench.SplitStream(edges, 0.1, 4)

	const k = 1000 // round(0.1 * 10001)
	if len(stream) != k || len(initial) != len(edges)-k/2 {
		t.Fatalf("got %d initial edges and %d updates, want %d and %d", len(initial), len(stream), len(edges)-k/2, k)
	}
	inInitial := make(map[graph.Edge]bool, len(initial))
	for _, e := range initial {
		inInitial[e] = true
	}
	var inserts, deletes int
	var firstHalfInserts int
	all := make(map[graph.Edge]bool, len(edges))
	for e := range inInitial {
		all[e] = true
	}
	for i, u := range stream {
		e := graph.Edge{Src: u.Src, Dst: u.Dst, Label: u.Label}
		if u.SrcLabel != graph.NoLabel || u.DstLabel != graph.NoLabel {
			t.Fatalf("update %d %+v: want NoLabel vertex labels", i, u)
		}
		switch u.Op {
		case graph.Insert:
			inserts++
			if i < k/2 {
				firstHalfInserts++
			}
			if inInitial[e] {
				t.Fatalf("update %d inserts %v, which is in the initial graph", i, e)
			}
			all[e] = true
		case graph.Delete:
			deletes++
			if !inInitial[e] {
				t.Fatalf("update %d deletes %v, which is not in the initial graph", i, e)
			}
		default:
			t.Fatalf("update %d has op %v", i, u.Op)
		}
	}
	if inserts != k/2 || deletes != k/2 {
		t.Errorf("got %d insertions and %d deletions, want %d of each", inserts, deletes, k/2)
	}
	// initial ∪ inserted = all edges, and they are disjoint.
	if len(all) != len(edges) || len(initial)+inserts != len(edges) {
		t.Errorf("initial and inserted edges cover %d distinct edges in %d, want all %d once", len(all), len(initial)+inserts, len(edges))
	}
	for _, e := range edges {
		if !all[e] {
			t.Fatalf("edge %v is neither in the initial graph nor inserted", e)
		}
	}
	// Interleaved: the first half of the stream holds about half the
	// insertions, not all or none of them.
	if firstHalfInserts < k/8 || firstHalfInserts > 3*k/8 {
		t.Errorf("first half of the stream has %d of %d insertions: not interleaved", firstHalfInserts, inserts)
	}

	again, againStream := bench.SplitStream(edges, 0.1, 4)
	if !slices.Equal(initial, again) || !slices.Equal(stream, againStream) {
		t.Error("two splits with the same seed differ")
	}

	for _, tc := range []struct {
		fraction         float64
		initial, updates int
	}{
		{0, 5, 0},
		{-1, 5, 0},
		{math.NaN(), 5, 0},
		{1, 2, 5}, // 3 insertions, 2 deletions
		{2, 2, 5},
		{0.5, 3, 3}, // 2.5 rounds to 3: 2 insertions, 1 deletion
	} {
		in, s := bench.SplitStream(edges[:5], tc.fraction, 1)
		if len(in) != tc.initial || len(s) != tc.updates {
			t.Errorf("fraction %v of 5 edges: got %d initial edges and %d updates, want %d and %d", tc.fraction, len(in), len(s), tc.initial, tc.updates)
		}
	}
}

func TestTransfers(t *testing.T) {
	const accounts, n = 1000, 4000
	events := bench.Transfers(accounts, n, 11)
	if len(events) != n {
		t.Fatalf("got %d events, want %d", len(events), n)
	}
	if !slices.Equal(events, bench.Transfers(accounts, n, 11)) {
		t.Error("two streams with the same seed differ")
	}

	// Replay the stream into the set of directed edges it leaves.
	present := make(map[[2]string]bool)
	var deletes int
	for i, e := range events {
		if i > 0 && e.Time <= events[i-1].Time {
			t.Fatalf("event %d at %d, not after event %d at %d", i, e.Time, i-1, events[i-1].Time)
		}
		if e.Label != "TRANSFER" || !validNode(e.Src, e.SrcLabel) || !validNode(e.Dst, e.DstLabel) || e.Src == e.Dst {
			t.Fatalf("event %d is malformed: %+v", i, e)
		}
		switch e.Op {
		case graph.Insert:
			present[[2]string{e.Src, e.Dst}] = true
		case graph.Delete:
			if !present[[2]string{e.Src, e.Dst}] {
				t.Fatalf("event %d reverses %s→%s, which is not present", i, e.Src, e.Dst)
			}
			delete(present, [2]string{e.Src, e.Dst})
			deletes++
		default:
			t.Fatalf("event %d has op %v", i, e.Op)
		}
	}
	if deletes == 0 {
		t.Error("no reversals")
	}

	out := make(map[string][]string)
	in := make(map[string]int)
	for p := range present {
		if strings.HasPrefix(p[0], "acct-") && strings.HasPrefix(p[1], "acct-") {
			out[p[0]] = append(out[p[0]], p[1])
			in[p[1]]++
		}
	}
	if !hasCycle(out, present, 3) {
		t.Error("no 3-cycle among accounts")
	}
	if !hasCycle(out, present, 4) {
		t.Error("no 4-cycle among accounts")
	}
	fanIn := 0
	for _, d := range in {
		fanIn = max(fanIn, d)
	}
	if fanIn < 5 {
		t.Errorf("largest fan-in is %d accounts, want at least 5", fanIn)
	}

	// The smallest stream is one ring of three.
	ring := bench.Transfers(3, 3, 1)
	if len(ring) != 3 || ring[0].Dst != ring[1].Src || ring[1].Dst != ring[2].Src || ring[2].Dst != ring[0].Src {
		t.Errorf("Transfers(3, 3) = %+v, want a ring of three", ring)
	}
}

func validNode(name, label string) bool {
	switch {
	case strings.HasPrefix(name, "acct-"):
		return label == "Account"
	case strings.HasPrefix(name, "merchant-"):
		return label == "Merchant"
	}
	return false
}

// hasCycle reports whether the graph of out, whose edges are the set
// edges, has a directed cycle of 3 or 4 distinct vertices.
func hasCycle(out map[string][]string, edges map[[2]string]bool, length int) bool {
	for a, as := range out {
		for _, b := range as {
			for _, c := range out[b] {
				if c == a {
					continue
				}
				if length == 3 && edges[[2]string{c, a}] {
					return true
				}
				if length == 4 {
					for _, d := range out[c] {
						if d != a && d != b && edges[[2]string{d, a}] {
							return true
						}
					}
				}
			}
		}
	}
	return false
}

func TestShapes(t *testing.T) {
	wantEdges := map[string]int{
		"triangle": 3, "4-cycle": 4, "diamond": 5, "4-clique": 6, "house": 6, "5-cycle": 5, "octahedron": 12,
	}
	shapes := bench.Shapes()
	if len(shapes) != len(wantEdges) {
		t.Errorf("got %d shapes, want %d", len(shapes), len(wantEdges))
	}
	for _, s := range shapes {
		p, err := query.ParseCypher(s.Name, s.Cypher)
		if err != nil {
			t.Errorf("%s: %v", s.Name, err)
			continue
		}
		if len(p.Vertices) != s.Vertices || len(p.Edges) != wantEdges[s.Name] || len(s.Edges) != wantEdges[s.Name] {
			t.Errorf("%s: %d vertices and %d edges, want %d and %d", s.Name, len(p.Vertices), len(p.Edges), s.Vertices, wantEdges[s.Name])
		}
		for _, e := range p.Edges {
			if e.Directed || !e.Wildcard {
				t.Errorf("%s: edge %+v is directed or labeled", s.Name, e)
			}
		}
		for _, v := range p.Vertices {
			if !v.Wildcard {
				t.Errorf("%s: vertex %s is labeled", s.Name, v.Name)
			}
		}

		labels := make([]uint32, s.Vertices)
		for i := range labels {
			labels[i] = uint32(10 + i)
		}
		labels[0] = graph.Wildcard
		p, err = query.ParseCypher(s.Name, s.Labeled(labels))
		if err != nil {
			t.Errorf("%s labeled: %v", s.Name, err)
			continue
		}
		for _, v := range p.Vertices {
			i, _ := strconv.Atoi(strings.TrimPrefix(v.Name, "v"))
			if want := strconv.Itoa(10 + i); i == 0 && !v.Wildcard || i > 0 && v.Label != want {
				t.Errorf("%s labeled: vertex %s has label %q (wildcard %v)", s.Name, v.Name, v.Label, v.Wildcard)
			}
		}
	}
}

func TestRandomWalkQuery(t *testing.T) {
	r := bench.RMAT{Scale: 12, Edges: 16 << 12, VertexLabels: 6, LabelSkew: 1.5, Seed: 2}
	nv := 1 << r.Scale
	adj := adjacency(nv, rmatEdges(t, r))
	g := func(v uint32) []uint32 { return adj[v] }

	for _, class := range []string{"tree", "sparse", "dense"} {
		for size := 3; size <= 8; size++ {
			for seed := range uint64(3) {
				text, ok := bench.RandomWalkQuery(g, r.VertexLabel, nv, class, size, seed)
				if !ok {
					t.Errorf("%s of %d, seed %d: no query", class, size, seed)
					continue
				}
				p := parseWalkQuery(t, text, size, class)
				for _, v := range p.Vertices {
					if l, err := strconv.Atoi(v.Label); err != nil || l >= r.VertexLabels {
						t.Errorf("%s: vertex %s has label %q, want one of the graph's", text, v.Name, v.Label)
					}
				}
				if again, _ := bench.RandomWalkQuery(g, r.VertexLabel, nv, class, size, seed); again != text {
					t.Errorf("%s of %d, seed %d: two calls gave %s and %s", class, size, seed, text, again)
				}
			}
		}
	}

	// On K8 labeled by id, a dense query of 5 is K5 with 5 distinct labels.
	k8 := make([][]uint32, 8)
	for u := range k8 {
		for v := range uint32(8) {
			if v != uint32(u) {
				k8[u] = append(k8[u], v)
			}
		}
	}
	id := func(v uint32) uint32 { return v }
	text, ok := bench.RandomWalkQuery(func(v uint32) []uint32 { return k8[v] }, id, 8, "dense", 5, 1)
	if !ok {
		t.Fatal("dense query of 5 on K8: none")
	}
	p := parseWalkQuery(t, text, 5, "dense")
	labels := map[string]bool{}
	for _, v := range p.Vertices {
		labels[v.Label] = true
	}
	if len(p.Edges) != 10 || len(labels) != 5 {
		t.Errorf("dense query of 5 on K8 is %s, want K5 with distinct labels", text)
	}

	// A path has trees but no cycles.
	path := make([][]uint32, 10)
	for v := range uint32(9) {
		path[v] = append(path[v], v+1)
		path[v+1] = append(path[v+1], v)
	}
	pg := func(v uint32) []uint32 { return path[v] }
	if _, ok := bench.RandomWalkQuery(pg, id, 10, "tree", 4, 1); !ok {
		t.Error("tree of 4 on a path: none")
	}
	for _, class := range []string{"sparse", "dense"} {
		if text, ok := bench.RandomWalkQuery(pg, id, 10, class, 4, 1); ok {
			t.Errorf("%s query of 4 on a path: got %s, want none", class, text)
		}
	}
	for _, tc := range []struct {
		class string
		size  int
	}{{"cyclic", 4}, {"tree", 1}, {"tree", 11}} {
		if text, ok := bench.RandomWalkQuery(pg, id, 10, tc.class, tc.size, 1); ok {
			t.Errorf("%s query of %d on 10 vertices: got %s, want none", tc.class, tc.size, text)
		}
	}
}

// parseWalkQuery parses a RandomWalkQuery result and checks its size, that
// it is undirected, and that its edge count fits the class. ParseCypher
// checks that it is connected.
func parseWalkQuery(t *testing.T, text string, size int, class string) *query.Pattern {
	t.Helper()
	p, err := query.ParseCypher("walk", text)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	if len(p.Vertices) != size {
		t.Errorf("%s: %d vertices, want %d", text, len(p.Vertices), size)
	}
	pairs := map[[2]int]bool{}
	for _, e := range p.Edges {
		if e.Directed || !e.Wildcard {
			t.Errorf("%s: edge %+v is directed or labeled", text, e)
		}
		pairs[[2]int{min(e.From, e.To), max(e.From, e.To)}] = true
	}
	m := len(p.Edges)
	if len(pairs) != m {
		t.Errorf("%s: repeats an edge", text)
	}
	var fits bool
	switch class {
	case "tree":
		fits = m == size-1
	case "sparse":
		fits = m >= size && 2*m <= 3*size
	case "dense":
		fits = 2*m > 3*size || m == size*(size-1)/2
	}
	if !fits {
		t.Errorf("%s: %d edges on %d vertices is not %s", text, m, size, class)
	}
	return p
}
