package kernels

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/query"
)

// workerSink checks the Sink contract the service's collector relies on:
// worker numbers within [0, n), and no worker called from two goroutines at
// once. It keeps the matches, as collector does, to compare with the CPU's.
type workerSink struct {
	t     *testing.T
	n     int
	inUse []atomic.Bool
	used  []atomic.Int64 // matches per worker
	mu    sync.Mutex
	got   map[string]int
}

func newWorkerSink(t *testing.T, n int) *workerSink {
	return &workerSink{t: t, n: n, inUse: make([]atomic.Bool, n), used: make([]atomic.Int64, n), got: map[string]int{}}
}

func (s *workerSink) sink(w, q int, sign graph.Sign, m []graph.VertexID) {
	if w < 0 || w >= s.n {
		s.t.Errorf("sink worker %d, want 0 to %d", w, s.n-1)
		return
	}
	if !s.inUse[w].CompareAndSwap(false, true) {
		s.t.Errorf("sink worker %d called from two goroutines at once", w)
		return
	}
	defer s.inUse[w].Store(false)
	s.used[w].Add(1)
	k := fmt.Sprint(q, sign, m)
	s.mu.Lock()
	s.got[k]++
	s.mu.Unlock()
}

// workers is how many workers received matches.
func (s *workerSink) workers() int {
	n := 0
	for i := range s.used {
		if s.used[i].Load() > 0 {
			n++
		}
	}
	return n
}

// TestDrainWorkers: a launch with tens of thousands of matches reaches the
// sink from several drain goroutines, each a worker of its own within
// NumWorkers, on one GPU and split over two (Multi), and the matches are
// the CPU's.
func TestDrainWorkers(t *testing.T) {
	one := openGPU(t, Device, false)
	defer one.Close()
	if one.NumWorkers() < 2 {
		t.Skip("one sink worker: GOMAXPROCS is 1")
	}
	matchers := []incremental.Matcher{one}
	allocs := []*GPU{one} // whose pinned memory holds each matcher's graph
	if xs := openGPUsOrNil(2, Device); xs != nil {
		defer func() {
			for _, x := range xs {
				x.Close()
			}
		}()
		matchers, allocs = append(matchers, &Multi{GPUs: xs}), append(allocs, xs[0])
	} else {
		t.Log("one GPU: Multi not run")
	}
	for i, m := range matchers {
		// A dense directed graph: every inserted edge closes dozens of
		// triangles, so a batch of 1,500 gives over 2*minDrainChunk records.
		g, err := dyngraph.New(dyngraph.Options{Directed: true, Alloc: allocs[i].Allocator()})
		if err != nil {
			t.Fatal(err)
		}
		d := graph.NewDict()
		p, err := query.ParseCypher("tri", "(a)-[]->(b)-[]->(c)-[]->(a)")
		if err != nil {
			t.Fatal(err)
		}
		q, err := query.Compile(p, d, true, query.Embeddings)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(3, 4))
		const nv = 150
		edges := func(n int) []graph.Update {
			var ups []graph.Update
			for len(ups) < n {
				a, b := uint32(r.IntN(nv)), uint32(r.IntN(nv))
				if a != b {
					ups = append(ups, graph.Update{Op: graph.Insert, Src: a, Dst: b, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
				}
			}
			return ups
		}
		if _, _, err := g.Build(edges(8000)); err != nil {
			t.Fatal(err)
		}
		delta, _, _, err := g.Apply(edges(1500))
		if err != nil {
			t.Fatal(err)
		}
		qs := []*query.Query{q}
		wc := m.(interface{ NumWorkers() int })
		gs := newWorkerSink(t, wc.NumWorkers())
		got, err := m.Match(g, delta, qs, incremental.Enumerate, gs.sink)
		if err != nil {
			t.Fatal(err)
		}
		cc := &collector{got: map[string]int{}}
		want, err := (&incremental.CPU{}).Match(g, delta, qs, incremental.Enumerate, cc.sink)
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != want[0] || len(gs.got) != len(cc.got) {
			t.Fatalf("%T: counts %v, %d distinct matches; the CPU's %v, %d", m, got, len(gs.got), want, len(cc.got))
		}
		for k, n := range cc.got {
			if gs.got[k] != n {
				t.Fatalf("%T: match %s %d times, the CPU's %d", m, k, gs.got[k], n)
			}
		}
		if n := want[0].Positive; n.Cmp(graph.CountOf(2*minDrainChunk)) < 0 {
			t.Fatalf("the batch has %d matches: too few to need several drain goroutines", n)
		}
		if gs.workers() < 2 {
			t.Errorf("%T: %d matches reached %d sink worker(s), want several", m, want[0].Positive, gs.workers())
		}
		g.Close()
	}
}
