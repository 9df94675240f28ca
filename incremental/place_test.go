package incremental

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// placerScenarios are the first scenarios of a few configs: undirected,
// directed and multi-label.
func placerScenarios(t *testing.T) []*mmScenario {
	var out []*mmScenario
	seen := map[string]bool{}
	for _, s := range mmScenarios(t) {
		if !seen[s.cfg.name] && len(out) < 4 {
			seen[s.cfg.name] = true
			out = append(out, s)
		}
	}
	return out
}

// TestPlacerEqualsCPU runs a Placer whose two devices are CPU executors of
// different worker counts, measured and explored by the real clock, and
// checks every batch against one CPU: the same counts, and in Enumerate
// mode the same matches, delivered to a sink whose per-worker buffers take
// no lock (under -race, two devices sharing a worker number is a race).
// Exploration measures every query alone on both devices, so subsets change
// from batch to batch, and on the streams of many batches each query must
// have run on both. Through Begin, the GPU's side is an executor that
// overlaps (its matches reach the sink from its own goroutine, and its
// counts come with wait).
func TestPlacerEqualsCPU(t *testing.T) {
	const cpuW, gpuW = 2, 3
	for _, s := range placerScenarios(t) {
		for _, c := range []struct {
			bs    int
			begin bool
		}{{1, false}, {3, false}, {40, false}, {1, true}, {40, true}} {
			bs := c.bs
			p := &Placer{CPU: &CPU{Workers: cpuW}, GPU: &CPU{Workers: gpuW}, Explore: 2, CPUBelow: 1}
			if c.begin {
				p.GPU = &overlappingGPU{CPU: &CPU{Workers: gpuW}}
			}
			ran := make([][2]int, len(s.queries))
			subsets := map[string]bool{}
			s.replay(t, &CPU{Workers: 1}, bs, func(bi int, g *dyngraph.Graph, delta []graph.Change, want []Counts) {
				where := fmt.Sprintf("%s, batch size %d, begin %v, batch %d", s, bs, c.begin, bi)
				mode := Mode(bi % 2)
				var bufs [cpuW + gpuW][]string
				var sink Sink
				if mode == Enumerate {
					sink = func(worker, q int, sign graph.Sign, m []graph.VertexID) {
						if worker < 0 || worker >= len(bufs) {
							t.Errorf("%s: worker %d, want 0 to %d", where, worker, len(bufs)-1)
							return
						}
						bufs[worker] = append(bufs[worker], fmt.Sprint(q, sign, m))
					}
				}
				var got []Counts
				var err error
				if c.begin {
					got, err = p.Begin(g, delta, s.queries, mode, sink)()
				} else {
					got, err = p.Match(g, delta, s.queries, mode, sink)
				}
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s, mode %d: placer %v, CPU %v", where, mode, got, want)
				}
				placed := p.Placed(nil)
				if len(delta) > 0 && len(placed) != len(s.queries) {
					t.Fatalf("%s: %d placements for %d queries", where, len(placed), len(s.queries))
				}
				for qi, d := range placed {
					ran[qi][d]++
				}
				subsets[fmt.Sprint(placed)] = true
				if mode != Enumerate {
					return
				}
				wantM := map[string]int{}
				if _, err := (&CPU{Workers: 1}).Match(g, delta, s.queries, Enumerate, func(_, q int, sign graph.Sign, m []graph.VertexID) {
					wantM[fmt.Sprint(q, sign, m)]++
				}); err != nil {
					t.Fatal(err)
				}
				gotM := map[string]int{}
				for _, b := range bufs {
					for _, k := range b {
						gotM[k]++
					}
				}
				if len(gotM) != len(wantM) {
					t.Fatalf("%s: placer enumerated %d distinct matches, CPU %d", where, len(gotM), len(wantM))
				}
				for k, n := range wantM {
					if gotM[k] != n {
						t.Fatalf("%s: placer enumerated %s %d times, CPU %d", where, k, gotM[k], n)
					}
				}
			}, nil)
			if bs > 3 {
				continue // too few batches to measure every query on both
			}
			for qi, r := range ran {
				if r[OnCPU] == 0 || r[OnGPU] == 0 {
					t.Errorf("%s, batch size %d, begin %v: query %d ran %d batches on the cpu, %d on the gpu; want both", s, bs, c.begin, qi, r[OnCPU], r[OnGPU])
				}
			}
			if len(subsets) < 2 {
				t.Errorf("%s, batch size %d, begin %v: one placement all along", s, bs, c.begin)
			}
		}
	}
}

