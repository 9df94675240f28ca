package dyngraph

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/internal/hostmem"
)

// TestBuildEqualsApply loads the same random batches with Build and with
// Apply+Reorganize and requires identical graphs: lists, labels, edge count,
// refusals and stats.
func TestBuildEqualsApply(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		directed := seed%2 == 1
		var batch []graph.Update
		nv := 2 + r.IntN(60)
		for i := 0; i < r.IntN(400); i++ {
			switch r.IntN(8) {
			case 0:
				batch = append(batch, graph.Update{Op: graph.AddVertex, Src: uint32(r.IntN(nv)), SrcLabel: uint32(r.IntN(3)), DstLabel: graph.NoLabel})
			default:
				u := graph.Update{Op: graph.Insert, Src: uint32(r.IntN(nv)), Dst: uint32(r.IntN(nv)), Label: uint32(r.IntN(1 + int(seed%3))), SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}
				if r.IntN(5) == 0 {
					u.SrcLabel = uint32(r.IntN(3))
				}
				batch = append(batch, u)
			}
		}
		opts := Options{Directed: directed, Alloc: hostmem.Heap{}, SlabEntries: 1024}
		a, _ := New(opts)
		_, rjA, stA, err := a.Apply(batch)
		if err != nil {
			t.Fatal(err)
		}
		a.Reorganize()
		for _, builder := range []bool{false, true} {
			b, _ := New(opts)
			rjB, stB, err := build(b, batch, builder)
			if err != nil {
				t.Fatal(err)
			}
			where := fmt.Sprintf("seed %d directed %v builder %v", seed, directed, builder)
			sameBuild(t, where, a, b, stA, stB, rjA, rjB)
			b.Close()
		}
		a.Close()
	}
}

// build loads batch into g with Build or, with builder, a Builder fed one
// update at a time.
func build(g *Graph, batch []graph.Update, builder bool) ([]Reject, ApplyStats, error) {
	if !builder {
		return g.Build(batch)
	}
	b, err := g.NewBuilder(len(batch))
	if err != nil {
		return nil, ApplyStats{}, err
	}
	for i := range batch {
		if err := b.Add(&batch[i]); err != nil {
			return nil, ApplyStats{}, err
		}
	}
	return b.Finish()
}

// sameBuild fails unless b, built, equals a, applied: stats, refusals,
// vertex labels and every list.
func sameBuild(t *testing.T, where string, a, b *Graph, stA, stB ApplyStats, rjA, rjB []Reject) {
	t.Helper()
	if stA != stB {
		t.Fatalf("%s: stats Apply %+v, Build %+v", where, stA, stB)
	}
	if len(rjA) != len(rjB) {
		t.Fatalf("%s: %d refusals by Apply, %d by Build", where, len(rjA), len(rjB))
	}
	for i := range rjA {
		if rjA[i].Index != rjB[i].Index || rjA[i].Err.Error() != rjB[i].Err.Error() {
			t.Fatalf("%s: refusal %d: Apply %v, Build %v", where, i, rjA[i], rjB[i])
		}
	}
	if a.NumEdges() != b.NumEdges() || !slices.Equal(a.VertexLabels(), b.VertexLabels()) {
		t.Fatalf("%s: edges %d vs %d, labels %v vs %v", where, a.NumEdges(), b.NumEdges(), a.VertexLabels(), b.VertexLabels())
	}
	for v := 0; v < a.NumVertices(); v++ {
		for _, in := range []bool{false, true} {
			la, lb := a.Out(uint32(v)), b.Out(uint32(v))
			if in {
				la, lb = a.In(uint32(v)), b.In(uint32(v))
			}
			if !slices.Equal(la.Sorted, lb.Sorted) || !slices.Equal(la.SortedLabels, lb.SortedLabels) || len(lb.Appended) != 0 {
				t.Fatalf("%s: vertex %d in=%v: Apply %v/%v, Build %v/%v", where, v, in, la.Sorted, la.SortedLabels, lb.Sorted, lb.SortedLabels)
			}
		}
	}
}

func TestBuildRefusesDeletionsAndNonEmpty(t *testing.T) {
	g, _ := New(Options{Alloc: hostmem.Heap{}})
	defer g.Close()
	if _, _, err := g.Build([]graph.Update{{Op: graph.Delete, Src: 0, Dst: 1, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}}); err == nil {
		t.Fatal("Build accepted a deletion")
	}
	if _, _, err := g.Build([]graph.Update{{Op: graph.Insert, Src: 0, Dst: 1, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Build([]graph.Update{{Op: graph.Insert, Src: 1, Dst: 2, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}}); err == nil {
		t.Fatal("Build accepted a graph with edges")
	}
}

// BenchmarkBuild loads a graph the size of the human data set (4096
// vertices of 44 labels, 86k R-MAT edge draws) with Build, and with a
// Builder as a replay's load does.
func BenchmarkBuild(b *testing.B) {
	const vertices, labels, edges = 1 << 12, 44, 86282
	r := rand.New(rand.NewPCG(4, 4))
	var batch []graph.Update
	for v := range uint32(vertices) {
		batch = append(batch, graph.Update{Op: graph.AddVertex, Src: v, SrcLabel: uint32(r.IntN(labels)), DstLabel: graph.NoLabel})
	}
	for _, u := range inserts(rmatEdges(r, 12, edges), 0) {
		if u.Src != u.Dst {
			batch = append(batch, u)
		}
	}
	for _, builder := range []bool{false, true} {
		b.Run(map[bool]string{false: "batch", true: "builder"}[builder], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				g, err := New(Options{Alloc: hostmem.Mmap{}})
				if err != nil {
					b.Fatal(err)
				}
				if _, _, err := build(g, batch, builder); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := g.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
