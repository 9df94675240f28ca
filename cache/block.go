// Package cache packs the neighbour lists a batch will read most into one
// DCSR block (the GCSM paper, V-B and Fig. 6; layout in FORMAT.md): a single
// buffer that the GPU executor sends to device memory with one DMA, and in
// which the matching kernel finds a list by binary search before falling
// back to reading it from host memory over PCIe.
//
// The block holds three arrays back to back (FORMAT.md draws it byte by
// byte): rowidx, the cached list keys in ascending order; rowptr, two
// offsets per list into colidx (its sorted part and its appended part, or
// NoAppended) and a final end; colidx, every list as dyngraph stores it
// while a batch is pending (sorted part with tombstone bits, then the
// appended part), trimmed to the entries the queries can read (Reads); and,
// on multi-label graphs, a parallel array of edge labels. A list of n
// entries costs 3+n words, 3+2n with labels, plus one word per block.
// Pack fills a block to a byte budget in O(K log K + N) for K lists of N
// entries, reusing its buffer; Find is the kernel's lookup, O(log K).
//
// Which lists to pack is a placement policy's decision (policy.go): the
// sampler's estimate (GCSM), list length (the paper's Naive baseline), or
// every list near the batch (VSGM's k-hop baseline). Planner (planner.go)
// makes that decision for the GPU executor batch after batch: it keeps the
// gcsm policy's fill (fill.go), sets the sampler's walks from the kernels'
// times (tune.go), and reaches device memory only through Device.
//
// A block copies the lists of one pending batch: it is stale once the graph
// applies or reorganizes another.
package cache

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/sampler"
)

// NoAppended is the second rowptr offset of a list without appended
// entries: the paper's -1.
const NoAppended = ^uint32(0)

// Layout gives the position of each array in a block, in 32-bit words from
// its start: what the kernel needs besides the block itself.
type Layout struct {
	Keys      int  // K: lists in the block
	Entries   int  // N: entries in colidx
	RowIdx    int  // always 0
	RowPtr    int  // K
	ColIdx    int  // 3K+1
	Labels    int  // 3K+1+N, when HasLabels
	HasLabels bool // the graph is multi-label: colidx has a parallel label array
	Words     int  // the block's size: 3K+1+N, or 3K+1+2N with labels; 0 when empty
}

// Block is a DCSR block. The zero value is an empty block on the Go heap;
// set Alloc before the first Pack to place it in memory from an allocator
// (pinned host memory for the GPU). A Block is not safe for concurrent
// mutation; Find may be called concurrently between Packs.
type Block struct {
	// Alloc, when not nil, provides the block's buffer. It grows with a
	// quarter of headroom (grow), so a stream of batches reallocates it
	// O(log) times, or not at all past a Reserve of its budget.
	Alloc hostmem.Allocator

	raw   []byte   // from Alloc
	words []uint32 // the buffer: raw viewed as words, or a heap slice
	lay   Layout
	// cut says that the last Pack left out a list for want of room.
	cut bool

	// Scratch of Pack: a bitset of the keys taken, kept zero; the keys
	// taken and their trims, in the order taken; the trims of a window
	// of keys; the taken keys' sort and its radix scratch; and the rows'
	// trims, in key order.
	seen          []uint64
	sel           []uint32
	picked        []trim
	window        []trim
	order, sorted []uint64
	rows          []trim
}

// Bytes is the size of the block: what one DMA sends.
func (b *Block) Bytes() int64 { return int64(b.lay.Words) * 4 }

// Keys is the number of lists in the block.
func (b *Block) Keys() int { return b.lay.Keys }

// Layout describes the block's arrays.
func (b *Block) Layout() Layout { return b.lay }

// Words is the block, Bytes()/4 words: rowidx, rowptr, colidx, labels. It
// belongs to the block and is valid until the next Pack or Free.
func (b *Block) Words() []uint32 { return b.words[:b.lay.Words] }

// Cut reports whether the last Pack left out a list of its keys for want
// of room: whether the block is what all of them would take.
func (b *Block) Cut() bool { return b.cut }

