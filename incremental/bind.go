package incremental

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// BoundSink receives the matches of a Binder: m maps each query vertex to its
// data vertex, tx each of the query's Bindings to its transfer (the store's
// slot, bundle.Implicit for a pair without a record, or NoTransfer where the
// query edge binds its pair, not a transfer), or nil for a vertex map
// (Binder.VertexMatches). Both are valid only during the call, and a slot's id and values are readable from the store until the
// batch settles. It is called concurrently, as a Sink is.
type BoundSink func(worker, q int, sign graph.Sign, m []graph.VertexID, tx []bundle.Tx)

// NoTransfer marks a binding of a query edge that binds its pair, not a
// transfer: a wildcard-labelled edge, or an undirected one on a directed
// graph. Such an edge can stand for several data edges, and the delta rules
// there rest on the pair (dyngraph.Graph.StandsForFlip), so its transfers
// are not told apart.
const NoTransfer bundle.Tx = bundle.Implicit - 1

// Binder matches queries whose edges bind transfers: the parallel edges of
// package bundle, with their event times and properties, filtered by the
// queries' predicates (WHERE, WITHIN). Matcher finds the vertex-level matches
// on the graph of pairs; the Binder expands each into its transfer-level
// matches.
//
// Exactness: the store renews every pair whose transfers changed (it enters
// ΔE deleted and inserted), so every vertex map whose transfer-level matches
// changed is reported by Matcher with sign - (it held before) and + (it holds
// after). For sign + the Binder emits the assignments of transfers present
// after the batch that satisfy the predicates and include at least one
// transfer the batch inserted; for sign -, those present before with at least
// one the batch deleted. Those are exactly ΔM+ and ΔM- restricted to the
// vertex map: a match of the old and the new graph binds only transfers
// present throughout. Count mode enumerates the vertex maps and counts their
// expansions.
type Binder struct {
	Matcher Matcher
	Store   *bundle.Store
	// VertexMatches makes a query that names no transfer variable report
	// vertex maps, not transfer-level matches: each map once, with tx nil,
	// when some assignment of its transfers satisfies the predicates in the
	// view of its sign (Before for -, After for +) and none did in the
	// other. Such a query is about accounts: a third transfer on a pair of
	// its ring is no new match.
	VertexMatches bool

	exps     []*expander                // per sink worker
	mu       sync.Mutex                 // guards overflow
	overflow *expander                  // for workers beyond exps
	byQuery  map[*query.Query]*bindPlan // during Match: the plans with edge filters
	cur      []*bindPlan                // the plans of the last Match or Static call, for Returns
}

// For implements EdgeFilter.
func (b *Binder) For(q *query.Query) QueryFilter {
	if p, ok := b.byQuery[q]; ok {
		return p
	}
	return nil
}

// Match computes the transfer-level ΔM+ and ΔM- of every query, as Matcher.Match
// does for vertex maps. g must have applied the batch through
// ApplyFolded(batch, b.Store), and the store must not have settled yet.
func (b *Binder) Match(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode Mode, sink BoundSink) ([]Counts, error) {
	plans, err := b.plan(g, queries)
	if err != nil {
		return nil, err
	}
	b.cur = plans
	b.prepare(len(queries))
	if ef, ok := b.Matcher.(edgeFilterer); ok {
		b.byQuery = make(map[*query.Query]*bindPlan, len(plans))
		for i, p := range plans {
			if p.anyFilter {
				b.byQuery[queries[i]] = p
			}
		}
		ef.SetEdgeFilter(b)
		defer ef.SetEdgeFilter(nil)
	}
	inner := b.expanding(g, plans, mode, sink, false)
	if _, err := b.Matcher.Match(g, delta, queries, Enumerate, inner); err != nil {
		return nil, err
	}
	out := make([]Counts, len(queries))
	for _, x := range b.all() {
		for q, c := range x.res {
			out[q].Add(c)
		}
	}
	return out, nil
}

