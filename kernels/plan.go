package kernels

import (
	"fmt"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// The term program: the layout match.cu reads (its T_, L_ and C_ macros).
const (
	tQuery  = 0
	tEdge   = 1
	tN      = 2
	tELabel = 3
	tBoth   = 4
	tAny    = 5
	tFlip   = 6
	tLevels = 8
	cWords  = 5
)

// A level's words (match.cu's L_ macros).
const (
	lLabel = iota
	lNCons
	lCons
	lNAbove
	lAbove
	lNBelow
	lBelow
	lCand
	lWords
)

// maxLevels is match.cu's MAXN: the kernel keeps a walk state per level.
const maxLevels = 32

// noCands marks a level without a candidate set (match.cu, NO_CAND).
const noCands = 0xFFFFFFFF

// program is the encoded terms of a set of queries.
type program struct {
	words []uint32 // all terms, back to back
	terms []uint32 // offset of each term in words
	owner []termOwner
	maxN  int
	// cands holds the static matcher's candidate bitsets, one per level
	// that has one, a bit per data vertex (level word lCand).
	cands []uint32
}

// termOwner is the query of an encoded term and the plan it walks, which
// maps a record's levels back to query vertices.
type termOwner struct {
	q    int
	plan *query.Plan
}

// encode lays out every term of every query. multi says whether the graph
// carries several edge labels, which decides the flip check of a term.
func encode(queries []*query.Query, multi bool) (*program, error) {
	p := &program{}
	for qi, q := range queries {
		if err := p.fits(q); err != nil {
			return nil, err
		}
		for ti := range q.Terms {
			e := q.Edges[ti]
			head := [tLevels]uint32{
				tQuery:  uint32(qi),
				tEdge:   uint32(ti),
				tELabel: e.Label,
				tBoth:   b2u(!e.Directed),
				tAny:    b2u(q.Directed && !e.Directed),
				tFlip:   b2u((multi && e.Label == graph.Wildcard) || (q.Directed && !e.Directed)),
			}
			p.add(qi, head, &q.Terms[ti], nil)
		}
	}
	return p, nil
}

// encodeStatic lays out the static plan of q, query 0 of its launch (query.StaticPlan) as a
// term whose units are root edges: levels 0 and 1 placed on a data edge
// in that orientation, every constraint read in the new view (the whole
// graph counts as inserted, see GPU.Static). sets[d], when not nil, is the
// candidate bitset of level d.
func encodeStatic(q *query.Query, plan *query.Plan, sets [][]uint64) (*program, error) {
	p := &program{}
	if err := p.fits(q); err != nil {
		return nil, err
	}
	head := [tLevels]uint32{tQuery: 0, tEdge: ^uint32(0) /* no update edge */, tELabel: graph.Wildcard}
	p.add(0, head, plan, sets)
	return p, nil
}

// minN is the number of levels of the program's shallowest term.
func (p *program) minN() int {
	n := maxLevels
	for _, o := range p.owner {
		n = min(n, len(o.plan.Levels))
	}
	return n
}

func (p *program) fits(q *query.Query) error {
	if q.N() > maxLevels {
		return fmt.Errorf("kernels: query %s has %d vertices; the kernel walks at most %d", q.Name, q.N(), maxLevels)
	}
	p.maxN = max(p.maxN, q.N())
	return nil
}

// add appends a term: head with tN filled in, then the plan's levels.
func (p *program) add(qi int, head [tLevels]uint32, plan *query.Plan, sets [][]uint64) {
	p.terms = append(p.terms, uint32(len(p.words)))
	p.owner = append(p.owner, termOwner{qi, plan})
	w := p.words
	base := len(w)
	n := len(plan.Levels)
	head[tN] = uint32(n)
	w = append(w, head[:]...)
	levelAt := len(w)
	w = append(w, make([]uint32, n*lWords)...)
	rec := func(d int) []uint32 { return w[levelAt+d*lWords : levelAt+(d+1)*lWords] } // w may move
	for d := range plan.Levels {
		lv := &plan.Levels[d]
		rec(d)[lLabel] = lv.Label
		rec(d)[lNCons] = uint32(len(lv.Cons))
		rec(d)[lCons] = uint32(len(w) - base)
		for _, c := range lv.Cons {
			w = append(w, uint32(c.From), c.Label, uint32(c.Dir),
				uint32(query.TermView(c.Edge, plan.Edge, graph.Positive)), uint32(query.TermView(c.Edge, plan.Edge, graph.Negative)))
		}
		rec(d)[lNAbove] = uint32(len(lv.Above))
		rec(d)[lAbove] = uint32(len(w) - base)
		for _, a := range lv.Above {
			w = append(w, uint32(a))
		}
		rec(d)[lNBelow] = uint32(len(lv.Below))
		rec(d)[lBelow] = uint32(len(w) - base)
		for _, b := range lv.Below {
			w = append(w, uint32(b))
		}
		rec(d)[lCand] = noCands
		if d < len(sets) && sets[d] != nil {
			rec(d)[lCand] = uint32(len(p.cands))
			for _, x := range sets[d] {
				p.cands = append(p.cands, uint32(x), uint32(x>>32))
			}
		}
	}
	p.words = w
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
