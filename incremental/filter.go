package incremental

import (
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// EdgeFilter lets the join prune by what a data edge carries beyond the
// graph of pairs: the Binder's transfers and the predicates on one query
// edge alone (t.amount > 10000). A pair none of whose transfers passes them
// can stand in no match, so the CPU executor drops the partial match as soon
// as it binds that edge instead of expanding it at the end. The filter is a
// necessary condition only: the Binder still checks every match.
type EdgeFilter interface {
	// For returns q's filter, or nil when none of q's edges has predicates
	// of its own.
	For(q *query.Query) QueryFilter
}

// QueryFilter is one query's EdgeFilter.
type QueryFilter interface {
	// Filtered says whether query edge e has predicates of its own.
	Filtered(e int) bool
	// Holds says whether the data edge src→dst can stand for query edge e
	// in a match of the given sign: whether some transfer of it, in the
	// graph after the batch (sign +) or before it (sign -), passes each of
	// e's bindings' own predicates. worker is the caller's sink worker
	// number; calls with different numbers may run at once.
	Holds(worker, e int, src, dst graph.VertexID, sign graph.Sign) bool
}

// SetEdgeFilter installs f, which the CPU's delta walks consult where a
// query edge is bound (see EdgeFilter); nil removes it.
func (c *CPU) SetEdgeFilter(f EdgeFilter) { c.filter = f }

// edgeFilterer is an executor that takes an EdgeFilter.
type edgeFilterer interface{ SetEdgeFilter(f EdgeFilter) }

// SetEdgeFilter passes f on to the CPU executor; the GPU's matches are
// filtered where the Binder expands them.
func (p *Placer) SetEdgeFilter(f EdgeFilter) {
	if ef, ok := p.CPU.(edgeFilterer); ok {
		ef.SetEdgeFilter(f)
	}
}

// pairsHold applies the edge filter to the constraints of level d for
// candidate v.
func (w *walker) pairsHold(d int, v graph.VertexID) bool {
	lv := &w.plan.Levels[d]
	for i := range lv.Cons {
		if !w.filt[d][i] {
			continue
		}
		c := &lv.Cons[i]
		e := w.q.Edges[c.Edge]
		src, dst := w.m[c.From], v
		if e.A == lv.Vertex {
			src, dst = v, w.m[c.From]
		}
		if !w.qf.Holds(w.id, c.Edge, src, dst, w.sign) {
			return false
		}
	}
	return true
}
