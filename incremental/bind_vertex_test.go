package incremental_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/query"
)

// vertexQueries name no transfer variable: with VertexMatches they report
// vertex maps. The last names one, and must stay transfer-level.
var vertexQueries = []string{
	`(a)-[:T]->(b)-[:T]->(c)-[:T]->(a)`,
	`(a)-[:T]->(b)-[:T]->(c) WITHIN 2s`,
	`(a)-[:T]->(b:B) WHERE a.country = 'DE'`,
	`(a)-[:T]->(b)<-[:T]-(c) WITHIN 1s`,
	// A set of a's country changes the row, not the WHERE: the row is
	// replaced.
	`(a)-[:T]->(b) WHERE b.country IS NOT NULL RETURN a.country AS ac, b`,
	`(a)-[t:T]->(b)`,
}

// vertexSet projects the oracle's transfer-level matches onto their vertex
// maps, with their RETURN rows (the last word) when q has a RETURN.
func vertexSet(q *query.Query, ms map[string]int) map[string]bool {
	out := map[string]bool{}
	for k := range ms {
		key := k[:strings.IndexByte(k, ']')+1]
		if q.Return != nil {
			key += k[strings.LastIndexByte(k, ' '):]
		}
		out[key] = true
	}
	return out
}

// TestBinderVertexMatches: with VertexMatches, a query that names no
// transfer variable reports each vertex map at most once, with no
// transfers: exactly the change of the oracle's set of vertex maps that
// have a transfer-level match, never a map with both signs (one that held
// before and after a renewal of its pairs). A query that names one reports
// what it did without.
func TestBinderVertexMatches(t *testing.T) {
	for _, directed := range []bool{true, false} {
		for seed := range uint64(12) {
			t.Run(fmt.Sprintf("directed=%v/seed=%d", directed, seed), func(t *testing.T) {
				checkVertexMatches(t, directed, seed, seed%2 == 1)
			})
		}
	}
}

