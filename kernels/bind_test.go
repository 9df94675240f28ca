package kernels

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/query"
)

// TestBinderGPUEqualsCPU runs queries over parallel transfers, with
// predicates, on the GPU and the CPU under the Binder, in every placement:
// renewed pairs (a transfer added to or taken from a pair that stays) must
// be found in the old and the new view alike, so the transfer-level deltas
// must be the same. The stream sets accounts' countries and transfers'
// amounts too, which renew every pair they touch, and a query's RETURN rows
// must agree.
func TestBinderGPUEqualsCPU(t *testing.T) {
	for _, pl := range []Placement{ZeroCopy, Device, GCSM} {
		x := openGPU(t, pl, false)
		for trial := range 4 {
			directed := trial%2 == 0
			t.Run(fmt.Sprintf("%s/trial=%d/directed=%v", pl, trial, directed), func(t *testing.T) {
				binderVsCPU(t, x, uint64(trial), directed)
			})
		}
		x.Close()
	}
}

var binderQueries = []string{
	`(a:A)-[t1:T]->(b:A)-[t2:T]->(c:A)-[t3:T]->(a) WHERE t1.amount > 20 AND t1.ts < t2.ts`,
	`(a)-[x:T]->(b)-[y:T]->(c)-[z:T]->(a)`,
	`(a)-[t1:T]->(b), (a)-[t2:T]->(b) WHERE t2.amount > t1.amount`,
	`(a)-[x:T]->(b:B)<-[y:T]-(c)-[z:T]->(d) WITHIN 20s`,
	`(a:A)-[x:T]->(b)-[y:T]->(c) WHERE a.country = 'DE' AND y.amount < 30`,
	`(a)-[x:T]->(b)-[y:T]->(c)-[z:T]->(a) RETURN a, sum([x, y, z].amount) AS total, c.country, z.ts - x.ts AS span`,
}

func binderVsCPU(t *testing.T, x *GPU, seed uint64, directed bool) {
	r := rand.New(rand.NewPCG(seed, 24))
	d := graph.NewDict()
	label := d.Intern("T")
	vl := []graph.Label{d.Intern("A"), d.Intern("B")}
	var qs []*query.Query
	for i, text := range binderQueries {
		p, err := query.ParseCypher(fmt.Sprintf("q%d", i), text)
		if err != nil {
			t.Fatal(err)
		}
		q, err := query.Compile(p, d, directed, query.Embeddings)
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q)
	}
	g, err := dyngraph.New(dyngraph.Options{Directed: directed, Alloc: x.Allocator(), SlabEntries: 1 << 12})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	store := bundle.New(directed)
	onCPU := &incremental.Binder{Matcher: &incremental.CPU{}, Store: store}
	onGPU := &incremental.Binder{Matcher: x, Store: store}
	onCPU.Register(qs)
	amount := store.EdgeColumn("amount")
	const nv = 14
	for b := range 30 {
		var batch []graph.Update
		for len(batch) < 4+r.IntN(40) {
			a, c := graph.VertexID(r.IntN(nv)), graph.VertexID(r.IntN(nv))
			if a == c {
				continue
			}
			u := graph.Update{Op: graph.Insert, Src: a, Dst: c, Label: label, SrcLabel: vl[a%2], DstLabel: vl[c%2],
				Tx: &graph.Transfer{ID: fmt.Sprintf("x%d", r.IntN(60)), Time: int64(1000 * r.IntN(30)),
					Props: []graph.Prop{{Name: "amount", Value: graph.NumberValue(float64(r.IntN(40)))}}}}
			switch r.IntN(10) {
			case 0, 1:
				u.Op = graph.Delete
			case 2:
				country := []string{"DE", "FR"}[r.IntN(2)]
				u = graph.Update{Op: graph.SetVertex, Src: a, Tx: &graph.Transfer{SrcProps: []graph.Prop{{Name: "country", Value: graph.StringValue(country)}}}}
			case 3:
				u = graph.Update{Op: graph.SetEdge, Tx: &graph.Transfer{ID: fmt.Sprintf("x%d", r.IntN(60)),
					Props: []graph.Prop{{Name: "amount", Value: graph.NumberValue(float64(r.IntN(40)))}}}}
			}
			batch = append(batch, u)
		}
		delta, _, _, err := g.ApplyFolded(batch, store)
		if err != nil {
			t.Fatal(err)
		}
		want, wc := boundMatches(t, onCPU, store, g, delta, qs, amount)
		got, gc := boundMatches(t, onGPU, store, g, delta, qs, amount)
		if fmt.Sprint(want) != fmt.Sprint(got) || fmt.Sprint(wc) != fmt.Sprint(gc) {
			t.Fatalf("batch %d: GPU counts %v, CPU %v; match sets equal: %v", b, gc, wc, fmt.Sprint(want) == fmt.Sprint(got))
		}
		store.Settle()
		g.Reorganize()
	}
	cs, err := onCPU.Static(g, qs, incremental.Count, nil)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := onGPU.Static(g, qs, incremental.Count, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(cs) != fmt.Sprint(gs) {
		t.Fatalf("static: GPU %v, CPU %v", gs, cs)
	}
}

// boundMatches enumerates a batch's transfer-level matches, each as its
// query, sign, vertices and transfers' content.
func boundMatches(t *testing.T, b *incremental.Binder, s *bundle.Store, g *dyngraph.Graph, delta []graph.Change,
	qs []*query.Query, amount int) (map[string]int, []incremental.Counts) {
	t.Helper()
	got := map[string]int{}
	var mu sync.Mutex
	counts, err := b.Match(g, delta, qs, incremental.Enumerate, func(_, qi int, sign graph.Sign, m []graph.VertexID, tx []bundle.Tx) {
		k := fmt.Sprint(qi, sign, m)
		for _, x := range tx {
			view := bundle.After
			if sign < 0 {
				view = bundle.Before
			}
			k += fmt.Sprintf(" %s/%d/%v", s.ID(x), s.Time(x), s.ValueIn(x, amount, view))
		}
		k += fmt.Sprint(" ", b.Returns(qi, sign, m, tx, nil))
		mu.Lock()
		got[k]++
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, counts
}
