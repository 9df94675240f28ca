package incremental

import (
	"fmt"
	"math/big"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// fallingFactorial is n(n-1)...(n-k+1), exactly.
func fallingFactorial(n, k int64) *big.Int {
	p := big.NewInt(1)
	for i := range k {
		p.Mul(p, big.NewInt(n-i))
	}
	return p
}

// labelledHub is a hub, labelled H, joined by edges labelled x to leaves[i]
// vertices labelled names[i] each, built on labels; the last vertex of
// label names[0] (the returned vertex) is left unjoined for a batch to
// join.
func labelledHub(t *testing.T, labels *graph.Dict, names []string, leaves []int) (*dyngraph.Graph, uint32) {
	t.Helper()
	ups := []graph.Update{{Op: graph.AddVertex, Src: 0, SrcLabel: labels.Intern("H")}}
	next := uint32(1)
	var last uint32
	for i, name := range names {
		for range leaves[i] {
			ups = append(ups, graph.Update{Op: graph.AddVertex, Src: next, SrcLabel: labels.Intern(name)})
			if i == 0 {
				last = next
			}
			next++
		}
	}
	for v := uint32(1); v < next; v++ {
		if v != last {
			ups = append(ups, graph.Update{Op: graph.Insert, Src: 0, Dst: v, Label: labels.Intern("x"), SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
		}
	}
	g := newTestGraph(false)
	if _, _, _, err := g.Apply(ups); err != nil {
		t.Fatal(err)
	}
	g.Reorganize()
	return g, last
}

// labelledStar is a star of centre H with legs[i] leaves labelled names[i],
// counted as embeddings.
func labelledStar(t *testing.T, labels *graph.Dict, names []string, legs []int) *query.Query {
	t.Helper()
	p := &query.Pattern{Name: "star", Vertices: []query.Vertex{{Name: "h", Label: "H"}}}
	for i, name := range names {
		for range legs[i] {
			v := len(p.Vertices)
			p.Vertices = append(p.Vertices, query.Vertex{Name: fmt.Sprintf("l%d", v), Label: name})
			p.Edges = append(p.Edges, query.Edge{From: 0, To: v, Label: "x"})
		}
	}
	q, err := query.Compile(p, labels, false, query.Embeddings)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestCountsPastInt64 counts stars on a hub whose embeddings pass 2^63, and
// 2^64, counted from the tail by DistinctPicks without enumerating them,
// and checks them exactly against falling factorials: statically, and for
// a batch that joins one more leaf to the hub and its inverse (past 2^63
// with two labels; 6 × 1999 × … × 1995 with one). int64 counts wrapped on
// every static count here.
func TestCountsPastInt64(t *testing.T) {
	pow63 := new(big.Int).Lsh(big.NewInt(1), 63)
	for _, tc := range []struct {
		name   string
		names  []string
		leaves []int // per label, the hub's neighbours once the batch joined its own
		legs   []int // per label, the star's leaves
	}{
		// 1500^6 < 2^64: the sum of int64 words, past 2^63.
		{"6 leaves of 1500", []string{"A"}, []int{1500}, []int{6}},
		// 2000^6 > 2^64: the sum in math/big.
		{"6 leaves of 2000", []string{"A"}, []int{2000}, []int{6}},
		// Two groups, each within a uint64, their product past 2^64.
		{"4+4 leaves of 2000", []string{"A", "B"}, []int{2000, 2000}, []int{4, 4}},
	} {
		labels := graph.NewDict()
		g, last := labelledHub(t, labels, tc.names, tc.leaves)
		q := labelledStar(t, labels, tc.names, tc.legs)
		qs := []*query.Query{q}
		// Before the batch the hub has one neighbour of names[0] less.
		before, joined := big.NewInt(1), big.NewInt(int64(tc.legs[0]))
		after := big.NewInt(1)
		for i := range tc.names {
			n, k := int64(tc.leaves[i]), int64(tc.legs[i])
			after.Mul(after, fallingFactorial(n, k))
			if i == 0 {
				before.Mul(before, fallingFactorial(n-1, k))
				// The new edge plays one of the k legs, the others pick
				// from the n-1 older neighbours.
				joined.Mul(joined, fallingFactorial(n-1, k-1))
			} else {
				before.Mul(before, fallingFactorial(n, k))
				joined.Mul(joined, fallingFactorial(n, k))
			}
		}
		for _, workers := range []int{1, 3} {
			where := fmt.Sprintf("%s, %d workers", tc.name, workers)
			cpu := &CPU{Workers: workers}
			static := func(want *big.Int) {
				t.Helper()
				c, err := cpu.Static(g, qs, Count, nil)
				if err != nil {
					t.Fatal(err)
				}
				if want.Cmp(pow63) <= 0 {
					t.Fatalf("%s: the expected count %v is not past 2^63", where, want)
				}
				if c[0] != graph.CountOfBig(want) {
					t.Fatalf("%s: static count %v, want %v", where, c[0], want)
				}
			}
			static(before)
			for _, op := range []graph.Op{graph.Insert, graph.Delete} {
				delta, _, _, err := g.Apply([]graph.Update{{Op: op, Src: 0, Dst: last, Label: labels.Intern("x"), SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}})
				if err != nil {
					t.Fatal(err)
				}
				c, err := cpu.Match(g, delta, qs, Count, nil)
				if err != nil {
					t.Fatal(err)
				}
				g.Reorganize()
				want := Counts{Positive: graph.CountOfBig(joined)}
				if op == graph.Delete {
					want.Positive, want.Negative = want.Negative, want.Positive
				}
				if c[0] != want {
					t.Fatalf("%s: %v of the last leaf: +%v -%v, want +%v -%v", where, op, c[0].Positive, c[0].Negative, want.Positive, want.Negative)
				}
				if op == graph.Insert {
					static(after)
				}
			}
		}
		g.Close()
	}
}