// Static finds every transfer-level match of each query in g, which must not
// be pending.
func (b *Binder) Static(g *dyngraph.Graph, queries []*query.Query, mode Mode, sink BoundSink) ([]graph.Count, error) {
	plans, err := b.plan(g, queries)
	if err != nil {
		return nil, err
	}
	b.cur = plans
	b.prepare(len(queries))
	inner := b.expanding(g, plans, mode, sink, true)
	if _, err := b.Matcher.Static(g, queries, Enumerate, inner); err != nil {
		return nil, err
	}
	out := make([]graph.Count, len(queries))
	for _, x := range b.all() {
		for q, c := range x.res {
			out[q] = out[q].Add(c.Positive)
		}
	}
	return out, nil
}

// expanding is the Matcher's sink that expands each vertex map into its
// transfer-level matches, counted per worker and sent to sink when
// enumerating. static takes every assignment, with no changed transfer
// required.
func (b *Binder) expanding(g *dyngraph.Graph, plans []*bindPlan, mode Mode, sink BoundSink, static bool) Sink {
	return func(worker, q int, sign graph.Sign, m []graph.VertexID) {
		x, done := b.expander(worker)
		defer done()
		x.worker, x.q, x.sink = worker, q, nil
		if mode == Enumerate {
			x.sink = sink
		}
		var n int64
		if plans[q].vertexLevel {
			n = x.vertexMaps(g, plans[q], sign, static, m)
		} else {
			n = x.expandImages(g, plans[q], sign, static, m)
		}
		if sign > 0 {
			x.res[q].Positive = x.res[q].Positive.AddUint64(uint64(n))
		} else {
			x.res[q].Negative = x.res[q].Negative.AddUint64(uint64(n))
		}
	}
}

// Register makes the store keep what queries read: the properties they
// name, and event times when one reads ts. Register queries before the
// events they should see: a transfer stored earlier has Null for a property
// kept later.
func (b *Binder) Register(queries []*query.Query) {
	for _, q := range queries {
		var refs []query.PropRef
		if q.Pred != nil {
			refs = q.Pred.Props
		}
		if q.Return != nil {
			refs = append(refs[:len(refs):len(refs)], q.Return.Props...)
		}
		for _, ref := range refs {
			switch {
			case !ref.OnEdge:
				b.Store.VertexColumn(ref.Name)
			case ref.Name == "ts":
				b.Store.KeepTime()
			case ref.Name != "id":
				b.Store.EdgeColumn(ref.Name)
			}
		}
	}
}

// prepare readies one expander per sink worker, and the overflow one, with
// zeroed counts for nq queries. Sinks are called with worker numbers below
// a few times the cores (a Placer offsets the GPU's past the CPU's); a
// larger one shares the overflow expander under a lock.
func (b *Binder) prepare(nq int) {
	if b.exps == nil {
		b.exps = make([]*expander, 2*runtime.GOMAXPROCS(0)+64)
		for i := range b.exps {
			b.exps[i] = &expander{}
		}
		b.overflow = &expander{}
	}
	for _, x := range b.all() {
		x.res = append(x.res[:0], make([]Counts, nq)...)
	}
}

// expander is worker's expander, and what to call when done with it.
func (b *Binder) expander(worker int) (*expander, func()) {
	if worker < len(b.exps) {
		return b.exps[worker], func() {}
	}
	b.mu.Lock()
	return b.overflow, b.mu.Unlock
}

func (b *Binder) all() []*expander { return append(b.exps[:len(b.exps):len(b.exps)], b.overflow) }

// bindPlan is a query prepared for expansion.
type bindPlan struct {
	b     *Binder
	q     *query.Query
	store *bundle.Store
	// edgeFilter says which query edges have bindings with predicates of
	// their own (bindInfo.filter), for the join's EdgeFilter.
	edgeFilter []bool
	anyFilter  bool
	binds      []bindInfo
	vprops     []vprop // vertex properties the predicates read
	// pre are the conjuncts that read no binding; at[k] those whose last
	// binding is k (multi-binding ones; a single-binding one filters k's
	// candidates).
	pre, at [][]int
	nprops  int
	// ordered: parallel bindings of one edge take transfers in increasing
	// slot order, so that an instance is reported once (Instances, no
	// predicates).
	ordered bool
	// vertexLevel: the query reports vertex maps (Binder.VertexMatches);
	// direct: and every map the Matcher reports holds, as the query reads
	// nothing of the transfers.
	vertexLevel, direct bool
	// readsValues: the predicates or the RETURN read some property (of a
	// vertex or a transfer) that a set can change.
	readsValues bool
	ret         *retPlan // nil without RETURN
}

