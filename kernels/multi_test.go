package kernels

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/kernels/cuda"
)

// openGPUs opens n executors on devices 0..n-1, or skips where there are
// fewer devices.
func openGPUs(t *testing.T, n int, p Placement) []*GPU {
	t.Helper()
	var xs []*GPU
	for i := range n {
		x, err := Open(Options{Device: i, Placement: p, EnumRecords: 1 << 20})
		if errors.Is(err, cuda.ErrNoDriver) || errors.Is(err, cuda.ErrNoDevice) || (err != nil && i > 0) {
			for _, y := range xs {
				y.Close()
			}
			t.Skipf("%d GPUs needed: %v", n, err)
		}
		if err != nil {
			t.Fatal(err)
		}
		xs = append(xs, x)
	}
	return xs
}

// openGPUsOrNil opens n GPUs, or none when the machine has fewer.
func openGPUsOrNil(n int, p Placement) []*GPU {
	var xs []*GPU
	for i := range n {
		x, err := Open(Options{Device: i, Placement: p, EnumRecords: 1 << 20})
		if err != nil {
			for _, y := range xs {
				y.Close()
			}
			return nil
		}
		xs = append(xs, x)
	}
	return xs
}

// TestMultiGPUEqualsCPU splits each batch over two GPUs by shard, in every
// placement: counts and match sets must equal the CPU's.
func TestMultiGPUEqualsCPU(t *testing.T) {
	for _, pl := range []Placement{Device, ZeroCopy, GCSM} {
		xs := openGPUs(t, 2, pl)
		m := &Multi{GPUs: xs}
		for trial := range 4 {
			directed := trial%2 == 0
			t.Run(fmt.Sprintf("%s/trial=%d/directed=%v", pl, trial, directed), func(t *testing.T) {
				multiVsCPU(t, m, uint64(trial), directed)
			})
		}
		for _, x := range xs {
			x.Close()
		}
	}
}

func multiVsCPU(t *testing.T, m *Multi, seed uint64, directed bool) {
	r := rand.New(rand.NewPCG(seed, 23))
	d, vl, qs, g := streamSetup(t, m.GPUs[0], r, directed)
	defer g.Close()
	cpu := &incremental.CPU{}
	var present []graph.Update
	const nv = 60
	for b := range 30 {
		var batch []graph.Update
		for len(batch) < 1+r.IntN(300) {
			if len(present) > 0 && r.IntN(4) == 0 {
				p := present[r.IntN(len(present))]
				batch = append(batch, graph.Update{Op: graph.Delete, Src: p.Src, Dst: p.Dst, Label: p.Label, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
				continue
			}
			a, c := uint32(r.IntN(nv)), uint32(r.IntN(nv))
			if a == c {
				continue
			}
			u := graph.Update{Op: graph.Insert, Src: a, Dst: c, Label: d.Intern("x"),
				SrcLabel: d.Intern(vl[int(a)%2]), DstLabel: d.Intern(vl[int(c)%2])}
			batch = append(batch, u)
			present = append(present, u)
		}
		delta, _, _, err := g.Apply(batch)
		if err != nil {
			t.Fatal(err)
		}
		sameAsCPU(t, fmt.Sprintf("two GPUs, batch %d", b), cpu, m, g, delta, qs)
		g.Reorganize()
	}
}

// TestSplit: every change goes to exactly one GPU, in the batch's order
// within each share, and on a graph whose edges mostly touch a few hubs the
// shares' weights (degree products) stay within a tenth of each other,
// where dealing changes round-robin or by hash leaves one GPU the heavy ones
// by chance.
func TestSplit(t *testing.T) {
	g, err := dyngraph.New(dyngraph.Options{Directed: true, Alloc: hostmem.Heap{}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	r := rand.New(rand.NewPCG(5, 6))
	const nv = 2000
	// Endpoints drawn from a power law: vertex ids near 0 are hubs.
	end := func() uint32 { return uint32(nv * math.Pow(r.Float64(), 4)) }
	var ups []graph.Update
	for len(ups) < 20000 {
		a, b := end(), end()
		if a != b {
			ups = append(ups, graph.Update{Op: graph.Insert, Src: a, Dst: b, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
		}
	}
	if _, _, _, err := g.Apply(ups); err != nil {
		t.Fatal(err)
	}
	g.Reorganize()
	var batch []graph.Update
	for len(batch) < 4096 {
		a, b := end(), end()
		if a != b {
			batch = append(batch, graph.Update{Op: graph.Insert, Src: a, Dst: b, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
		}
	}
	delta, _, _, err := g.Apply(batch)
	if err != nil {
		t.Fatal(err)
	}
	weight := func(c graph.Change) float64 {
		return float64(g.Degree(c.Src)+1) * float64(g.Degree(c.Dst)+1)
	}
	for _, n := range []int{1, 2, 3, 4} {
		shares := split(g, delta, n)
		if len(shares) != n {
			t.Fatalf("n=%d: %d shares", n, len(shares))
		}
		at := map[graph.Change]int{}
		for i, c := range delta {
			at[c] = i
		}
		dealt := map[graph.Change]bool{}
		seen, lo, hi := 0, math.Inf(1), 0.0
		for k, sh := range shares {
			w := 0.0
			for i, c := range sh {
				if _, ok := at[c]; !ok || dealt[c] {
					t.Fatalf("n=%d: share %d holds %v, not in the batch or twice", n, k, c)
				}
				dealt[c] = true
				if i > 0 && at[c] < at[sh[i-1]] {
					t.Fatalf("n=%d: share %d is out of the batch's order at %d", n, k, i)
				}
				w += weight(c)
			}
			seen += len(sh)
			lo, hi = min(lo, w), max(hi, w)
		}
		if seen != len(delta) {
			t.Fatalf("n=%d: %d changes dealt of %d", n, seen, len(delta))
		}
		if hi > 1.1*lo {
			t.Errorf("n=%d: shares weigh %.0f to %.0f, want within 10%%", n, lo, hi)
		}
	}
	if a, b := split(g, delta, 3), split(g, delta, 3); !slices.EqualFunc(a, b, slices.Equal) {
		t.Error("two splits of one batch differ")
	}
}

// TestMultiStats: the merged statistics of a batch add the GPUs' bytes and
// take their longest times.
func TestMultiStats(t *testing.T) {
	xs := openGPUs(t, 2, ZeroCopy)
	m := &Multi{GPUs: xs}
	defer m.Close()
	r := rand.New(rand.NewPCG(5, 5))
	_, _, qs, g := streamSetup(t, xs[0], r, true)
	defer g.Close()
	var batch []graph.Update
	for len(batch) < 500 {
		a, c := uint32(r.IntN(80)), uint32(r.IntN(80))
		if a != c {
			batch = append(batch, graph.Update{Op: graph.Insert, Src: a, Dst: c, Label: 2, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
		}
	}
	delta, _, _, err := g.Apply(batch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Match(g, delta, qs, incremental.Count, nil); err != nil {
		t.Fatal(err)
	}
	st, a, b := m.Last(), xs[0].Last(), xs[1].Last()
	if st.SlabBytes != a.SlabBytes+b.SlabBytes || st.Match != max(a.Match, b.Match) || m.HostBytes() != xs[0].HostBytes()+xs[1].HostBytes() {
		t.Fatalf("merged %+v from %+v and %+v", st, a, b)
	}
	if p := m.LastPrepare(); p <= 0 || p != max(xs[0].LastPrepare(), xs[1].LastPrepare()) {
		t.Fatalf("LastPrepare %v from %v and %v, want the larger, over 0", p, xs[0].LastPrepare(), xs[1].LastPrepare())
	}
}
