package cache

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/sampler"
)

func TestParsePolicy(t *testing.T) {
	for _, s := range []string{"gcsm", "degree", "khop"} {
		if p, err := ParsePolicy(s); err != nil || string(p) != s {
			t.Errorf("ParsePolicy(%q) = %q, %v", s, p, err)
		}
	}
	for _, s := range []string{"", "GCSM", "zero-copy", "vsgm"} {
		if _, err := ParsePolicy(s); err == nil {
			t.Errorf("ParsePolicy(%q) accepted", s)
		}
	}
}

// TestDegree: Longest puts the longest lists first, ties by key; Degree
// takes as many as fit, whole or trimmed, and Pack then packs all of them.
func TestDegree(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	d := graph.NewDict()
	for _, l := range []string{"0", "1"} {
		d.Intern(l)
	}
	for _, directed := range []bool{false, true} {
		g, _ := labeledGraph(t, r, directed, false, 200, 1500, 3)
		all := Longest(nil, g)
		if want := nonEmpty(g); len(all) != len(want) {
			t.Fatalf("Longest: %d keys, want %d", len(all), len(want))
		}
		for i := 1; i < len(all); i++ {
			a, b := wholeLen(g, all[i-1]), wholeLen(g, all[i])
			if a < b || (a == b && all[i-1] > all[i]) {
				t.Fatalf("Longest order: %d (%d entries) before %d (%d entries)", all[i-1], a, all[i], b)
			}
		}
		q := compile(t, d, "(a:0)-[]-(b:1)-[]-(c:0)", directed)
		for _, qs := range [][]*query.Query{nil, {q}} {
			var reads *Reads
			var keep keeper
			if qs != nil {
				reads, keep = NewReads(g, qs), naiveKeep(g, qs)
			}
			if got := Degree(nil, g, all, 1<<40, reads); len(got) != len(greedy(g, all, 1<<40, keep)) {
				t.Fatalf("Degree with room for all: %d keys, want %d", len(got), len(greedy(g, all, 1<<40, keep)))
			}
			budget := BlockBytes(g, all, reads) / 3
			keys := Degree([]uint32{}, g, all, budget, reads)
			var b Block
			n, err := Pack(&b, g, keys, budget, reads)
			if err != nil || n != len(keys) {
				t.Errorf("Pack(Degree) packed %d of %d: %v", n, len(keys), err)
			}
			if want := greedy(g, all, budget, keep); !slices.Equal(b.RowIdx(), want) {
				t.Errorf("Degree's keys are not the greedy fill of the length order")
			}
		}
	}
}

func TestKHop(t *testing.T) {
	for _, directed := range []bool{false, true} {
		g := newGraph(t, directed)
		var load []graph.Update
		for v := range uint32(7) {
			load = append(load, edge(graph.Insert, v, v+1, 0)) // path 0-1-...-7
		}
		if _, _, _, err := g.Apply(load); err != nil {
			t.Fatal(err)
		}
		g.Reorganize()
		// The batch inserts 3-9 (9 is a new vertex) and deletes 5-6.
		delta, _, _, err := g.Apply([]graph.Update{edge(graph.Insert, 3, 9, 0), edge(graph.Delete, 5, 6, 0)})
		if err != nil {
			t.Fatal(err)
		}
		keysOf := func(vs ...uint32) []uint32 {
			var ks []uint32
			for _, v := range vs {
				for _, in := range []bool{false, true} {
					if k := sampler.ListKey(v, in, directed); wholeLen(g, k) > 0 && !slices.Contains(ks, k) {
						ks = append(ks, k)
					}
				}
			}
			slices.Sort(ks)
			return ks
		}
		for k, want := range [][]uint32{
			keysOf(3, 9, 5, 6),
			keysOf(2, 3, 4, 9, 5, 6, 7),
			keysOf(1, 2, 3, 4, 9, 5, 6, 7),
		} {
			got, err := KHop(nil, g, delta, k, 1<<20, nil)
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("directed %v, %d hops: %v, %v; want %v", directed, k, got, err, want)
			}
			need := 4 * blockWords(g, want)
			got, err = KHop([]uint32{42}, g, delta, k, need-1, nil)
			var ke *KHopError
			if !errors.Is(err, ErrOverBudget) || !errors.As(err, &ke) || ke.Bytes != need || ke.Lists != len(want) || ke.Hops != k {
				t.Errorf("directed %v, %d hops, budget %d: %v", directed, k, need-1, err)
			}
			if !slices.Equal(got, append([]uint32{42}, want...)) {
				t.Errorf("KHop over budget returned %v", got)
			}
			if _, err := KHop(nil, g, delta, k, need, nil); err != nil {
				t.Errorf("exactly the budget: %v", err)
			}
		}
	}
}

func TestDiameter(t *testing.T) {
	d := graph.NewDict()
	compile := func(n int, edges [][2]int) *query.Query {
		p := &query.Pattern{Name: "p"}
		for i := range n {
			p.Vertices = append(p.Vertices, query.Vertex{Name: string(rune('a' + i)), Wildcard: true})
		}
		for _, e := range edges {
			p.Edges = append(p.Edges, query.Edge{From: e[0], To: e[1], Wildcard: true, Directed: true})
		}
		q, err := query.Compile(p, d, true, query.Embeddings)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	tri := compile(3, [][2]int{{0, 1}, {1, 2}, {2, 0}})
	path := compile(4, [][2]int{{0, 1}, {2, 1}, {2, 3}})
	house := compile(5, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 4}, {1, 4}})
	for _, c := range []struct {
		qs   []*query.Query
		want int
	}{{[]*query.Query{tri}, 1}, {[]*query.Query{path}, 3}, {[]*query.Query{house}, 2}, {[]*query.Query{tri, path, house}, 3}, {nil, 0}} {
		if got := Diameter(c.qs); got != c.want {
			t.Errorf("Diameter = %d, want %d", got, c.want)
		}
	}
}

// TestGCSM: the sampler's order, packed, caches the lists it estimates
// hottest, down to the budget.
func TestGCSM(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	g, delta := randomGraph(t, r, false, false, 400, 3000)
	d := graph.NewDict()
	p := &query.Pattern{Name: "triangle"}
	for i := range 3 {
		p.Vertices = append(p.Vertices, query.Vertex{Name: string(rune('a' + i)), Wildcard: true})
	}
	for _, e := range [][2]int{{0, 1}, {1, 2}, {2, 0}} {
		p.Edges = append(p.Edges, query.Edge{From: e[0], To: e[1], Wildcard: true})
	}
	q, err := query.Compile(p, d, false, query.Embeddings)
	if err != nil {
		t.Fatal(err)
	}
	var e sampler.Estimator
	est, err := e.Estimate(g, delta, []*query.Query{q}, sampler.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	hot := GCSM(nil, est)
	if len(hot) == 0 {
		t.Fatal("no list estimated")
	}
	budget := 4 * blockWords(g, hot) / 4
	var b Block
	n, err := Pack(&b, g, hot, budget, nil)
	if err != nil || n == 0 {
		t.Fatalf("packed %d: %v", n, err)
	}
	if want := greedy(g, hot, budget, nil); !slices.Equal(b.RowIdx(), want) {
		t.Errorf("GCSM order packed %v, want %v", b.RowIdx(), want)
	}
	// The hottest list that fits on its own is in.
	if _, _, ok := b.Find(hot[0]); !ok && 4*blockWords(g, hot[:1]) <= budget {
		t.Error("the hottest list is not packed")
	}
	checkBlock(t, "gcsm", &b, g, b.RowIdx(), nil)
}
