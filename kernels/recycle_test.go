package kernels

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
)

// TestRecycledVerticesEqualCPU streams edges whose vertices leave the graph
// (dyngraph.Forget once their last edge is deleted) and come back under the
// same ids with other labels, as a service recycling the ids of accounts
// that left its window does. The GPU's copy of the vertex labels must follow
// every relabelling, in every placement.
func TestRecycledVerticesEqualCPU(t *testing.T) {
	for _, pl := range []Placement{ZeroCopy, Device, GCSM} {
		x := openGPU(t, pl, false)
		for trial := range 4 {
			directed := trial%2 == 1
			where := fmt.Sprintf("%s trial %d directed=%v", pl, trial, directed)
			t.Run(where, func(t *testing.T) { recycledVsCPU(t, x, uint64(trial), directed, where) })
		}
		x.Close()
	}
}

func recycledVsCPU(t *testing.T, x *GPU, seed uint64, directed bool, where string) {
	r := rand.New(rand.NewPCG(seed, 92))
	d, vl, qs, g := streamSetup(t, x, r, directed)
	defer g.Close()
	label := map[uint32]graph.Label{} // of the live vertices
	var live, free []uint32
	next := uint32(0)
	vertex := func() uint32 {
		if len(live) >= 3 && r.IntN(3) != 0 {
			return live[r.IntN(len(live))]
		}
		v := next
		if len(free) > 0 {
			v, free = free[len(free)-1], free[:len(free)-1]
		} else {
			next++
		}
		label[v] = d.Intern(vl[r.IntN(2)])
		live = append(live, v)
		return v
	}
	var edges [][2]uint32 // inserted and not yet deleted; repeats refresh
	cpu := &incremental.CPU{}
	reborn := 0
	for b := range 60 {
		var batch []graph.Update
		for len(batch) < 5+r.IntN(40) {
			if len(edges) > 0 && r.IntN(2) == 0 {
				i := r.IntN(len(edges))
				e := edges[i]
				edges[i] = edges[len(edges)-1]
				edges = edges[:len(edges)-1]
				batch = append(batch, graph.Update{Op: graph.Delete, Src: e[0], Dst: e[1], Label: d.Intern("x"), SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
				continue
			}
			a, c := vertex(), vertex()
			if a == c {
				continue
			}
			if !directed && a > c {
				a, c = c, a
			}
			edges = append(edges, [2]uint32{a, c})
			batch = append(batch, graph.Update{Op: graph.Insert, Src: a, Dst: c, Label: d.Intern("x"), SrcLabel: label[a], DstLabel: label[c]})
		}
		delta, rejects, _, err := g.Apply(batch)
		if err != nil || len(rejects) > 0 {
			t.Fatalf("%s batch %d: %v, refused %v", where, b, err, rejects)
		}
		want, err := cpu.Match(g, delta, qs, incremental.Count, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := x.Match(g, delta, qs, incremental.Count, nil)
		if err != nil {
			t.Fatalf("%s batch %d: %v", where, b, err)
		}
		if !slices.Equal(want, got) {
			t.Fatalf("%s batch %d: count mode CPU %v GPU %v", where, b, want, got)
		}
		g.Reorganize()
		for i := 0; i < len(live); i++ {
			if v := live[i]; g.Isolated(v) {
				if err := g.Forget(v); err != nil {
					t.Fatal(err)
				}
				live[i] = live[len(live)-1]
				live = live[:len(live)-1]
				i--
				free = append(free, v)
				reborn++
				// Stale copies of its deleted edges must not name the
				// id's next vertex.
				edges = slices.DeleteFunc(edges, func(e [2]uint32) bool { return e[0] == v || e[1] == v })
			}
		}
	}
	if reborn < 20 {
		t.Fatalf("%s: only %d vertices were forgotten", where, reborn)
	}
}
