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

// TestCostModel feeds the model timings and checks its choices: each query
// is first measured alone on each device; then each runs where it was
// cheaper (the triangle on the CPU, the house on the GPU), the other device
// is measured again every Explore batches times its cost ratio, and a
// query goes back once its device's costs rise.
func TestCostModel(t *testing.T) {
	tri, house := &query.Query{}, &query.Query{}
	qs := []*query.Query{tri, house}
	const b, explore = 3, 4
	// cost is what each call takes, per query and device, in seconds.
	cost := map[*query.Query][2]float64{tri: {1e-3, 5e-3}, house: {20e-3, 2e-3}}
	var m costModel
	// step plans a batch, "runs" it at the costs above and returns the
	// plan.
	step := func() ([]Device, int, Device) {
		home, solo, on := m.plan(qs, b, explore, false)
		home = slices.Clone(home)
		var share [2][]int
		for qi, d := range home {
			if qi != solo {
				share[d] = append(share[d], qi)
			}
		}
		for d, idx := range share {
			if len(idx) > 0 {
				secs := 0.0
				for _, qi := range idx {
					secs += cost[qs[qi]][d]
				}
				m.observe(qs, b, Device(d), idx, secs)
			}
		}
		if solo >= 0 {
			m.observe(qs, b, on, []int{solo}, cost[qs[solo]][on])
		}
		return home, solo, on
	}
	type want struct {
		solo int
		on   Device
	}
	// The house, alone in the CPU's share of the first batch, is measured
	// there by it.
	for i, w := range []want{{0, OnCPU}, {0, OnGPU}, {1, OnGPU}} {
		if _, solo, on := step(); solo != w.solo || on != w.on {
			t.Fatalf("batch %d: measured query %d alone on the %s, want query %d on the %s", i, solo, on, w.solo, w.on)
		}
	}
	home, _, _ := step()
	if !slices.Equal(home, []Device{OnCPU, OnGPU}) {
		t.Fatalf("after measuring: triangle and house on %v, want [cpu gpu]", home)
	}
	// Each query is measured again, first on the device it does not run
	// on, then on its own; the interval is at least explore times the
	// other device's cost over its own (5 for the triangle), and stays so
	// while the costs do.
	var at []int
	for i := range 300 {
		home, solo, on := step()
		if !slices.Equal(home, []Device{OnCPU, OnGPU}) {
			t.Fatalf("steady batch %d: placed %v, want [cpu gpu]", i, home)
		}
		if solo == 0 {
			at = append(at, i)
			if len(at) == 1 && on != OnGPU {
				t.Fatalf("first re-measure of the triangle on the %s, want the gpu", on)
			}
		}
	}
	if len(at) < 3 {
		t.Fatalf("triangle re-measured at %v, want at least 3 times in 300 batches", at)
	}
	if gap := at[1] - at[0]; gap < 5*explore {
		t.Fatalf("triangle re-measured at %v: %d batches apart, want at least %d for a device 5 times slower", at, gap, 5*explore)
	}
	for i := 2; i < len(at); i++ {
		if gap := at[i] - at[i-1]; gap != at[1]-at[0] {
			t.Fatalf("triangle re-measured at %v: the interval changed while the costs did not", at)
		}
	}
	// The GPU slows down tenfold for the house: its average drifts past
	// twice its confirmed value, the CPU is measured, and the house moves.
	cost[house] = [2]float64{20e-3, 40e-3}
	moved := -1
	for i := range 40 {
		if home, _, _ := step(); home[1] == OnCPU {
			moved = i
			break
		}
	}
	if moved < 0 {
		t.Fatal("the house stayed on the gpu at twice the cpu's cost")
	}
	// And back when the GPU recovers: the CPU is its home now, and the GPU
	// is measured again within the base interval after the switch.
	cost[house] = [2]float64{20e-3, 2e-3}
	back := -1
	for i := range 4 * explore {
		if home, _, _ := step(); home[1] == OnGPU {
			back = i
			break
		}
	}
	if back < 0 {
		t.Fatalf("the house did not go back to the gpu within %d batches", 4*explore)
	}
}

