package incremental

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// scenario is one seeded random workload: a small graph, a few queries, a
// stream cut into batches.
type scenario struct {
	seed     uint64
	directed bool
	sem      query.Semantics
	kind     string // insert, delete or mixed
	maxBatch int
	labels   *graph.Dict
	queries  []*query.Query
	initial  []graph.Update
	batches  [][]graph.Update
}

func (s *scenario) String() string {
	return fmt.Sprintf("seed=%d directed=%v sem=%v kind=%s maxBatch=%d", s.seed, s.directed, s.sem, s.kind, s.maxBatch)
}

func newScenario(seed uint64, directed bool, sem query.Semantics, kind string, maxBatch int) *scenario {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	s := &scenario{seed: seed, directed: directed, sem: sem, kind: kind, maxBatch: maxBatch, labels: graph.NewDict()}
	nvl := 1 + r.IntN(3)
	nel := 1 + r.IntN(2)
	vnames := []string{"A", "B", "C"}[:nvl]
	enames := []string{"x", "y"}[:nel]
	for _, n := range append(slices.Clone(vnames), enames...) {
		s.labels.Intern(n)
	}
	qv := append(slices.Clone(vnames), "")
	qe := append(slices.Clone(enames), "")
	for len(s.queries) < 3 {
		p := randomPattern(r, 2+r.IntN(4), qv, qe, directed)
		q, err := query.Compile(p, s.labels, directed, sem)
		if err != nil {
			panic(err)
		}
		s.queries = append(s.queries, q)
	}
	nv := 4 + r.IntN(7)
	for v := 0; v < nv; v++ {
		s.initial = append(s.initial, graph.Update{Op: graph.AddVertex, Src: uint32(v), SrcLabel: s.labels.Intern(vnames[r.IntN(nvl)])})
	}
	edge := func(op graph.Op) graph.Update {
		a := uint32(r.IntN(nv + 2)) // now and then a vertex the graph has not seen
		b := uint32(r.IntN(nv + 2))
		for b == a {
			b = uint32(r.IntN(nv + 2))
		}
		u := graph.Update{Op: op, Src: a, Dst: b, Label: s.labels.Intern(enames[r.IntN(nel)]), SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}
		return u
	}
	density := 1 + r.IntN(3)
	for i := 0; i < nv*density; i++ {
		s.initial = append(s.initial, edge(graph.Insert))
	}
	nb := 3 + r.IntN(4)
	for b := 0; b < nb; b++ {
		size := 1 + r.IntN(maxBatch)
		var batch []graph.Update
		for len(batch) < size {
			op := graph.Insert
			switch kind {
			case "delete":
				op = graph.Delete
			case "mixed":
				if r.IntN(2) == 0 {
					op = graph.Delete
				}
			}
			u := edge(op)
			// Deletions mostly target present edges, so they are not all no-ops.
			if op == graph.Delete && r.IntN(4) != 0 && len(batch) > 0 && r.IntN(3) == 0 {
				prev := batch[r.IntN(len(batch))]
				u.Src, u.Dst, u.Label = prev.Src, prev.Dst, prev.Label
			}
			batch = append(batch, u)
			if r.IntN(10) == 0 { // a duplicate
				batch = append(batch, u)
			}
		}
		s.batches = append(s.batches, batch)
	}
	if kind == "delete" {
		// Make the deletions bite: delete edges of the initial graph.
		for b := range s.batches {
			for i := range s.batches[b] {
				if r.IntN(2) == 0 {
					src := s.initial[nv+r.IntN(len(s.initial)-nv)]
					s.batches[b][i].Src, s.batches[b][i].Dst, s.batches[b][i].Label = src.Src, src.Dst, src.Label
				}
			}
		}
	}
	return s
}