// RowIdx returns the cached keys, ascending.
func (b *Block) RowIdx() []uint32 { return b.words[:b.lay.Keys] }

// Free returns the buffer to the allocator and empties the block.
func (b *Block) Free() error {
	var err error
	if b.raw != nil {
		err = b.Alloc.Free(b.raw)
	}
	b.raw, b.words, b.lay = nil, nil, Layout{}
	return err
}

// sizer applies the greedy fit of Pack: a list of n entries costs 3+n words
// (3+2n with labels), and the first list also pays the final rowptr word.
type sizer struct {
	budget int64 // words
	used   int64
	per    int64 // words per entry
}

func newSizer(budget int64, labels bool) sizer {
	s := sizer{budget: budget / 4, per: 1}
	if labels {
		s.per = 2
	}
	return s
}

// cost is what a list of n entries adds to the block.
func (s *sizer) cost(n int) int64 {
	c := 3 + int64(n)*s.per
	if s.used == 0 {
		c++ // the final rowptr word
	}
	return c
}

// take reports whether a list of n entries fits, and counts it if it does.
func (s *sizer) take(n int) bool {
	if c := s.cost(n); s.used+c <= s.budget {
		s.used += c
		return true
	}
	return false
}

// full reports whether no non-empty list can fit any more.
func (s *sizer) full() bool { return s.used+s.cost(1) > s.budget }

// BlockBytes is what a block holding the lists of keys (distinct), trimmed
// to reads, would take, Bytes() of it: for comparing a set of lists with a
// budget. Empty lists take nothing, as Pack skips them.
func BlockBytes(g *dyngraph.Graph, keys []uint32, reads *Reads) int64 {
	return BlockBytesUpTo(g, keys, reads, math.MaxInt64)
}

// BlockBytesUpTo is BlockBytes, but stops sizing once the block passes
// limit bytes, and then returns what it came to there: more than limit. It
// sizes keys in windows that double, as Pack does, so that a long list of
// keys costs about what the limit's worth of lists does.
func BlockBytesUpTo(g *dyngraph.Graph, keys []uint32, reads *Reads, limit int64) int64 {
	s := newSizer(math.MaxInt64, g.MultiLabel())
	var t []trim
	for i := 0; i < len(keys) && 4*s.used <= limit; {
		win := window(keys, i)
		i += len(win)
		t = slices.Grow(t[:0], len(win))[:len(win)]
		reads.trims(g, win, t)
		for _, t := range t {
			if n := t.len(); n > 0 {
				s.take(n)
			}
		}
	}
	return 4 * s.used
}

func adjOf(g *dyngraph.Graph, k uint32) dyngraph.Adj {
	r := sampler.KeyList(k, g.Directed())
	if r.In {
		return g.In(r.V)
	}
	return g.Out(r.V)
}

// ErrKey is returned for a key that names no list of the graph.
var ErrKey = errors.New("cache: key names no list of the graph")