type bindInfo struct {
	edge     int
	bindable bool
	props    []eprop
	filter   []int // single-binding conjuncts
	same     []int // earlier bindings on the same query edge
}

type eprop struct {
	prop int // index into Pred.Props and vals
	col  int // store column, or colTime / colID
}

type vprop struct {
	prop, vertex, col int
}

const (
	colTime = -1
	colID   = -2
)

func (b *Binder) plan(g *dyngraph.Graph, queries []*query.Query) ([]*bindPlan, error) {
	plans := make([]*bindPlan, len(queries))
	for qi, q := range queries {
		p := &bindPlan{b: b, q: q, store: b.Store, edgeFilter: make([]bool, len(q.Edges))}
		if len(q.Bindings) == 0 {
			return nil, fmt.Errorf("query %s: compiled without bindings", q.Name)
		}
		p.ordered = q.Pred == nil && q.Return == nil && q.Semantics == query.Instances
		p.vertexLevel = b.VertexMatches && !q.NamesTransfers()
		p.direct = p.vertexLevel && !q.ReadsTransfers()
		p.at = make([][]int, len(q.Bindings))
		if p.ret = b.retPlan(q); p.ret != nil {
			p.readsValues = len(p.ret.vprops) > 0
			for _, ep := range p.ret.eprops {
				p.readsValues = p.readsValues || ep.col >= 0
			}
		}
		for k, bd := range q.Bindings {
			e := q.Edges[bd.Edge]
			bi := bindInfo{edge: bd.Edge, bindable: e.Label != graph.Wildcard && (e.Directed || !q.Directed)}
			for j := 0; j < k && bi.bindable; j++ {
				if q.Bindings[j].Edge == bd.Edge {
					bi.same = append(bi.same, j)
				}
			}
			p.binds = append(p.binds, bi)
		}
		if pr := q.Pred; pr != nil {
			p.nprops = len(pr.Props)
			for i, ref := range pr.Props {
				if !ref.OnEdge {
					p.vprops = append(p.vprops, vprop{prop: i, vertex: ref.Index, col: b.Store.VertexColumn(ref.Name)})
					continue
				}
				col := b.edgeColumn(ref.Name)
				bi := &p.binds[ref.Index]
				if !bi.bindable {
					return nil, fmt.Errorf("query %s: property %s of a query edge that binds no transfer", q.Name, ref.Name)
				}
				bi.props = append(bi.props, eprop{prop: i, col: col})
				p.readsValues = p.readsValues || col >= 0
			}
			p.readsValues = p.readsValues || len(p.vprops) > 0
			for ci, c := range pr.Conjuncts {
				switch {
				case c.Bindings == 0:
					p.pre = append(p.pre, []int{ci})
				case c.Bindings&(c.Bindings-1) == 0:
					k := trailing(c.Bindings)
					p.binds[k].filter = append(p.binds[k].filter, ci)
					// Under Images a binding lands on another edge in each
					// image of a map, so no one edge must pass its filter.
					if q.Images == nil {
						p.edgeFilter[p.binds[k].edge], p.anyFilter = true, true
					}
				default:
					k := 63 - leading(c.Bindings)
					p.at[k] = append(p.at[k], ci)
				}
			}
		}
		plans[qi] = p
	}
	return plans, nil
}

// Filtered implements QueryFilter.
func (p *bindPlan) Filtered(e int) bool { return p.edgeFilter[e] }

// Holds implements QueryFilter: each binding of edge e with predicates of
// its own must have a transfer between src and dst, in the view of sign,
// that passes them.
func (p *bindPlan) Holds(worker, e int, src, dst graph.VertexID, sign graph.Sign) bool {
	x, done := p.b.expander(worker)
	defer done()
	view := bundle.After
	if sign < 0 {
		view = bundle.Before
	}
	for k := range p.binds {
		bi := &p.binds[k]
		if bi.edge != e || len(bi.filter) == 0 {
			continue
		}
		if !x.anyPasses(p, bi, src, dst, view) {
			return false
		}
	}
	return true
}