// check runs the scenario through the engine and the oracle and reports
// every difference.
func (s *scenario) check(t *testing.T, workers int) {
	t.Helper()
	g := newTestGraph(s.directed)
	defer g.Close()
	o := newOracle(s.directed)
	def := graph.Label(0)
	cpu := &CPU{Workers: workers}
	if _, _, _, err := g.Apply(s.initial); err != nil {
		t.Fatal(err)
	}
	g.Reorganize()
	o.apply(s.initial, def)

	for _, q := range s.queries {
		want := o.matches(q)
		got, err := cpu.Static(g, []*query.Query{q}, Count, nil)
		if err != nil {
			t.Fatal(err)
		}
		if w := countOf(len(s.filter(q, want))); got[0] != w {
			t.Fatalf("%v: static count of %v = %d, oracle %d", s, q.Pattern, got[0], w)
		}
	}

	for bi, batch := range s.batches {
		before := make([]map[string]bool, len(s.queries))
		for qi, q := range s.queries {
			before[qi] = o.matches(q)
		}
		o.apply(batch, def)
		delta, _, _, err := g.Apply(batch)
		if err != nil {
			t.Fatal(err)
		}
		counts, err := cpu.Match(g, delta, s.queries, Count, nil)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		gotPos := make([]map[string]int, len(s.queries))
		gotNeg := make([]map[string]int, len(s.queries))
		for i := range gotPos {
			gotPos[i], gotNeg[i] = map[string]int{}, map[string]int{}
		}
		ecounts, err := cpu.Match(g, delta, s.queries, Enumerate, func(_, qi int, sign graph.Sign, m []graph.VertexID) {
			mu.Lock()
			defer mu.Unlock()
			if sign > 0 {
				gotPos[qi][mapKey(m)]++
			} else {
				gotNeg[qi][mapKey(m)]++
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		g.Reorganize()
		for qi, q := range s.queries {
			after := o.matches(q)
			wantPos := s.filter(q, minus(after, before[qi]))
			wantNeg := s.filter(q, minus(before[qi], after))
			where := fmt.Sprintf("%v batch %d query %d %v", s, bi, qi, describe(q))
			if counts[qi].Positive != countOf(len(wantPos)) || counts[qi].Negative != countOf(len(wantNeg)) {
				t.Fatalf("%s: count mode +%d -%d, oracle +%d -%d\nbatch %v", where, counts[qi].Positive, counts[qi].Negative, len(wantPos), len(wantNeg), batch)
			}
			if ecounts[qi] != counts[qi] {
				t.Fatalf("%s: enumerate counts %v differ from count mode %v", where, ecounts[qi], counts[qi])
			}
			compareSets(t, where+" ΔM+", gotPos[qi], wantPos)
			compareSets(t, where+" ΔM-", gotNeg[qi], wantNeg)
		}
	}
}

// filter keeps the maps that the query's semantics reports: all of them for
// embeddings, the symmetry-breaking representatives for instances.
func (s *scenario) filter(q *query.Query, ms map[string]bool) map[string]bool {
	if len(q.Less) == 0 {
		return ms
	}
	out := map[string]bool{}
	for k := range ms {
		m := splitKey(k)
		ok := true
		for _, lt := range q.Less {
			if m[lt[0]] >= m[lt[1]] {
				ok = false
			}
		}
		if ok {
			out[k] = true
		}
	}
	return out
}

func splitKey(k string) []uint32 {
	var out []uint32
	var cur uint32
	for i := 0; i <= len(k); i++ {
		if i == len(k) || k[i] == ',' {
			out = append(out, cur)
			cur = 0
			continue
		}
		cur = cur*10 + uint32(k[i]-'0')
	}
	return out
}

func minus(a, b map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		if !b[k] {
			out[k] = true
		}
	}
	return out
}

func compareSets(t *testing.T, where string, got map[string]int, want map[string]bool) {
	t.Helper()
	for k, n := range got {
		if n > 1 {
			t.Fatalf("%s: match %s emitted %d times", where, k, n)
		}
		if !want[k] {
			t.Fatalf("%s: emitted %s, which the oracle does not have", where, k)
		}
	}
	for k := range want {
		if got[k] == 0 {
			t.Fatalf("%s: missed %s", where, k)
		}
	}
}

func describe(q *query.Query) string {
	s := fmt.Sprintf("labels=%v edges=", q.Labels)
	for _, e := range q.Edges {
		s += fmt.Sprintf("(%d,%d,%d,%v)", e.A, e.B, e.Label, e.Directed)
	}
	return s
}

// TestOracle compares the engine with brute force on thousands of seeded
// scenarios: both directions, both semantics, insert-only, delete-only and
// mixed batches of 1 to 1000 updates.
func TestOracle(t *testing.T) {
	trials := 400
	if testing.Short() {
		trials = 60
	}
	kinds := []string{"insert", "delete", "mixed"}
	maxBatches := []int{1, 4, 32, 1000}
	for i := 0; i < trials; i++ {
		for _, dir := range []bool{false, true} {
			for _, sem := range []query.Semantics{query.Embeddings, query.Instances} {
				seed := uint64(i)
				s := newScenario(seed, dir, sem, kinds[i%3], maxBatches[(i/3)%4])
				s.check(t, 1+i%3)
			}
		}
	}
}

// TestInstancesAreClasses checks symmetry breaking against brute force:
// instances times the automorphism count equals embeddings, and the
// Grochow-Kellis group size equals the brute-force one.
func TestInstancesAreClasses(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 300; i++ {
		directed := i%2 == 0
		p := randomPattern(r, 2+r.IntN(5), []string{"A", "", "B"}, []string{"x", ""}, directed)
		d := graph.NewDict()
		q, err := query.Compile(p, d, directed, query.Instances)
		if err != nil {
			t.Fatal(err)
		}
		auts := bruteAutomorphisms(q)
		if uint64(len(auts)) != q.Automorphisms {
			t.Fatalf("%s: |Aut| = %d, brute force %d", describe(q), q.Automorphisms, len(auts))
		}
		// Of the |Aut| relabelings of any injective map, exactly one meets
		// the conditions: check on the identity-like map m(u) = u.
		kept := 0
		for _, a := range auts {
			ok := true
			for _, lt := range q.Less {
				if a[lt[0]] >= a[lt[1]] {
					ok = false
				}
			}
			if ok {
				kept++
			}
		}
		if kept != 1 {
			t.Fatalf("%s: %d of %d automorphic maps pass the symmetry conditions %v", describe(q), kept, len(auts), q.Less)
		}
	}
}
