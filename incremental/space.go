package incremental

import (
	"math/bits"
	"slices"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// space is the candidate space of a static plan (CFL and DP-iso's auxiliary
// structure): the candidates of each level's query vertex, and for every
// constraint of a level, each candidate of the constraint's earlier level
// with the list of its neighbours, over a data edge that fits the query
// edge, among the level's candidates. The search then intersects these
// lists, which hold only candidates, instead of whole neighbour lists: on
// the yeast queries they are several times shorter than the label's range
// of a neighbour list, and need no label, view or filter check.
type space struct {
	plan  *query.Plan
	verts [][]graph.VertexID // per depth: candidates of the level's vertex, ascending
	// Per depth and constraint: a CSR over the candidates of the
	// constraint's From depth, listing indexes into verts[depth], ascending.
	off [][][]uint32
	nbr [][][]uint32
}

// newSpace builds the candidate space of plan p of q over f's sets in g.
// Its size is at most the number of data edges between candidates, once per
// query edge and direction.
func newSpace(g *dyngraph.Graph, q *query.Query, f *Candidates, p *query.Plan) *space {
	n := len(p.Levels)
	s := &space{plan: p, verts: make([][]graph.VertexID, n), off: make([][][]uint32, n), nbr: make([][][]uint32, n)}
	ranks := make([][]uint32, n)
	for d := range p.Levels {
		u := p.Levels[d].Vertex
		s.verts[d] = f.Members(u)
		ranks[d] = rank(f.Sets[u])
	}
	single, _ := g.EdgeLabel()
	ord := g.Order()
	var tmp []uint32
	for d := 1; d < n; d++ {
		lv := &p.Levels[d]
		set, rk := f.Sets[lv.Vertex], ranks[d]
		s.off[d] = make([][]uint32, len(lv.Cons))
		s.nbr[d] = make([][]uint32, len(lv.Cons))
		for ci := range lv.Cons {
			c := &lv.Cons[ci]
			from := s.verts[c.From]
			off := make([]uint32, 1, len(from)+1)
			var nbr []uint32
			for _, x := range from {
				var lists [2]dyngraph.Adj
				k := 1
				switch c.Dir {
				case query.Out:
					lists[0] = g.Out(x)
				case query.In:
					lists[0] = g.In(x)
				default:
					lists[0], lists[1], k = g.Out(x), g.In(x), 2
				}
				tmp = tmp[:0]
				for _, a := range lists[:k] {
					lo, hi := 0, len(a.Sorted)
					if lv.Label != graph.Wildcard {
						lo, hi = ord.Range(a.Sorted, lv.Label)
					}
					for i := lo; i < hi; i++ {
						if c.Label != graph.Wildcard && dyngraph.LabelAt(a.SortedLabels, i, single) != c.Label {
							continue
						}
						y := a.Sorted[i] & dyngraph.IDMask
						if set[y>>6]&(1<<(y&63)) != 0 {
							tmp = append(tmp, rk[y>>6]+uint32(bits.OnesCount64(set[y>>6]&(1<<(y&63)-1))))
						}
					}
				}
				// Lists are in label-then-id order and one neighbour may
				// come several times (two lists, several edge labels).
				slices.Sort(tmp)
				nbr = append(nbr, slices.Compact(tmp)...)
				off = append(off, uint32(len(nbr)))
			}
			s.off[d][ci], s.nbr[d][ci] = off, nbr
		}
	}
	return s
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

// list is the constraint ci's list of level d for candidate index x of the
// constraint's From level.
func (s *space) list(d, ci int, x uint32) []uint32 {
	off := s.off[d][ci]
	return s.nbr[d][ci][off[x]:off[x+1]]
}
