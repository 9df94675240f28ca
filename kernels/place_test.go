package kernels

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/query"
)

// placeStream is a seeded stream over a graph that grows new vertices, and
// random queries over its labels.
type placeStream struct {
	qs      []*query.Query
	batches [][]graph.Update
}

// Batches hold 1 to 2^(maxLog-1) updates.
func newPlaceStream(seed uint64, directed bool, nbatches, maxLog int) *placeStream {
	r := rand.New(rand.NewPCG(seed, 17))
	d := graph.NewDict()
	vl := []string{"A", "B"}
	for _, s := range []string{"A", "B", "x"} {
		d.Intern(s)
	}
	s := &placeStream{}
	for len(s.qs) < 5 {
		s.qs = append(s.qs, randomQuery(r, d, directed, query.Embeddings, []string{"A", "B", ""}, []string{"x", ""}))
	}
	nv := 0
	vertex := func() uint32 {
		if nv < 3 || r.IntN(4) == 0 {
			nv++
			return uint32(nv - 1)
		}
		return uint32(r.IntN(nv))
	}
	var present []graph.Update
	for range nbatches {
		var batch []graph.Update
		for n := 1 << r.IntN(maxLog); len(batch) < n; {
			if len(present) > 0 && r.IntN(4) == 0 {
				p := present[r.IntN(len(present))]
				batch = append(batch, graph.Update{Op: graph.Delete, Src: p.Src, Dst: p.Dst, Label: p.Label, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
				continue
			}
			a, c := vertex(), vertex()
			if a == c {
				continue
			}
			u := graph.Update{Op: graph.Insert, Src: a, Dst: c, Label: d.Intern("x"),
				SrcLabel: d.Intern(vl[int(a)%2]), DstLabel: d.Intern(vl[int(c)%2])}
			batch = append(batch, u)
			present = append(present, u)
		}
		s.batches = append(s.batches, batch)
	}
	return s
}

// TestPlacerEqualsCPU runs the Placer over the CPU and this GPU executor,
// both at once, and checks every batch, counted and enumerated, against
// the CPU alone, in every placement. Exploration (every other batch of a
// bucket) moves queries between the devices, and batches that give the GPU
// no query go through GPU.Follow. Odd trials go through Begin as the
// service does: the graph is reorganized and the next batch applied before
// wait, while the GPU matches from its own copy.
func TestPlacerEqualsCPU(t *testing.T) {
	for _, pl := range Placements {
		x := openGPU(t, pl, false)
		for trial := range 4 {
			directed := trial%2 == 1
			begin := trial >= 2
			where := fmt.Sprintf("%s trial %d directed=%v begin=%v", pl, trial, directed, begin)
			t.Run(where, func(t *testing.T) { placerVsCPU(t, x, uint64(trial), directed, begin, where) })
		}
		x.Close()
	}
}

func placerVsCPU(t *testing.T, x *GPU, seed uint64, directed, begin bool, where string) {
	s := newPlaceStream(seed, directed, 60, 11) // size buckets on either side of the Placer's gpuFirst
	g, err := dyngraph.New(dyngraph.Options{Directed: directed, Alloc: x.Allocator(), SlabEntries: 1 << 12})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cpu := &incremental.CPU{}
	p := &incremental.Placer{CPU: &incremental.CPU{Workers: 2}, GPU: x, Explore: 2, CPUBelow: 1}
	onGPU := 0
	delta, _, _, err := g.Apply(s.batches[0])
	if err != nil {
		t.Fatal(err)
	}
	for b := range s.batches {
		want, err := cpu.Match(g, delta, s.qs, incremental.Count, nil)
		if err != nil {
			t.Fatal(err)
		}
		mode := incremental.Mode(b % 2)
		cc := &collector{got: map[string]int{}}
		if mode == incremental.Enumerate {
			if _, err := cpu.Match(g, delta, s.qs, incremental.Enumerate, cc.sink); err != nil {
				t.Fatal(err)
			}
		}
		gc := &collector{got: map[string]int{}}
		var sink incremental.Sink
		if mode == incremental.Enumerate {
			sink = gc.sink
		}
		var got []incremental.Counts
		next := func() {
			g.Reorganize()
			if b+1 < len(s.batches) {
				if delta, _, _, err = g.Apply(s.batches[b+1]); err != nil {
					t.Fatal(err)
				}
			}
		}
		if begin {
			wait := p.Begin(g, delta, s.qs, mode, sink)
			next()
			got, err = wait()
		} else {
			got, err = p.Match(g, delta, s.qs, mode, sink)
			next()
		}
		if err != nil {
			t.Fatalf("%s batch %d: %v", where, b, err)
		}
		placed := p.Placed(nil)
		if !slices.Equal(want, got) {
			t.Fatalf("%s batch %d (placed %v): CPU %v, placer %v", where, b, placed, want, got)
		}
		for _, d := range placed {
			if d == incremental.OnGPU {
				onGPU++
			}
		}
		if mode == incremental.Enumerate {
			if len(gc.got) != len(cc.got) {
				t.Fatalf("%s batch %d enumerate (placed %v): placer %d distinct matches, CPU %d", where, b, placed, len(gc.got), len(cc.got))
			}
			for k, n := range cc.got {
				if gc.got[k] != n {
					t.Fatalf("%s batch %d enumerate (placed %v): placer emitted %s %d times, CPU %d", where, b, placed, k, gc.got[k], n)
				}
			}
		}
	}
	if onGPU == 0 {
		t.Fatalf("%s: no query ran on the GPU", where)
	}
}

// TestFollowKeepsCopy matches on the GPU every third batch only and tells
// it of the others through Follow: its counts equal the CPU's, and it keeps
// following the graph (a batch after Follow copies the changed lists, not
// the whole graph). Batches are small, so that the lists to copy stay
// under Follow's bound.
func TestFollowKeepsCopy(t *testing.T) {
	for _, pl := range []Placement{Device, ZeroCopy, GCSM} {
		x := openGPU(t, pl, false)
		for trial := range 2 {
			directed := trial == 1
			where := fmt.Sprintf("%s directed=%v", pl, directed)
			s := newPlaceStream(uint64(10+trial), directed, 45, 3)
			g, err := dyngraph.New(dyngraph.Options{Directed: directed, Alloc: x.Allocator(), SlabEntries: 1 << 12})
			if err != nil {
				t.Fatal(err)
			}
			cpu := &incremental.CPU{}
			for b, batch := range s.batches {
				delta, _, _, err := g.Apply(batch)
				if err != nil {
					t.Fatal(err)
				}
				if b%3 != 0 {
					x.Follow(g)
					if b > 0 && (x.tracked != g || x.epoch != g.Epoch()) {
						t.Fatalf("%s batch %d: the GPU stopped following the graph", where, b)
					}
					g.Reorganize()
					continue
				}
				want, err := cpu.Match(g, delta, s.qs, incremental.Count, nil)
				if err != nil {
					t.Fatal(err)
				}
				got, err := x.Match(g, delta, s.qs, incremental.Count, nil)
				if err != nil {
					t.Fatalf("%s batch %d: %v", where, b, err)
				}
				if !slices.Equal(want, got) {
					t.Fatalf("%s batch %d: CPU %v, GPU after Follow %v", where, b, want, got)
				}
				g.Reorganize()
			}
			g.Close()
		}
		x.Close()
	}
}
