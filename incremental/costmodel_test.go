package incremental

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gcsm/gcsm/query"
)

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

// TestCostModelBalanceIdleGPU: three queries cheaper on the CPU, as the
// alert-sparse mix's were (0.6 ms each against 1.9-2.2 ms on the GPU;
// docs/experiments.md, "What the cost model's rules came from"), stay
// together on the CPU. Counting the CPU's share
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
// through the service. The GPU costs 0.9 ms a batch to
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
