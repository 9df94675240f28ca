package cache

import (
	"errors"
	"fmt"
	"time"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/sampler"
)

// The GPU executor's cache placements (GCSM section V; FORMAT.md). For
// every batch a policy ranks the lists, Pack copies the top ones that fit
// the budget, trimmed to the vertex labels the batch's queries read (Reads;
// Options.WholeLists keeps them whole), into one pinned DCSR block, and one
// copy moves the block to GPU memory. The kernel then finds a cached list
// the way it finds any list, through the per-vertex table: the executor
// rewrites the device's rows of the cached lists to point into the block's
// colidx, a slab like the others, with the block's lengths (Point, Row),
// and restores the rows of the lists the last block held. A miss costs
// nothing extra, and a hit no search of rowidx: the lookup the block was
// laid out for (binary search, FORMAT.md) is done on the host, once per
// cached list and batch, instead of in the kernel once per list access.
// Options.SearchLookup does it the paper's way instead, in the kernel, so
// that the two can be measured against each other.
//
// The gcsm policy's fill (fill.go) is a second block, packed once per set
// of queries and kept on the device ahead of the batch's block in the same
// buffer; the table rows of its lists that no batch has touched since
// point into it, as one more slab.
//
// Planner makes those choices and keeps what they need from batch to
// batch; the device memory, the copies and the table are the executor's,
// reached through Device.

// Device is the executor's side of the cache: its device memory.
type Device interface {
	// Budget returns the most bytes the batch's block and the fill may
	// take together.
	Budget() (int64, error)
	// Buffer makes the device's cache buffer hold at least n bytes and
	// returns its address; moved says the buffer was allocated afresh by
	// this call, so that what it held is gone.
	Buffer(n int) (addr uint64, moved bool, err error)
	// Copy copies words to the device at addr, before it returns. words
	// stays the caller's.
	Copy(addr uint64, words []uint32) error
}

// Options are the cache placements' settings (the GPU executor's Options
// of the same names).
type Options struct {
	// Policy is the placement's policy; any other value caches nothing.
	Policy Policy
	// EstimateShare is the share of a batch's kernel time the gcsm policy
	// aims to spend estimating; 0 means DefaultEstimateShare, and a
	// negative value leaves the walks to the sampler.
	EstimateShare float64
	// MinCacheKernel: the gcsm policy neither estimates nor caches for a
	// set of queries whose last kernel, without the cache and scaled to
	// the batch, took less. 0 means DefaultMinCacheKernel; a negative value
	// caches every batch.
	MinCacheKernel time.Duration
	// WeightedWalks makes the gcsm policy's sampler use weighted walks.
	WeightedWalks bool
	// NoFill turns off the gcsm policy's fill (fill.go).
	NoFill bool
	// MinFill is the fewest bytes the gcsm policy fills; 0 means
	// DefaultMinFill.
	MinFill int64
	// WholeLists keeps the blocks' lists whole instead of trimmed (Reads).
	WholeLists bool
	// SearchLookup says the kernel searches the batch's block for a list
	// instead of reading table rows pointed into it: no rows are pointed,
	// and there is no fill.
	SearchLookup bool
}

// Stats is what Plan measured of a batch: the executor's BatchStats
// fields of the same names.
type Stats struct {
	// Estimate is the sampler's time (the gcsm policy). Pack is the rest
	// of the cache's cost: ranking the lists, packing the block, copying
	// it to the device and pointing the table at it. Rank is the part that
	// ranked the lists, and Copy the part that copied the block and
	// pointed the table.
	Estimate, Pack, Rank, Copy time.Duration
	// Skipped says that the gcsm policy neither estimated nor cached, the
	// queries' kernel being short (Options.MinCacheKernel).
	Skipped bool
	// CacheBytes is the size of the cache on the device, the batch's block
	// and the fill, holding CachedLists lists. FillBytes is the fill's
	// block, stale lists and all, and FilledLists its lists that are not
	// stale.
	CacheBytes, FillBytes    int64
	CachedLists, FilledLists int
}

// Slabs are the device addresses of the colidx and labels (0 without
// labels) of the batch's block and of the fill, for the executor's slab
// table: 0 for one the batch has not. Base is the cache buffer's address.
type Slabs struct{ Base, Col, Lbl, FillCol, FillLbl uint64 }

