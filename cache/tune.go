package cache

import (
	"fmt"
	"math"
	"time"

	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/sampler"
)

// DefaultEstimateShare is Options.EstimateShare's default. The estimate
// runs on the CPU, and the GPU walks a tree node far faster than the
// sampler does: the paper's number of walks costs 10 to 40% of a batch for
// 5-vertex queries. Half the paper's 10% leaves room for the packing and
// the copy.
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
func (o Options) firstWalks() float64 {
	if !o.WeightedWalks || o.EstimateShare < 0 {
		return 0
	}
	return firstWeightedWalks
}

// Tune keeps the last batch's kernel time for its queries, and what their
// estimate measured: the batch had edges update edges, its estimate took
// estimate, and its kernel took kernel, hit of its list bytes read from the
// cache (HitRatio). Only the gcsm policy tunes.
func (cs *Planner) Tune(queries []*query.Query, edges int, o Options, estimate, kernel time.Duration, hit float64) {
	if o.Policy != PolicyGCSM || edges == 0 {
		return
	}
	if cs.caps == nil || len(cs.caps) > 64 {
		cs.caps = walkCaps{}
	}
	key := querySet(queries)
	c := cs.caps[key]
	c.bare, c.kernelEdges = bareKernel(kernel, hit), edges
	if cs.demand >= 0 {
		c.estBytes = cs.demand
	}
	c.served += kernel
	if est := cs.last; o.estimateShare() > 0 && est != nil {
		// Against the kernel's time, not the Match's: a first batch's
		// Match also maps the graph.
		step := walkStep{walks: float64(est.Walks) / float64(edges), edges: edges,
			vary:   max(estimate.Seconds()-estimateFixed.Seconds(), 0),
			kernel: kernel.Seconds()}
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
func bareKernel(kernel time.Duration, hit float64) time.Duration {
	return time.Duration(float64(kernel) / (1 - min(hit, 0.75)))
}

// estimateShare is Options.EstimateShare with its default applied.
func (o Options) estimateShare() float64 {
	if o.EstimateShare == 0 {
		return DefaultEstimateShare
	}
	return o.EstimateShare
}

// minCacheKernel is Options.MinCacheKernel with its default applied.
func (o Options) minCacheKernel() time.Duration {
	if o.MinCacheKernel == 0 {
		return DefaultMinCacheKernel
	}
	return o.MinCacheKernel
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

// HitRatio is the share of the list bytes a kernel read from the cache:
// block of them from the block, slab from the slabs.
func HitRatio(slab, block uint64) float64 {
	if t := slab + block; t > 0 {
		return float64(block) / float64(t)
	}
	return 0
}
