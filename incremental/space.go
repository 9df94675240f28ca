package incremental

import (
	"math/bits"
	"slices"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// DefaultSpaceEntries is the default budget of a static candidate space, in
// list entries (4 bytes each): 256 MiB. The yeast queries need a few
// thousand; a wildcard query on a graph of a hundred million edges would
// need billions.
const DefaultSpaceEntries = 1 << 26

// space is the candidate space of a static plan (CFL and DP-iso's auxiliary
// structure): the candidates of each level's query vertex, and for every
// constraint of a level, each candidate of the constraint's earlier level
// with the list of its neighbours, over a data edge that fits the query
// edge, among the level's candidates. The search then intersects these
// lists, which hold only candidates, instead of whole neighbour lists: on
// the yeast queries they are several times shorter than the label's range
// of a neighbour list, and need no label, view or filter check.
//
// Constraints whose lists would overrun the budget are left unbuilt, and
// the search builds their lists from the graph when it needs one (lists).
type space struct {
	g     *dyngraph.Graph
	prof  *profiles
	plan  *query.Plan
	sets  [][]uint64         // per depth: the candidate bitset of the level's vertex
	ranks [][]uint32         // per depth: rank(sets[d])
	verts [][]graph.VertexID // per depth: candidates of the level's vertex, ascending
	// Per depth and constraint: a CSR over the candidates of the
	// constraint's From depth, listing indexes into verts[depth], ascending.
	// off is nil for a constraint left unbuilt.
	off [][][]uint32
	nbr [][][]uint32
	// Per depth with two or more constraints and at most maxRowWords*64
	// candidates, all of them built: the lists again as rows of a bitset
	// over the depth's candidates, words[d] words each, so that an
	// intersection is a few ANDs. rows is nil for other depths.
	words []int
	rows  [][][]uint64
}

// maxRowWords bounds the candidates of a depth whose lists are also kept
// as bitsets, so that an AND stays a few words however short the lists
// are. On 21 mid-weight yeast queries the rows cut the search time by 13%
// (3.42 s to 2.96 s); bounds of 2 and 32 words did worse and the same.
const maxRowWords = 8

// newSpace builds the candidate space of plan p of q over f's sets in g,
// spending at most budget list entries. Its full size is the number of
// data edges between candidates, once per query edge and direction. With
// whole, for a search that cannot build a list it lacks (the GPU's), it
// builds every list or, when their bounds together pass the budget, none
// (nil), and no rows.
func newSpace(g *dyngraph.Graph, f *Candidates, p *query.Plan, budget int, whole bool) *space {
	n := len(p.Levels)
	s := &space{g: g, prof: f.prof, plan: p, sets: make([][]uint64, n), ranks: make([][]uint32, n), verts: make([][]graph.VertexID, n),
		off: make([][][]uint32, n), nbr: make([][][]uint32, n), words: make([]int, n), rows: make([][][]uint64, n)}
	for d := range p.Levels {
		u := p.Levels[d].Vertex
		s.sets[d], s.ranks[d], s.verts[d] = f.Sets[u], rank(f.Sets[u]), f.Members(u)
	}
	bounds := make([][]int, n)
	total := 0
	for d := 1; d < n; d++ {
		bounds[d] = make([]int, len(p.Levels[d].Cons))
		for ci := range bounds[d] {
			bounds[d][ci] = s.bound(d, ci)
			total += bounds[d][ci]
		}
	}
	if whole && total > budget {
		return nil
	}
	for d := 1; d < n; d++ {
		lv := &p.Levels[d]
		s.off[d] = make([][]uint32, len(lv.Cons))
		s.nbr[d] = make([][]uint32, len(lv.Cons))
		for ci := range lv.Cons {
			from := s.verts[lv.Cons[ci].From]
			if bounds[d][ci] > budget {
				continue
			}
			off := make([]uint32, 1, len(from)+1)
			var nbr []uint32
			for _, x := range from {
				nbr = s.neighbours(nbr, d, ci, x)
				off = append(off, uint32(len(nbr)))
			}
			s.off[d][ci], s.nbr[d][ci] = off, nbr
			budget -= len(nbr)
		}
		if !whole {
			budget = s.buildRows(d, budget)
		}
	}
	return s
}

// bound is the size of constraint ci's lists of depth d from above: the
// label ranges of the graph's lists they are taken from.
func (s *space) bound(d, ci int) int {
	lv := &s.plan.Levels[d]
	n := 0
	for _, x := range s.verts[lv.Cons[ci].From] {
		s.eachList(d, ci, x, func(a *dyngraph.Adj, in bool) {
			lo, hi := s.prof.rng(x, in, a, lv.Label)
			n += hi - lo
		})
	}
	return n
}

// Space is a static plan's candidate space as flat lists, for a matcher
// that searches it elsewhere (the GPU's match_space): per depth the level's
// candidates, ascending, and per constraint of a depth a CSR over the
// candidate indexes of the constraint's From depth, listing candidate
// indexes of the depth, ascending (the space type's verts, off and nbr).
type Space struct {
	Verts    [][]graph.VertexID
	Off, Nbr [][][]uint32
}

// Space builds the candidate space of plan p over c's sets in g, whole:
// ok is false when its lists' bounds (the label ranges of the graph's
// lists they are taken from) pass budget entries, and nothing is built.
func (c *Candidates) Space(g *dyngraph.Graph, p *query.Plan, budget int) (s Space, ok bool) {
	sp := newSpace(g, c, p, budget, true)
	if sp == nil {
		return Space{}, false
	}
	return Space{Verts: sp.verts, Off: sp.off, Nbr: sp.nbr}, true
}

// buildRows adds the bitset rows of depth d where they pay and fit in
// budget, and returns what is left of it.
func (s *space) buildRows(d, budget int) int {
	cons := s.plan.Levels[d].Cons
	w := (len(s.verts[d]) + 63) / 64
	if len(cons) < 2 || w > maxRowWords {
		return budget
	}
	need := 0
	for ci := range cons {
		if s.off[d][ci] == nil {
			return budget
		}
		need += 2 * w * len(s.verts[cons[ci].From]) // a word is two entries
	}
	if need > budget {
		return budget
	}
	s.words[d] = w
	s.rows[d] = make([][]uint64, len(cons))
	for ci := range cons {
		from := len(s.verts[cons[ci].From])
		rows := make([]uint64, from*w)
		for x := range from {
			row := rows[x*w : (x+1)*w]
			for _, y := range s.list(d, ci, uint32(x), nil) {
				row[y>>6] |= 1 << (y & 63)
			}
		}
		s.rows[d][ci] = rows
	}
	return budget - need
}

// row is constraint ci's list of depth d for candidate index x of its From
// depth, as a bitset over the depth's candidates.
func (s *space) row(d, ci int, x uint32) []uint64 {
	w := s.words[d]
	return s.rows[d][ci][int(x)*w : (int(x)+1)*w]
}

// eachList calls fn with each list of x that constraint ci of depth d
// reads, and whether it is the in-list.
func (s *space) eachList(d, ci int, x graph.VertexID, fn func(a *dyngraph.Adj, in bool)) {
	switch s.plan.Levels[d].Cons[ci].Dir {
	case query.Out:
		a := s.g.Out(x)
		fn(&a, false)
	case query.In:
		a := s.g.In(x)
		fn(&a, true)
	default:
		a, b := s.g.Out(x), s.g.In(x)
		fn(&a, false)
		fn(&b, true)
	}
}

// neighbours appends to dst, ascending, the candidate indexes of depth d
// that data vertex x reaches over a data edge that fits constraint ci.
func (s *space) neighbours(dst []uint32, d, ci int, x graph.VertexID) []uint32 {
	lv := &s.plan.Levels[d]
	c := &lv.Cons[ci]
	set, rk := s.sets[d], s.ranks[d]
	single, _ := s.g.EdgeLabel()
	start := len(dst)
	s.eachList(d, ci, x, func(a *dyngraph.Adj, in bool) {
		lo, hi := s.prof.rng(x, in, a, lv.Label)
		for i := lo; i < hi; i++ {
			if c.Label != graph.Wildcard && dyngraph.LabelAt(a.SortedLabels, i, single) != c.Label {
				continue
			}
			y := a.Sorted[i] & dyngraph.IDMask
			if w := set[y>>6]; w&(1<<(y&63)) != 0 {
				dst = append(dst, rk[y>>6]+uint32(bits.OnesCount64(w&(1<<(y&63)-1))))
			}
		}
	})
	// Lists are in label-then-id order and one neighbour may come several
	// times (two lists, several edge labels).
	seg := dst[start:]
	slices.Sort(seg)
	return dst[:start+len(slices.Compact(seg))]
}

// rank holds, per word of set, the number of members in the words before it:
// a member's index among the members is its word's rank plus the members
// below it in its word.
func rank(set []uint64) []uint32 {
	r := make([]uint32, len(set))
	n := uint32(0)
	for i, w := range set {
		r[i] = n
		n += uint32(bits.OnesCount64(w))
	}
	return r
}

// list returns constraint ci's list of depth d for candidate index x of the
// constraint's From depth; an unbuilt one is built into *scratch, which then
// owns it until the next call with the same scratch.
func (s *space) list(d, ci int, x uint32, scratch *[]uint32) []uint32 {
	off := s.off[d][ci]
	if off == nil {
		from := s.plan.Levels[d].Cons[ci].From
		*scratch = s.neighbours((*scratch)[:0], d, ci, s.verts[from][x])
		return *scratch
	}
	return s.nbr[d][ci][off[x]:off[x+1]]
}
