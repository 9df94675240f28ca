package bench_test

import (
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/query"
)

// smallRun is a small labeled R-MAT workload with the triangle and the
// 4-cycle, two timed batches of 16 and of 64.
func smallRun() bench.EngineConfig {
	var shapes []bench.Shape
	for _, s := range bench.Shapes() {
		if s.Name == "triangle" || s.Name == "4-cycle" {
			shapes = append(shapes, s)
		}
	}
	return bench.EngineConfig{
		Graph:    bench.RMAT{Scale: 9, Edges: 8 << 9, VertexLabels: 2, LabelSkew: 1.5, EdgeLabels: 1, Seed: 3},
		Shapes:   shapes,
		Batches:  []int{16, 64},
		PerSize:  2,
		Fraction: 0.2,
		Seed:     3,
	}
}

// runCPU runs two CPU engines, of one worker and of two, side by side on a
// small labeled R-MAT workload; RunEngines fails if they disagree.
func runCPU(t *testing.T, warmEach bool) []bench.EngineRow {
	t.Helper()
	cfg := smallRun()
	cfg.WarmEachSize = warmEach
	shapes := cfg.Shapes
	engines := []bench.Engine{
		{Name: "one", Matcher: &incremental.CPU{Workers: 1}, Alloc: hostmem.Heap{}},
		{Name: "two", Matcher: &incremental.CPU{Workers: 2}, Alloc: hostmem.Heap{}},
	}
	rows, err := bench.RunEngines(cfg, engines, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(shapes)*len(cfg.Batches)*len(engines) {
		t.Fatalf("%d rows, want %d", len(rows), len(shapes)*len(cfg.Batches)*len(engines))
	}
	for _, r := range rows {
		if r.Batches != cfg.PerSize || r.PerBatch <= 0 {
			t.Fatalf("%+v: want %d timed batches", r, cfg.PerSize)
		}
	}
	return rows
}

// RunEngines times every shape, size and engine, and with WarmEachSize
// gives a later size an untimed batch first: its timed batches then come
// from further on in the stream, while the first size's do not move.
func TestRunEngines(t *testing.T) {
	plain, warmed := runCPU(t, false), runCPU(t, true)
	moved := false
	for i, r := range plain {
		w := warmed[i]
		if r.Shape != w.Shape || r.Batch != w.Batch || r.Engine != w.Engine {
			t.Fatalf("row %d: %s/%d/%s against %s/%d/%s", i, r.Shape, r.Batch, r.Engine, w.Shape, w.Batch, w.Engine)
		}
		same := r.Positive == w.Positive && r.Negative == w.Negative
		if r.Batch == 16 && !same {
			t.Fatalf("%s at 16: +%d -%d, and +%d -%d with a warm-up per size", r.Shape, r.Positive, r.Negative, w.Positive, w.Negative)
		}
		moved = moved || !same
	}
	if !moved {
		t.Fatal("the warm-up per size left every later batch's counts as they were")
	}
}

// shapeLog is the CPU engine, noting the queries it was asked to match.
type shapeLog struct {
	incremental.CPU
	names map[string]int
}

func (m *shapeLog) Match(g *dyngraph.Graph, delta []graph.Change, qs []*query.Query, mode incremental.Mode, sink incremental.Sink) ([]incremental.Counts, error) {
	for _, q := range qs {
		m.names[q.Name]++
	}
	return m.CPU.Match(g, delta, qs, mode, sink)
}

// An engine with a matcher per shape matches each shape with its own, and
// counts what the engine with one matcher counts.
func TestRunEnginesPerShape(t *testing.T) {
	cfg := smallRun()
	shapes := cfg.Shapes
	per := []*shapeLog{{names: map[string]int{}}, {names: map[string]int{}}}
	engines := []bench.Engine{
		{Name: "one", Matcher: &incremental.CPU{Workers: 1}, Alloc: hostmem.Heap{}},
		{Name: "per-shape", Matcher: &incremental.CPU{Workers: 1}, PerShape: []incremental.Matcher{per[0], per[1]}, Alloc: hostmem.Heap{}},
	}
	rows, err := bench.RunEngines(cfg, engines, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2*len(shapes)*len(cfg.Batches) {
		t.Fatalf("%d rows", len(rows))
	}
	for i, s := range shapes {
		// A warm-up batch, then two timed batches of each size.
		if len(per[i].names) != 1 || per[i].names[s.Name] != 1+2*len(cfg.Batches) {
			t.Errorf("the matcher of %s matched %v", s.Name, per[i].names)
		}
	}
	engines[1].PerShape = engines[1].PerShape[:1]
	if _, err := bench.RunEngines(cfg, engines, io.Discard); err == nil || !strings.Contains(err.Error(), "1 matchers for 2 shapes") {
		t.Errorf("one matcher for two shapes: %v", err)
	}
}

// With EachBatch every timed batch logs its own row, and each size's row
// is their sum for the counts and their mean for the time.
func TestRunEnginesEachBatch(t *testing.T) {
	cfg := smallRun()
	cfg.EachBatch = true
	engines := []bench.Engine{{Name: "cpu", Matcher: &incremental.CPU{Workers: 1}, Alloc: hostmem.Heap{}}}
	var log strings.Builder
	rows, err := bench.RunEngines(cfg, engines, &log)
	if err != nil {
		t.Fatal(err)
	}
	type sum struct {
		n, pos, neg int64
		ms          float64
	}
	batches := map[string]*sum{}
	for _, l := range strings.Split(log.String(), "\n") {
		var b, n, size int
		var shape, engine string
		var ms float64
		var pos, neg int64
		if _, err := fmt.Sscanf(strings.TrimSpace(l), "[%d/%d] %s batch %d %s %f ms/batch +%d -%d", &b, &n, &shape, &size, &engine, &ms, &pos, &neg); err != nil {
			continue
		}
		k := fmt.Sprint(shape, size)
		if batches[k] == nil {
			batches[k] = &sum{}
		}
		s := batches[k]
		if b != int(s.n)+1 || n != cfg.PerSize {
			t.Fatalf("%q: batch %d of %d after %d", l, b, n, s.n)
		}
		s.n, s.pos, s.neg, s.ms = s.n+1, s.pos+pos, s.neg+neg, s.ms+ms
	}
	if len(batches) != len(rows) {
		t.Fatalf("batch rows for %d shapes and sizes, want %d:\n%s", len(batches), len(rows), log.String())
	}
	for _, r := range rows {
		s := batches[fmt.Sprint(r.Shape, r.Batch)]
		mean := float64(r.PerBatch.Nanoseconds()) / 1e6
		if s == nil || s.n != int64(r.Batches) || graph.CountOf(uint64(s.pos)) != r.Positive || graph.CountOf(uint64(s.neg)) != r.Negative || math.Abs(s.ms/float64(s.n)-mean) > 0.002 {
			t.Errorf("%s at %d: batches %+v, row %+v", r.Shape, r.Batch, s, r)
		}
	}
}

// A shape past its MaxBatch sits out that size, warm-up and all, while
// the others count what they count without it.
func TestRunEnginesMaxBatch(t *testing.T) {
	cfg := smallRun()
	cfg.WarmEachSize = true
	all, err := bench.RunEngines(cfg, []bench.Engine{{Name: "cpu", Matcher: &incremental.CPU{Workers: 1}, Alloc: hostmem.Heap{}}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxBatch = map[string]int{"4-cycle": 16}
	per := []*shapeLog{{names: map[string]int{}}, {names: map[string]int{}}}
	rows, err := bench.RunEngines(cfg, []bench.Engine{{Name: "cpu", PerShape: []incremental.Matcher{per[0], per[1]}, Alloc: hostmem.Heap{}}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || bench.IndexOf(rows, "4-cycle", 64, "cpu") >= 0 {
		t.Fatalf("rows %+v: want the triangle at 16 and 64 and the 4-cycle at 16", rows)
	}
	for _, r := range rows {
		ref := all[bench.IndexOf(all, r.Shape, r.Batch, "cpu")]
		if r.Positive != ref.Positive || r.Negative != ref.Negative || r.Batches != cfg.PerSize {
			t.Errorf("%s at %d: +%d -%d in %d batches, without MaxBatch +%d -%d", r.Shape, r.Batch, r.Positive, r.Negative, r.Batches, ref.Positive, ref.Negative)
		}
	}
	// The 4-cycle's matcher saw the first warm-up and the two timed
	// batches of 16; the triangle's a warm-up and two batches of each size.
	if per[0].names["triangle"] != 6 || per[1].names["4-cycle"] != 3 {
		t.Errorf("matched %v and %v", per[0].names, per[1].names)
	}
}

// A size the stream has no batch left for gets no row, rather than a row
// of no batches.
func TestRunEnginesStreamEnds(t *testing.T) {
	cfg := smallRun()
	cfg.Batches = []int{16, 1 << 20}
	rows, err := bench.RunEngines(cfg, []bench.Engine{{Name: "cpu", Matcher: &incremental.CPU{Workers: 1}, Alloc: hostmem.Heap{}}}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(cfg.Shapes) {
		t.Fatalf("%d rows, want one per shape at 16: %+v", len(rows), rows)
	}
	for _, r := range rows {
		if r.Batch != 16 || r.Batches != cfg.PerSize {
			t.Errorf("row %+v", r)
		}
	}
}
