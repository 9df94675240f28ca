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
	lSrc
	lCover
	lKeep
	lWords
)

// maxLevels is match.cu's MAXN: the kernel keeps a walk state per level.
const maxLevels = 32

// noCands marks a level without a candidate set (match.cu, NO_CAND).
const noCands = 0xFFFFFFFF

// noSrc marks a level that reads no earlier level's kept list (match.cu,
// NO_SRC).
const noSrc = 0xFFFFFFFF

// program is the encoded terms of a set of queries.
type program struct {
	words []uint32 // all terms, back to back
	terms []uint32 // offset of each term in words
	owner []termOwner
	maxN  int
	// cands holds the static matcher's candidate bitsets, one per level
	// that has one, a bit per data vertex (level word lCand).
	cands []uint32
	// keepSlots is the number of levels that keep their intersection for
	// a deeper one (level word lKeep, see keepIntersections).
	keepSlots int
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
// candidate bitset of level d. With keep, levels read the intersections
// earlier ones kept where they can (keepIntersections); multi says
// whether the graph carries several edge labels.
func encodeStatic(q *query.Query, plan *query.Plan, sets [][]uint64, keep, multi bool) (*program, error) {
	p := &program{}
	if err := p.fits(q); err != nil {
		return nil, err
	}
	head := [tLevels]uint32{tQuery: 0, tEdge: ^uint32(0) /* no update edge */, tELabel: graph.Wildcard}
	p.add(0, head, plan, sets)
	if keep {
		p.keepIntersections(plan, multi)
	}
	return p, nil
}

// keepIntersections points each level of the last term added at the
// earlier level whose constraints are the most of its own (match.cu's
// enter_kept), and has that level keep its intersection. Only the static
// plan does this: every level of a batch's term is short, and its kept
// lists would be rebuilt for each of a batch's many units.
//
// A level can read level j's kept list when every constraint of j is also
// one of its own, word for word, and j's label is its own or any: the
// list then holds every vertex that can be its candidate. Levels 0 and 1
// are placed, not entered, and keep nothing; a level of one constraint
// would keep just that list. The kernel reads kept lists only where a
// constraint is simple, so every constraint of both levels must be.
func (p *program) keepIntersections(plan *query.Plan, multi bool) {
	off := int(p.terms[len(p.terms)-1])
	rec := func(d int) []uint32 {
		at := off + tLevels + d*lWords
		return p.words[at : at+lWords]
	}
	cons := func(d int) [][cWords]uint32 {
		r := rec(d)
		out := make([][cWords]uint32, r[lNCons])
		for i := range out {
			copy(out[i][:], p.words[off+int(r[lCons])+i*cWords:])
		}
		return out
	}
	simple := func(cs [][cWords]uint32) bool {
		for _, c := range cs {
			if query.Dir(c[2]) == query.Any || (multi && c[1] == graph.Wildcard) {
				return false
			}
		}
		return true
	}
	for i := 3; i < len(plan.Levels); i++ {
		ci := cons(i)
		if !simple(ci) {
			continue
		}
		src, cover, most := -1, uint32(0), 2
		for j := 2; j < i; j++ {
			cj := cons(j)
			if len(cj) < most || !simple(cj) || (rec(j)[lLabel] != graph.Wildcard && rec(j)[lLabel] != rec(i)[lLabel]) {
				continue
			}
			if m, ok := covers(cj, ci); ok {
				src, cover, most = j, m, len(cj)
			}
		}
		if src < 0 {
			continue
		}
		rec(i)[lSrc], rec(i)[lCover] = uint32(src), cover
		if rec(src)[lKeep] == 0 {
			p.keepSlots++
			rec(src)[lKeep] = uint32(p.keepSlots)
		}
	}
}

// readsKept reports whether a walk that starts at level start reads a kept
// list: some level at or below start reads one that a level at or below
// start keeps. Levels above a seed's depth are placed, not entered, so
// their lists are never made there.
func (p *program) readsKept(start int) bool {
	for _, off := range p.terms {
		n := int(p.words[off+tN])
		for d := start; d < n; d++ {
			src := p.words[int(off)+tLevels+d*lWords+lSrc]
			if src != noSrc && int(src) >= start {
				return true
			}
		}
	}
	return false
}

// covers matches each of sub's constraints to a distinct equal one of
// super's, and returns the bits of super's that were matched.
func covers(sub, super [][cWords]uint32) (uint32, bool) {
	var mask uint32
	for _, c := range sub {
		found := false
		for k, e := range super {
			if mask&(1<<k) == 0 && e == c {
				mask |= 1 << k
				found = true
				break
			}
		}
		if !found {
			return 0, false
		}
	}
	return mask, true
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
		rec(d)[lSrc] = noSrc
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