// Planner is what the cache placements keep from batch to batch. Its zero
// value is ready to use; it is not safe for concurrent use.
type Planner struct {
	alloc hostmem.Allocator
	est   sampler.Estimator
	block Block
	reads *Reads // what the last batch's queries read of a list
	// readsBy keeps each set of queries' Reads, with the cuts it
	// remembers, from batch to batch.
	readsBy map[string]*Reads
	keys    []uint32 // the policy's ranking (scratch)
	// rows are the keys of the lists whose device table rows point into
	// the block or the fill, ascending; back lists the keys whose rows
	// Point gives back, and union those it points (scratch).
	rows, back []uint32
	union      []uint32
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
	// The gcsm policy's fills, per set of queries (fill.go): this batch's,
	// the one whose words the device's cache buffer holds at its front,
	// and the version it copied; clock orders their use, and touched is
	// scratch.
	fills      map[string]*fillBlock
	fill       *fillBlock
	devFill    *fillBlock
	devVersion uint64
	clock      uint64
	touched    []uint32
	// spare is pinned memory for the next fill: reserved with a fixed
	// budget (Reserve), and then a dropped fill's buffer, kept
	// (keepSpare) so that the next fill does not pin its own.
	spare     Block
	keepSpare bool
	// from says where each of union points: the batch's block's row i for
	// i >= 0, the fill's row -1-i otherwise; blockPtr and fillPtr are the
	// two blocks' rowptr (scratch of Point, for Row).
	from              []int32
	blockPtr, fillPtr []uint32
	// demand is the bytes this batch's estimate's lists and the fill's
	// stale lists need beyond the fill, measured up to half the budget, or
	// -1 when the batch did not measure it (walkCap.estBytes).
	demand int64
}

// SetAlloc makes the blocks take their memory from a: pinned memory, so
// that their one copy a batch runs at full speed.
func (cs *Planner) SetAlloc(a hostmem.Allocator) {
	cs.alloc, cs.block.Alloc = a, a
}

// maxReadSets bounds the sets of queries whose Reads the planner keeps
// (1.5 MiB each): a service whose queries churn starts them afresh rather
// than grow.
const maxReadSets = 16

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// readsKey names what a set of queries reads of the lists (Reads): their
// vertex labels and edges. Not querySet: a query compiled after another is
// freed may take its address.
func readsKey(queries []*query.Query) string {
	var b []byte
	for _, q := range queries {
		b = fmt.Appendf(b, "%v%v;", q.Labels, q.Edges)
	}
	return string(b)
}

// Forget drops what the planner keeps of a graph, for another: its order
// of lists, its rankings, and the queries' Reads (made for a graph of
// several vertex labels or one, and remembering its cuts).
func (cs *Planner) Forget() error {
	cs.longest, cs.longestFor, cs.ranked, cs.readsBy = nil, nil, nil, nil
	cs.fill = nil
	return cs.dropFills()
}

// Close frees the blocks' memory.
func (cs *Planner) Close() error {
	return errors.Join(cs.block.Free(), cs.dropFills(), cs.spare.Free())
}

// LastEstimate returns the gcsm policy's estimate for the last batch, or
// nil: valid until the next Plan.
func (cs *Planner) LastEstimate() *sampler.Estimate { return cs.last }

// Estimate is the sampler's estimate, named here so that the executor can
// hand it on (LastEstimate) without reading the sampler itself.
type Estimate = sampler.Estimate

// LastReads returns what the last batch's lists were trimmed to: nil for
// whole lists. Valid until the next Plan.
func (cs *Planner) LastReads() *Reads { return cs.reads }

// Block returns the batch's block, as the last Plan packed it.
func (cs *Planner) Block() *Block { return &cs.block }

// Rows returns the keys of the lists whose table rows point into the
// block or the fill, ascending: the planner's, valid until the next Point.
func (cs *Planner) Rows() []uint32 { return cs.rows }

// ResetRows records that every table row is the graph's again.
func (cs *Planner) ResetRows() { cs.rows = cs.rows[:0] }

// Plan ranks the lists by the policy, packs the block and copies it, and
// the fill when the device lacks it, to the device: the fill at the front
// of the cache buffer, the block after it. It measures itself into st.
func (cs *Planner) Plan(dev Device, g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, o Options, st *Stats) (sl Slabs, err error) {
	cs.last, cs.reads = nil, nil
	if !o.WholeLists {
		cs.reads = cs.readsFor(g, queries)
	}
	t0 := time.Now()
	budget, err := dev.Budget()
	if err != nil {
		return sl, err
	}
	estimated, t0, err := cs.rank(g, delta, queries, o, budget, t0, st)
	if err != nil {
		return sl, err
	}
	st.Rank = time.Since(t0)
	defer func() { st.Pack += time.Since(t0) }()
	n, err := cs.pack(g, queries, o, budget, estimated, st)
	if err != nil {
		return sl, err
	}
	return cs.upload(dev, n, st)
}

