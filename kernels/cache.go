package kernels

import (
	"errors"
	"sync"
	"time"
	"unsafe"

	"github.com/gcsm/gcsm/cache"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/kernels/cuda"
	"github.com/gcsm/gcsm/query"
)

// The cache placements' policy (which lists to cache, the fill, the
// estimate's walks) is cache.Planner's; the executor keeps the device's
// side of it: the cache buffer, the copies into it, and the table rows
// the planner points into it (pointRows). cache/planner.go describes the
// placements.

// BatchStats is what the executor measured of its last Match.
type BatchStats struct {
	// Estimate is the sampler's time (the gcsm placement).
	Estimate time.Duration
	// Pack is the rest of the cache's cost: ranking the lists, packing
	// the block, copying it to the device and pointing the table at it.
	// Rank is the part that ranked the lists, and Copy the part that
	// copied the block and pointed the table.
	Pack, Rank, Copy time.Duration
	// Match is everything else: bringing the device's copies of the graph
	// up to date, the launches and draining matches. Kernel is the part
	// after the copies were brought up to date: what the cache speeds up.
	// The first batch's copies include mapping the whole graph.
	Match, Kernel time.Duration
	// CacheSkipped says that the gcsm placement neither estimated nor
	// cached, the queries' kernel being short (Options.MinCacheKernel).
	CacheSkipped bool
	// CacheBytes is the size of the cache on the device, the batch's block
	// and the gcsm placement's fill (Options.NoFill), holding CachedLists
	// lists. FillBytes is the fill's block, stale lists and all, and
	// FilledLists its lists that are not stale. The fill is copied to the
	// device only when another's took its place.
	CacheBytes, FillBytes    int64
	CachedLists, FilledLists int
	// SlabBytes are the list bytes the kernel read through the slabs:
	// host memory over PCIe, except in the device and unified placements.
	// BlockBytes are those it read from the cache block. Both count the
	// words the kernel asked for; the GPU's caches serve some of them.
	SlabBytes, BlockBytes uint64
	// Launches counts the kernel's launches over the batch's units: more
	// than one when an enumeration filled the record buffer
	// (Options.EnumRecords) and resumed (the count mode's split adds none).
	Launches int
}

// HitRatio is the share of list bytes read from the cache block.
func (s BatchStats) HitRatio() float64 { return cache.HitRatio(s.SlabBytes, s.BlockBytes) }

// Total is the time of the Match.
func (s BatchStats) Total() time.Duration { return s.Estimate + s.Pack + s.Match }

// Last returns the measurements of the last Match.
func (x *GPU) Last() BatchStats { return x.last }

// LastEstimate returns the gcsm placement's estimate for the last batch, or
// nil: valid until the next Match.
func (x *GPU) LastEstimate() *cache.Estimate { return x.cache.LastEstimate() }

// LastReads returns what the cache placements trimmed the last batch's
// lists to: nil for whole lists. Valid until the next Match.
func (x *GPU) LastReads() *cache.Reads { return x.cache.LastReads() }

// LastCached returns the keys of the lists the cache placements' block
// and the gcsm placement's fill held for the last batch (sampler.ListKey),
// ascending: empty when it held none, nil outside those placements. Valid
// until the next Match.
func (x *GPU) LastCached() []uint32 {
	if !x.Placement().Cached() {
		return nil
	}
	if x.last.CachedLists == 0 {
		return []uint32{}
	}
	if x.opts.SearchLookup {
		return x.cache.Block().RowIdx() // no fill, and no rows pointed
	}
	return x.cache.Rows()
}

// cacheOptions are the planner's settings, from the executor's.
func (x *GPU) cacheOptions() cache.Options {
	o := x.opts
	return cache.Options{Policy: cache.Policy(o.Placement), EstimateShare: o.EstimateShare, MinCacheKernel: o.MinCacheKernel,
		WeightedWalks: o.WeightedWalks, NoFill: o.NoFill, MinFill: o.MinFill, WholeLists: o.WholeLists, SearchLookup: o.SearchLookup}
}

// cacheDevice is the executor as the planner's cache.Device.
type cacheDevice struct{ x *GPU }

// Budget is the most bytes a block may hold (Options.CacheBytes).
func (d cacheDevice) Budget() (int64, error) {
	x := d.x
	if x.opts.CacheBytes != 0 {
		return max(x.opts.CacheBytes, 0), nil
	}
	held := int64(0)
	if b, ok := x.bufs["cache"]; ok {
		held = int64(b.n) // the block's own buffer is the budget's to reuse
	}
	if x.opts.MemLimit > 0 {
		// Four fifths: a device buffer grows with a quarter of headroom
		// (GPU.buf), which must fit under the cap too.
		return max(x.opts.MemLimit-x.used+held, 0) * 4 / 5, nil
	}
	free, _, err := x.ctx.MemInfo()
	return int64(free/2) + held, err
}

