package kernels

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/gcsm/gcsm/cache"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/kernels/cuda"
	"github.com/gcsm/gcsm/query"
)

// openGPU opens the executor or skips: CI machines have no GPU.
func openGPU(t testing.TB, p Placement, noSplit bool) *GPU {
	t.Helper()
	return openGPUWith(t, Options{Placement: p, EnumRecords: 1 << 20, NoSplit: noSplit})
}

func openGPUWith(t testing.TB, opts Options) *GPU {
	t.Helper()
	x, err := Open(opts)
	if errors.Is(err, cuda.ErrNoDriver) || errors.Is(err, cuda.ErrNoDevice) {
		t.Skipf("no GPU: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestOpenWithoutGPU(t *testing.T) {
	x, err := Open(Options{})
	if err == nil {
		x.Close()
		t.Skip("a GPU is present")
	}
	if !errors.Is(err, cuda.ErrNoDriver) && !errors.Is(err, cuda.ErrNoDevice) {
		t.Fatalf("Open without a GPU: %v, want ErrNoDriver or ErrNoDevice", err)
	}
	if _, err := Open(Options{Placement: "nowhere"}); err == nil || !strings.Contains(err.Error(), "placement") {
		t.Fatalf("bad placement: %v", err)
	}
}

func TestEncode(t *testing.T) {
	d := graph.NewDict()
	p, err := query.ParseCypher("tri", "(a:A)-[]-(b:A)-[]-(c)-[]-(a)")
	if err != nil {
		t.Fatal(err)
	}
	q, err := query.Compile(p, d, false, query.Instances)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := encode([]*query.Query{q}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(prog.terms) != 3 || prog.maxN != 3 {
		t.Fatalf("terms %v maxN %d", prog.terms, prog.maxN)
	}
	for ti, off := range prog.terms {
		w := prog.words[off:]
		if w[tQuery] != 0 || w[tEdge] != uint32(ti) || w[tN] != 3 || w[tBoth] != 1 || w[tFlip] != 0 {
			t.Fatalf("term %d header %v", ti, w[:tLevels])
		}
		plan := &q.Terms[ti]
		for lv := range plan.Levels {
			rec := w[tLevels+lv*lWords:]
			if rec[0] != plan.Levels[lv].Label || int(rec[1]) != len(plan.Levels[lv].Cons) ||
				int(rec[3]) != len(plan.Levels[lv].Above) || int(rec[5]) != len(plan.Levels[lv].Below) {
				t.Fatalf("term %d level %d: %v", ti, lv, rec[:lWords])
			}
			for k, c := range plan.Levels[lv].Cons {
				cw := w[int(rec[2])+k*cWords:]
				if cw[0] != uint32(c.From) || cw[2] != uint32(c.Dir) || cw[3] != uint32(query.TermView(c.Edge, ti, graph.Positive)) || cw[4] != uint32(query.TermView(c.Edge, ti, graph.Negative)) {
					t.Fatalf("term %d level %d cons %d: %v", ti, lv, k, cw[:cWords])
				}
			}
		}
	}
	plan := q.StaticPlan(1, nil, false)
	sets := [][]uint64{nil, {0b1010}, nil}
	prog, err = encodeStatic(q, &plan, sets, true, false)
	if err != nil {
		t.Fatal(err)
	}
	w := prog.words
	if len(prog.terms) != 1 || w[tN] != 3 || w[tELabel] != graph.Wildcard || w[tBoth] != 0 || w[tFlip] != 0 {
		t.Fatalf("static header %v", w[:tLevels])
	}
	for d := range plan.Levels {
		rec := w[tLevels+d*lWords:]
		switch {
		case d != 1 && rec[lCand] != noCands:
			t.Fatalf("static level %d has candidates at %d", d, rec[lCand])
		case d == 1 && (rec[lCand] != 0 || !slices.Equal(prog.cands, []uint32{0b1010, 0})):
			t.Fatalf("static level 1: candidates at %d, %v", rec[lCand], prog.cands)
		}
		for k := range plan.Levels[d].Cons {
			cw := w[int(rec[lCons])+k*cWords:]
			if cw[3] != uint32(query.ViewNew) {
				t.Fatalf("static level %d cons %d reads view %d", d, k, cw[3])
			}
		}
	}
}

// collector gathers enumerated matches by sign.
type collector struct {
	mu  sync.Mutex
	got map[string]int
}

func (c *collector) sink(_, qi int, sign graph.Sign, m []graph.VertexID) {
	k := fmt.Sprint(qi, sign, m)
	c.mu.Lock()
	c.got[k]++
	c.mu.Unlock()
}

func randomQuery(r *rand.Rand, d *graph.Dict, directed bool, sem query.Semantics, vl, el []string) *query.Query {
	for {
		n := 2 + r.IntN(4)
		p := &query.Pattern{Name: "q"}
		for i := 0; i < n; i++ {
			l := vl[r.IntN(len(vl))]
			p.Vertices = append(p.Vertices, query.Vertex{Name: fmt.Sprint("v", i), Label: l, Wildcard: l == ""})
		}
		edge := func(a, b int) {
			l := el[r.IntN(len(el))]
			p.Edges = append(p.Edges, query.Edge{From: a, To: b, Label: l, Wildcard: l == "", Directed: r.IntN(4) != 0})
		}
		for i := 1; i < n; i++ {
			edge(r.IntN(i), i)
		}
		for k := r.IntN(n); k > 0; k-- {
			if a, b := r.IntN(n), r.IntN(n); a != b {
				edge(a, b)
			}
		}
		q, err := query.Compile(p, d, directed, sem)
		if err == nil {
			return q
		}
	}
}

// TestGPUEqualsCPU is the GPU engine's correctness gate: seeded random
// graphs and streams (insert-only, delete-only, mixed; directed and
// undirected; labeled and wildcard; batches of 1 to 8192), both placements,
// both semantics, count and enumerate, against the CPU executor.
func TestGPUEqualsCPU(t *testing.T) {
	trials := 40
	if testing.Short() {
		trials = 8
	}
	for _, cfg := range []struct {
		pl      Placement
		noSplit bool
	}{{ZeroCopy, false}, {Device, false}, {Device, true}} {
		x := openGPU(t, cfg.pl, cfg.noSplit)
		for trial := 0; trial < trials; trial++ {
			directed := trial%2 == 1
			sem := query.Semantics(trial / 2 % 2)
			kind := []string{"insert", "delete", "mixed"}[trial%3]
			where := fmt.Sprintf("%s nosplit=%v trial %d directed=%v %v %s", cfg.pl, cfg.noSplit, trial, directed, sem, kind)
			t.Run(where, func(t *testing.T) { gpuVsCPU(t, x, uint64(trial), directed, sem, kind, where) })
		}
		if x.ListBytes() == 0 {
			t.Errorf("%s: the kernel counted no neighbour-list reads", cfg.pl)
		}
		x.Close()
	}
}

// TestEnumerateOverflowResumes: with a record buffer of 1,024 matches, and
// of 16, launches fill it many times over, every unit running then parks
// mid-walk, and the launches that resume them must find every match the CPU
// finds, each once (gpuVsCPU checks the sets; the static matcher resumes
// the same way). A buffer of 16 costs a launch per 16 matches, so it runs
// on two trials only.
func TestEnumerateOverflowResumes(t *testing.T) {
	for _, c := range []struct{ records, trials int }{{1024, 12}, {16, 2}} {
		x := openGPUWith(t, Options{Placement: Device, EnumRecords: c.records})
		resumed := 0
		for trial := 0; trial < c.trials; trial++ {
			directed := trial%2 == 1
			sem := query.Semantics(trial / 2 % 2)
			kind := []string{"insert", "delete", "mixed"}[trial%3]
			where := fmt.Sprintf("records %d trial %d directed=%v %v %s", c.records, trial, directed, sem, kind)
			t.Run(where, func(t *testing.T) {
				gpuVsCPU(t, x, 500+uint64(trial), directed, sem, kind, where, func() { resumed += x.Last().Launches - 1 })
			})
		}
		x.Close()
		if resumed == 0 {
			t.Fatalf("records %d: no launch resumed: the test did not overflow the buffer", c.records)
		}
		t.Logf("records %d: %d launches resumed parked units", c.records, resumed)
	}
}

// gpuVsCPU compares the GPU with the CPU on a seeded random graph and
// stream; afterEnumerate, when given, runs after each enumerating Match.
func gpuVsCPU(t *testing.T, x *GPU, seed uint64, directed bool, sem query.Semantics, kind, where string, afterEnumerate ...func()) {
	r := rand.New(rand.NewPCG(seed, 77))
	d := graph.NewDict()
	nvl, nel := 1+r.IntN(3), 1+r.IntN(2)
	vl := []string{"A", "B", "C"}[:nvl]
	el := []string{"x", "y"}[:nel]
	for _, s := range append(slices.Clone(vl), el...) {
		d.Intern(s)
	}
	// A third of the seeds label every query vertex, so that the cache
	// placements trim the lists they cache (cache.Reads) to the few labels
	// read; a wildcard vertex makes most of a list readable.
	qvl := append(slices.Clone(vl), "")
	if seed%3 == 2 {
		qvl = vl
	}
	var qs []*query.Query
	for len(qs) < 4 {
		qs = append(qs, randomQuery(r, d, directed, sem, qvl, append(slices.Clone(el), "")))
	}
	nv := 30 + r.IntN(300)
	g, err := dyngraph.New(dyngraph.Options{Directed: directed, Alloc: x.Allocator(), SlabEntries: 1 << 12})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var load []graph.Update
	for v := 0; v < nv; v++ {
		load = append(load, graph.Update{Op: graph.AddVertex, Src: uint32(v), SrcLabel: d.Intern(vl[r.IntN(nvl)])})
	}
	var present []graph.Update
	edge := func(op graph.Op) graph.Update {
		a, b := uint32(r.IntN(nv)), uint32(r.IntN(nv))
		for a == b {
			b = uint32(r.IntN(nv))
		}
		return graph.Update{Op: op, Src: a, Dst: b, Label: d.Intern(el[r.IntN(nel)]), SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}
	}
	for i := 0; i < nv*(2+r.IntN(6)); i++ {
		u := edge(graph.Insert)
		load = append(load, u)
		present = append(present, u)
	}
	if _, _, err := g.Build(load); err != nil {
		t.Fatal(err)
	}
	cpu := &incremental.CPU{}
	cs, err := cpu.Static(g, qs, incremental.Count, nil)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := x.Static(g, qs, incremental.Count, nil)
	if err != nil {
		t.Fatalf("%s: GPU static: %v", where, err)
	}
	if !slices.Equal(cs, gs) {
		for i, q := range qs {
			t.Logf("query %d: labels %v edges %+v", i, q.Labels, q.Edges)
		}
		t.Fatalf("%s: static counts CPU %v GPU %v", where, cs, gs)
	}
	var static graph.Count
	for _, n := range cs {
		static = static.Add(n)
	}
	if static.Cmp(graph.CountOf(1<<16)) <= 0 {
		cc := &collector{got: map[string]int{}}
		gc := &collector{got: map[string]int{}}
		if _, err := cpu.Static(g, qs, incremental.Enumerate, cc.sink); err != nil {
			t.Fatal(err)
		}
		if _, err := x.Static(g, qs, incremental.Enumerate, gc.sink); err != nil {
			t.Fatalf("%s: GPU static enumerate: %v", where, err)
		}
		if len(gc.got) != len(cc.got) {
			t.Fatalf("%s: static enumerate: GPU %d distinct matches, CPU %d", where, len(gc.got), len(cc.got))
		}
		for k, n := range gc.got {
			if n != 1 || cc.got[k] != 1 {
				t.Fatalf("%s: static enumerate: GPU emitted %s %d times, CPU %d", where, k, n, cc.got[k])
			}
		}
	}
	sizes := []int{1, 7, 64, 1000, 8192}
	for b := 0; b < 4; b++ {
		size := sizes[r.IntN(len(sizes))]
		var batch []graph.Update
		for len(batch) < size {
			op := graph.Insert
			if kind == "delete" || (kind == "mixed" && r.IntN(2) == 0) {
				op = graph.Delete
			}
			u := edge(op)
			if op == graph.Delete && len(present) > 0 && r.IntN(3) != 0 {
				p := present[r.IntN(len(present))]
				u.Src, u.Dst, u.Label = p.Src, p.Dst, p.Label
			}
			batch = append(batch, u)
		}
		delta, _, _, err := g.Apply(batch)
		if err != nil {
			t.Fatal(err)
		}
		want, err := cpu.Match(g, delta, qs, incremental.Count, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.IntN(5) == 0 {
			// A batch the GPU never sees: its copies must notice and
			// catch up at the next one.
			g.Reorganize()
			continue
		}
		got, err := x.Match(g, delta, qs, incremental.Count, nil)
		if err != nil {
			t.Fatalf("%s batch %d: %v", where, b, err)
		}
		if !slices.Equal(want, got) {
			t.Fatalf("%s batch %d (%d updates, %d changes): count mode CPU %v GPU %v", where, b, len(batch), len(delta), want, got)
		}
		var total graph.Count
		for _, c := range want {
			total = total.Add(c.Positive).Add(c.Negative)
		}
		if total.Cmp(graph.CountOf(1<<18)) > 0 {
			// Enumerating is checked on the batches small enough to
			// compare match by match; count mode covered this one.
			g.Reorganize()
			continue
		}
		cc := &collector{got: map[string]int{}}
		gc := &collector{got: map[string]int{}}
		if _, err := cpu.Match(g, delta, qs, incremental.Enumerate, cc.sink); err != nil {
			t.Fatal(err)
		}
		egot, err := x.Match(g, delta, qs, incremental.Enumerate, gc.sink)
		if err != nil {
			t.Fatalf("%s batch %d enumerate: %v", where, b, err)
		}
		for _, f := range afterEnumerate {
			f()
		}
		if !slices.Equal(want, egot) {
			t.Fatalf("%s batch %d: enumerate counts GPU %v, CPU %v", where, b, egot, want)
		}
		for k, n := range gc.got {
			if n != 1 || cc.got[k] != 1 {
				t.Fatalf("%s batch %d: GPU emitted %s %d times, CPU %d", where, b, k, n, cc.got[k])
			}
		}
		if len(gc.got) != len(cc.got) {
			t.Fatalf("%s batch %d: GPU emitted %d distinct matches, CPU %d", where, b, len(gc.got), len(cc.got))
		}
		g.Reorganize()
	}
}

// TestCachePlacementsEqualCPU runs the equality gate for the placements that
// read through a cache block, from an empty budget (every read zero-copy)
// to one that holds the whole graph, with both lookups of cached lists
// (Options.SearchLookup), and for the unified placement: the
// results must not depend on where the lists are read from.
func TestCachePlacementsEqualCPU(t *testing.T) {
	trials := 6
	if testing.Short() {
		trials = 3
	}
	budgets := []int64{-1, 256, 16 << 10, 1 << 30}
	for _, c := range []struct {
		pl     Placement
		search bool // Options.SearchLookup
		// Options.MinCacheKernel: -1 caches every batch, an hour every
		// query set's first batch only.
		minKernel time.Duration
		// fill turns the gcsm placement's fill on, with the least fill
		// one byte (Options.NoFill, MinFill); it must fill nothing with
		// the search lookup.
		fill bool
	}{{GCSM, false, -1, false}, {GCSM, true, -1, false}, {GCSM, false, time.Hour, false}, {GCSM, false, -1, true}, {GCSM, true, -1, true},
		{Degree, false, 0, false}, {KHop, false, 0, false}, {KHop, true, 0, false}, {Unified, false, 0, false}} {
		pl := c.pl
		x := openGPU(t, pl, false)
		x.opts.SearchLookup, x.opts.MinCacheKernel = c.search, c.minKernel
		x.opts.NoFill = !c.fill
		if c.fill {
			x.opts.MinFill = 1
		}
		for _, budget := range budgets {
			if pl == Unified && budget != budgets[0] {
				break // no cache: one round is enough
			}
			if pl == KHop && budget != 1<<30 {
				continue // over budget: TestKHopOverBudget
			}
			x.opts.CacheBytes = budget
			var block uint64
			skipped := 0 // trials whose last match skipped the cache
			trimmed := 0 // trials whose lists the cache trimmed
			filled := 0  // lists the gcsm placement's fill cached
			for trial := 0; trial < trials; trial++ {
				directed := trial%2 == 1
				sem := query.Semantics(trial / 2 % 2)
				kind := []string{"insert", "delete", "mixed"}[trial%3]
				where := fmt.Sprintf("%s search=%v min-kernel %v fill=%v budget %d trial %d directed=%v %v %s", pl, c.search, c.minKernel, c.fill, budget, trial, directed, sem, kind)
				t.Run(where, func(t *testing.T) { gpuVsCPU(t, x, 100+uint64(trial), directed, sem, kind, where) })
				block += x.Last().BlockBytes
				if x.LastReads() != nil {
					trimmed++
				}
				filled += x.Last().FilledLists
				if x.Last().CacheSkipped {
					skipped++
				}
				if pl == Degree && budget == 1<<30 && x.Last().SlabBytes != 0 {
					t.Errorf("%s: the degree policy cached the whole graph, yet the kernel read %d bytes through the slabs", where, x.Last().SlabBytes)
				}
				if pl == KHop {
					t.Logf("%s: %d bytes through the slabs, %d from the block", where, x.Last().SlabBytes, x.Last().BlockBytes)
				}
			}
			if budget <= 0 && block != 0 {
				t.Errorf("%s with no budget read %d bytes from a cache block", pl, block)
			}
			// A trial matches each batch twice (count, then enumerate), so
			// with the hour its last match skips, having run just before.
			if c.minKernel == time.Hour && skipped == 0 {
				t.Errorf("%s, budget %d, min-kernel %v: no trial's last match skipped the cache", pl, budget, c.minKernel)
			}
			if c.minKernel != time.Hour && skipped > 0 {
				t.Errorf("%s, budget %d, min-kernel %v: %d trials' last match skipped the cache", pl, budget, c.minKernel, skipped)
			}
			if budget == 1<<30 && pl.Cached() && c.minKernel != time.Hour && block == 0 {
				t.Errorf("%s with the whole graph's budget read nothing from the cache block", pl)
			}
			if pl.Cached() && budget > 0 && trimmed == 0 {
				t.Errorf("%s, budget %d: no trial trimmed the cached lists", pl, budget)
			}
			if c.fill && !c.search && budget == 1<<30 && filled == 0 {
				t.Errorf("%s, budget %d, filling: no list was filled", pl, budget)
			}
			if (!c.fill || c.search) && filled > 0 {
				t.Errorf("%s, budget %d, search %v: %d lists filled without a fill", pl, budget, c.search, filled)
			}
		}
		x.Close()
	}
}

// TestKHopOverBudget: the khop placement fails, clearly, when the batch's
// neighbourhood does not fit.
func TestKHopOverBudget(t *testing.T) {
	x := openGPU(t, KHop, false)
	defer x.Close()
	x.opts.CacheBytes = 64
	d := graph.NewDict()
	a := d.Intern("A")
	p, err := query.ParseCypher("tri", "(a:A)-[]-(b:A)-[]-(c:A)-[]-(a)")
	if err != nil {
		t.Fatal(err)
	}
	q, err := query.Compile(p, d, false, query.Instances)
	if err != nil {
		t.Fatal(err)
	}
	g, err := dyngraph.New(dyngraph.Options{Alloc: x.Allocator()})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var load []graph.Update
	for v := uint32(0); v < 40; v++ {
		load = append(load, graph.Update{Op: graph.AddVertex, Src: v, SrcLabel: a})
	}
	for v := uint32(1); v < 40; v++ {
		load = append(load, graph.Update{Op: graph.Insert, Src: 0, Dst: v, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
	}
	if _, _, err := g.Build(load); err != nil {
		t.Fatal(err)
	}
	delta, _, _, err := g.Apply([]graph.Update{{Op: graph.Insert, Src: 1, Dst: 2, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = x.Match(g, delta, []*query.Query{q}, incremental.Count, nil)
	if !errors.Is(err, cache.ErrOverBudget) || !strings.Contains(err.Error(), "khop") {
		t.Fatalf("khop over budget: %v", err)
	}
}

// TestGraphDescLayout: graphDesc must be match.cu's struct Graph, byte for
// byte (120 bytes; match.cu asserts the same, and the search lookup's
// fields follow the read counters' address at byte 72).
func TestGraphDescLayout(t *testing.T) {
	var d graphDesc
	if n := unsafe.Sizeof(d); n != 120 {
		t.Fatalf("graphDesc is %d bytes, match.cu's Graph 120", n)
	}
	if o := unsafe.Offsetof(d.cRowIdx); o != 80 {
		t.Errorf("cRowIdx at byte %d, match.cu's c_rowidx at 80", o)
	}
	if o := unsafe.Offsetof(d.cK); o != 112 {
		t.Errorf("cK at byte %d, match.cu's c_k at 112", o)
	}
}
