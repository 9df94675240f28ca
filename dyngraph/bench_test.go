package dyngraph

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/internal/hostmem"
)

// The benchmarks run on an R-MAT graph of 2^20 edge draws on 2^18 vertices:
// skewed degrees, a few lists of thousands of entries and many of one or two,
// as in the social and web graphs gcsm is meant for. Generating it takes
// about a second; loading it about as long again.
const (
	benchScale = 18
	benchEdges = 1 << 20
	benchBatch = 1 << 16 // the load's batch size
)

// benchLoad returns the edges of the benchmark graph and the same edges as
// insert batches of benchBatch updates.
func benchLoad(r *rand.Rand) ([][2]uint32, [][]graph.Update) {
	edges := rmatEdges(r, benchScale, benchEdges)
	var batches [][]graph.Update
	for lo := 0; lo < len(edges); lo += benchBatch {
		batches = append(batches, inserts(edges[lo:min(lo+benchBatch, len(edges))], 0))
	}
	return edges, batches
}

func benchGraph(b *testing.B, batches [][]graph.Update) *Graph {
	b.Helper()
	g, err := New(Options{Alloc: hostmem.Mmap{}})
	if err != nil {
		b.Fatal(err)
	}
	for _, u := range batches {
		if _, _, _, err := g.Apply(u); err != nil {
			b.Fatal(err)
		}
		g.Reorganize()
	}
	return g
}

// BenchmarkLoad builds the graph from empty through Apply and Reorganize in
// batches of 2^16 insertions.
func BenchmarkLoad(b *testing.B) {
	_, batches := benchLoad(rand.New(rand.NewPCG(1, 1)))
	b.ReportAllocs()
	b.ResetTimer()
	var edges int64
	for range b.N {
		g := benchGraph(b, batches)
		edges = g.NumEdges()
		b.StopTimer()
		if err := g.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	// Count updates, duplicates and self-loops included: that is the input
	// rate; the distinct edges are reported alongside.
	b.ReportMetric(float64(b.N)*benchEdges/b.Elapsed().Seconds(), "edges/s")
	b.ReportMetric(float64(edges), "distinct-edges")
}

// BenchmarkApplyReorganize measures a steady stream on the loaded graph:
// every batch inserts half its size in fresh R-MAT edges and deletes the
// half that the previous batch inserted, so the graph keeps its size.
func BenchmarkApplyReorganize(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	_, batches := benchLoad(r)
	for _, size := range []int{1 << 10, 1 << 16} {
		g := benchGraph(b, batches)
		// Eight rounds of fresh edges, drawn like the graph's; they mostly
		// miss the graph, so each batch has size/2 insertions and size/2
		// deletions.
		c := newChurn(r, withoutLoops(rmatEdges(r, benchScale, 8*size/2+size)), size/2, []graph.Label{0})
		c.prime(b, g)
		for range len(c.batches) {
			c.next(b, g) // grow the lists and free lists to their steady state
		}
		b.Run(fmt.Sprint("batch=", size), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				c.next(b, g)
			}
			b.ReportMetric(float64(b.N*len(c.batches[0]))/b.Elapsed().Seconds(), "updates/s")
		})
		if err := g.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHasEdge looks up edges of the loaded graph, half present and half
// random pairs (almost all absent), in random order.
func BenchmarkHasEdge(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 3))
	edges, batches := benchLoad(r)
	g := benchGraph(b, batches)
	defer g.Close()
	edges = withoutLoops(edges) // Apply refused those
	const nq = 1 << 16
	qs := make([][2]uint32, nq)
	for i := range qs {
		if i%2 == 0 {
			qs[i] = edges[r.IntN(len(edges))]
		} else {
			qs[i] = [2]uint32{r.Uint32N(1 << benchScale), r.Uint32N(1 << benchScale)}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	found := 0
	for i := range b.N {
		q := qs[i&(nq-1)]
		if g.HasEdge(q[0], q[1], 0) {
			found++
		}
	}
	b.StopTimer()
	if found < b.N/2 {
		b.Fatalf("found %d of %d lookups, at least half are of present edges", found, b.N)
	}
}

// BenchmarkStream measures Apply+Reorganize as the service runs them on a
// large sparse graph (bench service's alert-sparse: a million accounts,
// batches of 4,096): an R-MAT graph of 2^21 edge draws on 2^20 vertices,
// then batches that insert half their size in fresh R-MAT edges and delete
// those of the batch before. workers=1 is the serial path; workers=max uses
// GOMAXPROCS; batch=2 is per-update mode, which must stay serial and cheap.
// Loading the graph takes a few seconds.
func BenchmarkStream(b *testing.B) {
	const scale, nedges = 20, 1 << 21
	r := rand.New(rand.NewPCG(4, 4))
	edges := rmatEdges(r, scale, nedges)
	g, err := New(Options{Alloc: hostmem.Mmap{}})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	load(b, g, edges, benchBatch)
	for _, bc := range []struct {
		size, workers int
	}{{4096, 1}, {4096, 0}, {2, 1}, {2, 0}} {
		c := newChurn(r, withoutLoops(rmatEdges(r, scale, 8*bc.size/2+bc.size)), bc.size/2, []graph.Label{0})
		c.prime(b, g)
		setWorkers(g, bc.workers)
		for range len(c.batches) {
			c.next(b, g)
		}
		w := fmt.Sprint(bc.workers)
		if bc.workers == 0 {
			w = "max"
		}
		b.Run(fmt.Sprintf("batch=%d/workers=%s", bc.size, w), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				c.next(b, g)
			}
			b.ReportMetric(float64(b.N*len(c.batches[0]))/b.Elapsed().Seconds(), "updates/s")
		})
		// Take the last batch's insertions out again.
		last := c.sets[(c.i+len(c.sets)-1)%len(c.sets)]
		del := slices.Clone(last)
		for i := range del {
			del[i].Op = graph.Delete
		}
		if _, _, _, err := g.Apply(del); err != nil {
			b.Fatal(err)
		}
		g.Reorganize()
	}
}

func setWorkers(g *Graph, n int) { g.opts.Workers = n }
