package kernels

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/gcsm/gcsm/cache"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/kernels/cuda"
	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/sampler"
)

// The cache placements (GCSM section V; cache/FORMAT.md). For every batch
// a policy ranks the lists, cache.Pack copies the top ones that fit the
// budget, trimmed to the vertex labels the batch's queries read
// (cache.Reads; Options.WholeLists keeps them whole), into one pinned DCSR
// block, and one copy moves the block to GPU memory. The kernel then finds
// a cached list the way it finds any list, through the per-vertex table:
// pointRows rewrites the device's rows of the cached lists to point into
// the block's colidx, a slab like the others, with the block's lengths,
// and restores the rows of the lists the last block held. A miss
// costs nothing extra, and a hit no search of rowidx: the lookup the block
// was laid out for (binary search, cache/FORMAT.md) is done on the host,
// once per cached list and batch, instead of in the kernel once per list
// access. Options.SearchLookup does it the paper's way instead, in the
// kernel, so that the two can be measured against each other.
//
// The gcsm placement's fill (fill.go) is a second block, packed once per
// set of queries and kept on the device ahead of the batch's block in the
// same buffer; the table rows of its lists that no batch has touched since
// point into it, as one more slab.

// cacheState is what the cache placements keep from batch to batch.
type cacheState struct {
	est   sampler.Estimator
	block cache.Block
	dev   cuda.DevicePtr // the device copy of block
	reads *cache.Reads   // what the last batch's queries read of a list
	// readsBy keeps each set of queries' Reads, with the cuts it
	// remembers, from batch to batch.
	readsBy map[string]*cache.Reads
	keys    []uint32 // the policy's ranking (scratch)
	// rows are the keys of the lists whose device table rows point into
	// the block or the fill, ascending; writes stages the rows pointRows
	// changes, back lists the keys whose rows it gives back, and union
	// those it points (scratch).
	rows, back []uint32
	union      []uint32
	writes     rowWrites
	last       *sampler.Estimate // the gcsm policy's last estimate
	caps       walkCaps          // the gcsm policy's walks; see Options.EstimateShare
	// The degree policy's order of the lists, longest first, and the
	// graph and edge count it was made for; and its ranking under
	// rankedBudget, per set of queries (the trims differ).
	longest      []uint32
	longestFor   *dyngraph.Graph
	longestEdges int64
	ranked       map[string][]uint32
	rankedBudget int64
	// The gcsm placement's fills, per set of queries (fill.go): this
	// batch's, the one whose words the device's cache buffer holds at its
	// front, and the version and buffer it copied; clock orders their
	// use, and touched is scratch.
	fills      map[string]*fillBlock
	fill       *fillBlock
	devFill    *fillBlock
	devVersion uint64
	devBuf     devBuf
	clock      uint64
	touched    []uint32
	// spare is pinned memory for the next fill: reserved with a fixed
	// budget (reserveCache), and then a dropped fill's buffer, kept
	// (keepSpare) so that the next fill does not pin its own.
	spare     cache.Block
	keepSpare bool
	// from says where each of rows points: the batch's block's row i for
	// i >= 0, the fill's row -1-i otherwise (scratch of pointRows).
	from []int32
	// demand is the bytes this batch's estimate's lists and the fill's
	// stale lists need beyond the fill, measured up to half the budget, or
	// -1 when the batch did not measure it (walkCap.estBytes).
	demand int64
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

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

// maxReadSets bounds the sets of queries whose cache.Reads the cache
// placements keep (1.5 MiB each): a service whose queries churn starts
// them afresh rather than grow.
const maxReadSets = 16

// DefaultEstimateShare is Options.EstimateShare's default. The estimate
// runs on the CPU, and the GPU walks a tree node far faster than the
// sampler does: the paper's number of walks cost 10 to 40% of a batch on
// the H100 for 5-vertex queries. Half the paper's 10% leaves room for the
// packing and the copy.
const DefaultEstimateShare = 0.05

// DefaultMinFill is Options.MinFill's default: a fill of less is not
// worth its own packing.
const DefaultMinFill = 4 << 20

// DefaultMinCacheKernel is Options.MinCacheKernel's default. A short
// kernel reads a batch's hot lists from the GPU's L2 cache after the first
// time, while the block costs 0.5-0.6 ms a batch whatever the batch's size
// (estimating, packing, copying and pointing the table), so under a few ms
// of kernel the block loses to zero-copy (docs/gpu.md).
const DefaultMinCacheKernel = 2500 * time.Microsecond

// walkCaps remembers, per set of queries, the estimates that set the walks
// of the next (Options.EstimateShare): the bench, and a service whose
// queries come and go, alternate between sets whose trees differ by orders
// of magnitude. It keeps each set's last kernel time too
// (Options.MinCacheKernel).
type walkCaps map[string]walkCap

type walkCap struct {
	// last is the set's last estimate, and prev the one before it when
	// both were of batches of one size.
	last, prev walkStep
	// bare is the set's last kernel time on a batch of kernelEdges, as it
	// would have been without the cache (bareKernel), whether it
	// estimated or not: what Options.MinCacheKernel weighs.
	bare        time.Duration
	kernelEdges int
	// estBytes is what the set's last estimate's lists and its fill's
	// stale lists needed beyond the fill (cacheState.demand): the room its
	// next fill leaves (fillTarget).
	estBytes int64
	// packCost is the time the set's last fill took to pack, and served
	// the set's kernel time since (paid).
	packCost, served time.Duration
}

// paid says whether the set's kernels since its last fill was packed took
// 1/repackShare times that packing: a fill may then be packed again, or
// afresh after one was dropped. True before the set's first fill.
func (c walkCap) paid() bool {
	return repackShare*c.served.Seconds() >= c.packCost.Seconds()
}

// short says whether the set's last kernel, without the cache and scaled
// to a batch of edges, took less than min: false when the set has not run
// yet.
func (w walkCaps) short(queries []*query.Query, edges int, min time.Duration) bool {
	c, ok := w[querySet(queries)]
	if !ok || c.kernelEdges == 0 || min <= 0 {
		return false
	}
	return c.bare.Seconds()*float64(edges)/float64(c.kernelEdges) < min.Seconds()
}

// walkStep is what one estimate measured: its walks per update edge, its
// batch's update edges, its time beyond estimateFixed and the time of the
// kernel that followed it (seconds).
type walkStep struct {
	walks        float64
	edges        int
	vary, kernel float64
}

// readsKey names what a set of queries reads of the lists (cache.Reads):
// their vertex labels and edges. Not querySet: a query compiled after
// another is freed may take its address.
func readsKey(queries []*query.Query) string {
	var b []byte
	for _, q := range queries {
		b = fmt.Appendf(b, "%v%v;", q.Labels, q.Edges)
	}
	return string(b)
}

// forget drops what the cache placements keep of a graph, for another:
// its order of lists, its rankings, and the queries' Reads (made for a
// graph of several vertex labels or one, and remembering its cuts).
func (cs *cacheState) forget() error {
	cs.longest, cs.longestFor, cs.ranked, cs.readsBy = nil, nil, nil, nil
	cs.fill = nil
	return cs.dropFills()
}

// querySet names the set of queries of a batch.
func querySet(queries []*query.Query) string {
	var b []byte
	for _, q := range queries {
		b = fmt.Appendf(b, "%p,", q)
	}
	return string(b)
}

// maxWalks is the cap on M for a batch of edges updates that aims the
// estimate at share of the kernel's time (nextWalks), 0 for none. A set of
// queries not seen yet gets first walks per update edge (0: no cap).
func (w walkCaps) maxWalks(queries []*query.Query, edges int, first, share float64) int {
	c, ok := w[querySet(queries)]
	per := first
	if ok && c.last.walks > 0 {
		per = nextWalks(c.last, c.prev, share, edges)
	}
	if m := per * float64(edges); per > 0 && m < 1<<50 {
		return max(1, int(m))
	}
	return 0
}

// deadlineSlack is how far past its target an estimate may run before it
// starts no more passes (sampler.Options.Deadline). The walks aim at the
// target from batch to batch; the deadline cuts the batch whose trees cost
// far more per walk than the last one's, and leaves the others be.
const deadlineSlack = 1.5

// deadline is the sampler's Deadline for a batch of edges updates:
// estimateFixed and deadlineSlack times share of the set's last estimated
// batch's kernel, scaled to the edges; none (0) before that batch, or
// without a share.
func (w walkCaps) deadline(queries []*query.Query, edges int, share float64) time.Duration {
	c, ok := w[querySet(queries)]
	if !ok || !(c.last.kernel > 0) || c.last.edges <= 0 || !(share > 0) {
		return 0
	}
	s := deadlineSlack * share * c.last.kernel * float64(edges) / float64(c.last.edges)
	return estimateFixed + time.Duration(s*float64(time.Second))
}

// firstWeightedWalks is the weighted walks' cap per update edge for the
// first batch of a set of queries. Weighted walks seldom end early, so the
// paper's M and formula (5) cost them far more than the paper's walks
// (15-23% of a batch of 64 instead of 3-9%, even after tuning).
const firstWeightedWalks = 256

// firstWalks is the cap per update edge for a new set of queries: the
// paper's M for its walks, firstWeightedWalks for weighted ones.
func (x *GPU) firstWalks() float64 {
	if !x.opts.WeightedWalks || x.opts.EstimateShare < 0 {
		return 0
	}
	return firstWeightedWalks
}

// tuneEstimate keeps the last batch's kernel time for its queries, and
// what their estimate measured.
func (x *GPU) tuneEstimate(queries []*query.Query, edges int) {
	if x.opts.Placement != GCSM || edges == 0 {
		return
	}
	cs := &x.cache
	if cs.caps == nil || len(cs.caps) > 64 {
		cs.caps = walkCaps{}
	}
	key := querySet(queries)
	c := cs.caps[key]
	c.bare, c.kernelEdges = bareKernel(x.last), edges
	if cs.demand >= 0 {
		c.estBytes = cs.demand
	}
	c.served += x.last.Kernel
	if est := cs.last; x.estimateShare() > 0 && est != nil {
		// Against the kernel's time, not the Match's: a first batch's
		// Match also maps the graph.
		step := walkStep{walks: float64(est.Walks) / float64(edges), edges: edges,
			vary:   max(x.last.Estimate.Seconds()-estimateFixed.Seconds(), 0),
			kernel: x.last.Kernel.Seconds()}
		// The slope between two estimates is the walks' effect only on
		// batches of one size.
		c.prev = walkStep{}
		if c.last.edges == edges {
			c.prev = c.last
		}
		c.last = step
	}
	cs.caps[key] = c
}

// bareKernel is what a batch's kernel would have taken without the cache:
// its time, scaled by the list bytes it read over those it read from host
// memory, at most fourfold, as if the host's reads set it. A short kernel
// with the cache says little of the batch without it (a block that serves
// 97% of the reads can make a 22 ms kernel take 2.4 ms). The bound is for
// the reads the GPU's L2 cache would serve anyway: scaled further, a small
// batch that zero-copy matches in about 1 ms would count as long enough to
// cache, and pay for packing a fill.
func bareKernel(s BatchStats) time.Duration {
	return time.Duration(float64(s.Kernel) / (1 - min(s.HitRatio(), 0.75)))
}

// estimateShare is Options.EstimateShare with its default applied.
func (x *GPU) estimateShare() float64 {
	if x.opts.EstimateShare == 0 {
		return DefaultEstimateShare
	}
	return x.opts.EstimateShare
}

// minCacheKernel is Options.MinCacheKernel with its default applied.
func (x *GPU) minCacheKernel() time.Duration {
	if x.opts.MinCacheKernel == 0 {
		return DefaultMinCacheKernel
	}
	return x.opts.MinCacheKernel
}

// estimateFixed is the part of an estimate's time that its walks do not
// change: starting the workers and reading out their sums (an estimate of
// 22 tree nodes takes 0.18 ms). It is set apart from the walks' part so
// that a short batch's target, below it, does not cut the walks to a few
// per edge that then carry over to larger batches.
const estimateFixed = 150 * time.Microsecond

// nextWalks returns the walks per update edge for the next estimate, of a
// batch of edges updates, from the last one and the one before it (prev;
// zero when there was none), taken for the same queries.
//
// An estimate's time is estimateFixed plus a part that grows with the
// walks, less than in proportion: walks that meet at a node cost one step.
// Matching and estimating are both sums over the update edges, each rooting
// its own subtree, so per update edge the walks' part is taken to grow as
// walks^γ, and the kernel's time in proportion to the edges. The step solves
// for a walks' part of share of the kernel, less estimateFixed; a target
// under estimateFixed cannot be met, and gets a quarter of it.
//
// Falling, γ is the slope, on log scales, between the last two estimates,
// bounded to [1/4, 1]; with one estimate, or two too close or out of order,
// it is defaultGamma, the median slope on R-MAT graphs (0.08 where the
// walks already meet at most nodes, about 1 where each new walk finds new
// ones). Rising, γ is 1: time in proportion to the walks, the most it
// grows, so that a rise cannot overshoot its target unless the batch costs
// more per walk than the last; a slope measured between two batches, which
// differ in more than their walks, can overshoot it severalfold.
//
// The factor is bounded against one odd batch, and may fall further than
// it may rise: a new set of queries starts from the paper's M, which can
// be hundreds of times its target, while walks too few cost only one
// batch's cache quality and come back 64-fold per batch. The walks never
// go below sampler.MinWalks.
func nextWalks(last, prev walkStep, share float64, edges int) float64 {
	if last.walks <= 0 || !(last.kernel > 0) || last.edges <= 0 || edges <= 0 || !(share > 0) {
		return last.walks
	}
	fixed := estimateFixed.Seconds()
	budget := max(share*last.kernel*float64(edges)/float64(last.edges)-fixed, fixed/4) / float64(edges)
	// An estimate within its fixed part tells little of its walks' part:
	// it counts as a sixteenth of the fixed part, and the walks rise.
	spent := max(last.vary, fixed/16) / float64(last.edges)
	gamma := defaultGamma
	if budget > spent {
		gamma = 1
	} else if prev.walks > 0 && prev.vary > 0 && last.vary > 0 && prev.edges == last.edges &&
		math.Abs(math.Log(last.walks/prev.walks)) > math.Log(1.1) {
		if g := math.Log(last.vary/prev.vary) / math.Log(last.walks/prev.walks); g > 0 {
			gamma = min(max(g, 0.25), 1)
		}
	}
	f := min(max(math.Pow(budget/spent, 1/gamma), 1.0/4096), 64)
	return max(last.walks*f, sampler.MinWalks)
}

// defaultGamma is nextWalks's γ when it has one estimate to go by.
const defaultGamma = 0.7

// HitRatio is the share of list bytes read from the cache block.
func (s BatchStats) HitRatio() float64 {
	if t := s.SlabBytes + s.BlockBytes; t > 0 {
		return float64(s.BlockBytes) / float64(t)
	}
	return 0
}

// Total is the time of the Match.
func (s BatchStats) Total() time.Duration { return s.Estimate + s.Pack + s.Match }

// Last returns the measurements of the last Match.
func (x *GPU) Last() BatchStats { return x.last }

// LastEstimate returns the gcsm placement's estimate for the last batch, or
// nil: valid until the next Match.
func (x *GPU) LastEstimate() *sampler.Estimate { return x.cache.last }

// LastReads returns what the cache placements trimmed the last batch's
// lists to: nil for whole lists. Valid until the next Match.
func (x *GPU) LastReads() *cache.Reads { return x.cache.reads }

// LastCached returns the keys of the lists the cache placements' block
// and the gcsm placement's fill held for the last batch (sampler.ListKey), ascending: empty when it held
// none, nil outside those placements. Valid until the next Match.
func (x *GPU) LastCached() []uint32 {
	if !x.Placement().Cached() {
		return nil
	}
	if x.last.CachedLists == 0 {
		return []uint32{}
	}
	if x.opts.SearchLookup {
		return x.cache.block.RowIdx() // no fill, and no rows pointed
	}
	return x.cache.rows
}

// cacheBudget is the most bytes a block may hold (Options.CacheBytes).
func (x *GPU) cacheBudget() (int64, error) {
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

// cacheSlabs are the device addresses of the colidx and labels (0 without
// labels) of the batch's block and of the gcsm placement's fill, for the
// slab table: 0 for one the batch has not.
type cacheSlabs struct{ col, lbl, fillCol, fillLbl uint64 }

// fillCache ranks the lists by the placement's policy, packs the block and
// copies it, and the gcsm placement's fill when the device lacks it, to the
// device: the fill at the front of the cache buffer, the block after it.
func (x *GPU) fillCache(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query) (sl cacheSlabs, err error) {
	cs := &x.cache
	cs.last, cs.reads = nil, nil
	if !x.opts.WholeLists {
		set := readsKey(queries)
		r, ok := cs.readsBy[set]
		if !ok {
			if cs.readsBy == nil || len(cs.readsBy) == maxReadSets {
				cs.readsBy = map[string]*cache.Reads{}
			}
			r = cache.NewReads(g, queries)
			cs.readsBy[set] = r
		}
		cs.reads = r
	}
	t0 := time.Now()
	budget, err := x.cacheBudget()
	if err != nil {
		return sl, err
	}
	estimated := false
	switch x.opts.Placement {
	case GCSM:
		skip := len(delta) > 0 && cs.caps.short(queries, len(delta), x.minCacheKernel())
		x.last.CacheSkipped = skip
		if estimated = len(delta) > 0 && !skip; estimated {
			// The seed follows the batch, so that a replay caches the same.
			est, err := cs.est.Estimate(g, delta, queries, sampler.Options{Seed: g.Epoch(), Plans: sampler.Terms,
				MaxWalks: cs.caps.maxWalks(queries, len(delta), x.firstWalks(), x.estimateShare()), Weighted: x.opts.WeightedWalks,
				Deadline: cs.caps.deadline(queries, len(delta), x.estimateShare())})
			if err != nil {
				return sl, fmt.Errorf("kernels: gcsm placement: %w", err)
			}
			x.last.Estimate = time.Since(t0)
			t0 = time.Now()
			cs.last = est
			cs.keys = cache.GCSM(cs.keys[:0], est)
			// The fill takes the degree placement's ranking, made once per
			// set of queries: the longest lists that are not empty when
			// trimmed to what the queries read. The ranking is made at the
			// set's first batch, fill or not, so that its one-time cost (the
			// order of all lists, when the graph has none, and the cut: 25
			// ms for the 4-cycle and 330 ms for the house on the H100's host
			// at 2^27 edges) falls where the set's other first costs do, not
			// on whichever later batch first fills.
			if x.fillOn() {
				x.degreeRanking(g, queries, budget)
			}
		} else {
			cs.keys = cs.keys[:0]
		}
	case Degree:
		cs.keys = append(cs.keys[:0], x.degreeRanking(g, queries, budget)...)
	case KHop:
		cs.keys, err = cache.KHop(cs.keys[:0], g, delta, cache.Diameter(queries), budget, cs.reads)
		if errors.Is(err, cache.ErrOverBudget) {
			return sl, fmt.Errorf("kernels: khop placement: %w; raise the budget (--gpu-cache) or choose another placement", err)
		}
		if err != nil {
			return sl, err
		}
	}
	x.last.Rank = time.Since(t0)
	defer func() { x.last.Pack += time.Since(t0) }()
	cs.fill = nil
	if estimated && x.fillOn() {
		if cs.fill, err = x.fillFor(g, queries, budget); err != nil {
			return sl, err
		}
	}
	var fillWords []uint32
	if f := cs.fill; f != nil {
		cs.keys = f.appendStale(f.drop(cs.keys))
	}
	room := budget
	if f := cs.fill; f != nil {
		room = max(budget-f.block.Bytes(), 0)
		fillWords = f.block.Words()
		x.last.FilledLists, x.last.FillBytes = f.lists(), f.block.Bytes()
	}
	n, err := cache.Pack(&cs.block, g, cs.keys, room, cs.reads)
	if err != nil {
		return sl, err
	}
	// The room the next fill leaves is measured on what the estimate rated
	// and the fill's stale lists, not on the block the room allowed: a fill
	// sized by its own block starves a larger batch's block, and the batch's
	// hubs, stale in the fill and the most read, go over PCIe. A block that
	// held them all is the measure; one cut with the whole budget leaves no
	// fill; past half the budget there is none either.
	cs.demand = -1
	switch {
	case !estimated || !x.fillOn():
	case !cs.block.Cut():
		cs.demand = cs.block.Bytes()
	case cs.fill == nil:
		cs.demand = budget
	default:
		cs.demand = cache.BlockBytesUpTo(g, cs.keys, cs.reads, budget/2)
	}
	x.last.CachedLists = n + x.last.FilledLists
	x.last.CacheBytes = cs.block.Bytes() + x.last.FillBytes
	var words []uint32
	if n > 0 {
		words = cs.block.Words()
	}
	fw, total := len(fillWords), len(fillWords)+len(words)
	if total == 0 {
		return sl, nil
	}
	if cs.dev, err = x.buf("cache", 4*total); err != nil {
		return sl, fmt.Errorf("kernels: the cache block: %w", err)
	}
	t1 := time.Now()
	defer func() { x.last.Copy += time.Since(t1) }()
	// The fill stays on the device from batch to batch, unless a buffer
	// grown since lost it, or another set's block or fill took its place,
	// or it was packed again.
	if b := x.bufs["cache"]; cs.fill != cs.devFill || b != cs.devBuf || (cs.fill != nil && cs.fill.version != cs.devVersion) {
		cs.devFill = nil
		if f := cs.fill; f != nil {
			if err := x.ctx.CopyHtoD(cs.dev, unsafe.Pointer(&fillWords[0]), 4*fw); err != nil {
				return sl, err
			}
			cs.devFill, cs.devVersion, cs.devBuf = f, f.version, b
		}
	}
	if f := cs.fill; f != nil {
		lay := f.block.Layout()
		sl.fillCol = uint64(cs.dev) + 4*uint64(lay.ColIdx)
		if lay.HasLabels {
			sl.fillLbl = uint64(cs.dev) + 4*uint64(lay.Labels)
		}
	}
	if n == 0 {
		return sl, nil
	}
	at := cs.dev + cuda.DevicePtr(4*fw)
	if err := x.ctx.CopyHtoD(at, unsafe.Pointer(&words[0]), 4*len(words)); err != nil {
		return sl, err
	}
	lay := cs.block.Layout()
	sl.col = uint64(at) + 4*uint64(lay.ColIdx)
	if lay.HasLabels {
		sl.lbl = uint64(at) + 4*uint64(lay.Labels)
	}
	return sl, nil
}

// longestLists is cache.Longest's order of g's lists, kept while the graph
// has changed by less than a twentieth: the degree placement's order, and
// the gcsm placement's fill's.
func (x *GPU) longestLists(g *dyngraph.Graph) []uint32 {
	cs := &x.cache
	if e := g.NumEdges(); cs.longestFor != g || 20*abs(e-cs.longestEdges) > cs.longestEdges {
		cs.longest = cache.Longest(cs.longest[:0], g)
		cs.longestFor, cs.longestEdges = g, e
		clear(cs.ranked)
	}
	return cs.longest
}

// degreeRanking is the degree placement's ranking for the queries: the
// longest lists, as many as fit the budget trimmed to the queries' reads.
// The paper's Naive cache is static: the order is kept (longestLists), and
// cut once per set of queries, whose trims differ. The cut is made for a
// quarter more than the budget and kept while the budget stays under it:
// without Options.CacheBytes the budget follows the GPU's free memory,
// which moves from batch to batch, and re-ranking took a walk down the
// order of all lists each time. A ranking longer than the budget only
// lets Pack fill the budget's last bytes from its tail.
func (x *GPU) degreeRanking(g *dyngraph.Graph, queries []*query.Query, budget int64) []uint32 {
	cs := &x.cache
	order := x.longestLists(g)
	if cs.ranked == nil || budget > cs.rankedBudget || len(cs.ranked) == maxReadSets {
		cs.ranked, cs.rankedBudget = map[string][]uint32{}, budget+budget/4
	}
	set := readsKey(queries)
	ranked, ok := cs.ranked[set]
	if !ok {
		ranked = cache.Degree(nil, g, order, cs.rankedBudget, cs.reads)
		cs.ranked[set] = ranked
	}
	return ranked
}

// fillOn says whether the gcsm placement fills (Options.NoFill): not with
// Options.SearchLookup, whose kernel searches one block.
func (x *GPU) fillOn() bool { return !x.opts.NoFill && !x.opts.SearchLookup }

// minFill is Options.MinFill with its default applied.
func (x *GPU) minFill() int64 {
	if x.opts.MinFill == 0 {
		return DefaultMinFill
	}
	return x.opts.MinFill
}

// pointRows points the device table rows of the block's lists into it (slab
// cacheSlab, at their colidx offsets), and those of the fill's lists that
// are not stale into the fill (slab cacheSlab+1), and gives the lists the
// last batch's held, and this one's do not, their own rows back. The rows
// it writes are disjoint, so one scatter launch writes them all.
//
// Reading a list's own row misses the host's caches: giving back the 17k
// rows of the 5-cycle's block before a 4-cycle's batch of 64 took 1.5 ms
// on one core of the H100's host, more than the 4-cycle's 1.0 ms kernel.
// So many rows are staged on all cores, each into its own slot.
func (x *GPU) pointRows(g *dyngraph.Graph, cacheSlab uint32) error {
	cs := &x.cache
	var keys []uint32
	var fill *fillBlock
	if x.Placement().Cached() && x.last.CachedLists > 0 && !x.opts.SearchLookup {
		keys, fill = cs.block.RowIdx(), cs.fill
	}
	if len(keys) == 0 && fill == nil && len(cs.rows) == 0 {
		return nil
	}
	t0 := time.Now()
	// The lists to point, ascending, and where each points (cs.from): the
	// block's and the fill's keys are apart (fillBlock.drop), and both
	// ascend, so a merge.
	union, from := cs.union[:0], cs.from[:0]
	var fillKeys []uint32
	if fill != nil {
		fillKeys = fill.block.RowIdx()
	}
	for i, j := 0, 0; i < len(keys) || j < len(fillKeys); {
		if j == len(fillKeys) || (i < len(keys) && keys[i] < fillKeys[j]) {
			union, from = append(union, keys[i]), append(from, int32(i))
			i++
			continue
		}
		if fill.valid(j) {
			union, from = append(union, fillKeys[j]), append(from, int32(-1-j))
		}
		j++
	}
	cs.union, cs.from = union, from
	// The last batch's rows ascend too: a merge finds the rows to give back.
	back := cs.back[:0]
	j := 0
	for _, k := range cs.rows {
		for j < len(union) && union[j] < k {
			j++
		}
		if j == len(union) || union[j] != k {
			back = append(back, k)
		}
	}
	cs.back = back
	rows := &cs.writes
	n := len(back) + len(union)
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
		cs.rows = append(cs.rows[:0], union...)
		err = x.writeRows("cached", g.Directed(), rows)
	}
	d := time.Since(t0)
	x.last.Pack += d
	x.last.Copy += d
	return err
}

// parallelRows is the fewest rows pointRows stages on more than one core.
const parallelRows = 1 << 12

// stageRows stages slots [lo, hi) of pointRows' rows: first the given-back
// lists' own rows (cs.back), then the rows of cs.union into the block or
// the fill, as cs.from says.
func (x *GPU) stageRows(g *dyngraph.Graph, cacheSlab uint32, rows *rowWrites, lo, hi int) error {
	cs := &x.cache
	directed := g.Directed()
	rowptrOf := func(b *cache.Block) []uint32 {
		lay := b.Layout()
		return b.Words()[lay.RowPtr:lay.ColIdx]
	}
	var blockPtr, fillPtr []uint32
	for s := lo; s < hi; s++ {
		if s < len(cs.back) {
			r := sampler.KeyList(cs.back[s], directed)
			rows.set(s, r, directed, g.Row(r))
			continue
		}
		k, i := cs.union[s-len(cs.back)], int(cs.from[s-len(cs.back)])
		slab, rowptr := cacheSlab, blockPtr
		if i >= 0 {
			if blockPtr == nil {
				blockPtr = rowptrOf(&cs.block)
			}
			rowptr = blockPtr
		} else {
			if fillPtr == nil {
				fillPtr = rowptrOf(&cs.fill.block)
			}
			slab, rowptr, i = cacheSlab+1, fillPtr, -1-i
		}
		r := sampler.KeyList(k, directed)
		row := g.Row(r)
		// A cached list may be trimmed (cache.Reads): its row gives its
		// own length, and its sorted part's.
		n, sorted := rowptr[2*i+2]-rowptr[2*i], rowptr[2*i+2]-rowptr[2*i]
		if rowptr[2*i+1] != cache.NoAppended {
			sorted = rowptr[2*i+1] - rowptr[2*i]
		}
		if n > row[2] || sorted > row[3] {
			return fmt.Errorf("kernels: BUG: cached list %d has %d entries (%d sorted) in the cache and %d (%d) in the graph", k, n, sorted, row[2], row[3])
		}
		row[0], row[1], row[2], row[3] = slab, rowptr[2*i], n, sorted
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

// maxReserve bounds what reserveCache pins for each block: a budget set
// far above what the graph's lists take (a whole GPU's, say) would pin
// host memory that no batch uses, twice over with the fill, and delay the
// start by about a second per GB.
const maxReserve = 1 << 30

// reserveCache pins, for a fixed budget (Options.CacheBytes), the host
// memory the cache placements' blocks take: the batch's block at the
// budget, and for the gcsm placement's fill as much again (the spare).
// Pinning runs at about 1 ms per MB, and left to the batches it falls on
// whichever first needs more (a 28 MB fill's first packing takes 29 ms
// instead of 5). Pinned when the budget is set, it is the service's
// startup cost, and no batch stalls on it. A budget that
// follows the GPU's free memory is not known before a batch: its blocks grow
// as they go. So do blocks past maxReserve.
func (x *GPU) reserveCache() error {
	n := min(x.opts.CacheBytes, maxReserve)
	switch x.opts.Placement {
	case GCSM, Degree, KHop:
	default:
		return nil
	}
	if n <= 0 {
		return nil
	}
	if err := x.cache.block.Reserve(n); err != nil {
		return fmt.Errorf("kernels: pinning the cache's block: %w", err)
	}
	if x.opts.Placement != GCSM || !x.fillOn() {
		return nil
	}
	x.cache.spare.Alloc, x.cache.keepSpare = x.alloc, true
	if err := x.cache.spare.Reserve(n); err != nil {
		return fmt.Errorf("kernels: pinning the fill's block: %w", err)
	}
	return nil
}
