package kernels

import (
	"fmt"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/query"
)

// TestStaticDeepens: the static plan starts at the one hub labelled H, so
// the kernel gets a few dozen root edges for a search of hundreds of
// thousands of matches. The seeds must be deepened (more than one launch)
// and still find what the CPU finds, counted and enumerated, with a record
// buffer small enough that seeds park and resume, and the same unsplit.
// Counting goes through match_delta here (no space); TestStaticSpace counts
// over the candidate space.
func TestStaticDeepens(t *testing.T) {
	load, qs := hubCase(t)
	for _, c := range []struct {
		records int
		noSplit bool
	}{{1 << 20, false}, {1000, false}, {1 << 20, true}} {
		x := openGPUWith(t, Options{Placement: Device, EnumRecords: c.records, NoSplit: c.noSplit, SpaceEntries: -1})
		g, cpu, want := staticOnCPU(t, x, load, qs)
		if want[0].Cmp(graph.CountOf(1000)) < 0 || want[1].Cmp(graph.CountOf(10000)) < 0 {
			t.Fatalf("the graph holds too few matches to need deepening: %v", want)
		}
		for qi, q := range qs {
			one := []*query.Query{q}
			got, err := x.Static(g, one, incremental.Count, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got[0] != want[qi] {
				t.Errorf("records %d nosplit %v query %d: GPU counts %d, CPU %d", c.records, c.noSplit, qi, got[0], want[qi])
			}
			if deep := x.Last().Launches > 1; deep == c.noSplit {
				t.Errorf("records %d nosplit %v query %d: %d launches", c.records, c.noSplit, qi, x.Last().Launches)
			}
			enumeratesAsCPU(t, x, cpu, g, q, fmt.Sprintf("records %d nosplit %v query %d", c.records, c.noSplit, qi))
		}
		g.Close()
		x.Close()
	}
}

// TestStaticKeepsIntersections: levels that read an earlier level's kept
// intersection (keepIntersections) find what the CPU finds, counted and
// enumerated, on a graph whose dense core and sparse rim give lists both
// longer and shorter than a small keep budget, so that some levels keep
// their list and others fall back to scanning; with the default budget,
// without kept lists, with a record buffer that parks walks, and unsplit.
// On a graph this small the seeds go deep enough that the last launch
// reads no kept list and runs match_delta (readsKept), so the cases that
// walk kept lists are the unsplit ones; STMatch's patterns (benchmarks.md)
// read them from seeds. Counting goes through match_delta here (no space).
func TestStaticKeepsIntersections(t *testing.T) {
	load, qs := denseCoreCase(t)
	for _, c := range []struct {
		keep    int64
		records int
		noSplit bool
	}{
		{0, 1 << 20, false},
		{40 * 4 * 2 * 8 * warpsPerBlock * 132, 1 << 20, true}, // 40-80 entries a list with 132 SMs
		{-1, 1 << 20, false},
		{0, 500, false},
		{0, 500, true},
		{0, 1 << 20, true},
	} {
		x := openGPUWith(t, Options{Placement: Device, EnumRecords: c.records, NoSplit: c.noSplit, KeepBytes: c.keep, SpaceEntries: -1})
		g, cpu, want := staticOnCPU(t, x, load, qs)
		for qi, q := range qs {
			if want[qi].Cmp(graph.CountOf(100)) < 0 {
				t.Fatalf("query %d: only %d matches on the CPU", qi, want[qi])
			}
			one := []*query.Query{q}
			got, err := x.Static(g, one, incremental.Count, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got[0] != want[qi] {
				t.Errorf("%+v query %d: GPU counts %d, CPU %d", c, qi, got[0], want[qi])
			}
			enumeratesAsCPU(t, x, cpu, g, q, fmt.Sprintf("%+v query %d", c, qi))
		}
		g.Close()
		x.Close()
	}
}

// enumeratesAsCPU checks that the GPU's static matcher enumerates q's
// matches on g as the CPU's does: the same matches, each once.
func enumeratesAsCPU(t *testing.T, x *GPU, cpu *incremental.CPU, g *dyngraph.Graph, q *query.Query, where string) {
	t.Helper()
	one := []*query.Query{q}
	cc := &collector{got: map[string]int{}}
	gc := &collector{got: map[string]int{}}
	if _, err := cpu.Static(g, one, incremental.Enumerate, cc.sink); err != nil {
		t.Fatal(err)
	}
	if _, err := x.Static(g, one, incremental.Enumerate, gc.sink); err != nil {
		t.Fatal(err)
	}
	if len(gc.got) != len(cc.got) {
		t.Fatalf("%s: GPU enumerated %d distinct matches, CPU %d", where, len(gc.got), len(cc.got))
	}
	for k, n := range gc.got {
		if n != 1 || cc.got[k] != 1 {
			t.Fatalf("%s: GPU emitted %s %d times, CPU %d", where, k, n, cc.got[k])
		}
	}
}

// staticOnCPU builds load into a graph in x's pinned memory and counts qs on
// it with the CPU's static matcher.
func staticOnCPU(t *testing.T, x *GPU, load []graph.Update, qs []*query.Query) (*dyngraph.Graph, *incremental.CPU, []graph.Count) {
	t.Helper()
	g, err := dyngraph.New(dyngraph.Options{Alloc: x.Allocator()})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Build(load); err != nil {
		t.Fatal(err)
	}
	cpu := &incremental.CPU{}
	want, err := cpu.Static(g, qs, incremental.Count, nil)
	if err != nil {
		t.Fatal(err)
	}
	return g, cpu, want
}

// hubCase is a graph whose static plans start at its one hub labelled H,
// with a few dozen root edges for hundreds of thousands of matches, and two
// queries over it.
func hubCase(t *testing.T) ([]graph.Update, []*query.Query) {
	t.Helper()
	d := graph.NewDict()
	h, b, x := d.Intern("H"), d.Intern("B"), d.Intern("x")
	const n = 40
	load := []graph.Update{{Op: graph.AddVertex, Src: 0, SrcLabel: h}}
	for v := uint32(1); v <= n; v++ {
		load = append(load, graph.Update{Op: graph.AddVertex, Src: v, SrcLabel: b})
	}
	edge := func(v, w uint32) graph.Update {
		return graph.Update{Op: graph.Insert, Src: v, Dst: w, Label: x, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}
	}
	for v := uint32(1); v <= n; v++ {
		load = append(load, edge(0, v))
		for w := v + 1; w <= n; w++ {
			if (v*7+w*3)%5 != 0 { // dense, not complete
				load = append(load, edge(v, w))
			}
		}
	}
	return load, compiled(t, d, "q", []pattern{
		{"(h:H)-[]-(a:B)-[]-(b:B)-[]-(c:B)-[]-(a), (b)-[]-(h)", query.Embeddings},
		{"(h:H)-[]-(a:B)-[]-(b:B)-[]-(c:B)-[]-(d:B)-[]-(a)", query.Instances},
	})
}

// denseCoreCase is a graph with a dense core and a sparse rim, labelled A
// and B, and five queries over it, cliques among them, under both
// semantics.
func denseCoreCase(t *testing.T) ([]graph.Update, []*query.Query) {
	t.Helper()
	d := graph.NewDict()
	a, b, x := d.Intern("A"), d.Intern("B"), d.Intern("x")
	const n, core = 240, 60
	var load []graph.Update
	for v := uint32(0); v < n; v++ {
		l := a
		if v%4 == 3 {
			l = b
		}
		load = append(load, graph.Update{Op: graph.AddVertex, Src: v, SrcLabel: l})
	}
	for v := uint32(0); v < n; v++ {
		for w := v + 1; w < n; w++ {
			h := (v*2654435761 ^ w*40503) % 100
			if (v < core && w < core && h < 60) || h < 12 {
				load = append(load, graph.Update{Op: graph.Insert, Src: v, Dst: w, Label: x, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
			}
		}
	}
	return load, compiled(t, d, "k", []pattern{
		{"(a)-[]-(b)-[]-(c)-[]-(a), (d)-[]-(a), (d)-[]-(b), (d)-[]-(c)", query.Embeddings},
		{"(a)-[]-(b)-[]-(c)-[]-(a), (d)-[]-(a), (d)-[]-(b), (d)-[]-(c), (e)-[]-(a), (e)-[]-(b), (e)-[]-(c), (e)-[]-(d)", query.Instances},
		{"(a:A)-[]-(b:A)-[]-(c:A)-[]-(a), (d:A)-[]-(a), (d)-[]-(b), (d)-[]-(c), (e:B)-[]-(a), (e)-[]-(b), (e)-[]-(c)", query.Embeddings},
		{"(a)-[]-(b)-[]-(c)-[]-(a), (d)-[]-(a), (d)-[]-(b), (d)-[]-(c), (e)-[]-(c), (e)-[]-(d)", query.Instances},
		{"(a)-[]-(b)-[]-(c)-[]-(a), (d)-[]-(a), (d)-[]-(b), (d)-[]-(c), (e)-[]-(a), (e)-[]-(b), (e)-[]-(c), (e)-[]-(d), " +
			"(f)-[]-(a), (f)-[]-(b), (f)-[]-(c), (f)-[]-(d), (f)-[]-(e)", query.Instances},
	})
}

// pattern is a query of a test case and the semantics it is compiled with.
type pattern struct {
	pat string
	sem query.Semantics
}

// compiled compiles ps over the labels of d, named prefix and index.
func compiled(t *testing.T, d *graph.Dict, prefix string, ps []pattern) []*query.Query {
	t.Helper()
	var qs []*query.Query
	for i, c := range ps {
		p, err := query.ParseCypher(fmt.Sprint(prefix, i), c.pat)
		if err != nil {
			t.Fatal(err)
		}
		q, err := query.Compile(p, d, false, c.sem)
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q)
	}
	return qs
}