// anyPasses says whether some transfer of src→dst in view passes binding
// bi's own predicates.
func (x *expander) anyPasses(p *bindPlan, bi *bindInfo, src, dst graph.VertexID, view bundle.View) bool {
	if cap(x.vals) < p.nprops {
		x.vals = make([]graph.Value, p.nprops)
	}
	x.vals = x.vals[:p.nprops]
	x.p = p
	c := p.store.Walk(graph.Edge{Src: src, Dst: dst, Label: p.q.Edges[bi.edge].Label})
next:
	for {
		t, _, ok := p.store.Next(&c, view)
		if !ok {
			return false
		}
		x.load(x.vals, bi, t, view)
		for _, ci := range bi.filter {
			if !p.q.Pred.Conjuncts[ci].Eval(x.vals) {
				continue next
			}
		}
		return true
	}
}

func trailing(x uint64) int {
	n := 0
	for x&1 == 0 {
		x >>= 1
		n++
	}
	return n
}

func leading(x uint64) int {
	n := 0
	for x&(1<<63) == 0 {
		x <<= 1
		n++
	}
	return n
}

// expander is one worker's state for expanding vertex maps.
type expander struct {
	p       *bindPlan
	g       *dyngraph.Graph
	m       []graph.VertexID
	vals    []graph.Value
	cand    [][]bundle.Tx
	changed [][]bool
	tx      []bundle.Tx
	sink    BoundSink // nil when counting
	worker  int       // the sink's arguments
	q       int
	sign    graph.Sign
	need    bool // at least one changed transfer is required
	once    bool // one assignment is enough: stop at the first
	n       int64
	res     []Counts // per query, over the call (Static counts in Positive)
	img     []graph.VertexID
	view    bundle.View // the view of sign
	// sets: the batch set values that the plan reads, so an assignment of
	// transfers present before and after may still have changed (holdsOther).
	sets  bool
	other []graph.Value // holdsOther's values
}

// expandImages is expand for every image m∘σ of m under the query's Images,
// or for m alone when it has none (see query.Query.Images).
func (x *expander) expandImages(g *dyngraph.Graph, p *bindPlan, sign graph.Sign, static bool, m []graph.VertexID) int64 {
	if p.q.Images == nil {
		return x.expand(g, p, sign, static, m)
	}
	if cap(x.img) < len(m) {
		x.img = make([]graph.VertexID, len(m))
	}
	img := x.img[:len(m)]
	var n int64
	for _, sigma := range p.q.Images {
		for u := range img {
			img[u] = m[sigma[u]]
		}
		n += x.expand(g, p, sign, static, img)
	}
	return n
}

// vertexMaps reports each image of m under the query's Images (m alone
// without) that has an assignment of transfers in the view of sign and,
// unless static, had none in the other view, once and with tx nil, and
// returns their number (see Binder.VertexMatches).
func (x *expander) vertexMaps(g *dyngraph.Graph, p *bindPlan, sign graph.Sign, static bool, m []graph.VertexID) int64 {
	sink := x.sink
	defer func() { x.sink, x.once = sink, false }()
	x.sink, x.once = nil, true
	var n int64
	one := func(v []graph.VertexID) {
		if !p.direct && x.expand(g, p, sign, true, v) == 0 || !static && x.heldOther(g, p, sign, v) {
			return
		}
		n++
		if sink != nil {
			sink(x.worker, x.q, sign, v, nil)
		}
	}
	if p.q.Images == nil {
		one(m)
		return n
	}
	if cap(x.img) < len(m) {
		x.img = make([]graph.VertexID, len(m))
	}
	img := x.img[:len(m)]
	for _, sigma := range p.q.Images {
		for u := range img {
			img[u] = m[sigma[u]]
		}
		one(img)
	}
	return n
}

