package dyngraph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/internal/hostmem"
)

// snapshot is everything a reader can see of a graph: Apply's results, the
// touched lists, and every list's table row and arena entries, which pins
// the arena layout as well as the contents.
type snapshot struct {
	delta   []graph.Change
	rejects []string
	stats   ApplyStats
	touched []ListRef
	epoch   uint64
	rows    [][TableWords]uint32
	entries [][]uint32
	graph   Stats
}

func takeSnapshot(g *Graph) snapshot {
	s := snapshot{touched: g.Touched(nil), epoch: g.Epoch(), graph: g.Stats()}
	for v := range graph.VertexID(g.NumVertices()) {
		for _, in := range []bool{false, true} {
			if in && !g.Directed() {
				continue
			}
			row := g.Row(ListRef{v, in})
			s.rows = append(s.rows, row)
			if n := row[2]; n > 0 {
				ids, lbls := g.Slab(int(row[0]))
				s.entries = append(s.entries, slices.Clone(ids[row[1]:row[1]+n]))
				if lbls != nil {
					s.entries = append(s.entries, slices.Clone(lbls[row[1]:row[1]+n]))
				}
			}
		}
	}
	return s
}

func applySnapshot(t *testing.T, g *Graph, b []graph.Update) (pending, clean snapshot) {
	delta, rejects, st, err := g.Apply(b)
	if err != nil {
		t.Fatal(err)
	}
	pending = takeSnapshot(g)
	pending.delta, pending.stats = slices.Clone(delta), st
	for _, rj := range rejects {
		pending.rejects = append(pending.rejects, fmt.Sprint(rj.Index, rj.Err))
	}
	g.Reorganize()
	return pending, takeSnapshot(g)
}

// TestParallelSameAsSerial applies the same random batches (every case of
// batch normalisation, from single updates to thousands) to a graph that
// runs every step serially and to graphs that run them on several workers
// from a few items up, and requires the same results, the same pending
// views, and the same arena layout.
func TestParallelSameAsSerial(t *testing.T) {
	seeds := 48
	if testing.Short() {
		seeds = 12
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			parallelSame(t, seed)
		})
	}
}

func parallelSame(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	directed := seed%2 == 0
	def := graph.Label(r.IntN(2))
	newGraph := func(workers, parallelMin int) *Graph {
		g, err := New(Options{Directed: directed, Alloc: hostmem.Heap{}, SlabEntries: 1024, DefaultVertexLabel: def, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		g.parallelMin = parallelMin
		t.Cleanup(func() {
			if err := g.Close(); err != nil {
				t.Error(err)
			}
		})
		return g
	}
	serial := newGraph(1, math.MaxInt)
	parallel := []*Graph{newGraph(2, 1), newGraph(4, 8), newGraph(3, 64)}
	m := newModel(directed, def)
	gn := &gen{r: r, m: m, vmax: 50 + r.IntN(3000)}
	if seed%3 == 0 {
		gn.hubs = 2 // lists past a slab, then cut down
	}
	sizes := []int{0, 1, 2, 7, 100, 600, 3000}
	for bi := range 12 {
		// Edge and vertex labels switch from one to several mid-stream.
		gn.labels, gn.vlabels = []graph.Label{3}, []graph.Label{def}
		if bi >= 6 {
			gn.labels, gn.vlabels = []graph.Label{3, 0, 1}, []graph.Label{0, 1, 2}
		}
		gn.pDel = r.Float64() * 0.7
		gn.purge = bi >= 2 && r.IntN(4) == 0
		if bi < 2 {
			gn.pDel = 0.05
		}
		m.begin()
		b := gn.batch(sizes[r.IntN(len(sizes))])
		m.end()
		wantP, wantC := applySnapshot(t, serial, b)
		for i, g := range parallel {
			gotP, gotC := applySnapshot(t, g, b)
			if !reflect.DeepEqual(gotP, wantP) {
				t.Fatalf("batch %d (%d updates), graph %d: pending state differs from the serial graph's:\n%+v\nserial:\n%+v", bi, len(b), i, gotP, wantP)
			}
			if !reflect.DeepEqual(gotC, wantC) {
				t.Fatalf("batch %d (%d updates), graph %d: reorganized state differs from the serial graph's", bi, len(b), i)
			}
		}
	}
}