// readsFor returns the Reads of the set of queries, made at its first
// batch and kept.
func (cs *Planner) readsFor(g *dyngraph.Graph, queries []*query.Query) *Reads {
	set := readsKey(queries)
	r, ok := cs.readsBy[set]
	if !ok {
		if cs.readsBy == nil || len(cs.readsBy) == maxReadSets {
			cs.readsBy = map[string]*Reads{}
		}
		r = NewReads(g, queries)
		cs.readsBy[set] = r
	}
	return r
}

// rank makes the policy's ranking of the batch's lists in cs.keys. It
// says whether the gcsm policy estimated, and returns when the ranking
// began (after the estimate, t0 for the others).
func (cs *Planner) rank(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, o Options, budget int64,
	t0 time.Time, st *Stats) (estimated bool, start time.Time, err error) {
	switch o.Policy {
	case PolicyGCSM:
		skip := len(delta) > 0 && cs.caps.short(queries, len(delta), o.minCacheKernel())
		st.Skipped = skip
		if estimated = len(delta) > 0 && !skip; !estimated {
			cs.keys = cs.keys[:0]
			return false, t0, nil
		}
		// The seed follows the batch, so that a replay caches the same.
		est, err := cs.est.Estimate(g, delta, queries, sampler.Options{Seed: g.Epoch(), Plans: sampler.Terms,
			MaxWalks: cs.caps.maxWalks(queries, len(delta), o.firstWalks(), o.estimateShare()), Weighted: o.WeightedWalks,
			Deadline: cs.caps.deadline(queries, len(delta), o.estimateShare())})
		if err != nil {
			return true, t0, fmt.Errorf("kernels: gcsm placement: %w", err)
		}
		st.Estimate = time.Since(t0)
		t0 = time.Now()
		cs.last = est
		cs.keys = GCSM(cs.keys[:0], est)
		// The fill takes the degree policy's ranking, made once per set of
		// queries: the longest lists that are not empty when trimmed to
		// what the queries read. It is made at the set's first batch, fill
		// or not, so that its one-time cost (the order of all lists, when
		// the graph has none, and the cut: a third of a second for the
		// house at 2^27 edges) falls where the set's other first costs do,
		// not on whichever later batch first fills.
		if o.fillOn() {
			cs.degreeRanking(g, queries, budget)
		}
	case PolicyDegree:
		cs.keys = append(cs.keys[:0], cs.degreeRanking(g, queries, budget)...)
	case PolicyKHop:
		cs.keys, err = KHop(cs.keys[:0], g, delta, Diameter(queries), budget, cs.reads)
		if errors.Is(err, ErrOverBudget) {
			return false, t0, fmt.Errorf("kernels: khop placement: %w; raise the budget (--gpu-cache) or choose another placement", err)
		}
		if err != nil {
			return false, t0, err
		}
	}
	return estimated, t0, nil
}

// pack packs the batch's block from cs.keys, in the room the fill leaves,
// after taking the fill out of the ranking and its stale lists in, and
// measures the next fill's room (cs.demand). It returns the lists packed.
func (cs *Planner) pack(g *dyngraph.Graph, queries []*query.Query, o Options, budget int64, estimated bool, st *Stats) (int, error) {
	cs.fill = nil
	if estimated && o.fillOn() {
		var err error
		if cs.fill, err = cs.fillFor(g, queries, budget, o); err != nil {
			return 0, err
		}
	}
	room := budget
	if f := cs.fill; f != nil {
		cs.keys = f.appendStale(f.drop(cs.keys))
		room = max(budget-f.block.Bytes(), 0)
		st.FilledLists, st.FillBytes = f.lists(), f.block.Bytes()
	}
	n, err := Pack(&cs.block, g, cs.keys, room, cs.reads)
	if err != nil {
		return 0, err
	}
	// The room the next fill leaves is measured on what the estimate rated
	// and the fill's stale lists, not on the block the room allowed: a fill
	// sized by its own block starves a larger batch's block, and the batch's
	// hubs, stale in the fill and the most read, go over PCIe. A block that
	// held them all is the measure; one cut with the whole budget leaves no
	// fill; past half the budget there is none either.
	cs.demand = -1
	switch {
	case !estimated || !o.fillOn():
	case !cs.block.Cut():
		cs.demand = cs.block.Bytes()
	case cs.fill == nil:
		cs.demand = budget
	default:
		cs.demand = BlockBytesUpTo(g, cs.keys, cs.reads, budget/2)
	}
	st.CachedLists = n + st.FilledLists
	st.CacheBytes = cs.block.Bytes() + st.FillBytes
	return n, nil
}