// checkVertexMatches runs a seeded stream, with property sets on odd seeds.
func checkVertexMatches(t *testing.T, directed bool, seed uint64, sets bool) {
	rng := rand.New(rand.NewPCG(seed, 11))
	dict := graph.NewDict()
	if dict.Intern("T") != 0 {
		t.Fatal("edge label T must be 0 for the generator")
	}
	labels := make([]graph.Label, 6)
	for i := range labels {
		labels[i] = dict.Intern([]string{"A", "B"}[rng.IntN(2)])
	}
	var queries []*query.Query
	for i, text := range vertexQueries {
		p, err := query.ParseCypher(fmt.Sprintf("q%d", i), text)
		if err != nil {
			t.Fatal(err)
		}
		q, err := query.Compile(p, dict, directed, query.Embeddings)
		if err != nil {
			t.Fatal(err)
		}
		queries = append(queries, q)
	}
	g, err := dyngraph.New(dyngraph.Options{Directed: directed})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	store := bundle.New(directed)
	b := &incremental.Binder{Matcher: &incremental.CPU{Workers: 3}, Store: store, VertexMatches: true}
	b.Register(queries)
	store.EdgeColumn("amount") // the oracle's content: a changed amount is a replacement
	o := &oracle{directed: directed, keepTime: store.KeepsTime(), labels: labels, country: map[graph.VertexID]graph.Value{}, exists: map[graph.VertexID]bool{}}
	before := make([]map[string]int, len(queries))
	for i, q := range queries {
		before[i] = o.matches(q)
	}
	var renewed, changed int
	for batch := range 30 {
		upd := randomTransfers(rng, 1+rng.IntN(8), labels, sets)
		was := o.versions()
		o.apply(upd)
		now := o.versions()
		delta, _, st, err := g.ApplyFolded(upd, store)
		if err != nil {
			t.Fatal(err)
		}
		renewed += st.Renewed
		var mu sync.Mutex
		got := make([][2]map[string]int, len(queries))
		for i := range got {
			got[i] = [2]map[string]int{{}, {}}
		}
		sink := func(_, qi int, sign graph.Sign, m []graph.VertexID, tx []bundle.Tx) {
			mu.Lock()
			defer mu.Unlock()
			k := fmt.Sprint(m)
			if queries[qi].Return != nil {
				k += " " + showRow(b.Returns(qi, sign, m, tx, nil))
			}
			if queries[qi].NamesTransfers() {
				vs := now
				if sign < 0 {
					vs = was
				}
				k = boundKey(store, queries[qi], m, tx, vs, b.Returns(qi, sign, m, tx, nil))
			} else if tx != nil {
				t.Errorf("%s reported transfers %v", queries[qi].Name, tx)
			}
			if sign > 0 {
				got[qi][0][k]++
			} else {
				got[qi][1][k]++
			}
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
			if counts[i] != cc[i] || counts[i].Positive != graph.CountOf(uint64(sum(got[i][0]))) || counts[i].Negative != graph.CountOf(uint64(sum(got[i][1]))) {
				t.Fatalf("batch %d %s: counts %v, count mode %v, reported +%d -%d", batch, q.Name, counts[i], cc[i], sum(got[i][0]), sum(got[i][1]))
			}
			if q.NamesTransfers() {
				plus, minus := diff(after, before[i]), diff(before[i], after)
				if fmt.Sprint(plus) != fmt.Sprint(got[i][0]) || fmt.Sprint(minus) != fmt.Sprint(got[i][1]) {
					t.Fatalf("batch %d %s: transfer-level ΔM+ %v want %v, ΔM- %v want %v\nupdates %s", batch, q.Name, got[i][0], plus, got[i][1], minus, show(upd))
				}
				before[i] = after
				continue
			}
			vb, va := vertexSet(q, before[i]), vertexSet(q, after)
			var plus, minus, wantPlus, wantMinus []string
			for k, n := range got[i][0] {
				if n != 1 || got[i][1][k] > 0 {
					t.Fatalf("batch %d %s: map %s reported +%d -%d", batch, q.Name, k, n, got[i][1][k])
				}
				plus = append(plus, k)
			}
			for k, n := range got[i][1] {
				if n != 1 {
					t.Fatalf("batch %d %s: map %s reported -%d", batch, q.Name, k, n)
				}
				minus = append(minus, k)
			}
			for k := range va {
				if !vb[k] {
					wantPlus = append(wantPlus, k)
				}
			}
			for k := range vb {
				if !va[k] {
					wantMinus = append(wantMinus, k)
				}
			}
			for _, s := range [][]string{plus, minus, wantPlus, wantMinus} {
				slices.Sort(s)
			}
			if !slices.Equal(plus, wantPlus) || !slices.Equal(minus, wantMinus) {
				t.Fatalf("batch %d %s: vertex-level appeared %v want %v, disappeared %v want %v\nupdates %s",
					batch, q.Name, plus, wantPlus, minus, wantMinus, show(upd))
			}
			changed += len(plus) + len(minus)
			before[i] = after
		}
	}
	// The static matcher reports each vertex map with a match once.
	var mu sync.Mutex
	static := make([]map[string]int, len(queries))
	for i := range static {
		static[i] = map[string]int{}
	}
	_, err = b.Static(g, queries, incremental.Enumerate, func(_, qi int, _ graph.Sign, m []graph.VertexID, tx []bundle.Tx) {
		mu.Lock()
		defer mu.Unlock()
		if tx == nil {
			k := fmt.Sprint(m)
			if queries[qi].Return != nil {
				k += " " + showRow(b.Returns(qi, 1, m, tx, nil))
			}
			static[qi][k]++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range queries {
		if q.NamesTransfers() {
			continue
		}
		want := vertexSet(q, o.matches(q))
		if !maps.EqualFunc(static[i], want, func(n int, ok bool) bool { return n == 1 && ok }) {
			t.Errorf("static %s: %v, want each of %v once", q.Name, static[i], want)
		}
	}
	if changed == 0 || renewed == 0 {
		t.Logf("seed exercises little: %d vertex-level changes, %d pairs renewed", changed, renewed)
	}
}