// TestPlacerSetStop stops one query through the Placer: whichever device
// runs it, and whatever its index in that device's share, it finds nothing,
// and the other queries find all of theirs.
func TestPlacerSetStop(t *testing.T) {
	stopped := 0
	for _, s := range placerScenarios(t) {
		nq := len(s.queries)
		for _, target := range []int{0, nq - 1} {
			p := &Placer{CPU: &CPU{Workers: 2}, GPU: &CPU{Workers: 3}, Explore: 1, CPUBelow: 1}
			p.SetStop(func(q int) bool { return q == target })
			s.replay(t, &CPU{Workers: 1}, 11, func(bi int, g *dyngraph.Graph, delta []graph.Change, want []Counts) {
				mode := Mode(bi % 2)
				var sink Sink
				if mode == Enumerate {
					sink = func(_, q int, _ graph.Sign, _ []graph.VertexID) {
						if q == target {
							t.Errorf("%s batch %d: stopped query %d enumerated a match", s, bi, q)
						}
					}
				}
				got, err := p.Match(g, delta, s.queries, mode, sink)
				if err != nil {
					t.Fatal(err)
				}
				if want[target] != (Counts{}) {
					stopped++
				}
				for qi := range got {
					w := want[qi]
					if qi == target {
						w = Counts{}
					}
					if got[qi] != w {
						t.Fatalf("%s batch %d, query %d stopped: query %d found %+v, want %+v (placed %v)", s, bi, target, qi, got[qi], w, p.Placed(nil))
					}
				}
			}, nil)
		}
	}
	if stopped == 0 {
		t.Fatal("no batch had matches of a stopped query to lose")
	}
}

// countingMatcher is a real executor that counts the batches it matched.
type countingMatcher struct {
	Matcher
	calls int
}

func (c *countingMatcher) Match(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode Mode, sink Sink) ([]Counts, error) {
	c.calls++
	return c.Matcher.Match(g, delta, queries, mode, sink)
}

