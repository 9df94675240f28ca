package kernels

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/query"
)

// TestGrowingGraphEqualsCPU streams batches that bring new vertices, as a
// stream of new accounts does, so that the device's per-vertex table grows
// by appended rows most batches and moves to a larger buffer, its rows
// kept, when it outgrows one; counts and match sets must equal the CPU's in
// every batch.
func TestGrowingGraphEqualsCPU(t *testing.T) {
	for _, pl := range []Placement{ZeroCopy, Device, GCSM} {
		x := openGPU(t, pl, false)
		for trial := range 6 {
			directed := trial%2 == 1
			where := fmt.Sprintf("%s trial %d directed=%v", pl, trial, directed)
			t.Run(where, func(t *testing.T) { growingVsCPU(t, x, uint64(trial), directed, where) })
		}
		x.Close()
	}
}

// TestGrowKeeps checks that a device buffer that grows keeps the bytes it
// is told to and has room for twice what was asked, and that one with room
// enough stays where it is.
func TestGrowKeeps(t *testing.T) {
	x := openGPU(t, ZeroCopy, false)
	defer x.Close()
	src := make([]uint32, 1000)
	for i := range src {
		src[i] = uint32(i)*7919 + 1
	}
	if _, err := x.upload("t", u32ptr(src), 4*len(src)); err != nil {
		t.Fatal(err)
	}
	p, err := x.grow("t", 4*600, 4*5000)
	if err != nil {
		t.Fatal(err)
	}
	if b := x.bufs["t"]; b.p != p || b.n < 2*4*5000 {
		t.Fatalf("grown buffer %+v, returned %#x; want room for %d bytes", b, p, 2*4*5000)
	}
	got := make([]uint32, 600)
	if err := x.ctx.CopyDtoH(unsafe.Pointer(&got[0]), p, 4*len(got)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, src[:600]) {
		t.Fatalf("grow lost the kept bytes: %v... want %v...", got[:4], src[:4])
	}
	if q, err := x.grow("t", 4*600, 4*6000); err != nil || q != p {
		t.Fatalf("grow within room: %#x, %v; want %#x, no error", q, err, p)
	}
}

func growingVsCPU(t *testing.T, x *GPU, seed uint64, directed bool, where string) {
	r := rand.New(rand.NewPCG(seed, 91))
	d, vl, qs, g := streamSetup(t, x, r, directed)
	defer g.Close()
	nv := 0
	vertex := func() uint32 { // an old vertex, or now and then a new one
		if nv < 3 || r.IntN(3) == 0 {
			nv++
			return uint32(nv - 1)
		}
		return uint32(r.IntN(nv))
	}
	var present []graph.Update
	cpu := &incremental.CPU{}
	for b := range 40 {
		var batch []graph.Update
		for len(batch) < 5+r.IntN(60) {
			if len(present) > 0 && r.IntN(4) == 0 {
				p := present[r.IntN(len(present))]
				batch = append(batch, graph.Update{Op: graph.Delete, Src: p.Src, Dst: p.Dst, Label: p.Label, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
				continue
			}
			a, c := vertex(), vertex()
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
		sameAsCPU(t, fmt.Sprintf("%s batch %d (%d vertices)", where, b, g.NumVertices()), cpu, x, g, delta, qs)
		g.Reorganize()
	}
	if nv < 200 {
		t.Fatalf("%s: the stream made only %d vertices", where, nv)
	}
}

// sameAsCPU checks that x's counts and enumerated matches of a batch equal
// the CPU's.
func sameAsCPU(t *testing.T, where string, cpu *incremental.CPU, x incremental.Matcher, g *dyngraph.Graph, delta []graph.Change, qs []*query.Query) {
	t.Helper()
	want, err := cpu.Match(g, delta, qs, incremental.Count, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := x.Match(g, delta, qs, incremental.Count, nil)
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if !slices.Equal(want, got) {
		t.Fatalf("%s: count mode CPU %v GPU %v", where, want, got)
	}
	cc := &collector{got: map[string]int{}}
	gc := &collector{got: map[string]int{}}
	if _, err := cpu.Match(g, delta, qs, incremental.Enumerate, cc.sink); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Match(g, delta, qs, incremental.Enumerate, gc.sink); err != nil {
		t.Fatalf("%s enumerate: %v", where, err)
	}
	if len(gc.got) != len(cc.got) {
		t.Fatalf("%s enumerate: GPU %d distinct matches, CPU %d", where, len(gc.got), len(cc.got))
	}
	for k, n := range gc.got {
		if cc.got[k] != n {
			t.Fatalf("%s enumerate: GPU emitted %s %d times, CPU %d", where, k, n, cc.got[k])
		}
	}
}

// streamSetup is the growing and recycling tests' start: vertex labels A
// and B, edge label x, three random queries over them (wildcards too), and
// an empty graph on x's memory.
func streamSetup(t *testing.T, x *GPU, r *rand.Rand, directed bool) (*graph.Dict, []string, []*query.Query, *dyngraph.Graph) {
	t.Helper()
	d := graph.NewDict()
	vl := []string{"A", "B"}
	for _, s := range append(slices.Clone(vl), "x") {
		d.Intern(s)
	}
	var qs []*query.Query
	for len(qs) < 3 {
		qs = append(qs, randomQuery(r, d, directed, query.Embeddings, append(slices.Clone(vl), ""), []string{"x", ""}))
	}
	g, err := dyngraph.New(dyngraph.Options{Directed: directed, Alloc: x.Allocator(), SlabEntries: 1 << 12})
	if err != nil {
		t.Fatal(err)
	}
	return d, vl, qs, g
}
