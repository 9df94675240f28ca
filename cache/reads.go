package cache

import (
	"runtime"
	"slices"
	"sync"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/sampler"
)

// Reads says which entries of each neighbour list a set of queries can
// read, so that a block holds those and not the rest: it trims the lists.
//
// A list is in label order (dyngraph.Order), and the matchers read it only
// at the vertex labels of the query vertices adjacent to the one its vertex
// matched: a cut to a level's label, or a probe for a candidate, which has
// that label. A data vertex of label L matches only query vertices of label
// L and wildcards, so its list is read at the labels of their neighbours
// and nowhere else. With the benchmark's queries, whose vertices take the
// two most common of 32 Zipf labels, that is 13 to 42% of the list of a
// vertex they can match, and none of any other; a whole hub list costs
// its vertex's place in the block two to eight times over. The trimmed
// list is the whole list's entries at those labels, in order, each part
// (sorted, appended) trimmed on its own, so every cut and probe the kernel
// makes of it finds what it would find in the whole list. Where a wildcard
// makes every label readable, the list is whole.
//
// A nil *Reads keeps every list whole: the paper's block.
//
// A Reads remembers where it cut lists to one span of labels, and checks a
// remembered cut at its two ends before it takes it: the list is sorted by
// label, so a cut whose ends check out is right, whatever the list went
// through since. A hub's cut is two binary searches whose every probe reads
// a neighbour's label at random, and the check four reads; the same hubs
// come back batch after batch, so keep a Reads for as long as the queries
// stay.
type Reads struct {
	// The readable labels of a vertex of label l: spans[dense[l]] for
	// l < len(dense), else spans[sparse[l]], else other.
	dense  []int32
	sparse map[graph.Label]int32
	spans  []labelSpans
	other  labelSpans
	// memo holds remembered cuts, direct-mapped by list key; trims
	// writes it after its cores are done, and only it.
	memo []cutMemo
}

// cutMemo is a remembered cut [lo, hi) of the sorted part of list key-1
// (key 0: an empty slot) to the one span of labels its vertex reads.
type cutMemo struct{ key, lo, hi uint32 }

// memoBits sizes Reads.memo: 128k slots, 1.5 MiB, twice the lists of a
// 51 MB block of trimmed 4-cycle lists on the 2^27-edge benchmark graph.
const memoBits = 17

// labelSpans is a set of vertex labels: the closed intervals of spans,
// ascending and apart, or every label.
type labelSpans struct {
	all   bool
	spans [][2]graph.Label
}

// denseLabels bounds the labels Reads looks up in an array, not a map:
// dictionaries number labels from 0, so real ones are far below.
const denseLabels = 1 << 16

// NewReads returns what queries read of g's lists, or nil when they may
// read all of every list: g has one vertex label, or wildcards make every
// label readable everywhere. It serves any graph for as long as the
// queries stay.
func NewReads(g *dyngraph.Graph, queries []*query.Query) *Reads {
	if g.Order().IDOnly() {
		return nil
	}
	// What a vertex of each query label reads, and what any vertex does
	// (the neighbours of wildcard query vertices). A nil set is every
	// label.
	type set = map[graph.Label]bool
	by := map[graph.Label]set{}
	anyv := set{}
	add := func(to set, l graph.Label) set {
		if to == nil || l == graph.Wildcard {
			return nil
		}
		to[l] = true
		return to
	}
	for _, q := range queries {
		for _, e := range q.Edges {
			for _, uw := range [2][2]int{{e.A, e.B}, {e.B, e.A}} {
				lu, lw := q.Labels[uw[0]], q.Labels[uw[1]]
				if lu == graph.Wildcard {
					anyv = add(anyv, lw)
					continue
				}
				s, ok := by[lu]
				if !ok {
					s = set{}
				}
				by[lu] = add(s, lw)
			}
		}
	}
	spansOf := func(s set) labelSpans {
		if s == nil || anyv == nil {
			return labelSpans{all: true}
		}
		ls := make([]graph.Label, 0, len(s)+len(anyv))
		for l := range s {
			ls = append(ls, l)
		}
		for l := range anyv {
			ls = append(ls, l)
		}
		slices.Sort(ls)
		var sp labelSpans
		for _, l := range slices.Compact(ls) {
			if n := len(sp.spans); n > 0 && sp.spans[n-1][1]+1 == l {
				sp.spans[n-1][1] = l
			} else {
				sp.spans = append(sp.spans, [2]graph.Label{l, l})
			}
		}
		return sp
	}
	r := &Reads{other: spansOf(set{})}
	trims := !r.other.all
	for l, s := range by {
		sp := spansOf(s)
		trims = trims || !sp.all
		i := int32(len(r.spans))
		r.spans = append(r.spans, sp)
		if l < denseLabels {
			for len(r.dense) <= int(l) {
				r.dense = append(r.dense, -1)
			}
			r.dense[l] = i
		} else {
			if r.sparse == nil {
				r.sparse = map[graph.Label]int32{}
			}
			r.sparse[l] = i
		}
	}
	if !trims {
		return nil
	}
	r.memo = make([]cutMemo, 1<<memoBits)
	return r
}

