package cache

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/query"
)

// The benchmark graph: R-MAT, 2^16 vertices with 32 vertex labels of Zipf
// exponent 1.1 (gcsm bench's GPU workload), 2^20 edge draws (about a
// million distinct undirected edges, hubs of a few thousand neighbours),
// with a pending batch of 4096 changes. Built once per process.
var (
	benchOnce  sync.Once
	benchG     *dyngraph.Graph
	benchDelta []graph.Change
	benchErr   error
)

func benchGraph(b *testing.B) {
	b.Helper()
	benchOnce.Do(func() {
		r := rand.New(rand.NewPCG(2026, 5))
		const scale, draws, batch = 16, 1 << 20, 4096
		perm := r.Perm(1 << scale)
		rmat := func() (uint32, uint32) {
			var s, d uint32
			for range scale {
				s, d = s<<1, d<<1
				switch p := r.Float64(); {
				case p < 0.45:
				case p < 0.67:
					d |= 1
				case p < 0.89:
					s |= 1
				default:
					s, d = s|1, d|1
				}
			}
			return uint32(perm[s]), uint32(perm[d])
		}
		load := make([]graph.Update, 0, 1<<scale+draws)
		var cum [benchLabels]float64
		for l := range benchLabels {
			cum[l] = math.Pow(float64(l+1), -1.1)
			if l > 0 {
				cum[l] += cum[l-1]
			}
		}
		for v := range 1 << scale {
			x := r.Float64() * cum[benchLabels-1]
			l := 0
			for cum[l] < x {
				l++
			}
			load = append(load, graph.Update{Op: graph.AddVertex, Src: uint32(v), SrcLabel: graph.Label(l)})
		}
		for range draws {
			if s, d := rmat(); s != d {
				load = append(load, edge(graph.Insert, s, d, 0))
			}
		}
		benchG, benchErr = dyngraph.New(dyngraph.Options{Alloc: hostmem.Heap{}})
		if benchErr != nil {
			return
		}
		if _, _, benchErr = benchG.Build(load); benchErr != nil {
			return
		}
		var upd []graph.Update
		for i := range batch / 2 {
			u := load[r.IntN(len(load))]
			upd = append(upd, edge(graph.Delete, u.Src, u.Dst, 0))
			s, d := rmat()
			if s != d {
				upd = append(upd, edge(graph.Insert, s, d, 0))
			}
			_ = i
		}
		benchDelta, _, _, benchErr = benchG.Apply(upd)
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
}

const benchLabels = 32

// benchReads trims the lists to what gcsm bench's 4-cycle or house reads:
// their vertices alternate the two most common labels, 0 and 1.
func benchReads(b *testing.B, shape string) *Reads {
	b.Helper()
	cypher := map[string]string{
		"4-cycle": "(a:0)-[]-(b:1)-[]-(c:0)-[]-(d:1)-[]-(a)",
		"house":   "(a:0)-[]-(b:1)-[]-(c:0)-[]-(d:1)-[]-(a), (a)-[]-(e:0)-[]-(b)",
	}[shape]
	d := graph.NewDict()
	d.Intern("0")
	d.Intern("1")
	return NewReads(benchG, []*query.Query{compile(b, d, cypher, false)})
}

// BenchmarkPack packs the lists in degree order into a reused block, whole
// and trimmed to a query's reads: the budget decides how many. SetBytes is
// the block's size, so MB/s is the packing bandwidth.
func BenchmarkPack(b *testing.B) {
	benchGraph(b)
	for _, lists := range []string{"whole", "4-cycle", "house"} {
		var reads *Reads
		if lists != "whole" {
			reads = benchReads(b, lists)
		}
		for _, c := range []struct {
			name   string
			budget int64
		}{{"1MiB", 1 << 20}, {"16MiB", 16 << 20}, {"all", 1 << 40}} {
			b.Run(lists+"/"+c.name, func(b *testing.B) {
				keys := Degree(nil, benchG, Longest(nil, benchG), c.budget, reads)
				var blk Block
				if _, err := Pack(&blk, benchG, keys, c.budget, reads); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(blk.Bytes())
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if _, err := Pack(&blk, benchG, keys, c.budget, reads); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(blk.Keys()), "lists/op")
			})
		}
	}
}

// BenchmarkLongest is the Naive policy's order: a sort of every list.
func BenchmarkLongest(b *testing.B) {
	benchGraph(b)
	b.ReportAllocs()
	var keys []uint32
	for range b.N {
		keys = Longest(keys[:0], benchG)
	}
}

// BenchmarkDegree cuts the order to 16 MiB of lists trimmed to what the
// house reads: what the Naive policy does for a new set of queries.
func BenchmarkDegree(b *testing.B) {
	benchGraph(b)
	order, reads := Longest(nil, benchG), benchReads(b, "house")
	b.ReportAllocs()
	b.ResetTimer()
	var keys []uint32
	for range b.N {
		keys = Degree(keys[:0], benchG, order, 16<<20, reads)
	}
}

// BenchmarkKHop is the VSGM policy's cost for a batch of 4096 and k = 2,
// which on a power law reaches most of the graph.
func BenchmarkKHop(b *testing.B) {
	benchGraph(b)
	b.ReportAllocs()
	var keys []uint32
	for range b.N {
		keys, _ = KHop(keys[:0], benchG, benchDelta, 2, 1<<40, nil)
	}
	b.ReportMetric(float64(len(keys)), "lists/op")
}