// Pack fills dst with lists of g, trimmed to reads (nil: whole), greedily
// in the priority order of keys (see sampler.ListKey), within budget bytes,
// and returns how many lists it packed. A list that does not fit is skipped
// and packing goes on with the next, so one hub larger than the space left
// does not keep every smaller hot list out; empty lists and repeated keys
// are skipped too (a miss on an empty list reads nothing). rowidx is then
// sorted. Lists are sized in windows of keys that double, on all cores
// when trimmed, and what sizing found is what write copies, so a trimmed
// list is cut once. dst's buffer and scratch (a bitset of one bit per key,
// and the chosen keys and their trims) are reused: once they have grown,
// Pack allocates nothing but the goroutines that size and write a large
// block. Cost: O(len(keys) considered + K log K + N), memory-latency bound
// on the lists' table rows, plus a few binary searches per list trimmed.
//
// On error dst is empty.
func Pack(dst *Block, g *dyngraph.Graph, keys []uint32, budget int64, reads *Reads) (packed int, err error) {
	dst.lay, dst.cut = Layout{}, false
	if budget < 0 {
		return 0, fmt.Errorf("cache: negative budget %d", budget)
	}
	nk := sampler.NumKeys(g)
	if w := (nk + 63) / 64; len(dst.seen) < w {
		dst.seen = make([]uint64, w, w+w/4)
	}
	labels := g.MultiLabel()
	sz := newSizer(budget, labels)
	dst.sel, dst.picked = dst.sel[:0], dst.picked[:0]
	bad := dst.take(g, keys, &sz, reads)
	sel, picked := dst.sel, dst.picked
	if bad != nil {
		for _, k := range sel {
			dst.seen[k/64] = 0
		}
		return 0, bad
	}
	if len(sel) == 0 {
		return 0, nil
	}
	// rowidx ascends: sort the picks by key, their trims with them.
	trims := dst.trimsOf(len(sel))
	if words := (nk + 63) / 64; reads == nil && words < 8*len(sel) {
		// Whole lists: the bitset of taken keys is them in order, and
		// scanning it and reading their lengths again is cheaper than
		// sorting when it is not much longer than K (sorting is 30% of a
		// Pack of 62k small lists).
		sel = sel[:0]
		for i, x := range dst.seen[:words] {
			for x != 0 {
				sel = append(sel, uint32(i*64+bits.TrailingZeros64(x)))
				x &= x - 1
			}
		}
		reads.trims(g, sel, trims)
	} else {
		// A radix sort: a comparison sort of 20k picks would be 40% of a
		// Pack's time, and it runs on one core.
		order := dst.order[:0]
		for i, k := range sel {
			order = append(order, uint64(k)<<32|uint64(i))
		}
		tmp := slices.Grow(dst.sorted[:0], len(order))[:len(order)]
		dst.order, dst.sorted = order, tmp
		for i, o := range sortHigh(order, tmp, uint64(nk-1)) {
			sel[i], trims[i] = uint32(o>>32), picked[uint32(o)]
		}
	}
	for _, k := range sel {
		dst.seen[k/64] = 0
	}
	if err := dst.write(g, sel, trims, reads, labels, int(sz.used), int(min(sz.budget, math.MaxInt32))); err != nil {
		return 0, err
	}
	return len(sel), nil
}

// take adds to dst.sel and dst.picked the lists of keys, in order, that
// are not taken yet, not empty, and fit sz, sizing them in windows of keys
// that double. It stops at the first key that names no list of g, and
// returns ErrKey for it.
func (dst *Block) take(g *dyngraph.Graph, keys []uint32, sz *sizer, reads *Reads) error {
	nk := sampler.NumKeys(g)
	sel, picked := dst.sel, dst.picked
	var bad error
	i := 0
	for i < len(keys) && bad == nil && !sz.full() {
		win := window(keys, i)
		i += len(win)
		for j, k := range win {
			if int(k) >= nk {
				bad = fmt.Errorf("%w: %d (the graph has %d keys)", ErrKey, k, nk)
				win = win[:j]
				break
			}
		}
		if cap(dst.window) < len(win) {
			dst.window = make([]trim, len(win))
		}
		trims := dst.window[:len(win)]
		reads.trims(g, win, trims)
		for j, k := range win {
			if sz.full() {
				dst.cut = true // keys of win are left
				break
			}
			if dst.seen[k/64]&(1<<(k%64)) != 0 {
				continue
			}
			if n := trims[j].len(); n > 0 {
				if !sz.take(n) {
					dst.cut = true
					continue
				}
				dst.seen[k/64] |= 1 << (k % 64)
				sel, picked = append(sel, k), append(picked, trims[j])
			}
		}
	}
	// Keys left unsized once the block was full may name only empty or
	// taken lists; counted as cut, they cost a caller a needless measure,
	// never a list it thinks held.
	dst.cut = dst.cut || (bad == nil && i < len(keys))
	dst.sel, dst.picked = sel, picked
	return bad
}

// firstWindow is how many keys Pack sizes before it takes any: the windows
// double from there, so Pack sizes at most twice the keys it needs, plus
// this.
const firstWindow = 1 << 10

// window is the window of keys that starts at i: firstWindow keys, or as
// many as come before it, whichever is more, within keys.
func window(keys []uint32, i int) []uint32 {
	return keys[i : i+min(len(keys)-i, max(firstWindow, i))]
}