// upload copies the fill, when the device lacks it, and the batch's block
// of n lists to the device's cache buffer.
func (cs *Planner) upload(dev Device, n int, st *Stats) (sl Slabs, err error) {
	var fillWords, words []uint32
	if f := cs.fill; f != nil {
		fillWords = f.block.Words()
	}
	if n > 0 {
		words = cs.block.Words()
	}
	fw, total := len(fillWords), len(fillWords)+len(words)
	if total == 0 {
		return sl, nil
	}
	base, moved, err := dev.Buffer(4 * total)
	if err != nil {
		return sl, fmt.Errorf("kernels: the cache block: %w", err)
	}
	sl.Base = base
	t1 := time.Now()
	defer func() { st.Copy += time.Since(t1) }()
	// The fill stays on the device from batch to batch, unless a buffer
	// grown since lost it, or another set's block or fill took its place,
	// or it was packed again.
	if cs.fill != cs.devFill || moved || (cs.fill != nil && cs.fill.version != cs.devVersion) {
		cs.devFill = nil
		if f := cs.fill; f != nil {
			if err := dev.Copy(base, fillWords); err != nil {
				return sl, err
			}
			cs.devFill, cs.devVersion = f, f.version
		}
	}
	if f := cs.fill; f != nil {
		sl.FillCol, sl.FillLbl = slabsOf(&f.block, base)
	}
	if n == 0 {
		return sl, nil
	}
	at := base + 4*uint64(fw)
	if err := dev.Copy(at, words); err != nil {
		return sl, err
	}
	sl.Col, sl.Lbl = slabsOf(&cs.block, at)
	return sl, nil
}

// slabsOf returns the device addresses of b's colidx and labels (0
// without), b being at addr on the device.
func slabsOf(b *Block, addr uint64) (col, lbl uint64) {
	lay := b.Layout()
	col = addr + 4*uint64(lay.ColIdx)
	if lay.HasLabels {
		lbl = addr + 4*uint64(lay.Labels)
	}
	return col, lbl
}

// longestLists is Longest's order of g's lists, kept while the graph has
// changed by less than a twentieth: the degree policy's order, and the
// gcsm policy's fill's.
func (cs *Planner) longestLists(g *dyngraph.Graph) []uint32 {
	if e := g.NumEdges(); cs.longestFor != g || 20*abs(e-cs.longestEdges) > cs.longestEdges {
		cs.longest = Longest(cs.longest[:0], g)
		cs.longestFor, cs.longestEdges = g, e
		clear(cs.ranked)
	}
	return cs.longest
}

// degreeRanking is the degree policy's ranking for the queries: the
// longest lists, as many as fit the budget trimmed to the queries' reads.
// The paper's Naive cache is static: the order is kept (longestLists), and
// cut once per set of queries, whose trims differ. The cut is made for a
// quarter more than the budget and kept while the budget stays under it:
// a budget that follows the GPU's free memory moves from batch to batch,
// and re-ranking would walk down the order of all lists each time. A
// ranking longer than the budget only lets Pack fill the budget's last
// bytes from its tail.
func (cs *Planner) degreeRanking(g *dyngraph.Graph, queries []*query.Query, budget int64) []uint32 {
	order := cs.longestLists(g)
	if cs.ranked == nil || budget > cs.rankedBudget || len(cs.ranked) == maxReadSets {
		cs.ranked, cs.rankedBudget = map[string][]uint32{}, budget+budget/4
	}
	set := readsKey(queries)
	ranked, ok := cs.ranked[set]
	if !ok {
		ranked = Degree(nil, g, order, cs.rankedBudget, cs.reads)
		cs.ranked[set] = ranked
	}
	return ranked
}

// fillOn says whether the gcsm policy fills (NoFill): not with
// SearchLookup, whose kernel searches one block.
func (o Options) fillOn() bool { return !o.NoFill && !o.SearchLookup }

