package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"time"

	"github.com/gcsm/gcsm/graph"
)

// Window configures event-time expiry of edges (docs/operations.md, "Delivery guarantees").
type Window struct {
	// Size is how long, in event time, an edge lives after its last
	// insertion: once the watermark has passed its time by more than Size,
	// the edge is deleted. 0 means no window: edges live until deleted.
	Size time.Duration
	// Lateness is how far behind the largest event time seen the watermark
	// trails, and so how late an event may come and still count.
	Lateness time.Duration
}

// Expiry decides which edges a window deletes. It tracks the last event
// time of every live edge and the watermark, the largest event time seen
// minus the allowed lateness. An edge whose last time is older than the
// watermark minus the window size has expired; the engine deletes it in
// its next batch, with the updates that Expire returns.
//
// Times are unix milliseconds, as in ingest.Record.Time. Expiry is a pure state
// machine: it never reads a clock, so a replay expires exactly what the
// first run did.
//
// Memory is bounded by the live edges: a map from edge to time (27 to 53
// bytes an edge, depending on how full its table is) and a
// min-heap of (time, edge) entries of 24 bytes. A refresh or a deletion
// leaves its old heap entry behind, to be skipped when it comes to the top;
// once such stale entries outnumber the live edges, the heap is rebuilt
// from the map, which keeps it within twice the live edges at an amortised
// O(1) per update. In all, 50 to 100 bytes a live edge. Both are rebuilt,
// too, when the live edges fall to a quarter of their peak, because a Go
// map never gives its memory back.
//
// An Expiry is not safe for concurrent use.
type Expiry struct {
	size, lateness int64 // milliseconds
	directed       bool
	maxTime        int64 // the largest event time seen; math.MinInt64 before any

	live map[graph.Edge]int64 // the last time of each tracked edge, by key
	heap []expiryEntry        // min-heap by (t, e); may hold stale entries
	peak int                  // the most live edges since live was made
}

// expiryEntry says that edge e was last seen at t, unless live has moved on.
type expiryEntry struct {
	t int64
	e graph.Edge
}

// minStale is how many stale heap entries an Expiry tolerates whatever its
// live edges: rebuilding a small heap over and over would cost more than
// the entries.
const minStale = 64

// NewExpiry returns an Expiry of window w. On an undirected graph the edges
// (a, b, l) and (b, a, l) are the same edge. Sizes and lateness are taken
// in whole milliseconds, rounded up; negative ones count as 0.
func NewExpiry(w Window, directed bool) *Expiry {
	return &Expiry{size: ceilMillis(w.Size), lateness: ceilMillis(w.Lateness), directed: directed, maxTime: math.MinInt64}
}

func ceilMillis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	ms := int64(d / time.Millisecond)
	if d%time.Millisecond != 0 {
		ms++ // not d+999999 first: that overflows near math.MaxInt64
	}
	return ms
}

// key is e as the map knows it: with ordered endpoints when undirected.
func (x *Expiry) key(e graph.Edge) graph.Edge {
	if !x.directed && e.Src > e.Dst {
		e.Src, e.Dst = e.Dst, e.Src
	}
	return e
}

// Observe notes an applied insertion of e at ts, or a refresh of it, and
// advances the watermark. An edge's last time is the latest of its
// insertions: an event that comes out of order does not make it older.
// Without a window, Observe only advances the watermark.
func (x *Expiry) Observe(e graph.Edge, ts int64) {
	x.Advance(ts)
	if x.size == 0 {
		return
	}
	k := x.key(e)
	last, ok := x.live[k]
	if ok && last >= ts {
		return
	}
	if x.live == nil {
		x.live = make(map[graph.Edge]int64)
	}
	x.live[k] = ts
	x.peak = max(x.peak, len(x.live))
	x.push(expiryEntry{ts, k})
	x.maybeCompact()
}

// Advance notes an event at ts that inserts no edge, such as a deletion or
// a vertex, for the watermark: it is the largest time of every event seen.
func (x *Expiry) Advance(ts int64) {
	if ts > x.maxTime {
		x.maxTime = ts
	}
}

// Forget notes an applied deletion of e: it is no longer tracked. Forget
// does not advance the watermark; Advance does.
func (x *Expiry) Forget(e graph.Edge) {
	if len(x.live) == 0 {
		return
	}
	delete(x.live, x.key(e))
	x.maybeCompact()
}