// trimsOf returns the block's scratch for the trims of n rows.
func (b *Block) trimsOf(n int) []trim {
	if cap(b.rows) < n {
		b.rows = make([]trim, n, n+n/4)
	}
	b.rows = b.rows[:n]
	return b.rows
}

// write lays out the lists of keys (ascending), trimmed as trims says, in
// words words of a buffer that may hold up to limit words (grow). Large
// blocks are written by all cores.
func (b *Block) write(g *dyngraph.Graph, keys []uint32, trims []trim, reads *Reads, labels bool, words, limit int) error {
	if err := b.grow(words, limit); err != nil {
		return err
	}
	k := len(keys)
	n := words - 3*k - 1
	if labels {
		n /= 2
	}
	lay := Layout{Keys: k, Entries: n, RowPtr: k, ColIdx: 3*k + 1, HasLabels: labels, Words: words}
	if labels {
		lay.Labels = lay.ColIdx + n
	}
	b.lay = lay
	w := b.words[:words]
	copy(w, keys)
	rowptr := w[lay.RowPtr:lay.ColIdx]
	off := uint32(0)
	for i, t := range trims {
		rowptr[2*i] = off
		off += t.sorted
		rowptr[2*i+1] = NoAppended
		if t.appended > 0 {
			rowptr[2*i+1] = off
			off += t.appended
		}
	}
	if int(off) != n {
		panic("BUG: cache: the lists changed size between sizing and writing")
	}
	rowptr[2*k] = off
	// One core writes a few GB/s of large lists into pinned memory, and
	// far less of small ones (each costs a miss on its table row); a
	// block is tens of MB on a large GPU, and on one core its writing is
	// most of a small batch's cache cost.
	parts := min(runtime.GOMAXPROCS(0), max(n/parallelEntries, k/parallelLists))
	if parts <= 1 {
		b.copyLists(g, keys, trims, reads, 0, k)
		return nil
	}
	// Each core copies about n/parts entries: from the row where its
	// share starts, so a hub's list is one core's.
	var wg sync.WaitGroup
	lo := 0
	for p := 1; p <= parts && lo < k; p++ {
		hi := k
		if p < parts {
			end := uint32(n / parts * p)
			hi = lo + sort.Search(k-lo, func(i int) bool { return rowptr[2*(lo+i)+2] >= end }) + 1
		}
		from := lo
		wg.Go(func() { b.copyLists(g, keys, trims, reads, from, hi) })
		lo = hi
	}
	wg.Wait()
	return nil
}

// A block is written by several cores when each gets at least
// parallelEntries entries or parallelLists lists.
const (
	parallelEntries = 1 << 16
	parallelLists   = 1 << 12
)

// put copies the ranges cut of part, and of its labels plbl when lbl is
// not nil, to col and lbl from off, and returns where they end.
func put(col, lbl []uint32, off int, part []uint32, plbl []graph.Label, cut [][2]int) int {
	for _, c := range cut {
		copy(col[off:], part[c[0]:c[1]])
		if lbl != nil {
			copy(lbl[off:], plbl[c[0]:c[1]])
		}
		off += c[1] - c[0]
	}
	return off
}

// arrays returns the block's rowptr, colidx and labels (nil without labels).
func (b *Block) arrays() (rowptr, col, lbl []uint32) {
	lay := b.lay
	rowptr = b.words[lay.RowPtr:lay.ColIdx]
	col = b.words[lay.ColIdx : lay.ColIdx+lay.Entries]
	if lay.HasLabels {
		lbl = b.words[lay.Labels : lay.Labels+lay.Entries]
	}
	return rowptr, col, lbl
}

