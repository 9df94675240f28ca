package incremental_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/query"
)

// The transfer oracle: a brute-force model of a multigraph of transfers
// with ids, times and properties, and of the matches of queries that bind
// transfers and filter them by predicates. It shares nothing with package
// bundle or the Binder but the compiled queries (their Bindings and the
// Eval of their conjuncts, which package query tests on its own).

type oTransfer struct {
	id     string
	a, b   graph.VertexID // the pair as the graph keys it (undirected: a < b)
	label  graph.Label
	ts     int64
	amount graph.Value
	// serial names the transfer's version: a replacement is a new one, a
	// set of its amount keeps it.
	serial int
}

// ident is what names a transfer at one time: its id, or for an id-less
// transfer its pair.
func (t *oTransfer) ident() string { return fmt.Sprintf("%s@%d-%d/%d", t.id, t.a, t.b, t.label) }

// content is what an insert with a known id compares: equal is a refresh.
func (t *oTransfer) content() string { return fmt.Sprintf("%d/%s", t.ts, t.amount) }

type oracle struct {
	directed bool
	keepTime bool
	labels   []graph.Label // vertex labels
	txs      []*oTransfer
	country  map[graph.VertexID]graph.Value
	exists   map[graph.VertexID]bool // named by an edge update: the graph holds it
	serials  int
}

// versions maps each present transfer's ident to its serial.
func (o *oracle) versions() map[string]int {
	out := make(map[string]int, len(o.txs))
	for _, t := range o.txs {
		out[t.ident()] = t.serial
	}
	return out
}

func (o *oracle) pairKey(u *graph.Update) (graph.VertexID, graph.VertexID) {
	a, b := u.Src, u.Dst
	if !o.directed && a > b {
		a, b = b, a
	}
	return a, b
}

func (o *oracle) degree(v graph.VertexID) int {
	n := 0
	for _, t := range o.txs {
		if t.a == v || t.b == v {
			n++
		}
	}
	return n
}

// apply applies a batch in order and returns the indexes it refused.
func (o *oracle) apply(batch []graph.Update) map[int]bool {
	refused := map[int]bool{}
	bare := map[graph.VertexID]bool{}
	for _, u := range batch {
		for _, v := range []graph.VertexID{u.Src, u.Dst} {
			if _, ok := bare[v]; !ok {
				bare[v] = o.degree(v) == 0
			}
		}
	}
	// deleted holds the batch's deleted transfers by ident: one inserted
	// again with the content it had is the same version.
	deleted := map[string][]*oTransfer{}
	for i := range batch {
		u := &batch[i]
		switch u.Op {
		case graph.SetVertex:
			if !o.exists[u.Src] {
				refused[i] = true
				continue
			}
			for _, p := range u.Tx.SrcProps {
				if p.Name != "country" {
					continue
				}
				if p.Value.Kind == graph.Null {
					delete(o.country, u.Src)
				} else {
					o.country[u.Src] = p.Value
				}
			}
			continue
		case graph.SetEdge:
			j := slices.IndexFunc(o.txs, func(t *oTransfer) bool { return u.Tx.ID != "" && t.id == u.Tx.ID })
			if j < 0 {
				refused[i] = true
				continue
			}
			for _, p := range u.Tx.Props {
				if p.Name == "amount" {
					o.txs[j].amount = p.Value
				}
			}
			continue
		}
		o.exists[u.Src], o.exists[u.Dst] = true, true
		a, b := o.pairKey(u)
		id := ""
		if u.Tx != nil {
			id = u.Tx.ID
		}
		onPair := func(t *oTransfer) bool { return t.a == a && t.b == b && t.label == u.Label }
		if u.Op == graph.Delete {
			o.txs = slices.DeleteFunc(o.txs, func(t *oTransfer) bool {
				gone := onPair(t) && (id == "" || t.id == id)
				if gone {
					deleted[t.ident()] = append(deleted[t.ident()], t)
				}
				return gone
			})
			continue
		}
		nt := &oTransfer{id: id, a: a, b: b, label: u.Label}
		if u.Tx != nil {
			if o.keepTime {
				nt.ts = u.Tx.Time
			}
			for _, p := range u.Tx.Props {
				if p.Name == "amount" {
					nt.amount = p.Value
				}
			}
		}
		old := -1
		for j, t := range o.txs {
			if (id != "" && t.id == id) || (id == "" && onPair(t) && t.id == "") {
				old = j
			}
		}
		if old >= 0 && !onPair(o.txs[old]) {
			refused[i] = true
			continue
		}
		for k, props := range [2][]graph.Prop{txProps(u, 0), txProps(u, 1)} {
			v := [2]graph.VertexID{u.Src, u.Dst}[k]
			for _, p := range props {
				if _, set := o.country[v]; !set && bare[v] && p.Name == "country" && p.Value.Kind != graph.Null {
					o.country[v] = p.Value
				}
			}
		}
		if old >= 0 {
			if o.txs[old].content() == nt.content() {
				continue
			}
			deleted[o.txs[old].ident()] = append(deleted[o.txs[old].ident()], o.txs[old])
			o.txs = slices.Delete(o.txs, old, old+1)
		}
		ds := deleted[nt.ident()]
		if j := slices.IndexFunc(ds, func(d *oTransfer) bool { return d.content() == nt.content() }); j >= 0 {
			nt.serial = ds[j].serial
			deleted[nt.ident()] = slices.Delete(ds, j, j+1)
		} else {
			o.serials++
			nt.serial = o.serials
		}
		o.txs = append(o.txs, nt)
	}
	return refused
}

