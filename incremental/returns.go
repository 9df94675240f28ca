package incremental

import (
	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// retPlan is a query's RETURN prepared for evaluation over the store.
type retPlan struct {
	r      *query.Returns
	vprops []vprop   // vertex properties, prop indexing Returns.Props
	eprops []retProp // transfer properties
}

// retProp is a transfer property a RETURN reads: Returns.Props[prop], of
// binding's transfer, in store column col (or colTime, colID).
type retProp struct {
	prop, binding, col int
}

func (b *Binder) retPlan(q *query.Query) *retPlan {
	r := q.Return
	if r == nil {
		return nil
	}
	rp := &retPlan{r: r}
	for i, ref := range r.Props {
		if !ref.OnEdge {
			rp.vprops = append(rp.vprops, vprop{prop: i, vertex: ref.Index, col: b.Store.VertexColumn(ref.Name)})
			continue
		}
		rp.eprops = append(rp.eprops, retProp{prop: i, binding: ref.Index, col: b.edgeColumn(ref.Name)})
	}
	return rp
}

// load puts the values Returns.Props name for match m, tx in view into vals.
func (rp *retPlan) load(s *bundle.Store, m []graph.VertexID, tx []bundle.Tx, view bundle.View, vals []graph.Value) {
	for _, vp := range rp.vprops {
		vals[vp.prop] = s.VertexValueIn(m[vp.vertex], vp.col, view)
	}
	for _, ep := range rp.eprops {
		vals[ep.prop] = transferValue(s, tx[ep.binding], ep.col, view)
	}
}

// sameIn says whether the match's RETURN row is the same in both views: a
// set that changes it replaces the row, reported as the old row
// disappearing and the new one appearing.
func (rp *retPlan) sameIn(s *bundle.Store, m []graph.VertexID, tx []bundle.Tx) bool {
	n := len(rp.r.Props)
	before, after := make([]graph.Value, n), make([]graph.Value, n)
	rp.load(s, m, tx, bundle.Before, before)
	rp.load(s, m, tx, bundle.After, after)
	for _, it := range rp.r.Items {
		if !it.Eval(before).Equal(it.Eval(after)) {
			return false
		}
	}
	return true
}

// Returns appends to out the RETURN items of a match the Binder reported
// for query qi of the current Match or Static call, evaluated in the view
// of sign (the values before the batch for -, after it for +), and returns
// out. A bare vertex variable's item is Null: the caller names the vertex.
// Call it from the sink, while the batch is pending; it is safe for
// concurrent use.
func (b *Binder) Returns(qi int, sign graph.Sign, m []graph.VertexID, tx []bundle.Tx, out []graph.Value) []graph.Value {
	rp := b.cur[qi].ret
	if rp == nil {
		return out
	}
	view := bundle.After
	if sign < 0 {
		view = bundle.Before
	}
	var buf [16]graph.Value
	var vals []graph.Value
	if n := len(rp.r.Props); n > len(buf) {
		vals = make([]graph.Value, n)
	} else {
		vals = buf[:n]
	}
	rp.load(b.Store, m, tx, view, vals)
	for _, it := range rp.r.Items {
		out = append(out, it.Eval(vals))
	}
	return out
}