// heldOther says whether vertex map m, which holds in the view of sign,
// held in the other view too: every query edge's pair present there, and
// some assignment of transfers there satisfying the predicates, with the
// same RETURN row. The join reports such a map with both signs when a pair
// of it renewed (a transfer or a value changed) and it held throughout; for
// a query about accounts that is no change.
func (x *expander) heldOther(g *dyngraph.Graph, p *bindPlan, sign graph.Sign, m []graph.VertexID) bool {
	for _, e := range p.q.Edges {
		inOld, inNew := pairIn(g, p.q, e, m[e.A], m[e.B])
		if sign > 0 && !inOld || sign < 0 && !inNew {
			return false
		}
	}
	if !p.direct && x.expand(g, p, -sign, true, m) == 0 {
		return false
	}
	// A changed RETURN row replaces the old one, as over transfers.
	return p.ret == nil || p.ret.sameIn(p.store, m, nil)
}

// pairIn says whether query edge e's pair between src and dst is in the
// graph before and after the pending batch.
func pairIn(g *dyngraph.Graph, q *query.Query, e query.QEdge, src, dst graph.VertexID) (inOld, inNew bool) {
	o := g.Order()
	lists := []dyngraph.Adj{g.Out(src)}
	if q.Directed && !e.Directed {
		lists = append(lists, g.In(src))
	}
	for i := range lists {
		a, b, _ := o.Probe(&lists[i], dst, e.Label)
		inOld, inNew = inOld || a, inNew || b
	}
	return inOld, inNew
}

// expand emits the transfer-level matches of vertex map m with sign (static:
// every assignment in the current graph) to x.sink and returns their number.
func (x *expander) expand(g *dyngraph.Graph, p *bindPlan, sign graph.Sign, static bool, m []graph.VertexID) int64 {
	x.p, x.g, x.m, x.sign, x.n = p, g, m, sign, 0
	x.need = !static
	nb := len(p.binds)
	if cap(x.vals) < p.nprops {
		x.vals = make([]graph.Value, p.nprops)
	}
	x.vals = x.vals[:p.nprops]
	for len(x.cand) < nb {
		x.cand = append(x.cand, nil)
		x.changed = append(x.changed, nil)
	}
	if cap(x.tx) < nb {
		x.tx = make([]bundle.Tx, nb)
	}
	x.tx = x.tx[:nb]
	view := bundle.After
	if sign < 0 {
		view = bundle.Before
	}
	x.view = view
	x.sets = x.need && p.readsValues && p.store.Sets()
	for _, vp := range p.vprops {
		x.vals[vp.prop] = p.store.VertexValueIn(m[vp.vertex], vp.col, view)
	}
	for _, cs := range p.pre {
		if !p.q.Pred.Conjuncts[cs[0]].Eval(x.vals) {
			return 0
		}
	}
	anyChanged := false
	for k := range p.binds {
		x.cand[k], x.changed[k] = x.candidates(k, view, sign, x.cand[k][:0], x.changed[k][:0])
		if len(x.cand[k]) == 0 {
			return 0
		}
		for _, c := range x.changed[k] {
			anyChanged = anyChanged || c
		}
	}
	if x.need && !anyChanged && !(x.sets && x.setTouches()) {
		return 0
	}
	x.walk(0, false)
	return x.n
}

// candidates lists binding k's transfers in view that pass its own
// predicates, and whether the batch changed each.
func (x *expander) candidates(k int, view bundle.View, sign graph.Sign, out []bundle.Tx, chg []bool) ([]bundle.Tx, []bool) {
	p := x.p
	bi := &p.binds[k]
	e := p.q.Edges[bi.edge]
	src, dst := x.m[e.A], x.m[e.B]
	if !bi.bindable {
		return append(out, NoTransfer), append(chg, x.pairChanged(e, src, dst, sign))
	}
	c := p.store.Walk(graph.Edge{Src: src, Dst: dst, Label: e.Label})
next:
	for {
		t, changed, ok := p.store.Next(&c, view)
		if !ok {
			return out, chg
		}
		x.load(x.vals, bi, t, view)
		for _, ci := range bi.filter {
			if !p.q.Pred.Conjuncts[ci].Eval(x.vals) {
				continue next
			}
		}
		out = append(out, t)
		chg = append(chg, changed)
	}
}

// pairChanged says whether the batch flipped the pair-level truth of query
// edge e between src and dst: absent before for sign +, after for sign -.
func (x *expander) pairChanged(e query.QEdge, src, dst graph.VertexID, sign graph.Sign) bool {
	if !x.need {
		return false
	}
	inOld, inNew := pairIn(x.g, x.p.q, e, src, dst)
	if sign > 0 {
		return !inOld
	}
	return !inNew
}