func txProps(u *graph.Update, end int) []graph.Prop {
	if u.Tx == nil {
		return nil
	}
	if end == 0 {
		return u.Tx.SrcProps
	}
	return u.Tx.DstProps
}

// matches lists every match of q as a string: the vertex map and the
// content of each bound transfer.
func (o *oracle) matches(q *query.Query) map[string]int {
	out := map[string]int{}
	n := q.N()
	m := make([]graph.VertexID, n)
	used := map[graph.VertexID]bool{}
	var place func(u int)
	place = func(u int) {
		if u == n {
			o.bind(q, m, out)
			return
		}
		for v := range graph.VertexID(len(o.labels)) {
			if used[v] || (q.Labels[u] != graph.Wildcard && q.Labels[u] != o.labels[v]) {
				continue
			}
			used[v], m[u] = true, v
			place(u + 1)
			used[v] = false
		}
	}
	place(0)
	return out
}

func (o *oracle) transfersOf(q *query.Query, e query.QEdge, m []graph.VertexID) []*oTransfer {
	a, b := m[e.A], m[e.B]
	if !q.Directed && a > b {
		a, b = b, a
	}
	var out []*oTransfer
	for _, t := range o.txs {
		if t.a == a && t.b == b && t.label == e.Label {
			out = append(out, t)
		}
	}
	return out
}

func (o *oracle) bind(q *query.Query, m []graph.VertexID, out map[string]int) {
	nb := len(q.Bindings)
	cands := make([][]*oTransfer, nb)
	for k, bd := range q.Bindings {
		cands[k] = o.transfersOf(q, q.Edges[bd.Edge], m)
		if len(cands[k]) == 0 {
			return
		}
	}
	pick := make([]*oTransfer, nb)
	var rec func(k int)
	rec = func(k int) {
		if k == nb {
			if !o.holds(q, m, pick) {
				return
			}
			var sb strings.Builder
			fmt.Fprint(&sb, m)
			for _, t := range pick {
				fmt.Fprintf(&sb, " %s#%d", t.ident(), t.serial)
			}
			if q.Return != nil {
				sb.WriteString(" " + showRow(o.row(q, m, pick)))
			}
			out[sb.String()]++
			return
		}
	next:
		for _, t := range cands[k] {
			for j := 0; j < k; j++ {
				if pick[j] == t {
					continue next // parallel bindings take distinct transfers
				}
			}
			pick[k] = t
			rec(k + 1)
		}
	}
	rec(0)
}

func (o *oracle) holds(q *query.Query, m []graph.VertexID, pick []*oTransfer) bool {
	if q.Pred == nil {
		return true
	}
	vals := o.values(q.Pred.Props, m, pick)
	for _, c := range q.Pred.Conjuncts {
		if !c.Eval(vals) {
			return false
		}
	}
	return true
}

// row is q's RETURN items for a match.
func (o *oracle) row(q *query.Query, m []graph.VertexID, pick []*oTransfer) []graph.Value {
	vals := o.values(q.Return.Props, m, pick)
	var out []graph.Value
	for _, it := range q.Return.Items {
		out = append(out, it.Eval(vals))
	}
	return out
}

