package kernels

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
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

// TestShardOf: an undirected edge has one shard whichever way it is
// written, and the shards are used evenly enough to split work.
func TestShardOf(t *testing.T) {
	const n = 4
	count := make([]int, n)
	for a := range graph.VertexID(100) {
		for b := a + 1; b < 100; b++ {
			s := shardOf(graph.Edge{Src: a, Dst: b, Label: 3}, n)
			if s != shardOf(graph.Edge{Src: b, Dst: a, Label: 3}, n) {
				t.Fatalf("edge %d-%d has two shards", a, b)
			}
			count[s]++
		}
	}
	for s, c := range count {
		if c < 4950/n*8/10 || c > 4950/n*12/10 {
			t.Fatalf("shard %d has %d of 4950 edges: %v", s, c, count)
		}
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
}
