package query

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/graph"
)

// TestAutomorphismList checks the listed maps against the group sizes the
// symmetry breaking finds, and that each is an automorphism.
func TestAutomorphismList(t *testing.T) {
	for _, tc := range []struct {
		pattern  string
		directed bool
		size     int
	}{
		{"(a)-[]-(b)-[]-(c)-[]-(a)", false, 6},
		{"(a)-[]->(b)-[]->(c)-[]->(a)", true, 3},
		{"(a:A)-[]-(b:B)-[]-(c:A)", false, 2},
		{"(a)-[]-(b)-[]-(c)-[]-(d)-[]-(a)", false, 8},
		{"(a)-[]-(b)-[]-(c)-[]-(d)-[]-(a), (a)-[]-(c), (b)-[]-(d)", false, 24},
		{"(a)-[:X]->(b)-[:Y]->(c)", true, 1},
	} {
		p, err := ParseCypher("t", tc.pattern)
		if err != nil {
			t.Fatal(err)
		}
		q, err := Compile(p, graph.NewDict(), tc.directed, Instances)
		if err != nil {
			t.Fatal(err)
		}
		auts := q.AutomorphismList(1000)
		if len(auts) != tc.size || uint64(len(auts)) != q.Automorphisms {
			t.Fatalf("%s: %d automorphisms listed, group size %d, want %d", tc.pattern, len(auts), q.Automorphisms, tc.size)
		}
		for i, a := range auts {
			if i == 0 {
				for u, v := range a {
					if u != v {
						t.Fatalf("%s: first map %v is not the identity", tc.pattern, a)
					}
				}
			}
			// An automorphism maps the edge multiset onto itself.
			edges := map[QEdge]int{}
			for _, e := range q.Edges {
				edges[canon(e)]++
			}
			for _, e := range q.Edges {
				img := canon(QEdge{A: a[e.A], B: a[e.B], Label: e.Label, Directed: e.Directed})
				if edges[img] == 0 {
					t.Fatalf("%s: map %v sends edge %v to a non-edge", tc.pattern, a, e)
				}
			}
		}
		if q.AutomorphismList(tc.size-1) != nil && tc.size > 1 {
			t.Fatalf("%s: list over the limit not refused", tc.pattern)
		}
	}
}

func canon(e QEdge) QEdge {
	if !e.Directed && e.A > e.B {
		e.A, e.B = e.B, e.A
	}
	return e
}

// TestSymmetryBreakingLikeLabelledClique: the shape of labeled_snu's human
// query_dense_20_7, whose compilation ran for hours: a clique of eleven A
// vertices and five B, one of the A vertices (10) also joined to two C
// vertices (16, 17), which share a D (18) and a C (19). A search for an
// automorphism between vertex 10 and another A must fail without walking
// the clique's 10!·5! arrangements.
func TestSymmetryBreakingLikeLabelledClique(t *testing.T) {
	var b strings.Builder
	for v, l := range "AAAAAABBAAAAABBBCCDC" {
		fmt.Fprintf(&b, "v %d %c\n", v, l)
	}
	edge := func(u, v int) { fmt.Fprintf(&b, "e %d %d\n", u, v) }
	for u := range 16 {
		for v := u + 1; v < 16; v++ {
			edge(u, v)
		}
	}
	for _, e := range [][2]int{{10, 16}, {10, 17}, {16, 18}, {16, 19}, {17, 18}, {17, 19}} {
		edge(e[0], e[1])
	}
	p, err := ParseCSM("dense_20_7", strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	q, err := Compile(p, graph.NewDict(), false, Instances)
	if err != nil {
		t.Fatal(err)
	}
	const want = 3628800 * 120 * 2 // 10! of the A vertices but 10, 5! of the B, 16 and 17 swap
	if q.Automorphisms != want {
		t.Fatalf("%d automorphisms, want 10!·5!·2 = %d", q.Automorphisms, want)
	}
	if len(q.Less) != 45+10+1 {
		t.Fatalf("%d symmetry-breaking conditions, want %d", len(q.Less), 45+10+1)
	}
}