func showRow(row []graph.Value) string {
	var sb strings.Builder
	for _, v := range row {
		sb.Write(query.AppendJSONValue(nil, v))
		sb.WriteByte(';')
	}
	return sb.String()
}

// values are the values of refs for a match.
func (o *oracle) values(refs []query.PropRef, m []graph.VertexID, pick []*oTransfer) []graph.Value {
	vals := make([]graph.Value, len(refs))
	for i, r := range refs {
		switch {
		case !r.OnEdge:
			vals[i] = o.country[m[r.Index]]
		case r.Name == "ts":
			if ts := pick[r.Index].ts; ts != 0 {
				vals[i] = graph.TimeValue(ts)
			}
		case r.Name == "id":
			if id := pick[r.Index].id; id != "" {
				vals[i] = graph.StringValue(id)
			}
		case r.Name == "amount":
			vals[i] = pick[r.Index].amount
		}
	}
	return vals
}

// boundKey renders a Binder match as the oracle does, naming each
// transfer's version by the oracle's serial of its ident in the match's
// view (versions before the batch for sign -, after it for sign +), and
// with its RETURN row, row.
func boundKey(s *bundle.Store, q *query.Query, m []graph.VertexID, tx []bundle.Tx, versions map[string]int, row []graph.Value) string {
	var sb strings.Builder
	fmt.Fprint(&sb, m)
	for k, t := range tx {
		e := q.Edges[q.Bindings[k].Edge]
		a, b := m[e.A], m[e.B]
		if !q.Directed && a > b {
			a, b = b, a
		}
		ot := oTransfer{id: s.ID(t), a: a, b: b, label: e.Label}
		serial, ok := versions[ot.ident()]
		if !ok {
			serial = -1 // no such transfer in the view: the match is wrong
		}
		fmt.Fprintf(&sb, " %s#%d", ot.ident(), serial)
	}
	if q.Return != nil {
		sb.WriteString(" " + showRow(row))
	}
	return sb.String()
}

