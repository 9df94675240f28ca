package sampler

import (
	"flag"
	"sync"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// The benchmark graph: R-MAT, 2^16 vertices, 2^20 distinct undirected edges
// (a ~1M-edge power law with hubs of a few thousand neighbours, the shape of
// incremental's benchmark graph), four vertex labels of skewed shares, and a
// pending batch of 4096 changes, half insertions and half deletions.
const (
	benchScale = 16
	benchEdges = 1 << 20
	benchBatch = 4096
)

// The exact tree walk of the unlabeled house takes minutes per batch on a
// few cores, as matching it does; it runs only with -heavy.
var benchHeavy = flag.Bool("heavy", false, "also run the exact walks that take minutes")

var (
	benchOnce  sync.Once
	benchG     *dyngraph.Graph
	benchDelta []graph.Change
	benchDict  *graph.Dict
	benchErr   error
)

func benchSetup(b *testing.B) {
	b.Helper()
	benchOnce.Do(func() {
		benchG, benchDelta, benchDict, benchErr = buildPowerLaw(benchScale, benchEdges, benchBatch, 2026, []float64{0.60, 0.25, 0.10, 0.05})
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
}

type benchQuery struct {
	name  string
	p     *query.Pattern
	heavy bool // Exact only with -heavy
}

func benchQueries() []benchQuery {
	return []benchQuery{
		{"triangle", pattern("triangle", 3, shapeTriangle, nil, "", false), false},
		{"house", pattern("house", 5, shapeHouse, nil, "", false), true},
		{"house-labeled", pattern("house-L", 5, shapeHouse, []string{"L0", "L1", "L0", "L2", "L3"}, "", false), false},
	}
}

// BenchmarkEstimate is one estimate of a batch of 4096 changes with default
// options on all cores. Besides time it reports the walks' steps, M, and
// the estimated tree nodes (≈ the matching's work: compare with
// BenchmarkExact, which visits every node, for the overhead).
func BenchmarkEstimate(b *testing.B) {
	benchSetup(b)
	for _, bq := range benchQueries() {
		qs := compile(b, benchDict, false, query.Embeddings, bq.p)
		b.Run(bq.name, func(b *testing.B) {
			var e Estimator
			est, err := e.Estimate(benchG, benchDelta, qs, Options{Seed: 1 << 40}) // warm-up
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if est, err = e.Estimate(benchG, benchDelta, qs, Options{Seed: uint64(i)}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(est.Steps), "steps/op")
			b.ReportMetric(float64(est.Walks), "walks/op")
			b.ReportMetric(est.Nodes, "nodes/op")
			b.ReportMetric(float64(len(est.Hottest(nil))), "lists/op")
		})
	}
}

// BenchmarkExact walks every node of the trees once: about the work of
// matching the batch on one core, without the last level.
func BenchmarkExact(b *testing.B) {
	benchSetup(b)
	for _, bq := range benchQueries() {
		qs := compile(b, benchDict, false, query.Embeddings, bq.p)
		b.Run(bq.name, func(b *testing.B) {
			if bq.heavy && !*benchHeavy {
				b.Skip("minutes per op; run with -heavy")
			}
			var nodes uint64
			for range b.N {
				w := exactWalker(benchG, benchDelta, qs, Terms, false)
				nodes = 0
				for _, n := range w.nodes {
					nodes += n
				}
			}
			b.ReportMetric(float64(nodes), "nodes/op")
		})
	}
}
