package kernels

import (
	"fmt"
	"math/big"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/query"
)

// starPastInt64 is a hub, labelled H, with 2,000 neighbours labelled A and
// 2,000 labelled B, and stars on it whose embeddings pass 2^64 but not
// 2^128, counted from the tail: six legs of A, P(2000,6) ≈ 6.3×10^19, one
// group whose product of sizes passes 2^64; four of A and four of B,
// P(2000,4)^2 ≈ 2.5×10^26, two groups.
func starPastInt64(t *testing.T) ([]graph.Update, []*query.Query, []*big.Int) {
	t.Helper()
	d := graph.NewDict()
	h, x := d.Intern("H"), d.Intern("x")
	load := []graph.Update{{Op: graph.AddVertex, Src: 0, SrcLabel: h}}
	const leaves = 2000
	for v := uint32(1); v <= 2*leaves; v++ {
		l := d.Intern([]string{"A", "B"}[(v-1)/leaves])
		load = append(load, graph.Update{Op: graph.AddVertex, Src: v, SrcLabel: l},
			graph.Update{Op: graph.Insert, Src: 0, Dst: v, Label: x, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
	}
	falling := func(n, k int64) *big.Int {
		p := big.NewInt(1)
		for i := range k {
			p.Mul(p, big.NewInt(n-i))
		}
		return p
	}
	var qs []*query.Query
	for _, legs := range [][]string{{"A", "A", "A", "A", "A", "A"}, {"A", "A", "A", "A", "B", "B", "B", "B"}} {
		p := &query.Pattern{Name: fmt.Sprintf("star%d", len(legs)), Vertices: []query.Vertex{{Name: "h", Label: "H"}}}
		for i, l := range legs {
			p.Vertices = append(p.Vertices, query.Vertex{Name: fmt.Sprintf("l%d", i), Label: l})
			p.Edges = append(p.Edges, query.Edge{From: 0, To: i + 1, Label: "x"})
		}
		q, err := query.Compile(p, d, false, query.Embeddings)
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q)
	}
	return load, qs, []*big.Int{falling(leaves, 6), new(big.Int).Mul(falling(leaves, 4), falling(leaves, 4))}
}

// TestStaticSpacePastInt64: the encoded candidate space counts the stars
// exactly on the host (space.cu's sp_tail, mirrored by tailOnHost), and
// match_space does on the GPU, where there is one.
func TestStaticSpacePastInt64(t *testing.T) {
	load, qs, want := starPastInt64(t)
	g, err := dyngraph.New(dyngraph.Options{Alloc: hostmem.Heap{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Build(load); err != nil {
		t.Fatal(err)
	}
	for qi, q := range qs {
		p, factor := spaceOf(t, g, q)
		if got := countSpaceOnHost(t, p).MulUint64(uint64(factor)); got != graph.CountOfBig(want[qi]) {
			t.Errorf("%s: the encoded space counts %v, want %v", q.Name, got, want[qi])
		}
	}
	g.Close()

	x := openGPUWith(t, Options{Placement: Device, SpaceEntries: incremental.DefaultSpaceEntries})
	defer x.Close()
	g, _, _ = staticOnCPU(t, x, load, qs)
	defer g.Close()
	for qi, q := range qs {
		// match_space itself: Static, had the space not fitted, would walk
		// the 10^16 partial matches above the last level.
		f := incremental.Filter(g, q)
		plan, factor, _ := f.CountPlan(q)
		n, ok, err := x.staticSpace(g, f, &plan)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Fatalf("%s: match_space did not take the query", q.Name)
		}
		if got := n.MulUint64(uint64(factor)); got != graph.CountOfBig(want[qi]) {
			t.Errorf("%s: match_space counts %v, want %v", q.Name, got, want[qi])
		}
	}
}