// of returns the readable labels of the list of a vertex of label l.
func (r *Reads) of(l graph.Label) *labelSpans {
	i := int32(-1)
	if int(l) < len(r.dense) {
		i = r.dense[l]
	} else if r.sparse != nil {
		if j, ok := r.sparse[l]; ok {
			i = j
		}
	}
	if i < 0 {
		return &r.other
	}
	return &r.spans[i]
}

// spansOf returns the labels at which the queries read the list of vertex
// v of g, or nil for all of it: for nil r, for every label, and on a graph
// of one vertex label, whose lists are sorted by id alone (a Reads made on
// another graph may meet one).
func (r *Reads) spansOf(g *dyngraph.Graph, v graph.VertexID) *labelSpans {
	if r == nil || g.Order().IDOnly() {
		return nil
	}
	if s := r.of(g.VertexLabel(v)); !s.all {
		return s
	}
	return nil
}

// cut appends to dst the index ranges [lo, hi) of part, a part of the list
// of vertex v of g, whose entries the queries can read, ascending; nil r
// gives the whole part. Empty ranges are left out. Each span of labels
// costs at most two binary searches, and none for a bound beyond either
// end of the part: a span of the most common labels, which come first,
// starts at 0.
func (r *Reads) cut(g *dyngraph.Graph, v graph.VertexID, part []uint32, dst [][2]int) [][2]int {
	if len(part) == 0 {
		return dst
	}
	s := r.spansOf(g, v)
	if s == nil {
		return append(dst, [2]int{0, len(part)})
	}
	ord, vl := g.Order(), g.VertexLabels()
	from := 0
	last := vl[part[len(part)-1]&dyngraph.IDMask]
	for _, sp := range s.spans {
		if sp[0] > last {
			break
		}
		lo := from
		if vl[part[from]&dyngraph.IDMask] < sp[0] {
			lo += ord.LabelStart(part[from:], sp[0])
		}
		hi := len(part)
		if sp[1] < last {
			hi = lo + ord.LabelStart(part[lo:], sp[1]+1)
		}
		if hi > lo {
			dst = append(dst, [2]int{lo, hi})
		}
		if from = hi; from == len(part) {
			break
		}
	}
	return dst
}

// holds reports whether [lo, hi), not empty, is exactly the entries of
// part, sorted by vertex label, whose labels lie in sp: its ends inside,
// and the entries beyond them outside.
func holds(vl []graph.Label, part []uint32, lo, hi uint32, sp [2]graph.Label) bool {
	n := uint32(len(part))
	if lo >= hi || hi > n {
		return false
	}
	at := func(i uint32) graph.Label { return vl[part[i]&dyngraph.IDMask] }
	return at(lo) >= sp[0] && at(hi-1) <= sp[1] && (lo == 0 || at(lo-1) < sp[0]) && (hi == n || at(hi) > sp[1])
}

