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
	lWords  = 7
	cWords  = 5
)

// maxLevels is match.cu's MAXN: the kernel keeps a walk state per level.
const maxLevels = 32

// program is the encoded terms of a set of queries.
type program struct {
	words []uint32 // all terms, back to back
	terms []uint32 // offset of each term in words
	// query and term of each entry of terms
	owner []struct{ q, t int }
	maxN  int
}

// encode lays out every term of every query, or only each query's first
// term when static (see GPU.Static). multi says whether the graph carries
// several edge labels, which decides the flip check of a term.
func encode(queries []*query.Query, multi, static bool) (*program, error) {
	p := &program{}
	for qi, q := range queries {
		if q.N() > maxLevels {
			return nil, fmt.Errorf("kernels: query %s has %d vertices; the kernel walks at most %d", q.Name, q.N(), maxLevels)
		}
		p.maxN = max(p.maxN, q.N())
		for ti := range q.Terms {
			if static && ti > 0 {
				break
			}
			p.terms = append(p.terms, uint32(len(p.words)))
			p.owner = append(p.owner, struct{ q, t int }{qi, ti})
			p.words = appendTerm(p.words, qi, q, ti, multi)
		}
	}
	return p, nil
}

func appendTerm(w []uint32, qi int, q *query.Query, ti int, multi bool) []uint32 {
	plan := &q.Terms[ti]
	e := q.Edges[ti]
	base := len(w)
	n := len(plan.Levels)
	flip := (multi && e.Label == graph.Wildcard) || (q.Directed && !e.Directed)
	head := [tLevels]uint32{
		tQuery:  uint32(qi),
		tEdge:   uint32(ti),
		tN:      uint32(n),
		tELabel: e.Label,
		tBoth:   b2u(!e.Directed),
		tAny:    b2u(q.Directed && !e.Directed),
		tFlip:   b2u(flip),
	}
	w = append(w, head[:]...)
	levelAt := len(w)
	w = append(w, make([]uint32, n*lWords)...)
	for d := range plan.Levels {
		lv := &plan.Levels[d]
		rec := w[levelAt+d*lWords : levelAt+(d+1)*lWords]
		rec[0] = lv.Label
		rec[1] = uint32(len(lv.Cons))
		rec[2] = uint32(len(w) - base)
		for _, c := range lv.Cons {
			w = append(w, uint32(c.From), c.Label, uint32(c.Dir),
				uint32(query.TermView(c.Edge, ti, graph.Positive)), uint32(query.TermView(c.Edge, ti, graph.Negative)))
		}
		rec = w[levelAt+d*lWords : levelAt+(d+1)*lWords] // w may have moved
		rec[3] = uint32(len(lv.Above))
		rec[4] = uint32(len(w) - base)
		for _, a := range lv.Above {
			w = append(w, uint32(a))
		}
		rec = w[levelAt+d*lWords : levelAt+(d+1)*lWords]
		rec[5] = uint32(len(lv.Below))
		rec[6] = uint32(len(w) - base)
		for _, b := range lv.Below {
			w = append(w, uint32(b))
		}
	}
	return w
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
