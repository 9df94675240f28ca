package incremental

import (
	"slices"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// Counting, the delta walk stops short of its plan's independent tail, as
// the static search does (tail.go): a term's counting plan places the
// query's leaves last (query.Query.CountTermLeavesLast), and once the
// levels above the tail hold vertices, each tail level's candidates are
// fixed by them, so the matches below are the distinct picks of one
// candidate per tail level, counted from the sets by DistinctPicks. On an
// eight-vertex tree whose leaves hang off a few hubs, walking the leaves
// costs the product of the hubs' list sizes; counting them, a few
// intersections.

// countTerm is how a counting walk runs one term of a query.
type countTerm struct {
	plan query.Plan
	// factor multiplies the term's count: the query's CountFactor for a
	// plan with its symmetry conditions, 1 for one without.
	factor int64
	// tail is the first depth of the counted tail, len(plan.Levels) when
	// none is counted; groups are its TailGroups.
	tail   int
	groups [][]int
	// need is, per level, the neighbour labels a vertex placed there
	// must have (nlf.go).
	need []uint64
}

// queryTerms are a query's counting terms, kept by the CPU while the query
// comes back batch after batch.
type queryTerms struct {
	q     *query.Query
	terms []countTerm
}

// countTerms builds q's counting terms, their orders preferring the query
// vertices whose labels are rarest among the graph's vertices (labelled
// counts, as labelCounts gives them): a rare label cuts the partial
// matches where it is placed, and a tree's vertices otherwise tie.
//
// The terms take the symmetry conditions (their counts multiplied by
// CountFactor) all or none: only the union of the terms' matches is
// closed under the automorphisms, so one term cannot take the factor while
// another does not. The conditions order like leaves one after another,
// which leaves only the last of them to count (see countPlan): the terms
// go without them where that counts more levels in all.
func countTerms(q *query.Query, labelled []int) []countTerm {
	cands := make([]int, q.N())
	for v, l := range q.Labels {
		cands[v] = labelled[len(labelled)-1]
		if l != graph.Wildcard && int(l) < len(labelled)-1 {
			cands[v] = labelled[l]
		}
	}
	sym := make([]countTerm, len(q.Edges))
	for i := range sym {
		sym[i] = countTerm{plan: q.CountTermLeavesLast(i, cands, true), factor: int64(q.CountFactor)}
		sym[i].counted(q)
	}
	if q.CountFactor == 1 {
		return sym
	}
	bare := make([]countTerm, len(q.Edges))
	for i := range bare {
		bare[i] = countTerm{plan: q.CountTermLeavesLast(i, cands, false), factor: 1}
		bare[i].counted(q)
	}
	if countedLevels(bare) > countedLevels(sym) {
		return bare
	}
	return sym
}

// counted sets the term's counted tail. Levels 0 and 1 are the update
// edge's. A tail of one level is left to countLast, which keeps its count
// from one partial match to the next; a group too large for DistinctPicks
// is walked.
func (t *countTerm) counted(q *query.Query) {
	t.need = needs(q, &t.plan)
	n := len(t.plan.Levels)
	t.tail = n
	if k := max(IndependentTail(&t.plan), 2); k < n-1 {
		groups := TailGroups(&t.plan, k)
		if !slices.ContainsFunc(groups, func(g []int) bool { return len(g) > MaxGroup }) {
			t.tail, t.groups = k, groups
		}
	}
}

// countedLevels is how many levels the terms count rather than walk.
func countedLevels(ts []countTerm) int {
	n := 0
	for _, t := range ts {
		n += len(t.plan.Levels) - t.tail
	}
	return n
}

// countingTerms brings the CPU's counting terms up to date with queries,
// before the walkers read them. A query's terms are built on its first
// batch and kept: the graph's label counts then guide its order.
func (c *CPU) countingTerms(g *dyngraph.Graph, queries []*query.Query) []queryTerms {
	for len(c.counting) < len(queries) {
		c.counting = append(c.counting, queryTerms{})
	}
	var labelled []int
	for qi, q := range queries {
		if c.counting[qi].q != q {
			if labelled == nil {
				labelled = labelCounts(g)
			}
			c.counting[qi] = queryTerms{q, countTerms(q, labelled)}
		}
	}
	return c.counting[:len(queries)]
}

// labelCounts counts g's vertices by label, the last entry all of them.
func labelCounts(g *dyngraph.Graph) []int {
	vl := g.VertexLabels()
	top := graph.Label(0)
	for _, l := range vl {
		if l < graph.NoLabel {
			top = max(top, l)
		}
	}
	n := make([]int, int(top)+2)
	for _, l := range vl {
		if l < graph.NoLabel {
			n[l]++
		}
	}
	n[len(n)-1] = len(vl)
	return n
}

// setTerm prepares the walker for units of term t of query q: in Count
// mode the counting term's plan, otherwise the term's own.
func (w *walker) setTerm(qi int, q *query.Query, t int, sign graph.Sign) {
	if w.mode != Count {
		w.setUnit(qi, q, &q.Terms[t], sign)
		return
	}
	ct := &w.counting[qi].terms[t]
	w.setUnit(qi, q, &ct.plan, sign)
	w.tail, w.groups, w.factor, w.need = ct.tail, ct.groups, ct.factor, ct.need
}

// countTail counts the matches below the partial match of depths 0..d-1,
// d being the counted tail's first depth: the distinct picks of one
// candidate per tail level, none of them a placed vertex. A tail level's
// candidates are taken without the injectivity check, so that they depend
// on its lists alone and are kept while those are: a pendant on a vertex
// placed early is listed once, not once per partial match below that
// vertex. The placed vertices among them are left out of the counts
// (picks.distinct). A level with symmetry conditions reads other depths,
// and is listed each time.
func (w *walker) countTail(d int) graph.Count {
	n := len(w.plan.Levels)
	w.raw = true
	for e := d; e < n; e++ {
		w.loadLists(e)
		lv := &w.plan.Levels[e]
		if !w.rawKept[e] {
			set := w.candidates(e, w.cand[e][:0])
			// A new view lists the batch's entries after the sorted ones.
			if !slices.IsSorted(set) {
				slices.Sort(set)
			}
			w.cand[e] = set
			w.rawKept[e] = len(lv.Above) == 0 && len(lv.Below) == 0
		}
		if len(w.cand[e]) == 0 {
			w.raw = false
			return graph.Count{}
		}
	}
	w.raw = false
	total := graph.CountOf(1)
	for _, g := range w.groups {
		if total = total.Mul(w.picks.distinct(&w.cand, g, w.m[:d])); total.IsZero() {
			return total
		}
	}
	return total
}