// Buffer is the device buffer "cache", of at least n bytes.
func (d cacheDevice) Buffer(n int) (uint64, bool, error) {
	before := d.x.bufs["cache"]
	p, err := d.x.buf("cache", n)
	return uint64(p), d.x.bufs["cache"] != before, err
}

// Copy copies words to addr at once, not deferred (copyIn): the planner's
// blocks are rewritten by the next batch's Plan only.
func (d cacheDevice) Copy(addr uint64, words []uint32) error {
	return d.x.ctx.CopyHtoD(cuda.DevicePtr(addr), unsafe.Pointer(&words[0]), 4*len(words))
}

// fillCache has the planner rank the lists by the placement's policy, pack
// the block and copy it, and the gcsm placement's fill when the device
// lacks it, to the device; the batch's stats take what it measured.
func (x *GPU) fillCache(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query) (cache.Slabs, error) {
	var st cache.Stats
	sl, err := x.cache.Plan(cacheDevice{x}, g, delta, queries, x.cacheOptions(), &st)
	x.last.Estimate, x.last.Pack, x.last.Rank, x.last.Copy = st.Estimate, st.Pack, st.Rank, st.Copy
	x.last.CacheSkipped = st.Skipped
	x.last.CacheBytes, x.last.FillBytes, x.last.CachedLists, x.last.FilledLists = st.CacheBytes, st.FillBytes, st.CachedLists, st.FilledLists
	return sl, err
}

// tuneEstimate has the planner keep the last batch's kernel time for its
// queries, and what their estimate measured.
func (x *GPU) tuneEstimate(queries []*query.Query, edges int) {
	x.cache.Tune(queries, edges, x.cacheOptions(), x.last.Estimate, x.last.Kernel, x.last.HitRatio())
}

// pointRows writes the device table rows the planner changes for the
// batch (cache.Planner.Point): those of the block's lists point into it
// (slab cacheSlab), those of the fill's valid lists into the fill (slab
// cacheSlab+1), and the lists the last batch's held, and this one's do
// not, get their own rows back. The rows are disjoint, so one scatter
// launch writes them all.
//
// Reading a list's own row misses the host's caches, and giving back a
// large block's rows before a short batch can take longer than its
// kernel: so many rows are staged on all cores, each into its own slot.
func (x *GPU) pointRows(g *dyngraph.Graph, cacheSlab uint32) error {
	active := x.Placement().Cached() && x.last.CachedLists > 0 && !x.opts.SearchLookup
	t0 := time.Now()
	n := x.cache.Point(active)
	if n == 0 {
		return nil
	}
	rows := &x.cacheRows
	rows.size(n)
	var mu sync.Mutex
	var errs []error
	onCores(n, parallelRows, func(lo, hi int) {
		if err := x.stageRows(g, cacheSlab, rows, lo, hi); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	err := errors.Join(errs...)
	if err == nil {
		x.cache.Pointed()
		err = x.writeRows("cached", g.Directed(), rows)
	}
	d := time.Since(t0)
	x.last.Pack += d
	x.last.Copy += d
	return err
}

// parallelRows is the fewest rows pointRows stages on more than one core.
const parallelRows = 1 << 12

// stageRows stages slots [lo, hi) of pointRows' rows (cache.Planner.Row).
func (x *GPU) stageRows(g *dyngraph.Graph, cacheSlab uint32, rows *rowWrites, lo, hi int) error {
	directed := g.Directed()
	for s := lo; s < hi; s++ {
		r, row, err := x.cache.Row(g, cacheSlab, s)
		if err != nil {
			return err
		}
		rows.set(s, r, directed, row)
	}
	return nil
}

// SetCacheBytes changes Options.CacheBytes, from the next batch on, and
// pins the memory its blocks take (reserveCache).
func (x *GPU) SetCacheBytes(n int64) error {
	x.opts.CacheBytes = n
	return x.reserveCache()
}

// reserveCache pins, for a fixed budget (Options.CacheBytes), the host
// memory the cache placements' blocks take (cache.Planner.Reserve).
func (x *GPU) reserveCache() error {
	return x.cache.Reserve(x.opts.CacheBytes, x.cacheOptions())
}
