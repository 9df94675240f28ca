package bench

import (
	"fmt"
	"io"
	"time"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/query"
)

// Engine is one executor under test, with the memory its graph must use
// (the GPU's zero-copy placement needs pinned arenas).
type Engine struct {
	Name    string
	Matcher incremental.Matcher
	Alloc   hostmem.Allocator
}

// EngineConfig is a side-by-side run of several engines over one R-MAT
// workload (DESIGN.md §11).
type EngineConfig struct {
	Graph   RMAT
	Shapes  []Shape
	Batches []int // batch sizes
	// PerSize is how many batches of each size are timed.
	PerSize int
	// Fraction of the edges that make up the stream (half inserted, half
	// deleted); the rest is the initial graph.
	Fraction float64
	Seed     uint64
}

// EngineRow is one engine's timing of one shape at one batch size.
type EngineRow struct {
	Shape, Engine      string
	Batch              int
	Batches            int
	PerBatch           time.Duration // mean matching time per batch
	Positive, Negative int64
	// ListBytes is the mean number of neighbour-list bytes the engine asked
	// for per batch, for engines that count them (the GPU; in its zero-copy
	// placement an upper bound of the PCIe traffic); zero otherwise.
	ListBytes uint64
}

// listReader is an engine that counts the neighbour-list bytes it reads.
type listReader interface{ ListBytes() uint64 }

// RunEngines replays the workload on every engine, each on its own copy of
// the graph, and times the matching of every shape per batch. Apply and
// Reorganize are the same code for every engine and are not timed. It
// fails when two engines disagree on a count: a benchmark of wrong answers
// is worthless.
func RunEngines(cfg EngineConfig, engines []Engine, log io.Writer) ([]EngineRow, error) {
	var edges []graph.Edge
	err := cfg.Graph.Generate(func(s, d, l uint32) error {
		edges = append(edges, graph.Edge{Src: s, Dst: d, Label: l})
		return nil
	})
	if err != nil {
		return nil, err
	}
	initial, stream := SplitStream(edges, cfg.Fraction, cfg.Seed)
	fmt.Fprintf(log, "R-MAT scale %d: %d edges, %d in the initial graph, stream of %d\n",
		cfg.Graph.Scale, len(edges), len(initial), len(stream))
	labels := graph.NewDict()
	for l := 0; l < max(cfg.Graph.VertexLabels, cfg.Graph.EdgeLabels, 1); l++ {
		labels.Intern(fmt.Sprint(l))
	}
	var qs []*query.Query
	for _, s := range cfg.Shapes {
		p, err := query.ParseCypher(s.Name, s.Cypher)
		if err != nil {
			return nil, err
		}
		q, err := query.Compile(p, labels, false, query.Embeddings)
		if err != nil {
			return nil, err
		}
		qs = append(qs, q)
	}
	var rows []EngineRow
	for _, size := range cfg.Batches {
		var ref []EngineRow
		for _, e := range engines {
			rs, err := runEngine(cfg, e, initial, stream, size, qs)
			if err != nil {
				return nil, fmt.Errorf("%s, batch %d: %w", e.Name, size, err)
			}
			for i := range rs {
				if ref != nil && (rs[i].Positive != ref[i].Positive || rs[i].Negative != ref[i].Negative) {
					return nil, fmt.Errorf("%s disagrees with %s on %s at batch %d: +%d -%d against +%d -%d",
						e.Name, ref[i].Engine, rs[i].Shape, size, rs[i].Positive, rs[i].Negative, ref[i].Positive, ref[i].Negative)
				}
				fmt.Fprintf(log, "  %-10s batch %5d %-12s %10.3f ms/batch  +%d -%d  %.1f MB of list reads/batch\n", rs[i].Shape, size, e.Name,
					float64(rs[i].PerBatch.Microseconds())/1000, rs[i].Positive, rs[i].Negative, float64(rs[i].ListBytes)/1e6)
			}
			if ref == nil {
				ref = rs
			}
			rows = append(rows, rs...)
		}
	}
	return rows, nil
}

func runEngine(cfg EngineConfig, e Engine, initial []graph.Edge, stream []graph.Update, size int, qs []*query.Query) ([]EngineRow, error) {
	opts := dyngraph.DefaultOptions()
	opts.Alloc = e.Alloc
	g, err := dyngraph.New(opts)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	load := make([]graph.Update, 0, len(initial)+1<<cfg.Graph.Scale)
	for v := 0; v < 1<<cfg.Graph.Scale; v++ {
		load = append(load, graph.Update{Op: graph.AddVertex, Src: uint32(v), SrcLabel: cfg.Graph.VertexLabel(uint32(v))})
	}
	for _, ed := range initial {
		load = append(load, graph.Update{Op: graph.Insert, Src: ed.Src, Dst: ed.Dst, Label: ed.Label, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
	}
	if _, _, err := g.Build(load); err != nil {
		return nil, err
	}
	rows := make([]EngineRow, len(qs))
	for i, q := range qs {
		rows[i] = EngineRow{Shape: q.Name, Engine: e.Name, Batch: size}
	}
	one := make([]*query.Query, 1)
	for b := 0; b < cfg.PerSize && (b+1)*size <= len(stream); b++ {
		delta, _, _, err := g.Apply(stream[b*size : (b+1)*size])
		if err != nil {
			return nil, err
		}
		for i, q := range qs {
			one[0] = q
			var before uint64
			lr, counts := e.Matcher.(listReader)
			if counts {
				before = lr.ListBytes()
			}
			t0 := time.Now()
			c, err := e.Matcher.Match(g, delta, one, incremental.Count, nil)
			if err != nil {
				return nil, err
			}
			rows[i].PerBatch += time.Since(t0)
			if counts {
				rows[i].ListBytes += lr.ListBytes() - before
			}
			rows[i].Positive += c[0].Positive
			rows[i].Negative += c[0].Negative
			rows[i].Batches++
		}
		g.Reorganize()
	}
	for i := range rows {
		if rows[i].Batches > 0 {
			rows[i].PerBatch /= time.Duration(rows[i].Batches)
			rows[i].ListBytes /= uint64(rows[i].Batches)
		}
	}
	return rows, nil
}