// setTouches says whether the batch's sets changed a value of a vertex of
// x.m or of one of the candidate transfers: else every assignment of
// unchanged transfers holds in both views alike.
func (x *expander) setTouches() bool {
	s := x.p.store
	for _, v := range x.m {
		if s.VertexSet(v) {
			return true
		}
	}
	for k := range x.p.binds {
		for _, t := range x.cand[k] {
			if s.TransferSet(t) {
				return true
			}
		}
	}
	return false
}

// holdsOther says whether the complete assignment x.tx, whose transfers are
// all present before and after the batch, satisfies the predicates in the
// view other than its sign's too, with the same RETURN row. Only then is it
// no change: a set that makes the predicates false (true) in the view after
// the batch makes it disappear (appear), and one that changes its row
// replaces the row.
func (x *expander) holdsOther() bool {
	p, s := x.p, x.p.store
	touched := false
	for _, v := range x.m {
		touched = touched || s.VertexSet(v)
	}
	for _, t := range x.tx {
		touched = touched || s.TransferSet(t)
	}
	if !touched {
		return true
	}
	o := bundle.Before
	if x.view == bundle.Before {
		o = bundle.After
	}
	x.other = append(x.other[:0], make([]graph.Value, p.nprops)...)
	for _, vp := range p.vprops {
		x.other[vp.prop] = s.VertexValueIn(x.m[vp.vertex], vp.col, o)
	}
	for k := range p.binds {
		if bi := &p.binds[k]; bi.bindable {
			x.load(x.other, bi, x.tx[k], o)
		}
	}
	if p.q.Pred != nil {
		for _, c := range p.q.Pred.Conjuncts {
			if !c.Eval(x.other) {
				return false
			}
		}
	}
	return p.ret == nil || p.ret.sameIn(s, x.m, x.tx)
}

// load puts transfer t's values of binding bi in view into vals.
func (x *expander) load(vals []graph.Value, bi *bindInfo, t bundle.Tx, view bundle.View) {
	for _, ep := range bi.props {
		vals[ep.prop] = transferValue(x.p.store, t, ep.col, view)
	}
}

// edgeColumn is where the store keeps transfer property name: colTime for
// the event time, colID for the id, else its column, added if need be.
func (b *Binder) edgeColumn(name string) int {
	switch name {
	case query.PropTime:
		return colTime
	case query.PropID:
		return colID
	}
	return b.Store.EdgeColumn(name)
}

// transferValue is transfer t's value in column col (or colTime, colID) in
// view: an unknown time or an empty id is Null.
func transferValue(s *bundle.Store, t bundle.Tx, col int, view bundle.View) graph.Value {
	switch col {
	case colTime:
		if ms := s.Time(t); ms != 0 {
			return graph.TimeValue(ms)
		}
		return graph.Value{}
	case colID:
		if id := s.ID(t); id != "" {
			return graph.StringValue(id)
		}
		return graph.Value{}
	}
	return s.ValueIn(t, col, view)
}

// walk assigns bindings k onwards; changed says whether an earlier binding
// took a transfer the batch changed.
func (x *expander) walk(k int, changed bool) {
	p := x.p
	if k == len(p.binds) {
		if changed || !x.need || (x.sets && !x.holdsOther()) {
			x.n++
			if x.sink != nil {
				x.sink(x.worker, x.q, x.sign, x.m, x.tx)
			}
		}
		return
	}
	bi := &p.binds[k]
next:
	for i, t := range x.cand[k] {
		if x.once && x.n > 0 {
			return
		}
		for _, j := range bi.same {
			if x.tx[j] == t || (p.ordered && t < x.tx[j]) {
				continue next
			}
		}
		x.tx[k] = t
		if bi.bindable {
			x.load(x.vals, bi, t, x.view)
		}
		for _, ci := range p.at[k] {
			if !p.q.Pred.Conjuncts[ci].Eval(x.vals) {
				continue next
			}
		}
		x.walk(k+1, changed || x.changed[k][i])
	}
}
