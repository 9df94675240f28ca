package bench

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/gcsm/gcsm/cache"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/kernels"
	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/sampler"
)

// Engine is one executor under test, with the memory its graph must use
// (the GPU's zero-copy placement needs pinned arenas).
type Engine struct {
	Name    string
	Matcher incremental.Matcher
	// PerShape, when set, holds a matcher for each of EngineConfig.Shapes,
	// in order, which matches that shape alone, as a service holding that
	// one query would; Matcher then matches nothing. Without it
	// Matcher matches the shapes one after another, and on the GPU each
	// shape's cache displaces the last one's: the table rows it points,
	// and the gcsm placement's fill, which is copied again.
	PerShape []incremental.Matcher
	Alloc    hostmem.Allocator
}

// matcher returns the matcher of the run's shape i.
func (e Engine) matcher(i int) incremental.Matcher {
	if e.PerShape != nil {
		return e.PerShape[i]
	}
	return e.Matcher
}

// EngineConfig is a side-by-side run of several engines over one R-MAT
// workload (docs/benchmarks.md, Workloads).
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
	// CacheFraction, when positive, caps the cache placements' budget at
	// that share of the graph's list bytes (the paper's out-of-GPU-memory
	// regime: 0.05 is 5%). It is applied to the engines through SetBudget.
	CacheFraction float64
	// WarmEachSize gives every size after the first an untimed batch of
	// its own before its timed ones, as the first size always gets: what
	// a stream of one size pays once (a query set's first cuts of its
	// lists, the walks tuned to another size) then stays out of the rows.
	WarmEachSize bool
	// Coverage computes, for the cache placements, the top-1% and top-5%
	// coverage of the cache against the exact reads (sampler.Exact: a walk
	// of the batch on all cores) on each size's last timed batch: with
	// several per size, after the gcsm placement's walks have settled to
	// the size.
	Coverage bool
	// EachBatch logs every timed batch's own row, before each size's
	// means: the gcsm placement's walks and fill move from batch to batch.
	EachBatch bool
	// MaxBatch, by shape name, is the largest batch size that shape runs
	// at: it sits out larger ones, warm-ups included. Shapes not named run
	// at every size. One command can then time the small shapes at every
	// size without a large one's minutes per batch.
	MaxBatch map[string]int
}

// runs says whether shape runs at batches of size (MaxBatch).
func (c EngineConfig) runs(shape string, size int) bool {
	m, ok := c.MaxBatch[shape]
	return !ok || size <= m
}

// EngineRow is one engine's timing of one shape at one batch size.
type EngineRow struct {
	Shape, Engine      string
	Batch              int
	Batches            int
	PerBatch           time.Duration // mean matching time per batch
	Positive, Negative graph.Count
	// ListBytes is the mean number of neighbour-list bytes the engine asked
	// for per batch, for engines that count them (the GPU); zero otherwise.
	// HostBytes is the part read from host memory through the device
	// mapping: an upper bound of the PCIe traffic.
	ListBytes, HostBytes uint64
	// The GPU's breakdown of PerBatch (kernels.BatchStats), means per
	// batch: estimation, the rest of the cache's cost (ranking, packing,
	// copying), and the block's size and share of the list reads.
	Estimate, Pack time.Duration
	// Rank is the part of Pack that ranked the lists, and Copy the part
	// that copied the block and pointed the device's table at it; Kernel
	// is the part of the matching after the device's copies were brought
	// up to date.
	Rank, Copy, Kernel time.Duration
	// CacheBytes is the cache's size on the device, FillBytes the gcsm
	// placement's fill's part of it; CachedLists are the lists it holds,
	// FilledLists of them the fill's (kernels.Options.NoFill).
	CacheBytes, FillBytes    int64
	CachedLists, FilledLists int
	HitRatio                 float64
	// Skipped counts the batches in which the gcsm placement neither
	// estimated nor cached (kernels.Options.MinCacheKernel).
	Skipped int
	// The gcsm placement's estimate, means per batch: its walks (M), the
	// tree nodes they visited (the sampler's work) and the lists it rated;
	// and the last batch's boost (sampler.Options.Boost).
	Walks, Steps, Rated int64
	Boost               int
	// Coverage1 and Coverage5 are a cache placement's top-1% and top-5%
	// coverage by its block (EngineConfig.Coverage; the paper's metric,
	// sampler.CacheCoverage), or -1. Rank1 and Rank5 are the gcsm
	// placement's stricter coverage by as many lists as the top share
	// holds, ranked by estimate (sampler.Coverage), or -1.
	Coverage1, Coverage5 float64
	Rank1, Rank5         float64
	// Top1Bytes, set with Coverage1, is what a block holding the top 1%
	// of lists would take (cache.BlockBytes, trimmed as the engine trims
	// them): when it exceeds the budget,
	// no policy can reach a top-1% coverage of 1.
	Top1Bytes int64
}

