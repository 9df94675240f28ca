package incremental

import (
	"math/rand/v2"
	"runtime/debug"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// The walk allocates nothing in steady state (STYLE.md 6): candidate
// buffers and list caches live in the pooled walkers and only grow past a
// high-water mark. What Match itself allocates per batch is a constant that
// depends on the number of queries and terms, never on the number of
// matches. With one worker (no split of small batches) it is, in objects,
// as go build -gcflags=-m reports for cpu.go:
//
//	1  the result slice
//	1  the blocks slice header, which the worker closure captures
//	k  the blocks array, appended one (query, term) at a time: 1, 2, 4, ...
//	   so k = bits.Len(terms-1)+1
//	2  the per-worker counter slices pos and neg
//	2  the one worker's rows of pos and neg
//	2  the atomic unit counter and the WaitGroup, which the worker captures
//	2  the worker closure and wg.Go's wrapper around it
//
// The constants below are measured. A change to them is a change to Match's
// per-batch cost: update the table above with it.

// allocCase is one graph and query set, measured on a batch with few
// matches and on one with many.
type allocCase struct {
	name     string
	directed bool
	multi    bool
	queries  func(d *graph.Dict, directed bool) []*query.Query
	want     float64 // allocations per Match call
}

func allocPattern(name string, n int, edges [][2]int, vlabels []string, elabel string, undirected bool) *query.Pattern {
	p := &query.Pattern{Name: name}
	for i := range n {
		l := ""
		if vlabels != nil {
			l = vlabels[i%len(vlabels)]
		}
		p.Vertices = append(p.Vertices, query.Vertex{Name: string(rune('a' + i)), Label: l, Wildcard: l == ""})
	}
	for _, e := range edges {
		p.Edges = append(p.Edges, query.Edge{From: e[0], To: e[1], Label: elabel, Wildcard: elabel == "", Directed: !undirected})
	}
	return p
}

func allocCompile(d *graph.Dict, directed bool, ps ...*query.Pattern) []*query.Query {
	var qs []*query.Query
	for _, p := range ps {
		q, err := query.Compile(p, d, directed, query.Embeddings)
		if err != nil {
			panic(err)
		}
		qs = append(qs, q)
	}
	return qs
}

var (
	allocTriangle = [][2]int{{0, 1}, {1, 2}, {2, 0}}
	allocSquare   = [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}}
	allocHouse    = [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 4}, {1, 4}}
)

var allocCases = []allocCase{
	{
		// Triangle, 4-cycle and house: 13 terms, k = 5.
		name: "undirected",
		queries: func(d *graph.Dict, directed bool) []*query.Query {
			return allocCompile(d, directed,
				allocPattern("triangle", 3, allocTriangle, nil, "", false),
				allocPattern("square", 4, allocSquare, nil, "", false),
				allocPattern("house", 5, allocHouse, []string{"A", "", "B"}, "", false))
		},
		want: 1,
	},
	{
		// Wildcard edges on a multi-label graph and undirected query edges
		// on a directed one: the flip check and the general driver.
		// Triangle and 4-cycle: 7 terms, k = 4.
		name: "directed-multilabel", directed: true, multi: true,
		queries: func(d *graph.Dict, directed bool) []*query.Query {
			return allocCompile(d, directed,
				allocPattern("triangle", 3, allocTriangle, nil, "", true),
				allocPattern("square", 4, allocSquare, []string{"A", ""}, "x", true))
		},
		want: 1,
	},
}

