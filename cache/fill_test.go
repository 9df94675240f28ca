package cache

import (
	"slices"
	"testing"
	"time"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/query"
)

// The fill takes the budget beyond twice the set's last block, when that
// is at least the least fill.
func TestFillTarget(t *testing.T) {
	for _, c := range []struct{ budget, est, least, want int64 }{
		{100, 10, 1, 80},
		{100, 10, 80, 80},
		{100, 10, 81, 0},
		{100, 50, 1, 0},
		{100, 60, 1, 0},
		{100, 0, 1, 100},
		{0, 0, 0, 0},
	} {
		if got := fillTarget(c.budget, c.est, c.least); got != c.want {
			t.Errorf("budget %d, block %d, least %d: %d, want %d", c.budget, c.est, c.least, got, c.want)
		}
	}
}

// A set's fill is packed at its second batch from the degree ranking, kept
// while little of it goes stale, and packed again when an eighth of its
// lists are stale or the room the estimate needs moves by a quarter of the
// budget. The lists a batch touches are stale from that batch on, and
// drop keeps exactly the keys the fill cannot serve.
func TestFillLifecycle(t *testing.T) {
	g := starGraph(t)
	x := &Planner{}
	o := Options{Policy: PolicyGCSM, MinFill: 1}
	const budget = 40000 // the whole graph's lists take 24 kB
	if f, err := x.fillFor(g, nil, budget, o); f != nil || err != nil {
		t.Fatalf("a set not run yet has a fill (%v)", err)
	}
	x.caps = walkCaps{querySet(nil): {kernelEdges: 1, estBytes: 500}}
	// caps sets what the estimate needs, the last packing's time and the
	// kernel time since (walkCap.paid).
	caps := func(est int64, pack, served time.Duration) {
		x.caps[querySet(nil)] = walkCap{kernelEdges: 1, estBytes: est, packCost: pack, served: served}
	}
	apply := func(us ...graph.Update) {
		g.Reorganize()
		if _, _, _, err := g.Apply(us); err != nil {
			t.Fatal(err)
		}
		x.TouchFills(g)
	}
	edge := func(a, b uint32) graph.Update {
		return graph.Update{Op: graph.Insert, Src: a, Dst: b, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}
	}
	// The pending batch touches hub 39, the longest list, and hub 1 (hubs
	// have no edges between them).
	apply(edge(39, 1))
	f, err := x.fillFor(g, nil, budget, o)
	if err != nil || f == nil {
		t.Fatalf("no fill: %v", err)
	}
	var want Block
	if _, err := Pack(&want, g, x.degreeRanking(g, nil, budget), budget-1000, nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.block.Words(), want.Words()) {
		t.Fatalf("the fill holds %v, want the degree ranking's %v", f.block.RowIdx(), want.RowIdx())
	}
	rows := f.block.RowIdx()
	i39, ok := slices.BinarySearch(rows, 39)
	if !ok || !f.stale[i39] || f.nStale != 2 {
		t.Fatalf("after packing: list 39 stale %v, %d stale; want the pending batch's two lists only", ok && f.stale[i39], f.nStale)
	}
	keys := []uint32{0, 39, 38, 399, 1, 5}
	got := f.drop(slices.Clone(keys))
	var wantKeys []uint32
	for _, k := range keys {
		if i, ok := slices.BinarySearch(rows, k); !ok || f.stale[i] {
			wantKeys = append(wantKeys, k)
		}
	}
	if !slices.Equal(got, wantKeys) || !slices.Contains(got, 39) || slices.Contains(got, 38) {
		t.Fatalf("drop(%v) = %v, want %v", keys, got, wantKeys)
	}
	// The stale lists the estimate rated stay where they are; the others
	// follow its lists, the longest first.
	if got := f.appendStale(got); !slices.Equal(got, wantKeys) {
		t.Fatalf("appendStale after drop(%v): %v, want %v", keys, got, wantKeys)
	}
	if got := f.appendStale(f.drop([]uint32{5})); !slices.Equal(got, []uint32{39, 1}) {
		t.Fatalf("appendStale(drop([5])) = %v, want the stale lists 39 and 1, longest first", got)
	}
	// A batch touching two more of its lists: kept, two more stale.
	apply(edge(38, 2))
	v := f.version
	if f2, _ := x.fillFor(g, nil, budget, o); f2 != f || f.version != v || f.nStale != 4 {
		t.Fatalf("one more stale list: fill %p (was %p), version %d (was %d), %d stale", f2, f, f.version, v, f.nStale)
	}
	// Stale past a quarter: packed again once the kernels it served took
	// twenty times its packing, with only the pending batch's lists stale.
	// Leaves (40 on) have no edges between them.
	var us []graph.Update
	for i := 40; len(us) < len(rows)/8+1; i += 2 {
		us = append(us, edge(rows[i], rows[i+1]))
	}
	apply(us...)
	if f.nStale*4 <= len(rows) {
		t.Fatalf("%d of %d lists stale after touching %d", f.nStale, len(rows), len(us))
	}
	caps(500, time.Second, 19*time.Second)
	if f2, _ := x.fillFor(g, nil, budget, o); f2 != f || f.version != v {
		t.Fatal("a fill was packed again before its kernels took twenty times its packing")
	}
	caps(500, time.Second, 20*time.Second)
	if f2, _ := x.fillFor(g, nil, budget, o); f2 != f || f.version == v {
		t.Fatal("a fill a quarter stale was not packed again")
	}
	for i, k := range f.block.RowIdx() {
		touched := slices.ContainsFunc(us, func(u graph.Update) bool { return u.Src == k || u.Dst == k })
		if f.stale[i] != touched {
			t.Fatalf("repacked: list %d stale %v, touched by the pending batch %v", k, f.stale[i], touched)
		}
	}
	// The estimate needs more room, by less than a quarter of the budget:
	// kept; by more: the fill shrinks to the rest at once, whatever it
	// served.
	caps(4000, time.Second, time.Hour)
	v = f.version
	if f2, _ := x.fillFor(g, nil, budget, o); f2 != f || f.version != v {
		t.Fatal("the room moved by less than a quarter of the budget, and the fill was packed again")
	}
	caps(14000, time.Second, 0)
	if f2, _ := x.fillFor(g, nil, budget, o); f2 != f || f.version == v || f.block.Bytes() > budget-28000 {
		t.Fatalf("the estimate needs room: version %d (was %d), %d bytes, want at most %d", f.version, v, f.block.Bytes(), budget-28000)
	}
	// It needs less again: the fill grows, once it has served enough.
	caps(500, time.Second, 0)
	v = f.version
	if f2, _ := x.fillFor(g, nil, budget, o); f2 != f || f.version != v {
		t.Fatal("the fill grew before its kernels took twenty times its packing")
	}
	caps(500, time.Second, time.Hour)
	if f2, _ := x.fillFor(g, nil, budget, o); f2 != f || f.version == v || f.block.Bytes() <= budget-28000 {
		t.Fatalf("room to grow: version %d (was %d), %d bytes", f.version, v, f.block.Bytes())
	}
	// A second edge label gives every list a label array: packed again.
	v = f.version
	apply(graph.Update{Op: graph.Insert, Src: 3, Dst: 4, Label: 1, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
	if f2, _ := x.fillFor(g, nil, budget, o); !g.MultiLabel() || f2 != f || f.version == v || !f.block.Layout().HasLabels {
		t.Fatalf("a second edge label: multi-label %v, version %d (was %d), labels in the fill %v", g.MultiLabel(), f.version, v, f.block.Layout().HasLabels)
	}
	// No room: no fill, and its block is freed.
	caps(budget, time.Second, time.Hour)
	if f2, _ := x.fillFor(g, nil, budget, o); f2 != nil || len(x.fills) != 0 {
		t.Fatalf("no room: fill %p, %d kept", f2, len(x.fills))
	}
	// Room again: a new fill waits until the last one's packing has paid.
	caps(500, time.Second, 0)
	if f2, _ := x.fillFor(g, nil, budget, o); f2 != nil {
		t.Fatal("a fill was packed afresh before the last one's packing paid")
	}
	caps(500, time.Second, 20*time.Second)
	if f2, _ := x.fillFor(g, nil, budget, o); f2 == nil || x.caps[querySet(nil)].served != 0 {
		t.Fatal("no fill once the last one's packing paid, or its kernel time was not restarted")
	}
}

// makeRoom drops the least recently used fills of other sets beyond
// maxFills.
func TestFillMakeRoom(t *testing.T) {
	cs := &Planner{fills: map[string]*fillBlock{}}
	for i, s := range []string{"a", "b", "c", "d"} {
		cs.fills[s] = &fillBlock{used: uint64(10 - i)}
	}
	if err := cs.makeRoom("e"); err != nil {
		t.Fatal(err)
	}
	if len(cs.fills) != 3 || cs.fills["d"] != nil {
		t.Fatalf("kept %v, want all but d, the least recently used", cs.fills)
	}
	if err := cs.makeRoom("a"); err != nil || len(cs.fills) != 3 {
		t.Fatalf("room under the bound dropped a fill: %d kept (%v)", len(cs.fills), err)
	}
}

// Every batch of a set adds its kernel time to what the set's last fill
// packing has served, fill or not.
func TestFillServed(t *testing.T) {
	q := []*query.Query{{}}
	x := &Planner{}
	o := Options{Policy: PolicyGCSM}
	x.demand = -1
	for range 3 {
		x.Tune(q, 64, o, 0, 10*time.Millisecond, 0)
	}
	c := x.caps[querySet(q)]
	if c.served != 30*time.Millisecond || !c.paid() {
		t.Fatalf("served %v after three kernels of 10ms, paid %v", c.served, c.paid())
	}
	c.packCost = time.Second
	if c.paid() {
		t.Fatal("30ms of kernels paid for a packing of 1s")
	}
}

// With a fixed budget the placements pin their blocks when it is set: the
// batch's block, and for the gcsm placement a spare for the fill. Packing
// within the budget then allocates nothing, a dropped fill's buffer is the
// next fill's, and Close frees them all.
func TestReserveCache(t *testing.T) {
	g := starGraph(t)
	const budget = 40000 // the whole graph's lists take 24 kB
	for _, c := range []struct {
		placement Policy
		budget    int64
		allocs    int
	}{
		{PolicyDegree, budget, 1},
		{PolicyKHop, budget, 1},
		{"zero-copy", budget, 0},
		{PolicyGCSM, 0, 0},
	} {
		a := &countingAlloc{}
		x := &Planner{}
		x.SetAlloc(a)
		if err := x.Reserve(c.budget, Options{Policy: c.placement}); err != nil || a.allocs != c.allocs {
			t.Errorf("%v, budget %d: %d allocations, want %d (%v)", c.placement, c.budget, a.allocs, c.allocs, err)
		}
	}
	a := &countingAlloc{}
	x := &Planner{}
	o := Options{Policy: PolicyGCSM, MinFill: 1}
	x.SetAlloc(a)
	if err := x.Reserve(budget, o); err != nil || a.allocs != 2 || x.spare.Held() < budget {
		t.Fatalf("gcsm: %d allocations, spare of %d bytes, want 2 and %d (%v)", a.allocs, x.spare.Held(), budget, err)
	}
	if _, err := Pack(&x.block, g, x.degreeRanking(g, nil, budget), budget, nil); err != nil {
		t.Fatal(err)
	}
	x.caps = walkCaps{querySet(nil): {kernelEdges: 1, estBytes: 500}}
	f, err := x.fillFor(g, nil, budget, o)
	if err != nil || f == nil || f.block.Keys() == 0 {
		t.Fatalf("no fill: %v", err)
	}
	if a.allocs != 2 || x.spare.Held() != 0 {
		t.Fatalf("packing within the budget: %d allocations, %d spare bytes, want 2 and none", a.allocs, x.spare.Held())
	}
	if err := x.dropFill(readsKey(nil)); err != nil || a.frees != 0 || x.spare.Held() < budget {
		t.Fatalf("a dropped fill: %d frees, spare of %d bytes, want its buffer kept (%v)", a.frees, x.spare.Held(), err)
	}
	x.caps[querySet(nil)] = walkCap{kernelEdges: 1, estBytes: 500} // the last packing has paid
	if f, err := x.fillFor(g, nil, budget, o); err != nil || f == nil || a.allocs != 2 {
		t.Fatalf("the next fill: %v, %d allocations, want one and none more (%v)", f != nil, a.allocs, err)
	}
	if err := x.Close(); err != nil || a.frees != 2 {
		t.Fatalf("closing: %d frees, want 2 (%v)", a.frees, err)
	}
}

// sizesAlloc records the sizes asked of it and hands out small slabs: for
// what a block asks, not what it could use.
type sizesAlloc struct {
	hostmem.Heap
	sizes []int
}

func (a *sizesAlloc) Alloc(n int) ([]byte, error) {
	a.sizes = append(a.sizes, n)
	return a.Heap.Alloc(64)
}

// A budget past maxReserve pins maxReserve for each block.
func TestReserveCacheBound(t *testing.T) {
	a := &sizesAlloc{}
	x := &Planner{}
	x.SetAlloc(a)
	if err := x.Reserve(64<<30, Options{Policy: PolicyGCSM}); err != nil || !slices.Equal(a.sizes, []int{maxReserve, maxReserve}) {
		t.Fatalf("a budget of 64 GiB pinned %v, want %d twice (%v)", a.sizes, maxReserve, err)
	}
}