// copyLists copies the entries (and labels) of rows [lo, hi), trimmed, to
// where rowptr says: a sorted part that sizing found in one range from
// there, any other part cut again.
func (b *Block) copyLists(g *dyngraph.Graph, keys []uint32, trims []trim, reads *Reads, lo, hi int) {
	rowptr, col, lbl := b.arrays()
	directed := g.Directed()
	var buf [8][2]int
	for i := lo; i < hi; i++ {
		a := adjOf(g, keys[i])
		v := sampler.KeyList(keys[i], directed).V
		t := trims[i]
		cut := buf[:0]
		if t.start != manyRanges {
			cut = append(cut, [2]int{int(t.start), int(t.start + t.sorted)})
		} else {
			cut = reads.cut(g, v, a.Sorted, cut)
		}
		put(col, lbl, int(rowptr[2*i]), a.Sorted, a.SortedLabels, cut)
		if t.appended > 0 {
			put(col, lbl, int(rowptr[2*i+1]), a.Appended, a.AppendedLabels, reads.cut(g, v, a.Appended, buf[:0]))
		}
	}
}

// Reserve makes the block's buffer hold at least n bytes, so that a Pack
// of up to that many allocates nothing: pinning host memory is slow, and a
// caller that knows its budget can pay for it before the first batch. The
// block keeps its lists unless the buffer must grow, which empties it.
func (b *Block) Reserve(n int64) error {
	words := int((max(n, 0) + 3) / 4)
	if words <= len(b.words) {
		return nil
	}
	b.lay, b.cut = Layout{}, false
	return b.grow(words, words)
}

// Held is the size of the block's buffer, packed or not.
func (b *Block) Held() int64 { return int64(len(b.words)) * 4 }

// grow makes room for words words, with a quarter more (or twice the
// room it had) but no more than the block's budget allows, limit words.
// Pinning host memory is slow (about 1 ms per MB), and a block of the
// budget's size comes out a little larger or smaller from batch to batch:
// the room to spare, capped at the budget, pins such a block once rather
// than at every batch a little larger than the last.
func (b *Block) grow(words, limit int) error {
	if words <= len(b.words) {
		return nil
	}
	size := max(words, min(max(words+words/4, 2*len(b.words), 1024), limit))
	if b.Alloc == nil {
		b.words = make([]uint32, size)
		return nil
	}
	raw, err := b.Alloc.Alloc(4 * size)
	if err != nil {
		return fmt.Errorf("cache: cannot allocate a block of %d bytes: %w", 4*size, err)
	}
	if b.raw != nil {
		if err := b.Alloc.Free(b.raw); err != nil {
			_ = b.Alloc.Free(raw)
			return fmt.Errorf("cache: freeing the old block: %w", err)
		}
	}
	b.raw, b.words = raw, hostmem.Uint32s(raw)
	return nil
}

// find returns the row of key, by binary search of rowidx.
func (b *Block) find(key uint32) (int, bool) {
	return slices.BinarySearch(b.words[:b.lay.Keys], key)
}

// parts returns the colidx ranges of row i: sorted [s, a) and appended
// [a, e), where a = e when the list has no appended part.
func (b *Block) parts(i int) (s, a, e int) {
	rp := b.words[b.lay.RowPtr:b.lay.ColIdx]
	s, e = int(rp[2*i]), int(rp[2*i+2])
	a = e
	if rp[2*i+1] != NoAppended {
		a = int(rp[2*i+1])
	}
	return s, a, e
}

// Find looks key up by binary search of rowidx and returns its list's
// sorted part (with tombstone bits) and appended part (nil when empty). The
// slices alias the block: valid until the next Pack, not to be modified.
func (b *Block) Find(key uint32) (sorted, appended []uint32, ok bool) {
	return b.list(key, b.lay.ColIdx)
}

// Labels returns the edge labels of key's list, parallel to Find's parts;
// ok is false when the key is not in the block or the block has no labels.
func (b *Block) Labels(key uint32) (sorted, appended []graph.Label, ok bool) {
	if !b.lay.HasLabels {
		return nil, nil, false
	}
	return b.list(key, b.lay.Labels)
}

// list cuts key's sorted and appended parts out of the array of Entries
// words at word off: colidx or labels.
func (b *Block) list(key uint32, off int) (sorted, appended []uint32, ok bool) {
	i, ok := b.find(key)
	if !ok {
		return nil, nil, false
	}
	s, a, e := b.parts(i)
	arr := b.words[off : off+b.lay.Entries]
	sorted = arr[s:a:a]
	if a < e {
		appended = arr[a:e:e]
	}
	return sorted, appended, true
}