// allocGraph builds a random graph of nv vertices and ne edges and returns
// it with two batches of the same shape, each inserting 32 absent edges
// and deleting 32 present ones.
func allocGraph(t *testing.T, c allocCase, nv, ne int, seed uint64) (*dyngraph.Graph, *graph.Dict, [2][]graph.Update) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	d := graph.NewDict()
	a, b, x, y := d.Intern("A"), d.Intern("B"), d.Intern("x"), d.Intern("y")
	var initial []graph.Update
	for v := range nv {
		l := a
		if v%3 == 0 {
			l = b
		}
		initial = append(initial, graph.Update{Op: graph.AddVertex, Src: uint32(v), SrcLabel: l})
	}
	type key struct{ a, b, l uint32 }
	present := map[key]bool{}
	draw := func() key {
		for {
			k := key{uint32(r.IntN(nv)), uint32(r.IntN(nv)), x}
			if c.multi && r.IntN(3) == 0 {
				k.l = y
			}
			if !c.directed && k.a > k.b {
				k.a, k.b = k.b, k.a
			}
			if k.a != k.b && !present[k] {
				return k
			}
		}
	}
	var edges []key
	for range ne {
		k := draw()
		present[k] = true
		edges = append(edges, k)
		initial = append(initial, graph.Update{Op: graph.Insert, Src: k.a, Dst: k.b, Label: k.l, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
	}
	var batches [2][]graph.Update
	for i := range batches {
		for range 32 {
			k := draw()
			present[k] = true // not drawn again
			batches[i] = append(batches[i], graph.Update{Op: graph.Insert, Src: k.a, Dst: k.b, Label: k.l, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
		}
		for j := range 32 {
			k := edges[i*32+j]
			batches[i] = append(batches[i], graph.Update{Op: graph.Delete, Src: k.a, Dst: k.b, Label: k.l, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
		}
	}
	g := newTestGraph(c.directed)
	if _, rej, _, err := g.Apply(initial); err != nil || len(rej) > 0 {
		t.Fatalf("loading: %v, %d rejects", err, len(rej))
	}
	g.Reorganize()
	return g, d, batches
}

func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}

// TestMatchAllocs: after a warm-up batch, Match allocates the same small
// constant per batch whether the batch has a handful of matches or tens of
// thousands, in count mode and in Enumerate mode with a no-op sink.
func TestMatchAllocs(t *testing.T) {
	if raceEnabled() {
		t.Skip("the race detector allocates")
	}
	noop := func(int, int, graph.Sign, []graph.VertexID) {}
	modeName := map[Mode]string{Count: "count", Enumerate: "enumerate"}
	for _, c := range allocCases {
		// Sparse: a few matches per batch. Dense: tens of thousands.
		sizes := [2][2]int{{2000, 8000}, {200, 2500}}
		if c.directed {
			sizes[1] = [2]int{150, 5500}
		}
		for _, mode := range []Mode{Count, Enumerate} {
			var sink Sink
			if mode == Enumerate {
				sink = noop
			}
			var matches [2]graph.Count
			for i, size := range sizes {
				g, d, batches := allocGraph(t, c, size[0], size[1], uint64(i+1))
				qs := c.queries(d, c.directed)
				cpu := &CPU{Workers: 1}
				delta, _, _, err := g.Apply(batches[0])
				if err != nil {
					t.Fatal(err)
				}
				if _, err := cpu.Match(g, delta, qs, mode, sink); err != nil {
					t.Fatal(err)
				}
				g.Reorganize()
				delta, _, _, err = g.Apply(batches[1])
				if err != nil {
					t.Fatal(err)
				}
				var res []Counts
				allocs := testing.AllocsPerRun(2, func() {
					res, err = cpu.Match(g, delta, qs, mode, sink)
				})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range res {
					matches[i] = matches[i].Add(r.Positive).Add(r.Negative)
				}
				if allocs != c.want {
					t.Errorf("%s, %s, %d vertices %d edges: Match allocates %v objects per batch of %d matches, want %v",
						c.name, modeName[mode], size[0], size[1], allocs, matches[i], c.want)
				}
				g.Reorganize()
				g.Close()
			}
			t.Logf("%s, %s: %v objects per batch with %d and with %d matches", c.name, modeName[mode], c.want, matches[0], matches[1])
			if matches[0].Cmp(graph.CountOf(1000)) > 0 || matches[1].Cmp(graph.CountOf(50_000)) < 0 {
				t.Fatalf("%s: the sparse graph's batch has %d matches, the dense one's %d: want under 1000 and over 50000",
					c.name, matches[0], matches[1])
			}
		}
	}
}