func diff(after, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, n := range after {
		if d := n - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

var transferQueries = []string{
	// A time-ordered ring with a large first transfer.
	`(a:A)-[t1:T]->(b:A)-[t2:T]->(c:A)-[t3:T]->(a) WHERE t1.amount > 2 AND t1.ts < t2.ts AND t2.ts < t3.ts`,
	// A bare path: every pair of transfers.
	`(a)-[t1:T]->(b)-[t2:T]->(c)`,
	// Two parallel transfers, the second larger, within a span.
	`(a)-[t1:T]->(b), (a)-[t2:T]->(b) WHERE t2.amount > t1.amount WITHIN 5s`,
	// A vertex property and an id.
	`(a)-[t:T]->(b:B) WHERE a.country = 'DE' AND t.id <> 'x3'`,
	// A bare ring: every map through renewed pairs must be found in both
	// views.
	`(a)-[x:T]->(b)-[y:T]->(c)-[z:T]->(a)`,
	// Predicates of one edge each, which the join uses to prune (on the
	// directed path, whose only automorphism is the identity).
	`(a)-[t1:T]->(b:A)-[t2:T]->(c) WHERE t1.amount > 2 AND t2.amount < 4 AND t1.ts <= t2.ts`,
	// OR and arithmetic across two bindings.
	`(a)-[t1:T]->(b)<-[t2:T]-(c) WHERE t1.amount + t2.amount >= 7 OR NOT t1.amount < 4`,
	// A RETURN: a set of a value it reads replaces the row.
	`(a)-[t1:T]->(b)-[t2:T]->(c) WHERE t1.amount < 5 RETURN a, t1, t1.amount + t2.amount AS total, ` +
		`c.country, t2.ts - t1.ts AS span, max([t1, t2].amount) AS top`,
	// Parallel transfers that a RETURN tells apart: both orders are matches.
	`(a)-[t1:T]->(b), (a)-[t2:T]->(b) RETURN t1.amount AS first, t2`,
	// A RETURN without WHERE, on a ring whose rotations it tells apart.
	`(a)-[x:T]->(b)-[y:T]->(c)-[z:T]->(a) RETURN b.country AS bc, sum([x, y, z].amount) AS moved`,
}

// randomTransfers makes a stream over few vertices and ids, so that
// parallel transfers, replacements, refreshes, moved ids and deletions of
// one of several transfers all occur.
//
// With sets, about one update in six sets a vertex's country or a
// transfer's amount instead (or a property no query reads, or one of an
// unknown vertex or id, which the graph refuses).
func randomTransfers(rng *rand.Rand, n int, labels []graph.Label, sets bool) []graph.Update {
	var out []graph.Update
	countries := []string{"DE", "FR", ""}
	for range n {
		src := graph.VertexID(rng.IntN(len(labels)))
		dst := graph.VertexID(rng.IntN(len(labels)))
		if src == dst {
			dst = (dst + 1) % graph.VertexID(len(labels))
		}
		u := graph.Update{Op: graph.Insert, Src: src, Dst: dst, Label: 0, SrcLabel: labels[src], DstLabel: labels[dst]}
		if rng.IntN(4) == 0 {
			u.Op = graph.Delete
		}
		if rng.IntN(5) != 0 {
			u.Tx = &graph.Transfer{Time: int64(1000 * (1 + rng.IntN(8)))}
			if rng.IntN(5) != 0 {
				u.Tx.ID = fmt.Sprintf("x%d", rng.IntN(8))
			}
			if rng.IntN(4) != 0 {
				u.Tx.Props = []graph.Prop{{Name: "amount", Value: graph.NumberValue(float64(rng.IntN(6)))}}
			}
			if c := countries[rng.IntN(3)]; c != "" {
				u.Tx.SrcProps = []graph.Prop{{Name: "country", Value: graph.StringValue(c)}}
			}
		}
		if sets && rng.IntN(6) == 0 {
			u = randomSet(rng, len(labels))
		}
		out = append(out, u)
	}
	return out
}

// randomSet sets a property of one of nv vertices or of a transfer id.
func randomSet(rng *rand.Rand, nv int) graph.Update {
	vals := []graph.Value{graph.StringValue("DE"), graph.StringValue("FR"), {}}
	if rng.IntN(2) == 0 {
		name := "country"
		if rng.IntN(5) == 0 {
			name = "status"
		}
		v := graph.VertexID(rng.IntN(nv + 1)) // nv: a vertex the graph never holds
		return graph.Update{Op: graph.SetVertex, Src: v, Tx: &graph.Transfer{SrcProps: []graph.Prop{{Name: name, Value: vals[rng.IntN(3)]}}}}
	}
	amount := graph.Value{}
	if rng.IntN(4) != 0 {
		amount = graph.NumberValue(float64(rng.IntN(6)))
	}
	return graph.Update{Op: graph.SetEdge, Tx: &graph.Transfer{ID: fmt.Sprintf("x%d", rng.IntN(9)), Props: []graph.Prop{{Name: "amount", Value: amount}}}}
}

func TestBinderAgainstOracle(t *testing.T) {
	for _, directed := range []bool{true, false} {
		for seed := range uint64(12) {
			t.Run(fmt.Sprintf("directed=%v/seed=%d", directed, seed), func(t *testing.T) {
				checkBinder(t, directed, seed, seed%2 == 1)
			})
		}
	}
}

// checkBinder runs a seeded stream, with property sets on odd seeds.
func checkBinder(t *testing.T, directed bool, seed uint64, sets bool) {
	rng := rand.New(rand.NewPCG(seed, 7))
	dict := graph.NewDict()
	if dict.Intern("T") != 0 {
		t.Fatal("edge label T must be 0 for the generator")
	}
	labels := make([]graph.Label, 6)
	for i := range labels {
		labels[i] = dict.Intern([]string{"A", "B"}[rng.IntN(2)])
	}
	var queries []*query.Query
	for i, text := range transferQueries {
		p, err := query.ParseCypher(fmt.Sprintf("q%d", i), text)
		if err != nil {
			t.Fatal(err)
		}
		for _, sem := range []query.Semantics{query.Embeddings, query.Instances} {
			q, err := query.Compile(p, dict, directed, sem)
			if err != nil {
				t.Fatal(err)
			}
			queries = append(queries, q)
		}
	}
	g, err := dyngraph.New(dyngraph.Options{Directed: directed})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	store := bundle.New(directed)
	b := &incremental.Binder{Matcher: &incremental.CPU{Workers: 3}, Store: store}
	b.Register(queries)
	store.EdgeColumn("amount") // the oracle's content: a changed amount is a replacement
	o := &oracle{directed: directed, keepTime: store.KeepsTime(), labels: labels, country: map[graph.VertexID]graph.Value{}, exists: map[graph.VertexID]bool{}}

	before := make([]map[string]int, len(queries))
	for i, q := range queries {
		before[i] = o.matches(q)
	}
	totals := make([]incremental.Counts, len(queries))
	for batch := range 30 {
		upd := randomTransfers(rng, 1+rng.IntN(8), labels, sets)
		was := o.versions()
		refused := o.apply(upd)
		now := o.versions()
		delta, rejects, _, err := g.ApplyFolded(upd, store)
		if err != nil {
			t.Fatal(err)
		}
		if len(rejects) != len(refused) {
			t.Fatalf("batch %d: graph refused %v, oracle %v", batch, rejects, refused)
		}
		got := make([][2]map[string]int, len(queries))
		for i := range got {
			got[i] = [2]map[string]int{{}, {}}
		}
		var mu = make(chan struct{}, 1)
		sink := func(_, qi int, sign graph.Sign, m []graph.VertexID, tx []bundle.Tx) {
			mu <- struct{}{}
			vs := now
			if sign < 0 {
				vs = was
			}
			k := boundKey(store, queries[qi], m, tx, vs, b.Returns(qi, sign, m, tx, nil))
			if sign > 0 {
				got[qi][0][k]++
			} else {
				got[qi][1][k]++
			}
			<-mu
		}
		counts, err := b.Match(g, delta, queries, incremental.Enumerate, sink)
		if err != nil {
			t.Fatal(err)
		}
		cc, err := b.Match(g, delta, queries, incremental.Count, nil)
		if err != nil {
			t.Fatal(err)
		}
		store.Settle()
		g.Reorganize()
		for i, q := range queries {
			after := o.matches(q)
			plus, minus := diff(after, before[i]), diff(before[i], after)
			if q.Semantics == query.Instances && q.Pred == nil && q.Return == nil {
				// Instances report one map per automorphism class: the
				// embeddings (the query before) are |Aut| times as many.
				if a := uint64(q.Automorphisms); counts[i].Positive.MulUint64(a) != counts[i-1].Positive || counts[i].Negative.MulUint64(a) != counts[i-1].Negative {
					t.Fatalf("batch %d %s: instances %v × %d automorphisms, embeddings %v", batch, q.Name, counts[i], a, counts[i-1])
				}
				before[i] = after
				continue
			}
			if fmt.Sprint(plus) != fmt.Sprint(got[i][0]) || fmt.Sprint(minus) != fmt.Sprint(got[i][1]) {
				t.Fatalf("batch %d %s (%v): \nΔM+ got  %v\n     want %v\nΔM- got  %v\n     want %v\nupdates %s",
					batch, q.Name, q.Semantics, got[i][0], plus, got[i][1], minus, show(upd))
			}
			if counts[i] != cc[i] || counts[i].Positive != graph.CountOf(uint64(sum(plus))) || counts[i].Negative != graph.CountOf(uint64(sum(minus))) {
				t.Fatalf("batch %d %s: counts %v (count mode %v), want +%d -%d", batch, q.Name, counts[i], cc[i], sum(plus), sum(minus))
			}
			before[i] = after
			totals[i].Add(counts[i])
		}
	}
	t.Logf("ΔM+ and ΔM- per query over the stream: %v", totals)
	// The static matcher finds the oracle's matches of the final graph.
	static, err := b.Static(g, queries, incremental.Count, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range queries {
		if q.Semantics == query.Instances && q.Pred == nil && q.Return == nil {
			continue
		}
		if want := sum(o.matches(q)); static[i] != graph.CountOf(uint64(want)) {
			t.Errorf("static %s: %d matches, want %d", q.Name, static[i], want)
		}
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

func show(us []graph.Update) string {
	var sb strings.Builder
	for _, u := range us {
		fmt.Fprintf(&sb, "\n  %v %d->%d", u.Op, u.Src, u.Dst)
		if u.Tx != nil {
			fmt.Fprintf(&sb, " %+v", *u.Tx)
		}
	}
	return sb.String()
}
