package cache

import (
	"errors"
	"slices"
	"time"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/sampler"
)

// The gcsm placement's fill (Options.NoFill). The estimate's walks go on at
// each level with probability 1/(maximum degree), so on short queries they
// rate few lists past the batch's own and leave most of the budget empty.
// The fill puts the degree placement's longest lists in that room.
//
// Packing a fill costs about what it saves in one batch, so a set of
// queries' fill is packed once into a pinned block of its own and kept
// from batch to batch (docs/gpu.md). The device holds it at the front of
// the cache buffer, the batch's block after it, and it is copied again only
// when another set's fill took its place. A list that a batch touches is
// stale in every fill from then on: its table row no longer points into the
// fill, and it follows the estimate's lists into the batch's block
// (appendStale). The room the fill leaves is twice what those lists needed
// last time. A fill is packed again at once when the degree placement's
// order is remade, or when it must shrink by a quarter of the budget for
// that room; and when a quarter of its lists went stale since, or it may
// grow by a quarter of the budget, only once the set's kernels since took
// twenty times its last packing (repackShare; a fill dropped for want of
// room waits as long to be packed afresh). The gate is there because the
// hubs that fill it are the lists batches touch most: a fill packed again
// whenever a share of it goes stale costs its batches more in packing than
// their kernels take.

// fillBlock is one set of queries' fill.
type fillBlock struct {
	block Block
	// stale marks the block's rows (by index) whose lists a batch touched
	// since it was packed; nStale counts them, and packedStale those the
	// batch it was packed in touched.
	stale               []bool
	nStale, packedStale int
	// rated marks the stale rows whose lists the batch's estimate rated
	// (drop; scratch of appendStale), and order is appendStale's scratch.
	rated []bool
	order []uint64
	// version changes with every packing, so that the device copy follows.
	version uint64
	// What the fill was packed from: the order of the lists (its graph's
	// edges when made), the cut of the degree ranking, and the target
	// (fillTarget), which the ranking may not fill.
	orderEdges, rankedBudget, want int64
	// The graph's edge labels (one or many) and list order (by id alone,
	// or by label) when packed: a change relays the lists' bytes.
	multi, idOnly bool
	// used is cacheState.clock when a batch last used the fill.
	used uint64
}

// repackShare is the most of the set's kernel time since its fill was last
// packed that packing one again may cost (walkCap.paid).
const repackShare = 0.05

// valid reports whether row i of the fill may be read.
func (f *fillBlock) valid(i int) bool { return !f.stale[i] }

// lists is the number of lists the fill holds that are not stale.
func (f *fillBlock) lists() int { return f.block.Keys() - f.nStale }

// touch marks the fill's lists among keys stale.
func (f *fillBlock) touch(keys []uint32) {
	rows := f.block.RowIdx()
	for _, k := range keys {
		if i, ok := slices.BinarySearch(rows, k); ok && !f.stale[i] {
			f.stale[i] = true
			f.nStale++
		}
	}
}

// drop removes from keys, in place, those whose lists the fill holds and
// may be read: they need no room in the batch's block. It notes the stale
// ones it keeps, for appendStale.
func (f *fillBlock) drop(keys []uint32) []uint32 {
	rows := f.block.RowIdx()
	f.rated = sized(f.rated, len(rows))
	clear(f.rated)
	out := keys[:0]
	for _, k := range keys {
		if i, ok := slices.BinarySearch(rows, k); ok {
			if f.valid(i) {
				continue
			}
			f.rated[i] = true
		}
		out = append(out, k)
	}
	return out
}

// appendStale appends to keys the fill's stale lists that drop did not
// see among them, the longest (as packed) first: they follow the
// estimate's lists into the batch's block. The lists a batch touches are
// hubs more often than not, and the most read: without them a fill packed
// for smaller batches serves as little as two thirds of a larger batch's
// list bytes, with them nearly what a degree block packed every batch
// serves.
func (f *fillBlock) appendStale(keys []uint32) []uint32 {
	lay := f.block.Layout()
	words := f.block.Words()
	rowptr, rows := words[lay.RowPtr:lay.ColIdx], f.block.RowIdx()
	// Each stale row as its length and key, so that one sort of words
	// orders them, the longest first and then by key.
	order := f.order[:0]
	for i, s := range f.stale {
		if s && !f.rated[i] {
			n := rowptr[2*i+2] - rowptr[2*i]
			order = append(order, uint64(^n)<<32|uint64(rows[i]))
		}
	}
	slices.Sort(order)
	for _, o := range order {
		keys = append(keys, uint32(o))
	}
	f.order = order
	return keys
}

// fillTarget is the size of fill a set of queries should have, given the
// budget and what its last estimate's lists needed beyond the fill
// (estBytes): room for twice that, so that the estimate's batch-to-batch
// spread seldom cuts its block, and the rest to the fill; 0 when the rest
// is under least.
func fillTarget(budget, estBytes, least int64) int64 {
	if f := budget - 2*estBytes; f >= least && f > 0 {
		return f
	}
	return 0
}