// minFill is MinFill with its default applied.
func (o Options) minFill() int64 {
	if o.MinFill == 0 {
		return DefaultMinFill
	}
	return o.MinFill
}

// Point works out which device table rows the batch changes: those of the
// block's lists point into it, those of the fill's lists that are not
// stale into the fill, and the lists the last batch's held, and this
// one's do not, get their own rows back. active says the batch has a
// block whose rows are pointed (a cache placement that cached lists,
// without SearchLookup). It returns the number of rows to write, 0 when
// none changes, for Row; Pointed then records them as written.
func (cs *Planner) Point(active bool) int {
	var keys []uint32
	var fill *fillBlock
	if active {
		keys, fill = cs.block.RowIdx(), cs.fill
	}
	if len(keys) == 0 && fill == nil && len(cs.rows) == 0 {
		return 0
	}
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
	cs.blockPtr, cs.fillPtr = rowPtr(&cs.block), nil
	if fill != nil {
		cs.fillPtr = rowPtr(&fill.block)
	}
	return len(back) + len(union)
}

// rowPtr is b's rowptr array.
func rowPtr(b *Block) []uint32 {
	lay := b.Layout()
	return b.Words()[lay.RowPtr:lay.ColIdx]
}

// Pointed records that the rows Point chose were written.
func (cs *Planner) Pointed() { cs.rows = append(cs.rows[:0], cs.union...) }

// Row returns row s of those Point chose, 0 <= s < its count: first the
// given-back lists' own rows, then the rows of the lists pointed into the
// block (slab cacheSlab) or the fill (slab cacheSlab+1). Rows may be
// called for different s at once.
func (cs *Planner) Row(g *dyngraph.Graph, cacheSlab uint32, s int) (dyngraph.ListRef, [dyngraph.TableWords]uint32, error) {
	directed := g.Directed()
	if s < len(cs.back) {
		r := sampler.KeyList(cs.back[s], directed)
		return r, g.Row(r), nil
	}
	k, i := cs.union[s-len(cs.back)], int(cs.from[s-len(cs.back)])
	slab, rowptr := cacheSlab, cs.blockPtr
	if i < 0 {
		slab, rowptr, i = cacheSlab+1, cs.fillPtr, -1-i
	}
	r := sampler.KeyList(k, directed)
	row := g.Row(r)
	// A cached list may be trimmed (Reads): its row gives its own length,
	// and its sorted part's.
	n, sorted := rowptr[2*i+2]-rowptr[2*i], rowptr[2*i+2]-rowptr[2*i]
	if rowptr[2*i+1] != NoAppended {
		sorted = rowptr[2*i+1] - rowptr[2*i]
	}
	if n > row[2] || sorted > row[3] {
		return r, row, fmt.Errorf("kernels: BUG: cached list %d has %d entries (%d sorted) in the cache and %d (%d) in the graph", k, n, sorted, row[2], row[3])
	}
	row[0], row[1], row[2], row[3] = slab, rowptr[2*i], n, sorted
	return r, row, nil
}

// maxReserve bounds what Reserve pins for each block: a budget set far
// above what the graph's lists take (a whole GPU's, say) would pin host
// memory that no batch uses, twice over with the fill, and delay the
// start by about a second per GB.
const maxReserve = 1 << 30

// Reserve pins, for a fixed budget of n bytes, the host memory the cache
// policies' blocks take: the batch's block at the budget, and for the gcsm
// policy's fill as much again (the spare). Pinning runs at about 1 ms per
// MB, and left to the batches it would fall on whichever first needs more.
// Pinned when the budget is set, it is the service's startup cost, and no
// batch stalls on it. A budget that follows the GPU's free memory is not
// known before a batch: its blocks grow as they go. So do blocks past
// maxReserve.
func (cs *Planner) Reserve(n int64, o Options) error {
	n = min(n, maxReserve)
	switch o.Policy {
	case PolicyGCSM, PolicyDegree, PolicyKHop:
	default:
		return nil
	}
	if n <= 0 {
		return nil
	}
	if err := cs.block.Reserve(n); err != nil {
		return fmt.Errorf("kernels: pinning the cache's block: %w", err)
	}
	if o.Policy != PolicyGCSM || !o.fillOn() {
		return nil
	}
	cs.spare.Alloc, cs.keepSpare = cs.alloc, true
	if err := cs.spare.Reserve(n); err != nil {
		return fmt.Errorf("kernels: pinning the fill's block: %w", err)
	}
	return nil
}