// TestCostModelBalance: a triangle a little cheaper on the GPU runs on the
// idle CPU while the GPU matches a house, since that shortens the batch;
// with a cheaper house it goes back to the GPU.
func TestCostModelBalance(t *testing.T) {
	tri, house := &query.Query{}, &query.Query{}
	qs := []*query.Query{tri, house}
	var m costModel
	measure := func(cost map[*query.Query][2]float64) []Device { return settle(&m, qs, 8, cost) }
	if home := measure(map[*query.Query][2]float64{tri: {2e-3, 1.5e-3}, house: {40e-3, 10e-3}}); !slices.Equal(home, []Device{OnCPU, OnGPU}) {
		t.Fatalf("triangle and house on %v, want [cpu gpu]", home)
	}
	if home := measure(map[*query.Query][2]float64{tri: {2e-3, 1.5e-3}, house: {40e-3, 0.2e-3}}); !slices.Equal(home, []Device{OnGPU, OnGPU}) {
		t.Fatalf("with a house of 0.2ms on the gpu: triangle and house on %v, want [gpu gpu]", home)
	}
}

// TestCostModelBalanceWeighsCPU: beside a 5-vertex ring on the GPU, a
// house and a mule pattern that cost the CPU three to four times the GPU's
// stay on the GPU, though moving one would shorten the batch by a fifth on
// paper: the CPU's share counts cpuLoadWeight times its time. A query
// nearly as cheap on the CPU still moves.
func TestCostModelBalanceWeighsCPU(t *testing.T) {
	ring5, house, mule := &query.Query{}, &query.Query{}, &query.Query{}
	qs := []*query.Query{ring5, house, mule}
	// measure runs a fresh model at these costs.
	measure := func(cost map[*query.Query][2]float64) []Device {
		var m costModel
		return settle(&m, qs, 12, cost)
	}
	if home := measure(map[*query.Query][2]float64{ring5: {100e-3, 22e-3}, house: {30e-3, 8e-3}, mule: {35e-3, 13e-3}}); !slices.Equal(home, []Device{OnGPU, OnGPU, OnGPU}) {
		t.Fatalf("ring5, house and mule on %v, want all on the gpu", home)
	}
	if home := measure(map[*query.Query][2]float64{ring5: {100e-3, 22e-3}, house: {30e-3, 8e-3}, mule: {14e-3, 13e-3}}); !slices.Equal(home, []Device{OnGPU, OnGPU, OnCPU}) {
		t.Fatalf("with a mule nearly as cheap on the cpu: ring5, house and mule on %v, want [gpu gpu cpu]", home)
	}
}

// settle runs m for rounds batches of 4096 changes at these costs per
// query and device, each query timed alone, and returns the last plan.
func settle(m *costModel, qs []*query.Query, rounds int, cost map[*query.Query][2]float64) []Device {
	return settleOverlapped(m, qs, rounds, cost, false)
}

// settleOverlapped is settle with the batches begun (Placer.Begin) or not.
func settleOverlapped(m *costModel, qs []*query.Query, rounds int, cost map[*query.Query][2]float64, overlapped bool) []Device {
	const b = 12
	var home []Device
	for range rounds {
		var solo int
		var on Device
		home, solo, on = m.plan(qs, b, 64, overlapped)
		home = slices.Clone(home)
		for qi, d := range home {
			if qi == solo {
				d = on
			}
			m.observe(qs, b, d, []int{qi}, cost[qs[qi]][d])
		}
	}
	return home
}

// TestCostModelGPUFirst: a query's first batches of more than 512 changes
// run on the GPU, which is measured first.
func TestCostModelGPUFirst(t *testing.T) {
	qs := []*query.Query{{}, {}}
	var m costModel
	for _, b := range []int{gpuFirst - 1, gpuFirst} {
		home, solo, on := m.plan(qs, b, 4, false)
		want := OnCPU
		if b >= gpuFirst {
			want = OnGPU
		}
		if !slices.Equal(home, []Device{want, want}) || solo != 0 || on != want {
			t.Errorf("bucket %d: placed %v, query %d measured alone on the %s; want both on the %s, query 0 measured there", b, home, solo, on, want)
		}
	}
}

func TestBucket(t *testing.T) {
	for _, c := range []struct{ n, b int }{{0, 0}, {1, 0}, {2, 1}, {3, 2}, {4, 2}, {5, 3}, {512, 9}, {513, gpuFirst}, {4000, 12}, {4096, 12}, {4097, 13}} {
		if got := bucket(c.n); got != c.b {
			t.Errorf("bucket(%d) = %d, want %d", c.n, got, c.b)
		}
	}
}

