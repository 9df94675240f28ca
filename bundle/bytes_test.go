package bundle_test

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
)

// bytesTransfers is how many transfers BenchmarkStoreBytesPerTransfer
// loads: enough that per-structure constants vanish from the figure.
const bytesTransfers = 1 << 20

// bytesBatch is the batch size of the load, the service's default.
const bytesBatch = 4096

// loadTransfers applies n transfers over pairs pairs to g, folded into s
// unless s is nil, and returns the growth of the live Go heap. Pair p is
// vertex p/8 to one of the 8 vertices after it, so that every pair is
// distinct; transfer i is on pair i mod pairs, so pairs fill in rounds.
// With s, every transfer has its own id ("tx-<i>", allocated in the load, as
// a decoded event's is), an event time and props numeric properties;
// without, updates carry no transfer, as on a graph without bundles.
func loadTransfers(tb testing.TB, g *dyngraph.Graph, s *bundle.Store, n, pairs int, props []string) uint64 {
	batch := make([]graph.Update, bytesBatch)
	txs := make([]graph.Transfer, bytesBatch)
	ps := make([][]graph.Prop, bytesBatch)
	for i := range ps {
		ps[i] = make([]graph.Prop, len(props))
	}
	vertices := graph.VertexID(pairs/8 + 9)
	before := liveHeap()
	for lo := 0; lo < n; lo += bytesBatch {
		hi := min(lo+bytesBatch, n)
		for i := lo; i < hi; i++ {
			p := i % pairs
			src := graph.VertexID(p / 8)
			u := graph.Update{Op: graph.Insert, Src: src, Dst: (src + 1 + graph.VertexID(p%8)) % vertices, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}
			if s != nil {
				k := i - lo
				for j, name := range props {
					ps[k][j] = graph.Prop{Name: name, Value: graph.NumberValue(float64(i%50_000) + float64(j))}
				}
				txs[k] = graph.Transfer{ID: "tx-" + strconv.Itoa(i), Time: 1_700_000_000_000 + int64(i)*200, Props: ps[k]}
				u.Tx = &txs[k]
			}
			batch[i-lo] = u
		}
		var f dyngraph.Folder
		if s != nil {
			f = s
		}
		if _, rej, _, err := g.ApplyFolded(batch[:hi-lo], f); err != nil || len(rej) > 0 {
			tb.Fatalf("batch at %d: %v, %d refused", lo, err, len(rej))
		}
		if s != nil {
			s.Settle()
		}
		g.Reorganize()
	}
	return liveHeap() - before
}

// liveHeap is the Go heap's live bytes after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkStoreBytesPerTransfer reports what a transfer costs in memory,
// with one transfer per pair and with four:
//   - store-B/transfer: the store's Go heap per transfer (id, event time and
//     0, 1 or 2 numeric properties): the heap growth of the load less that
//     of the same pairs loaded without bundles, the graph's Go-heap part;
//   - graph-B/edge: the graph's own bytes per edge (dyngraph.Stats): its
//     lists' capacity and its per-vertex table;
//   - arena-B/edge: the arenas' slabs per edge, address space reserved
//     whole (64 MiB a slab by default) and resident only once written.
//
// Run it alone, with -benchtime=1x: an iteration loads 2^20 transfers twice.
func BenchmarkStoreBytesPerTransfer(b *testing.B) {
	for _, perPair := range []int{1, 4} {
		for _, props := range [][]string{nil, {"amount"}, {"amount", "fee"}} {
			b.Run(fmt.Sprintf("per-pair=%d/props=%d", perPair, len(props)), func(b *testing.B) {
				pairs := bytesTransfers / perPair
				for b.Loop() {
					g0, _ := newGraph(b)
					graphHeap := loadTransfers(b, g0, nil, pairs, pairs, nil)
					st := g0.Stats()
					if st.Edges != int64(pairs) {
						b.Fatalf("graph has %d edges, want %d", st.Edges, pairs)
					}

					g, s := newGraph(b)
					s.KeepTime()
					for _, p := range props[min(1, len(props)):] {
						s.EdgeColumn(p)
					}
					if len(props) == 0 {
						// newGraph keeps "amount"; a store that keeps no
						// property is made here.
						s = bundle.New(true)
						s.KeepTime()
					}
					heap := loadTransfers(b, g, s, bytesTransfers, pairs, props)
					if s.Len() != bytesTransfers || s.Pairs() != pairs {
						b.Fatalf("store holds %d transfers over %d pairs, want %d over %d", s.Len(), s.Pairs(), bytesTransfers, pairs)
					}
					entry := int64(4) // a neighbour id; a label beside it on multi-label graphs
					if st.MultiLabel {
						entry = 8
					}
					b.ReportMetric(float64(st.CapacityEntries*entry+st.TableBytes)/float64(st.Edges), "graph-B/edge")
					b.ReportMetric(float64(st.ArenaBytes)/float64(st.Edges), "arena-B/edge")
					b.ReportMetric((float64(heap)-float64(graphHeap))/bytesTransfers, "store-B/transfer")
					runtime.KeepAlive(s)
				}
			})
		}
	}
}