// gpuEngine is an engine that reports what it read and what its cache
// cost (kernels.GPU).
type gpuEngine interface {
	ListBytes() uint64
	HostBytes() uint64
	Last() kernels.BatchStats
	LastEstimate() *sampler.Estimate
	LastCached() []uint32
	LastReads() *cache.Reads
}

// Budgeted is an engine with a cache budget (kernels.GPU), which
// EngineConfig.CacheFraction sets once the graph's size is known.
type Budgeted interface{ SetCacheBytes(int64) error }

// RunEngines replays the workload on every engine, each on its own copy of
// the graph, and times the matching of every shape per batch. Apply and
// Reorganize are the same code for every engine and are not timed. It
// fails when two engines disagree on a count: a benchmark of wrong answers
// is worthless.
//
// It measures matchers, one query at a time on one batch's changes, not
// the batch cycle: that is engine.Core's, which gcsm bench service's
// baseline times.
func RunEngines(cfg EngineConfig, engines []Engine, log io.Writer) ([]EngineRow, error) {
	if err := cfg.Graph.Validate(); err != nil {
		return nil, err
	}
	for _, e := range engines {
		if e.PerShape != nil && len(e.PerShape) != len(cfg.Shapes) {
			return nil, fmt.Errorf("bench: engine %s has %d matchers for %d shapes", e.Name, len(e.PerShape), len(cfg.Shapes))
		}
	}
	initial, stream, qs, err := workload(cfg, log)
	if err != nil {
		return nil, err
	}
	gs, err := loadAll(cfg, engines, initial)
	defer func() {
		for _, g := range gs {
			if g != nil {
				g.Close()
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	// One untimed batch per engine, of the first size, each query alone as
	// in the timed ones: what a first batch pays once (the GPU's first
	// copy of the vertex table, its buffers, the estimator's arrays, the
	// gcsm placement's first estimate of a query with the paper's number
	// of walks before it tunes them) is not what a stream pays per batch.
	// With WarmEachSize every later size gets one too.
	at := make([]int, len(engines)) // where each engine's next batch starts in the stream
	warm := 1
	if len(cfg.Batches) > 0 {
		warm = max(1, min(cfg.Batches[0], len(stream)))
	}
	for ei, e := range engines {
		if err := warmUp(cfg, e, gs[ei], stream, &at[ei], warm, qs); err != nil {
			return nil, err
		}
	}
	var rows []EngineRow
	out := make([]bool, len(engines))
	for si, size := range cfg.Batches {
		if cfg.WarmEachSize && si > 0 {
			for ei, e := range engines {
				if out[ei] {
					continue
				}
				if err := warmUp(cfg, e, gs[ei], stream, &at[ei], size, qs); err != nil {
					return nil, err
				}
			}
		}
		if rows, err = runSizeAll(cfg, engines, gs, stream, at, out, size, qs, rows, log); err != nil {
			return nil, err
		}
	}
	return rows, nil
}

// workload generates the graph and splits it into the initial graph and
// the stream, and compiles the shapes.
func workload(cfg EngineConfig, log io.Writer) (initial []graph.Edge, stream []graph.Update, qs []*query.Query, err error) {
	// Generate emits exactly Edges edges; growing the slice as they come
	// would copy it over and over.
	edges := make([]graph.Edge, 0, cfg.Graph.Edges)
	err = cfg.Graph.Generate(func(s, d, l uint32) error {
		edges = append(edges, graph.Edge{Src: s, Dst: d, Label: l})
		return nil
	})
	if err != nil {
		return nil, nil, nil, err
	}
	initial, stream = SplitStream(edges, cfg.Fraction, cfg.Seed)
	fmt.Fprintf(log, "R-MAT scale %d: %d edges, %d in the initial graph, stream of %d\n",
		cfg.Graph.Scale, len(edges), len(initial), len(stream))
	labels := graph.NewDict()
	for l := 0; l < max(cfg.Graph.VertexLabels, cfg.Graph.EdgeLabels, 1); l++ {
		labels.Intern(fmt.Sprint(l))
	}
	for _, s := range cfg.Shapes {
		p, err := query.ParseCypher(s.Name, s.Cypher)
		if err != nil {
			return nil, nil, nil, err
		}
		q, err := query.Compile(p, labels, false, query.Embeddings)
		if err != nil {
			return nil, nil, nil, err
		}
		qs = append(qs, q)
	}
	return initial, stream, qs, nil
}

// loadAll gives every engine its own copy of the graph, built side by
// side; then each batch size runs on every engine in turn, so that a run
// cut short still compares the engines on the sizes it finished. The
// graphs come back, those made, even with an error, for the caller to
// close.
func loadAll(cfg EngineConfig, engines []Engine, initial []graph.Edge) ([]*dyngraph.Graph, error) {
	gs := make([]*dyngraph.Graph, len(engines))
	errs := make([]error, len(engines))
	var wg sync.WaitGroup
	for ei, e := range engines {
		wg.Go(func() { gs[ei], errs[ei] = load(cfg, e, initial) })
	}
	wg.Wait()
	return gs, errors.Join(errs...)
}

// runSizeAll runs batch size on every engine still in (out), appends
// their rows to rows and checks each against the first engine's.
func runSizeAll(cfg EngineConfig, engines []Engine, gs []*dyngraph.Graph, stream []graph.Update, at []int, out []bool,
	size int, qs []*query.Query, rows []EngineRow, log io.Writer) ([]EngineRow, error) {
	// Every engine's graph is at the same point of the stream, so the
	// exact reads of a shape's last batch are the same for all.
	exact := map[string][]uint64{}
	for ei, e := range engines {
		if out[ei] {
			continue
		}
		rs, err := runSize(cfg, e, gs[ei], stream, &at[ei], size, qs, exact, log)
		if errors.Is(err, cache.ErrOverBudget) {
			// The khop placement at a batch whose neighbourhood does not
			// fit: its graph now holds a batch the others went on from,
			// so it sits out the rest of the run.
			fmt.Fprintf(log, "  %s, batch %d: %v; no more batches for it\n", e.Name, size, err)
			out[ei] = true
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s, batch %d: %w", e.Name, size, err)
		}
		for _, r := range rs {
			logRow(log, r)
			if ref := IndexOf(rows, r.Shape, r.Batch, engines[0].Name); ei > 0 && ref >= 0 &&
				(r.Positive != rows[ref].Positive || r.Negative != rows[ref].Negative) {
				return nil, fmt.Errorf("%s disagrees with %s on %s at batch %d: +%d -%d against +%d -%d",
					e.Name, rows[ref].Engine, r.Shape, r.Batch, r.Positive, r.Negative, rows[ref].Positive, rows[ref].Negative)
			}
		}
		rows = append(rows, rs...)
	}
	return rows, nil
}

// warmUp matches an untimed batch of size updates from stream[*at:], each
// query alone as in the timed batches (fewer updates when the stream runs
// out). An engine's over-budget khop batch is no error here: the timed
// batch of that size reports it. A shape that sits out size sits out its
// warm-up too.
func warmUp(cfg EngineConfig, e Engine, g *dyngraph.Graph, stream []graph.Update, at *int, size int, qs []*query.Query) error {
	size = min(size, len(stream)-*at)
	if size <= 0 {
		return nil
	}
	delta, _, _, err := g.Apply(stream[*at : *at+size])
	if err != nil {
		return err
	}
	*at += size
	one := make([]*query.Query, 1)
	for i, q := range qs {
		if !cfg.runs(q.Name, size) {
			continue
		}
		one[0] = q
		if _, err := e.matcher(i).Match(g, delta, one, incremental.Count, nil); err != nil && !errors.Is(err, cache.ErrOverBudget) {
			return fmt.Errorf("%s, warm-up batch of %d: %w", e.Name, size, err)
		}
	}
	g.Reorganize()
	return nil
}

// IndexOf finds the row of shape, batch size and engine, or returns -1.
func IndexOf(rows []EngineRow, shape string, batch int, engine string) int {
	for i, r := range rows {
		if r.Shape == shape && r.Batch == batch && r.Engine == engine {
			return i
		}
	}
	return -1
}

// load builds the initial graph in the engine's memory and sets its cache
// budget.
func load(cfg EngineConfig, e Engine, initial []graph.Edge) (*dyngraph.Graph, error) {
	opts := dyngraph.DefaultOptions()
	opts.Alloc = e.Alloc
	g, err := dyngraph.New(opts)
	if err != nil {
		return nil, err
	}
	batch := make([]graph.Update, 0, len(initial)+1<<cfg.Graph.Scale)
	for v := 0; v < 1<<cfg.Graph.Scale; v++ {
		batch = append(batch, graph.Update{Op: graph.AddVertex, Src: uint32(v), SrcLabel: cfg.Graph.VertexLabel(uint32(v))})
	}
	for _, ed := range initial {
		batch = append(batch, graph.Update{Op: graph.Insert, Src: ed.Src, Dst: ed.Dst, Label: ed.Label, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
	}
	if _, _, err := g.Build(batch); err != nil {
		g.Close()
		return nil, err
	}
	if cfg.CacheFraction > 0 {
		for _, m := range append([]incremental.Matcher{e.Matcher}, e.PerShape...) {
			if b, ok := m.(Budgeted); ok {
				if err := b.SetCacheBytes(int64(cfg.CacheFraction * float64(GraphBytes(g)))); err != nil {
					g.Close()
					return nil, fmt.Errorf("%s: %w", e.Name, err)
				}
			}
		}
	}
	return g, nil
}

func logRow(log io.Writer, r EngineRow) {
	fmt.Fprintf(log, "  %-10s batch %5d %-14s %10.3f ms/batch  +%d -%d  %.1f MB of list reads/batch, %.1f MB from host",
		r.Shape, r.Batch, r.Engine, ms(r.PerBatch), r.Positive, r.Negative, float64(r.ListBytes)/1e6, float64(r.HostBytes)/1e6)
	if r.CacheBytes > 0 || r.Estimate > 0 {
		fmt.Fprintf(log, "; estimate %.3f ms, pack+copy %.3f ms (ranking %.3f ms, copy and table %.3f ms), kernel %.3f ms, block %.1f MB, %d lists (%d filled, %.1f MB), hit %.0f%%",
			ms(r.Estimate), ms(r.Pack), ms(r.Rank), ms(r.Copy), ms(r.Kernel), float64(r.CacheBytes)/1e6, r.CachedLists, r.FilledLists, float64(r.FillBytes)/1e6, 100*r.HitRatio)
	}
	if r.Skipped > 0 {
		fmt.Fprintf(log, "; no estimate or block in %d of %d batches (short kernel)", r.Skipped, r.Batches)
	}
	if r.Walks > 0 {
		fmt.Fprintf(log, "; %d walks (boost %d), %d steps, %d lists rated", r.Walks, r.Boost, r.Steps, r.Rated)
	}
	if r.Coverage1 >= 0 {
		fmt.Fprintf(log, ", coverage top-1%% %.2f top-5%% %.2f", r.Coverage1, r.Coverage5)
	}
	if r.Rank1 >= 0 {
		fmt.Fprintf(log, " (estimate's ranking %.2f, %.2f)", r.Rank1, r.Rank5)
	}
	if r.Coverage1 >= 0 {
		fmt.Fprintf(log, "; the top 1%% of lists take %.1f MB", float64(r.Top1Bytes)/1e6)
	}
	fmt.Fprintln(log)
}

// runSize runs cfg.PerSize batches of size updates from stream[*at:] (fewer
// when the stream runs out). exact holds the exact reads of each shape's
// last batch (cfg.PerSize-th), for coverage, once an engine has counted
// them. With cfg.EachBatch it logs every batch's own row. Shapes that sit
// out size (cfg.MaxBatch) get no row, nor does any when the stream had no
// batch of size left.
func runSize(cfg EngineConfig, e Engine, g *dyngraph.Graph, stream []graph.Update, at *int, size int, qs []*query.Query, exact map[string][]uint64, log io.Writer) ([]EngineRow, error) {
	// newRow is a row of no batches yet, its coverage unmeasured.
	newRow := func(q *query.Query) EngineRow {
		return EngineRow{Shape: q.Name, Engine: e.Name, Batch: size, Coverage1: -1, Coverage5: -1, Rank1: -1, Rank5: -1}
	}
	rows := make([]EngineRow, len(qs))
	for i, q := range qs {
		rows[i] = newRow(q)
	}
	one := make([]*query.Query, 1)
	for b := 0; b < cfg.PerSize && *at+size <= len(stream); b++ {
		delta, _, _, err := g.Apply(stream[*at : *at+size])
		if err != nil {
			return nil, err
		}
		*at += size
		for i, q := range qs {
			if !cfg.runs(q.Name, size) {
				continue
			}
			one[0] = q
			r := newRow(q)
			r.Batches = 1
			var list, host uint64
			m := e.matcher(i)
			gpu, isGPU := m.(gpuEngine)
			if isGPU {
				list, host = gpu.ListBytes(), gpu.HostBytes()
			}
			t0 := time.Now()
			c, err := m.Match(g, delta, one, incremental.Count, nil)
			if err != nil {
				return nil, err
			}
			r.PerBatch = time.Since(t0)
			r.Positive, r.Negative = c[0].Positive, c[0].Negative
			if isGPU {
				st := gpu.Last()
				r.ListBytes, r.HostBytes = gpu.ListBytes()-list, gpu.HostBytes()-host
				r.Estimate, r.Pack, r.Rank, r.Copy, r.Kernel = st.Estimate, st.Pack, st.Rank, st.Copy, st.Kernel
				r.CacheBytes, r.FillBytes, r.CachedLists, r.FilledLists = st.CacheBytes, st.FillBytes, st.CachedLists, st.FilledLists
				r.HitRatio = st.HitRatio()
				if st.CacheSkipped {
					r.Skipped = 1
				}
				if est := gpu.LastEstimate(); est != nil {
					r.Walks, r.Steps, r.Rated, r.Boost = int64(est.Walks), est.Steps, int64(est.Rated()), est.Boost
				}
				if cached := gpu.LastCached(); cfg.Coverage && b == cfg.PerSize-1 && cached != nil && !st.CacheSkipped {
					ex, ok := exact[q.Name]
					if !ok {
						ex = sampler.Exact(g, delta, one, sampler.Terms)
						exact[q.Name] = ex
					}
					r.Coverage1 = sampler.CacheCoverage(ex, cached, 0.01)
					r.Coverage5 = sampler.CacheCoverage(ex, cached, 0.05)
					r.Top1Bytes = cache.BlockBytes(g, sampler.Top(ex, 0.01), gpu.LastReads())
					if est := gpu.LastEstimate(); est != nil {
						counts := est.Counts(nil)
						r.Rank1 = sampler.Coverage(ex, counts, 0.01)
						r.Rank5 = sampler.Coverage(ex, counts, 0.05)
					}
				}
			}
			if cfg.EachBatch {
				fmt.Fprintf(log, "  [%d/%d]", b+1, cfg.PerSize)
				logRow(log, r)
			}
			rows[i].add(r)
		}
		g.Reorganize()
	}
	kept := rows[:0]
	for _, r := range rows {
		if r.Batches > 0 { // not sitting out size, nor past the stream's end
			r.mean()
			kept = append(kept, r)
		}
	}
	return kept, nil
}

// add sums one batch's row o into r, and takes its coverage and boost
// where o has them.
func (r *EngineRow) add(o EngineRow) {
	r.Batches += o.Batches
	r.PerBatch += o.PerBatch
	r.Positive = r.Positive.Add(o.Positive)
	r.Negative = r.Negative.Add(o.Negative)
	r.ListBytes += o.ListBytes
	r.HostBytes += o.HostBytes
	r.Estimate += o.Estimate
	r.Pack += o.Pack
	r.Rank += o.Rank
	r.Copy += o.Copy
	r.Kernel += o.Kernel
	r.CacheBytes += o.CacheBytes
	r.FillBytes += o.FillBytes
	r.CachedLists += o.CachedLists
	r.FilledLists += o.FilledLists
	r.HitRatio += o.HitRatio
	r.Skipped += o.Skipped
	r.Walks += o.Walks
	r.Steps += o.Steps
	r.Rated += o.Rated
	if o.Boost != 0 {
		r.Boost = o.Boost
	}
	if o.Coverage1 >= 0 {
		r.Coverage1, r.Coverage5, r.Top1Bytes = o.Coverage1, o.Coverage5, o.Top1Bytes
	}
	if o.Rank1 >= 0 {
		r.Rank1, r.Rank5 = o.Rank1, o.Rank5
	}
}

// mean turns the sums of add into means per batch; the counts of matches
// and of skipped batches stay sums.
func (r *EngineRow) mean() {
	n := r.Batches
	if n == 0 {
		return
	}
	r.PerBatch /= time.Duration(n)
	r.Estimate /= time.Duration(n)
	r.Pack /= time.Duration(n)
	r.Rank /= time.Duration(n)
	r.Copy /= time.Duration(n)
	r.Kernel /= time.Duration(n)
	r.ListBytes /= uint64(n)
	r.HostBytes /= uint64(n)
	r.CacheBytes /= int64(n)
	r.FillBytes /= int64(n)
	r.CachedLists /= n
	r.FilledLists /= n
	r.HitRatio /= float64(n)
	r.Walks /= int64(n)
	r.Steps /= int64(n)
	r.Rated /= int64(n)
}

// GraphBytes is the size of g's neighbour lists as a cache block would hold
// them: 4 bytes an entry, 8 with edge labels. Budgets are shares of it.
func GraphBytes(g *dyngraph.Graph) int64 {
	st := g.Stats()
	if st.MultiLabel {
		return 8 * st.Entries
	}
	return 4 * st.Entries
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