// TestCostModelDeterministic: the same timings give the same choices.
func TestCostModelDeterministic(t *testing.T) {
	qs := []*query.Query{{}, {}, {}}
	run := func() []string {
		var m costModel
		var out []string
		for i := range 200 {
			b := 1 + i%3
			home, solo, on := m.plan(qs, b, 4, false)
			out = append(out, fmt.Sprint(home, solo, on))
			for qi := range qs {
				d := home[qi]
				if qi == solo {
					d = on
				}
				m.observe(qs, b, d, []int{qi}, float64((qi+1)*(b+int(d)*2)+i%7)*1e-4)
			}
		}
		return out
	}
	if a, b := run(), run(); !slices.Equal(a, b) {
		t.Fatal("two runs of the same timings chose differently")
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

// TestCostModelNoticesChange: a query long confirmed on the CPU (costs
// steady, the GPU half again as slow) finds the GPU three times cheaper
// from one batch on, as when its one measurement there had been slowed by
// contention or the workload changed its shape. Nothing on the CPU side
// changes, so only a measurement on the GPU can show it: the query moves
// within two measurement intervals (Explore times the cost ratio,
// alternating devices) however long the choice had held, and wherever in
// an interval the change falls.
func TestCostModelNoticesChange(t *testing.T) {
	const b, explore = 3, 8
	for steady := 600; steady < 600+512; steady += 16 {
		qs := []*query.Query{{}}
		var m costModel
		gpu := 1.5e-3
		step := func() Device {
			home, solo, on := m.plan(qs, b, explore, false)
			d := home[0]
			if solo == 0 {
				d = on
			}
			cost := 1e-3
			if d == OnGPU {
				cost = gpu
			}
			m.observe(qs, b, d, []int{0}, cost)
			return home[0]
		}
		for i := range steady {
			if d := step(); i > 10 && d != OnCPU {
				t.Fatalf("steady batch %d on the %s, want the cpu", i, d)
			}
		}
		gpu = 0.5e-3
		moved := -1
		for i := range 2048 {
			if step() == OnGPU {
				moved = i
				break
			}
		}
		if limit := 2*2*explore + 1; moved < 0 || moved > limit {
			t.Fatalf("after %d steady batches: moved to the gpu %d batches after it became cheaper, want within %d", steady, moved, limit)
		}
	}
}

// TestCostModelExploresDensifying: on a graph that densifies, a ring5's
// cost grows 3% a batch on both devices, the CPU's 25 times the GPU's, as
// on the 5-vertex mix. Each doubling of its GPU average made the CPU's old
// one look close, and drift measured the CPU again, each time at a cost
// of 25 GPU batches: 6 of 200 batches ran on the CPU. At most 3 may, the
// first measurement included.
func TestCostModelExploresDensifying(t *testing.T) {
	const b, explore = 12, 64
	qs := []*query.Query{{}}
	var m costModel
	gpu, onCPU := 1e-3, 0
	for range 200 {
		home, solo, on := m.plan(qs, b, explore, true)
		d := home[0]
		if solo == 0 {
			d = on
		}
		cost := gpu
		if d == OnCPU {
			cost = 25 * gpu
			onCPU++
		}
		m.observe(qs, b, d, []int{0}, cost)
		gpu *= 1.03
	}
	if onCPU > 3 {
		t.Errorf("the ring5 ran %d of 200 batches on the cpu, want at most 3", onCPU)
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

// TestCostModelBalanceIdleGPU: three queries cheaper on the CPU, as the
// alert-sparse mix's were on the H200 machine (0.6 ms each against 1.9-2.2
// ms on the GPU), stay together on the CPU. Counting the CPU's share
// cpuLoadWeight times with the GPU idle had made moving one to the GPU look
// shorter, and those split batches took twice the CPU's time.
func TestCostModelBalanceIdleGPU(t *testing.T) {
	ring4, ring5, cashout := &query.Query{}, &query.Query{}, &query.Query{}
	qs := []*query.Query{ring4, ring5, cashout}
	var m costModel
	cost := map[*query.Query][2]float64{ring4: {0.56e-3, 2.2e-3}, ring5: {0.66e-3, 2.2e-3}, cashout: {0.61e-3, 1.9e-3}}
	if home := settle(&m, qs, 12, cost); !slices.Equal(home, []Device{OnCPU, OnCPU, OnCPU}) {
		t.Fatalf("ring4, ring5 and cashout on %v, want all on the cpu", home)
	}
}

// TestCostModelFixedCost: three queries as the alert-sparse mix's were
// through the service on the H200 machine. The GPU costs 0.9 ms a batch to
// bring its copy up to date (observeFixed, once per batch whatever the
// queries) plus each query's own time; the CPU 0.5 ms a query.
//   - Begun, a query costs the GPU 0.03 ms: all three must stay on the GPU,
//     not split. Shared out among the queries, the fixed cost made moving
//     one off look like it saved its part of it.
//   - Matched within the call, where a query also costs the GPU its kernel
//     (0.7 ms), all three go to the CPU.
//   - At 0.4 ms a query on the GPU, each is cheaper there than on the CPU,
//     but not with the fixed cost: all three go to the CPU together.
//   - At 0.1 ms a query they stay on the GPU.
func TestCostModelFixedCost(t *testing.T) {
	ring4, ring5, cashout := &query.Query{}, &query.Query{}, &query.Query{}
	qs := []*query.Query{ring4, ring5, cashout}
	const b, fixed, cpu = 12, 0.9e-3, 0.5e-3
	for _, c := range []struct {
		overlapped bool
		perQuery   float64
		want       Device
	}{{true, 0.03e-3, OnGPU}, {false, 0.7e-3, OnCPU}, {false, 0.4e-3, OnCPU}, {false, 0.1e-3, OnGPU}} {
		var m costModel
		var ran [2]int
		split := 0
		for round := range 200 {
			home, solo, on := m.plan(qs, b, 8, c.overlapped)
			home = slices.Clone(home)
			var main [2][]int
			for qi, d := range home {
				if qi != solo {
					main[d] = append(main[d], qi)
				}
			}
			if len(main[OnGPU]) > 0 || solo >= 0 && on == OnGPU {
				m.observeFixed(b, fixed)
			}
			if n := len(main[OnGPU]); n > 0 {
				m.observe(qs, b, OnGPU, main[OnGPU], c.perQuery*float64(n))
			}
			if n := len(main[OnCPU]); n > 0 {
				m.observe(qs, b, OnCPU, main[OnCPU], cpu*float64(n))
			}
			switch {
			case solo >= 0 && on == OnGPU:
				m.observe(qs, b, OnGPU, []int{solo}, c.perQuery)
			case solo >= 0:
				m.observe(qs, b, OnCPU, []int{solo}, cpu)
			}
			if round >= 100 {
				ran[OnCPU] += len(main[OnCPU])
				ran[OnGPU] += len(main[OnGPU])
				if len(main[OnCPU]) > 0 && len(main[OnGPU]) > 0 {
					split++
				}
			}
		}
		if ran[c.want] < 240 || split > 10 {
			t.Errorf("overlapped %v, %.2f ms a query on the gpu: in the last 100 batches the queries ran %d times on the cpu and %d on the gpu, split between the devices in %d batches; want 240 or more on the %s, and split in at most 10 (measurements)",
				c.overlapped, c.perQuery*1e3, ran[OnCPU], ran[OnGPU], split, c.want)
		}
	}
}

// TestCostModelOverlapWeighsCPU: a ring5 costs 1.0 ms on the CPU and, to
// the caller, 1.2 ms on the GPU. Matched within the call it runs on the
// CPU; begun, it runs on the GPU, whose kernel does not take the cores the
// caller's other work needs, as the CPU's workers do. On the 5-vertex mix
// the service's output stage needs them most.
func TestCostModelOverlapWeighsCPU(t *testing.T) {
	ring5 := &query.Query{}
	cost := map[*query.Query][2]float64{ring5: {1.0e-3, 1.2e-3}}
	for _, c := range []struct {
		overlapped bool
		want       Device
	}{{false, OnCPU}, {true, OnGPU}} {
		var m costModel
		if home := settleOverlapped(&m, []*query.Query{ring5}, 12, cost, c.overlapped); home[0] != c.want {
			t.Errorf("overlapped %v: ring5 on the %s, want the %s", c.overlapped, home[0], c.want)
		}
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
