package cache

import (
	"slices"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
)

// The degree ranking is cut for a quarter more than the budget and kept
// while the budget moves under that, as a budget that follows the GPU's
// free memory does; a larger budget cuts it again.
func TestDegreeRankingBudget(t *testing.T) {
	g := starGraph(t)
	x := &Planner{}
	first := x.degreeRanking(g, nil, 2000)
	want := Degree(nil, g, Longest(nil, g), 2500, nil)
	if !slices.Equal(first, want) || len(want) == len(Longest(nil, g)) {
		t.Fatalf("ranking for 2000 bytes: %d lists, want the %d that fit 2500 (of %d)", len(first), len(want), len(Longest(nil, g)))
	}
	for _, b := range []int64{1900, 2500, 100} {
		if got := x.degreeRanking(g, nil, b); &got[0] != &first[0] {
			t.Errorf("budget %d: ranked again", b)
		}
	}
	again := x.degreeRanking(g, nil, 2600)
	if want := Degree(nil, g, Longest(nil, g), 3250, nil); !slices.Equal(again, want) || len(again) <= len(first) {
		t.Errorf("budget 2600: %d lists, want the %d that fit 3250 (more than %d)", len(again), len(want), len(first))
	}
}

// starGraph is a graph of 40 stars of different sizes, so that lengths
// order the lists, and 360 leaves, none of them adjacent to another.
func starGraph(t *testing.T) *dyngraph.Graph {
	t.Helper()
	g, err := dyngraph.New(dyngraph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	var load []graph.Update
	const nv = 400
	for v := range nv {
		load = append(load, graph.Update{Op: graph.AddVertex, Src: uint32(v), SrcLabel: 0})
	}
	for h := range 40 {
		for j := range 2 + 3*h {
			load = append(load, graph.Update{Op: graph.Insert, Src: uint32(h), Dst: uint32(40 + (h*7+j)%(nv-40)),
				SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
		}
	}
	if _, _, err := g.Build(load); err != nil {
		t.Fatal(err)
	}
	return g
}