// Watermark returns the largest event time seen minus the lateness, or
// math.MinInt64 before any event.
func (x *Expiry) Watermark() int64 {
	return satSub(x.maxTime, x.lateness)
}

// Cutoff returns the time before which edges have expired, and whether
// there is one.
func (x *Expiry) Cutoff() (int64, bool) {
	if x.size == 0 || x.maxTime == math.MinInt64 {
		return 0, false
	}
	return satSub(x.Watermark(), x.size), true
}

// satSub returns a-b for b >= 0, or math.MinInt64 where that underflows.
func satSub(a, b int64) int64 {
	if a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

// Late reports whether an event at ts is already beyond the window:
// ts < watermark - size. Applying it would only make it expire at once, so
// the service refuses it. Without a window nothing is late.
func (x *Expiry) Late(ts int64) bool {
	cut, ok := x.Cutoff()
	return ok && ts < cut
}

// Expire appends to dst a deletion for every tracked edge whose last time
// is before the watermark minus the window size, oldest first (ties in
// edge order, so that the order is deterministic), stops tracking them and
// returns the extended dst. The updates have NoLabel vertex labels; on an
// undirected graph their Src is the smaller endpoint.
func (x *Expiry) Expire(dst []graph.Update) []graph.Update {
	cut, ok := x.Cutoff()
	if !ok {
		return dst
	}
	n := len(dst)
	for len(x.heap) > 0 && x.heap[0].t < cut {
		en := x.pop()
		if last, ok := x.live[en.e]; ok && last == en.t {
			delete(x.live, en.e)
			dst = append(dst, graph.Update{Op: graph.Delete, Src: en.e.Src, Dst: en.e.Dst, Label: en.e.Label,
				SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
		}
	}
	if len(dst) > n {
		x.maybeCompact()
	}
	return dst
}

// Len returns the number of tracked edges.
func (x *Expiry) Len() int { return len(x.live) }

// maybeCompact rebuilds the heap when stale entries outnumber the live
// edges, and the map as well when it has shrunk to a quarter of its peak.
func (x *Expiry) maybeCompact() {
	live := len(x.live)
	shrunk := x.peak > 4*minStale && live < x.peak/4
	if len(x.heap)-live <= max(live, minStale) && !shrunk {
		return
	}
	if shrunk {
		// Not maps.Clone: it would copy the table, size and all.
		m := make(map[graph.Edge]int64, live)
		for e, t := range x.live {
			m[e] = t
		}
		x.live, x.peak = m, live
	}
	if cap(x.heap) > 4*max(live, minStale) {
		x.heap = make([]expiryEntry, 0, 2*live)
	}
	x.heap = x.heap[:0]
	for e, t := range x.live {
		x.heap = append(x.heap, expiryEntry{t, e})
	}
	for i := len(x.heap)/2 - 1; i >= 0; i-- {
		x.down(i)
	}
}

func entryLess(a, b expiryEntry) bool {
	if a.t != b.t {
		return a.t < b.t
	}
	return edgeLess(a.e, b.e)
}

func entryCompare(a, b expiryEntry) int {
	switch {
	case entryLess(a, b):
		return -1
	case entryLess(b, a):
		return 1
	}
	return 0
}

func edgeLess(a, b graph.Edge) bool {
	if a.Src != b.Src {
		return a.Src < b.Src
	}
	if a.Dst != b.Dst {
		return a.Dst < b.Dst
	}
	return a.Label < b.Label
}

// push and pop keep x.heap a binary min-heap, by hand: container/heap would
// box every entry in an interface, an allocation per update.
func (x *Expiry) push(en expiryEntry) {
	x.heap = append(x.heap, en)
	h := x.heap
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !entryLess(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (x *Expiry) pop() expiryEntry {
	h := x.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	x.heap = h[:last]
	x.down(0)
	return top
}

func (x *Expiry) down(i int) {
	h := x.heap
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if r := c + 1; r < len(h) && entryLess(h[r], h[c]) {
			c = r
		}
		if !entryLess(h[c], h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// The checkpoint encoding of an Expiry, version 1. Varints are those of
// encoding/binary, in their shortest form; "zigzag" marks a signed one.
//
//	+--------+---------+-------+-------------------+-------------+---------+--------+
//	| "GCEX" | version | flags | max time          | edge count  | edges   | CRC-32C|
//	| 4 B    | 1 B = 1 | 1 B   | zigzag, if flag 2 | uvarint     | ...     | 4 B LE |
//	+--------+---------+-------+-------------------+-------------+---------+--------+
//
// flags: 1 = directed, 2 = an event has been seen (the max time follows).
// Each edge is its time, then src, dst and label as uvarints. The edges are
// in increasing (time, src, dst, label) order, and each time but the first
// (zigzag) is a uvarint delta from the one before, so that a window of
// nearby times costs a byte or two for it. The CRC-32C (Castagnoli) covers
// every byte before it. Window size and lateness are configuration, not
// state, and are not recorded.
const (
	expiryMagic   = "GCEX"
	expiryVersion = 1

	flagDirected = 1
	flagMaxTime  = 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// AppendBinary appends the checkpoint encoding of x to dst and returns the
// extended slice.
func (x *Expiry) AppendBinary(dst []byte) []byte {
	start := len(dst)
	dst = append(dst, expiryMagic...)
	flags := byte(0)
	if x.directed {
		flags |= flagDirected
	}
	if x.maxTime != math.MinInt64 {
		flags |= flagMaxTime
	}
	dst = append(dst, expiryVersion, flags)
	if flags&flagMaxTime != 0 {
		dst = binary.AppendVarint(dst, x.maxTime)
	}
	entries := make([]expiryEntry, 0, len(x.live))
	for e, t := range x.live {
		entries = append(entries, expiryEntry{t, e})
	}
	slices.SortFunc(entries, entryCompare)
	dst = binary.AppendUvarint(dst, uint64(len(entries)))
	for i, en := range entries {
		if i == 0 {
			dst = binary.AppendVarint(dst, en.t)
		} else {
			dst = binary.AppendUvarint(dst, uint64(en.t-entries[i-1].t))
		}
		dst = binary.AppendUvarint(dst, uint64(en.e.Src))
		dst = binary.AppendUvarint(dst, uint64(en.e.Dst))
		dst = binary.AppendUvarint(dst, uint64(en.e.Label))
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// UnmarshalBinary replaces the state of x, its watermark and tracked
// edges, with the one encoded in b by AppendBinary. x keeps its window and
// its direction, which must be that of the encoding. An Expiry without a
// window tracks no edges and drops those of b. On error, x is unchanged.
func (x *Expiry) UnmarshalBinary(b []byte) error {
	d := expiryDecoder{b: b}
	maxTime, live, entries, err := d.decode(x.directed)
	if err != nil {
		return fmt.Errorf("ingest: bad expiry checkpoint: %w", err)
	}
	x.maxTime = maxTime
	x.live, x.heap, x.peak = nil, nil, 0
	if x.size == 0 || len(entries) == 0 {
		return nil
	}
	// Sorted entries are a min-heap already.
	x.live, x.heap, x.peak = live, entries, len(entries)
	return nil
}

// expiryDecoder reads an encoded Expiry from b, from byte i on.
type expiryDecoder struct {
	b []byte
	i int
}

func (d *expiryDecoder) decode(directed bool) (maxTime int64, live map[graph.Edge]int64, entries []expiryEntry, err error) {
	b := d.b
	const fixed = len(expiryMagic) + 3 + 4 // magic, version, flags, edge count, CRC
	if len(b) < fixed {
		return 0, nil, nil, fmt.Errorf("%d bytes, fewer than the %d of an empty one", len(b), fixed)
	}
	if string(b[:len(expiryMagic)]) != expiryMagic {
		return 0, nil, nil, fmt.Errorf("magic %q, want %q", b[:len(expiryMagic)], expiryMagic)
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return 0, nil, nil, fmt.Errorf("CRC-32C is %08x, the checkpoint says %08x: it is corrupt", got, sum)
	}
	d.b, d.i = body, len(expiryMagic)
	if v := b[d.i]; v != expiryVersion {
		return 0, nil, nil, fmt.Errorf("version %d; this gcsm reads version %d", v, expiryVersion)
	}
	flags := b[d.i+1]
	d.i += 2
	if flags&^(flagDirected|flagMaxTime) != 0 {
		return 0, nil, nil, fmt.Errorf("unknown flags %#x", flags)
	}
	if enc := flags&flagDirected != 0; enc != directed {
		return 0, nil, nil, fmt.Errorf("it is of %s graph, this Expiry of %s one", directedness(enc), directedness(directed))
	}
	maxTime = math.MinInt64
	if flags&flagMaxTime != 0 {
		if maxTime, err = d.varint("max time"); err != nil {
			return 0, nil, nil, err
		}
		if maxTime == math.MinInt64 {
			return 0, nil, nil, errors.New("max time is the no-event marker but the flag says an event was seen")
		}
	}
	n, err := d.uvarint("edge count")
	if err != nil {
		return 0, nil, nil, err
	}
	// Each edge takes at least 4 bytes: a bound that keeps a corrupt count
	// from allocating the moon.
	if rest := uint64(len(d.b) - d.i); n > rest/4 {
		return 0, nil, nil, fmt.Errorf("%d edges cannot fit in the %d bytes left", n, rest)
	}
	if n > 0 && maxTime == math.MinInt64 {
		return 0, nil, nil, fmt.Errorf("%d edges but no event seen", n)
	}
	entries = make([]expiryEntry, n)
	live = make(map[graph.Edge]int64, n)
	for k := range entries {
		en := &entries[k]
		if k == 0 {
			en.t, err = d.varint("edge time")
		} else {
			var delta uint64
			delta, err = d.uvarint("edge time")
			prev := entries[k-1].t
			if err == nil && delta > uint64(math.MaxInt64-prev) {
				err = fmt.Errorf("edge %d: time overflows", k)
			}
			en.t = prev + int64(delta)
		}
		var src, dst, label uint64
		if err == nil {
			src, err = d.uint32("src")
		}
		if err == nil {
			dst, err = d.uint32("dst")
		}
		if err == nil {
			label, err = d.uint32("label")
		}
		if err != nil {
			return 0, nil, nil, err
		}
		en.e = graph.Edge{Src: graph.VertexID(src), Dst: graph.VertexID(dst), Label: graph.Label(label)}
		switch {
		case en.t > maxTime:
			return 0, nil, nil, fmt.Errorf("edge %d: time %d is after the max time %d", k, en.t, maxTime)
		case !directed && en.e.Src > en.e.Dst:
			return 0, nil, nil, fmt.Errorf("edge %d: undirected edge (%d, %d) is not in canonical order", k, en.e.Src, en.e.Dst)
		case k > 0 && !entryLess(entries[k-1], *en):
			return 0, nil, nil, fmt.Errorf("edge %d: not after edge %d in (time, edge) order", k, k-1)
		}
		if _, dup := live[en.e]; dup {
			return 0, nil, nil, fmt.Errorf("edge %d: (%d, %d, %d) is given twice", k, en.e.Src, en.e.Dst, en.e.Label)
		}
		live[en.e] = en.t
	}
	if d.i != len(d.b) {
		return 0, nil, nil, fmt.Errorf("%d bytes after the last edge", len(d.b)-d.i)
	}
	return maxTime, live, entries, nil
}

func directedness(directed bool) string {
	if directed {
		return "a directed"
	}
	return "an undirected"
}

// uvarint reads a uvarint, which must be in its shortest form: then an
// encoding has one spelling, and decoding and encoding again gives it back.
func (d *expiryDecoder) uvarint(what string) (uint64, error) {
	v, n := binary.Uvarint(d.b[d.i:])
	if n <= 0 {
		return 0, fmt.Errorf("%s at byte %d: truncated or overflowing varint", what, d.i)
	}
	if n != uvarintLen(v) {
		return 0, fmt.Errorf("%s at byte %d: varint not in its shortest form", what, d.i)
	}
	d.i += n
	return v, nil
}

func (d *expiryDecoder) varint(what string) (int64, error) {
	u, err := d.uvarint(what)
	return int64(u>>1) ^ -int64(u&1), err // zigzag, as binary.Varint
}

func (d *expiryDecoder) uint32(what string) (uint64, error) {
	at := d.i
	v, err := d.uvarint(what)
	if err == nil && v > math.MaxUint32 {
		err = fmt.Errorf("%s at byte %d: %d is over 32 bits", what, at, v)
	}
	return v, err
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