// repack reports whether a fill must be packed again to serve a target of
// want bytes, given g and the order and ranking cut now in force. A fill
// that must shrink by a quarter of the budget, for the estimate, is packed
// at once; one that may grow by that much, or went a quarter stale, only
// once the set's packing has paid (walkCap.paid). The lists its own batch
// touched do not count: packed again, they would be stale again.
func (f *fillBlock) repack(g *dyngraph.Graph, want, budget, orderEdges, rankedBudget int64, paid bool) bool {
	if f.orderEdges != orderEdges || f.rankedBudget != rankedBudget ||
		f.multi != g.MultiLabel() || f.idOnly != g.Order().IDOnly() {
		return true
	}
	if want < f.want-budget/4 {
		return true // the estimate needs the room now
	}
	worn := 4*(f.nStale-f.packedStale) > f.block.Keys() || want > f.want+budget/4
	return worn && paid
}

// Bounds on the fills kept: the sets of queries, and their pinned bytes
// beyond one budget's (a service with one set keeps its fill whatever the
// budget).
const (
	maxFills     = 4
	maxFillBytes = 256 << 20
)

// fillFor returns the fill of the batch's set of queries, packing it when
// there is none or it must be packed again (fillBlock.repack), or nil when
// the set should have none: at its first batch, whose estimate's room is
// not known, when the estimate leaves less than Options.MinFill, and,
// after a fill was dropped, until its packing has paid (walkCap.paid), so
// that a room that comes and goes does not pack a fill every other batch.
// The lists the pending batch touched are stale in a fill packed now: it
// holds their pending state, which the next Reorganize rewrites.
func (cs *Planner) fillFor(g *dyngraph.Graph, queries []*query.Query, budget int64, o Options) (*fillBlock, error) {
	key := querySet(queries)
	c, ok := cs.caps[key]
	if !ok || c.kernelEdges == 0 {
		return nil, nil
	}
	set := readsKey(queries)
	want := fillTarget(budget, c.estBytes, o.minFill())
	f := cs.fills[set]
	ranked := cs.degreeRanking(g, queries, budget)
	cs.clock++
	if want == 0 {
		return nil, cs.dropFill(set) // dropping costs nothing
	}
	if f != nil && !f.repack(g, want, budget, cs.longestEdges, cs.rankedBudget, c.paid()) {
		f.used = cs.clock
		return f, nil
	}
	if f == nil && !c.paid() {
		return nil, nil
	}
	if f == nil {
		if err := cs.makeRoom(set); err != nil {
			return nil, err
		}
		f = &fillBlock{}
		switch {
		case cs.spare.Held() > 0:
			f.block, cs.spare = cs.spare, Block{} // pinned already
		case cs.alloc != nil:
			f.block.Alloc = cs.alloc // pinned, as the batch's block
		}
		if cs.fills == nil {
			cs.fills = map[string]*fillBlock{}
		}
		cs.fills[set] = f
	}
	t0 := time.Now()
	if n, err := Pack(&f.block, g, ranked, want, cs.reads); err != nil || n == 0 {
		return nil, errors.Join(err, cs.dropFill(set))
	}
	c.packCost, c.served = time.Since(t0), 0
	cs.caps[key] = c
	f.stale = sized(f.stale, f.block.Keys())
	clear(f.stale)
	f.nStale = 0
	f.version++
	f.orderEdges, f.rankedBudget, f.want, f.used = cs.longestEdges, cs.rankedBudget, want, cs.clock
	f.multi, f.idOnly = g.MultiLabel(), g.Order().IDOnly()
	cs.touched = touchedKeys(g, cs.touched[:0])
	f.touch(cs.touched)
	f.packedStale = f.nStale
	return f, nil
}

// touchedKeys appends to dst the keys of the lists the pending batch of g
// touched.
func touchedKeys(g *dyngraph.Graph, dst []uint32) []uint32 {
	for _, r := range g.Touched(nil) {
		dst = append(dst, sampler.ListKey(r.V, r.In, g.Directed()))
	}
	return dst
}

// TouchFills marks stale, in every fill, the lists the pending batch of g
// touched: once per batch, whether the batch is matched or followed.
func (cs *Planner) TouchFills(g *dyngraph.Graph) {
	if len(cs.fills) == 0 {
		return
	}
	cs.touched = touchedKeys(g, cs.touched[:0])
	for _, f := range cs.fills {
		f.touch(cs.touched)
	}
}

// makeRoom drops the least recently used fills of sets other than set
// until the fills kept leave room for set's within maxFills, and hold at
// most maxFillBytes.
func (cs *Planner) makeRoom(set string) error {
	for {
		total, oldest, at := int64(0), "", ^uint64(0)
		for s, f := range cs.fills {
			total += f.block.Bytes()
			if s != set && f.used < at {
				oldest, at = s, f.used
			}
		}
		if oldest == "" || (len(cs.fills) < maxFills && total <= maxFillBytes) {
			return nil
		}
		if err := cs.dropFill(oldest); err != nil {
			return err
		}
	}
}

// dropFill frees a set's fill, if it has one.
func (cs *Planner) dropFill(set string) error {
	f, ok := cs.fills[set]
	if !ok {
		return nil
	}
	delete(cs.fills, set)
	if cs.devFill == f {
		cs.devFill = nil
	}
	if cs.keepSpare && cs.spare.Held() == 0 {
		cs.spare = f.block
		return nil
	}
	return f.block.Free()
}

// dropFills frees every fill.
func (cs *Planner) dropFills() error {
	var err error
	for s := range cs.fills {
		if e := cs.dropFill(s); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// sized returns s with length n, reusing its backing array when that is
// large enough; the elements' values are whatever they were.
func sized[T any](s []T, n int) []T { return slices.Grow(s[:0], n)[:n] }