// trim is what a block keeps of a list: the lengths of its sorted and
// appended parts, trimmed, and where the sorted part's one range starts in
// the list (0 when whole), or manyRanges when trimming cut it into several.
// fresh says that the sorted part was cut afresh to one range of one span
// of labels: a cut for the memo.
type trim struct {
	sorted, appended, start uint32
	fresh                   bool
}

// manyRanges is trim.start for a sorted part cut into several ranges.
const manyRanges = ^uint32(0)

// len is what the list costs a block, in entries.
func (t trim) len() int { return int(t.sorted + t.appended) }

// trimOf returns what a block keeps of the list of key.
func (r *Reads) trimOf(g *dyngraph.Graph, k uint32) (t trim) {
	a := adjOf(g, k)
	v := sampler.KeyList(k, g.Directed()).V
	s := r.spansOf(g, v)
	if s == nil {
		return trim{sorted: uint32(len(a.Sorted)), appended: uint32(len(a.Appended))}
	}
	var buf [8][2]int
	for _, c := range r.cut(g, v, a.Appended, buf[:0]) {
		t.appended += uint32(c[1] - c[0])
	}
	if len(s.spans) == 1 {
		if m := r.memo[memoSlot(k)]; m.key == k+1 && holds(g.VertexLabels(), a.Sorted, m.lo, m.hi, s.spans[0]) {
			t.start, t.sorted = m.lo, m.hi-m.lo
			return t
		}
	}
	cut := r.cut(g, v, a.Sorted, buf[:0])
	t.start = manyRanges
	for _, c := range cut {
		t.sorted += uint32(c[1] - c[0])
	}
	switch len(cut) {
	case 0:
		t.start = 0
	case 1:
		t.start, t.fresh = uint32(cut[0][0]), len(s.spans) == 1
	}
	return t
}

// memoSlot is the slot of list key k in Reads.memo: a multiplicative hash,
// since keys of hubs cluster.
func memoSlot(k uint32) uint32 { return k * 0x9E3779B1 >> (32 - memoBits) }

// listLen is what the list of key costs a block, in entries.
func (r *Reads) listLen(g *dyngraph.Graph, k uint32) int {
	return r.trimOf(g, k).len()
}

// wholeLen is the whole length of the list of key: entries in use,
// tombstones and appended part.
func wholeLen(g *dyngraph.Graph, k uint32) int {
	a := adjOf(g, k)
	return len(a.Sorted) + len(a.Appended)
}

// trimsPerCore is the fewest lists worth a core of their own: a trim is a
// few binary searches of random reads, microseconds on a hub's list.
const trimsPerCore = 64

// trims sets t[i] to the trim of keys[i]: on all cores when trimming more
// than a core's share, or reading the lengths of many whole lists (each a
// miss on its table row). It then remembers the cuts it made afresh. The
// keys must name lists of g.
func (r *Reads) trims(g *dyngraph.Graph, keys []uint32, t []trim) {
	per := trimsPerCore
	if r == nil || g.Order().IDOnly() {
		per = parallelLists
	}
	parts := min(runtime.GOMAXPROCS(0), (len(keys)+per-1)/per)
	if parts <= 1 {
		for i, k := range keys {
			t[i] = r.trimOf(g, k)
		}
	} else {
		var wg sync.WaitGroup
		for p := range parts {
			wg.Go(func() {
				for i := len(keys) * p / parts; i < len(keys)*(p+1)/parts; i++ {
					t[i] = r.trimOf(g, keys[i])
				}
			})
		}
		wg.Wait()
	}
	for i := range t[:len(keys)] {
		if t[i].fresh {
			r.memo[memoSlot(keys[i])] = cutMemo{key: keys[i] + 1, lo: t[i].start, hi: t[i].start + t[i].sorted}
		}
	}
}
