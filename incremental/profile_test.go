package incremental

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// TestProfilesMatchOrder: on random graphs (directed and undirected, one to
// three vertex labels, one or two edge labels), after each batch, the
// directories kept across versions give every vertex's label ranges exactly
// as dyngraph.Order.Range does, their counts and masks agree, and each
// label's class is exactly its vertices.
func TestProfilesMatchOrder(t *testing.T) {
	for i := range 60 {
		for _, dir := range []bool{false, true} {
			s := newScenario(uint64(5000+i), dir, query.Embeddings, []string{"insert", "mixed", "delete"}[i%3], 8)
			g := newTestGraph(dir)
			var p *profiles
			check := func(where string) {
				p = profilesOf(p, g)
				if i%2 == 0 {
					p.buildAll()
				}
				ord := g.Order()
				vl := g.VertexLabels()
				labels := map[graph.Label]bool{}
				for _, l := range vl {
					labels[l] = true
				}
				for l := range labels {
					var want []graph.VertexID
					for v, x := range vl {
						if x == l {
							want = append(want, graph.VertexID(v))
						}
					}
					if got := p.class(l); !slices.Equal(got, want) {
						t.Fatalf("%v %s: class %d is %v, want %v", s, where, l, got, want)
					}
				}
				for v := range graph.VertexID(g.NumVertices()) {
					mask := uint64(0)
					for _, in := range []bool{false, true} {
						a := g.Out(v)
						if in {
							a = g.In(v)
						}
						for _, x := range a.Sorted {
							mask |= 1 << (vl[x&dyngraph.IDMask] & 63)
						}
						for l := range labels {
							lo, hi := p.rng(v, in, &a, l)
							wlo, whi := ord.Range(a.Sorted, l)
							if wlo == whi {
								wlo, whi = 0, 0
							}
							if lo != wlo || hi != whi {
								t.Fatalf("%v %s: vertex %d in=%v label %d: range [%d,%d), Order.Range [%d,%d)", s, where, v, in, l, lo, hi, wlo, whi)
							}
							if c := count(p.dir(v, in), l); c != hi-lo {
								t.Fatalf("%v %s: vertex %d in=%v label %d: count %d, range of %d", s, where, v, in, l, c, hi-lo)
							}
						}
						if lo, hi := p.rng(v, in, &a, graph.Wildcard); lo != 0 || hi != len(a.Sorted) {
							t.Fatalf("%v %s: vertex %d in=%v: wildcard range [%d,%d) of %d", s, where, v, in, lo, hi, len(a.Sorted))
						}
					}
					if p.mask[v] != mask {
						t.Fatalf("%v %s: vertex %d: mask %b, want %b", s, where, v, p.mask[v], mask)
					}
				}
			}
			step := func(batch []graph.Update, where string) {
				if _, _, _, err := g.Apply(batch); err != nil {
					t.Fatal(err)
				}
				g.Reorganize()
				check(where)
			}
			step(s.initial, "initial")
			for bi, b := range s.batches {
				step(b, fmt.Sprintf("batch %d", bi))
			}
			g.Close()
		}
	}
}