// TestPlacerSmallBatchesOnCPU: batches under CPUBelow changes go to the CPU
// alone, with the caller's worker numbers, and the GPU is never called for
// them, not even to be measured; larger ones are placed by the model.
func TestPlacerSmallBatchesOnCPU(t *testing.T) {
	s := placerScenarios(t)[0]
	gpu := &countingMatcher{Matcher: &CPU{Workers: 3}}
	p := &Placer{CPU: &CPU{Workers: 2}, GPU: gpu, Explore: 1}
	small := 0
	s.replay(t, &CPU{Workers: 1}, 5, func(bi int, g *dyngraph.Graph, delta []graph.Change, want []Counts) {
		before := gpu.calls
		got, err := p.Match(g, delta, s.queries, Enumerate, func(worker, _ int, _ graph.Sign, _ []graph.VertexID) {
			if len(delta) < 16 && worker >= 2 {
				t.Errorf("batch %d of %d changes: worker %d, past the CPU's", bi, len(delta), worker)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("batch %d: placer %v, CPU %v", bi, got, want)
		}
		if len(delta) > 0 && len(delta) < 16 {
			small++
			if gpu.calls != before {
				t.Fatalf("batch %d of %d changes called the GPU", bi, len(delta))
			}
			for _, d := range p.Placed(nil) {
				if d != OnCPU {
					t.Fatalf("batch %d of %d changes placed on %v", bi, len(delta), d)
				}
			}
		}
	}, nil)
	if small == 0 {
		t.Fatal("no small batch ran")
	}
}

// applyChains applies batch b of a stream of n edges a batch, each from a
// new A vertex to the next, the batch's first from an H vertex: a stream
// on which a hubQueries query costs every batch alike.
func applyChains(t *testing.T, g *dyngraph.Graph, b, n int, labels *graph.Dict) []graph.Change {
	t.Helper()
	h, a, e := labels.Intern("H"), labels.Intern("A"), labels.Intern("e")
	var batch []graph.Update
	for i := range n {
		v := uint32(b*n + i)
		batch = append(batch, graph.Update{Op: graph.Insert, Src: v, Dst: v + 1, Label: e, SrcLabel: a, DstLabel: a})
	}
	batch[0].SrcLabel = h
	delta, _, _, err := g.Apply(batch)
	if err != nil {
		t.Fatal(err)
	}
	return delta
}

// fakeClock is a clock that executors advance by what their calls are to
// cost; both devices may run at once, so it is atomic.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// pricedCPU is a real CPU executor whose calls with queries cost cost.
type pricedCPU struct {
	*CPU
	clock *fakeClock
	cost  time.Duration
}

func (p *pricedCPU) Match(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode Mode, sink Sink) ([]Counts, error) {
	if len(queries) > 0 {
		p.clock.advance(p.cost)
	}
	return p.CPU.Match(g, delta, queries, mode, sink)
}

// followingGPU is a real executor that follows batches as the GPU's does:
// its first call after batches it only followed catches up on them, at
// catchUp, and a call with queries then costs cost(the graph's epoch).
type followingGPU struct {
	*CPU
	clock    *fakeClock
	followed bool
	catchUp  time.Duration
	cost     func(epoch uint64) time.Duration
}

func (f *followingGPU) Follow(*dyngraph.Graph) { f.followed = true }

func (f *followingGPU) Match(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode Mode, sink Sink) ([]Counts, error) {
	if f.followed {
		f.clock.advance(f.catchUp)
		f.followed = false
	}
	if len(queries) > 0 {
		f.clock.advance(f.cost(g.Epoch()))
	}
	return f.CPU.Match(g, delta, queries, mode, sink)
}

// TestPlacerCatchUpUntimed: a query starts where the GPU is ten times the
// CPU's cost, and from batch 30 on the GPU is ten times cheaper, as when a
// densifying graph makes a query heavy. The GPU, having only followed the
// batches on the CPU, pays a catch-up a hundred times the CPU's batch on
// its next call. That must not count as the query's cost: the query moves
// to the GPU and stays there.
func TestPlacerCatchUpUntimed(t *testing.T) {
	clock := &fakeClock{}
	gpu := &followingGPU{CPU: &CPU{Workers: 1}, clock: clock, catchUp: time.Second,
		cost: func(epoch uint64) time.Duration {
			if epoch < 30 {
				return 100 * time.Millisecond
			}
			return time.Millisecond
		}}
	p := &Placer{CPU: &pricedCPU{CPU: &CPU{Workers: 1}, clock: clock, cost: 10 * time.Millisecond}, GPU: gpu,
		Explore: 4, CPUBelow: 1, Now: clock.now}
	labels := graph.NewDict()
	qs := hubQueries(t, labels, true)[:1]
	g := newTestGraph(true)
	defer g.Close()
	var onGPU []int
	for b := range 400 {
		delta := applyChains(t, g, b, 32, labels)
		if _, err := p.Match(g, delta, qs, Count, nil); err != nil {
			t.Fatal(err)
		}
		g.Reorganize()
		if pl := p.Placed(nil); len(pl) == 1 && pl[0] == OnGPU {
			onGPU = append(onGPU, b)
		}
	}
	if len(onGPU) < 250 || onGPU[len(onGPU)-1] != 399 {
		t.Fatalf("the query ran on the GPU in %d batches, the last three %v; want 250 or more of the 370 from batch 30 on, the last one included",
			len(onGPU), onGPU[max(0, len(onGPU)-3):])
	}
}

// overlappingGPU is a real CPU executor posing as the GPU with the graph in
// its own memory (an Overlapper): Begin costs begin a query on the clock
// and leaves the match to a goroutine, whose kernel takes kernel from
// Begin's return; wait costs only what the caller's own work since has not
// covered. Match is Begin and an immediate wait. With no clock nothing
// costs time.
type overlappingGPU struct {
	*CPU
	clock         *fakeClock
	begin, kernel time.Duration
}

func (x *overlappingGPU) Match(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode Mode, sink Sink) ([]Counts, error) {
	return x.Begin(g, delta, queries, mode, sink)()
}

func (x *overlappingGPU) Begin(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode Mode, sink Sink) func() ([]Counts, error) {
	timed := x.clock != nil && len(queries) > 0
	var t0 time.Time
	if timed {
		x.clock.advance(x.begin * time.Duration(len(queries)))
		t0 = x.clock.now()
	}
	type result struct {
		c   []Counts
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := x.CPU.Match(g, delta, queries, mode, sink)
		ch <- result{c, err}
	}()
	return func() ([]Counts, error) {
		if timed {
			if left := x.kernel - x.clock.now().Sub(t0); left > 0 {
				x.clock.advance(left)
			}
		}
		r := <-ch
		return r.c, r.err
	}
}

// TestPlacerPricesOverlap: a query costs 5 ms on the CPU, and on the GPU
// 1 ms of Begin and a 10 ms kernel. Matched within the call the GPU costs
// 11 ms, and the query stays on the CPU. Begun while the caller works 20
// ms on the next batch, the kernel costs the caller nothing, and the query
// must run on the GPU: priced from Begin to the end of wait, the GPU would
// have cost 21 ms.
func TestPlacerPricesOverlap(t *testing.T) {
	labels := graph.NewDict()
	qs := hubQueries(t, labels, true)[:1]
	for _, begin := range []bool{false, true} {
		clock := &fakeClock{}
		p := &Placer{CPU: &pricedCPU{CPU: &CPU{Workers: 1}, clock: clock, cost: 5 * time.Millisecond},
			GPU:     &overlappingGPU{CPU: &CPU{Workers: 1}, clock: clock, begin: time.Millisecond, kernel: 10 * time.Millisecond},
			Explore: 4, CPUBelow: 1, Now: clock.now}
		g := newTestGraph(true)
		var ran [2]int
		for b := range 200 {
			delta := applyChains(t, g, b, 32, labels)
			var err error
			if begin {
				wait := p.Begin(g, delta, qs, Count, nil)
				clock.advance(20 * time.Millisecond) // the caller's next batch
				_, err = wait()
			} else {
				_, err = p.Match(g, delta, qs, Count, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			g.Reorganize()
			ran[p.Placed(nil)[0]]++
		}
		g.Close()
		home, other := OnCPU, OnGPU
		if begin {
			home, other = OnGPU, OnCPU
		}
		if ran[home] < 160 {
			t.Errorf("begin %v: the query ran %d of 200 batches on the %s and %d on the %s; want 160 or more on the %s",
				begin, ran[home], home, ran[other], other, home)
		}
	}
}

// preparingGPU is an overlappingGPU that prepares as the GPU does
// (Preparer): a batch's first call, with queries or without, costs prepare
// more, and a second call in the batch nothing more.
type preparingGPU struct {
	overlappingGPU
	prepare  time.Duration
	epoch    uint64
	prepared bool
	last     time.Duration
}

func (x *preparingGPU) LastPrepare() time.Duration { return x.last }

func (x *preparingGPU) Match(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode Mode, sink Sink) ([]Counts, error) {
	return x.Begin(g, delta, queries, mode, sink)()
}

func (x *preparingGPU) Begin(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode Mode, sink Sink) func() ([]Counts, error) {
	x.last = 0
	if !x.prepared || g.Epoch() != x.epoch {
		x.clock.advance(x.prepare)
		x.last, x.epoch, x.prepared = x.prepare, g.Epoch(), true
	}
	return x.overlappingGPU.Begin(g, delta, queries, mode, sink)
}

// TestPlacerFixedCost: the GPU spends 3 ms preparing for each batch and
// 1 ms on each query; the CPU 50 ms a query, so that both queries stay on
// the GPU, where one is now and then measured alone after the other's
// call. The model must hold 3 ms as the GPU's fixed cost and 1 ms as each
// query's. Timed with the preparing, a query alone cost 4 ms or 1 ms,
// whether it ran first in its batch or not, and two 5 ms.
func TestPlacerFixedCost(t *testing.T) {
	labels := graph.NewDict()
	qs := hubQueries(t, labels, true)[:2]
	clock := &fakeClock{}
	gpu := &preparingGPU{overlappingGPU: overlappingGPU{CPU: &CPU{Workers: 1}, clock: clock, begin: time.Millisecond}, prepare: 3 * time.Millisecond}
	p := &Placer{CPU: &pricedCPU{CPU: &CPU{Workers: 1}, clock: clock, cost: 50 * time.Millisecond}, GPU: gpu,
		Explore: 2, CPUBelow: 1, Now: clock.now}
	g := newTestGraph(true)
	defer g.Close()
	const n = 1024 // one bucket, past gpuFirst: the queries start on the GPU
	for b := range 40 {
		delta := applyChains(t, g, b, n, labels)
		wait := p.Begin(g, delta, qs, Count, nil)
		clock.advance(20 * time.Millisecond) // the caller's next batch
		if _, err := wait(); err != nil {
			t.Fatal(err)
		}
		g.Reorganize()
	}
	bk := bucket(n)
	if f := p.model.fixed[bk]; math.Abs(f-3e-3) > 1e-9 {
		t.Errorf("the GPU's fixed cost is %.3f ms, want 3", f*1e3)
	}
	for qi, q := range qs {
		c := p.model.cells[cellKey{q, bk}]
		if c == nil || math.Abs(c.est[OnGPU]-1e-3) > 1e-9 {
			t.Errorf("query %d: cell %+v, want 1 ms on the gpu", qi, c)
		}
	}
}
