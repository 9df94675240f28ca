package cache

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/sampler"
)

// deviceLog is a Device that records the copies made into its buffer at
// base, and says the buffer moved when moved is set.
type deviceLog struct {
	budget int64
	base   uint64
	moved  bool
	copies []deviceCopy
}

type deviceCopy struct {
	at    uint64
	words []uint32
}

func (d *deviceLog) Budget() (int64, error)             { return d.budget, nil }
func (d *deviceLog) Buffer(n int) (uint64, bool, error) { return d.base, d.moved, nil }
func (d *deviceLog) Copy(at uint64, words []uint32) error {
	d.copies = append(d.copies, deviceCopy{at, slices.Clone(words)})
	return nil
}

func triangle(t *testing.T) []*query.Query {
	t.Helper()
	p := &query.Pattern{Name: "triangle"}
	for i := range 3 {
		p.Vertices = append(p.Vertices, query.Vertex{Name: string(rune('a' + i)), Wildcard: true})
	}
	for _, e := range [][2]int{{0, 1}, {1, 2}, {2, 0}} {
		p.Edges = append(p.Edges, query.Edge{From: e[0], To: e[1], Wildcard: true})
	}
	q, err := query.Compile(p, graph.NewDict(), false, query.Embeddings)
	if err != nil {
		t.Fatal(err)
	}
	return []*query.Query{q}
}

// Plan copies the batch's block behind the fill, the fill only when the
// device lacks it, and gives the slabs' addresses in the buffer; Point and
// Row then point the block's lists' rows into slab cacheSlab and the
// fill's into the next, and give the rows back once no block holds them.
func TestPlanDevice(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	g, delta := randomGraph(t, r, false, false, 400, 3000)
	qs := triangle(t)
	dev := &deviceLog{budget: 1 << 20, base: 1 << 40}
	var p Planner
	var st Stats
	sl, err := p.Plan(dev, g, delta, qs, Options{Policy: PolicyDegree, WholeLists: true}, &st)
	if err != nil {
		t.Fatal(err)
	}
	b := p.Block()
	if len(dev.copies) != 1 || dev.copies[0].at != dev.base || !slices.Equal(dev.copies[0].words, b.Words()) {
		t.Fatalf("degree: %d copies, want the block's at the buffer's start", len(dev.copies))
	}
	lay := b.Layout()
	if sl.Base != dev.base || sl.Col != dev.base+4*uint64(lay.ColIdx) || sl.FillCol != 0 || st.CachedLists != b.Keys() || st.CacheBytes != b.Bytes() {
		t.Fatalf("degree: slabs %+v, stats %+v; block of %d lists at colidx %d", sl, st, b.Keys(), lay.ColIdx)
	}
	const slab = 7
	n := p.Point(true)
	if n != b.Keys() {
		t.Fatalf("Point: %d rows, want the block's %d", n, b.Keys())
	}
	for s := range n {
		ref, row, err := p.Row(g, slab, s)
		k := b.RowIdx()[s]
		sorted, appended, _ := b.Find(k)
		if err != nil || ref != sampler.KeyList(k, false) || row[0] != slab || row[2] != uint32(len(sorted)+len(appended)) {
			t.Fatalf("row %d: list %v, row %v, want list %d in slab %d, %d entries (%v)", s, ref, row, k, slab, len(sorted)+len(appended), err)
		}
	}
	p.Pointed()
	if !slices.Equal(p.Rows(), b.RowIdx()) {
		t.Fatal("Pointed did not record the block's lists")
	}
	// No block: every row is given back as the graph has it.
	if n := p.Point(false); n != b.Keys() {
		t.Fatalf("giving back: %d rows, want %d", n, b.Keys())
	}
	for s := range b.Keys() {
		ref, row, err := p.Row(g, slab, s)
		if err != nil || row != g.Row(ref) || ref != sampler.KeyList(b.RowIdx()[s], false) {
			t.Fatalf("given back row %d: %v %v, want the graph's (%v)", s, ref, row, err)
		}
	}

	// The gcsm policy with a fill: the fill first, the block behind it.
	var q Planner
	q.caps = walkCaps{querySet(qs): {kernelEdges: 1, estBytes: 500}}
	o := Options{Policy: PolicyGCSM, MinFill: 1, MinCacheKernel: -1, WholeLists: true}
	dev.copies = nil
	st = Stats{}
	sl, err = q.Plan(dev, g, delta, qs, o, &st)
	if err != nil || q.fill == nil || q.LastEstimate() == nil {
		t.Fatalf("gcsm: fill %v, estimate %v (%v)", q.fill != nil, q.LastEstimate() != nil, err)
	}
	fw := uint64(len(q.fill.block.Words()))
	if len(dev.copies) == 0 || dev.copies[0].at != dev.base || !slices.Equal(dev.copies[0].words, q.fill.block.Words()) {
		t.Fatal("gcsm: the fill was not copied to the buffer's start")
	}
	if sl.FillCol != dev.base+4*uint64(q.fill.block.Layout().ColIdx) || st.FillBytes != q.fill.block.Bytes() {
		t.Fatalf("gcsm: fill slab %d, %d fill bytes", sl.FillCol, st.FillBytes)
	}
	if st.CachedLists == st.FilledLists {
		t.Fatal("gcsm: the batch's block is empty; the test wants one behind the fill")
	}
	if c := dev.copies[len(dev.copies)-1]; len(dev.copies) != 2 || c.at != dev.base+4*fw || sl.Col != c.at+4*uint64(q.Block().Layout().ColIdx) {
		t.Fatalf("gcsm: %d copies, the block's at %d, want it behind the fill's %d words", len(dev.copies), c.at, fw)
	}
	// Again: the device holds the fill, unless its buffer moved.
	for _, moved := range []bool{false, true} {
		dev.copies, dev.moved = nil, moved
		if _, err := q.Plan(dev, g, delta, qs, o, &Stats{}); err != nil {
			t.Fatal(err)
		}
		copied := len(dev.copies) > 0 && dev.copies[0].at == dev.base
		if copied != moved {
			t.Errorf("buffer moved %v: fill copied %v", moved, copied)
		}
	}
}
