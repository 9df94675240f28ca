package cache

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/sampler"
)

// naiveKeep is what Reads keeps, written out from the rule: the list of v
// is read at label l when some query edge joins a query vertex v can match
// (its label or a wildcard) to one of label l (or a wildcard).
func naiveKeep(g *dyngraph.Graph, qs []*query.Query) keeper {
	return func(v graph.VertexID, l graph.Label) bool {
		lv := g.VertexLabel(v)
		for _, q := range qs {
			for _, e := range q.Edges {
				for _, uw := range [2][2]int{{e.A, e.B}, {e.B, e.A}} {
					lu, lw := q.Labels[uw[0]], q.Labels[uw[1]]
					if (lu == graph.Wildcard || lu == lv) && (lw == graph.Wildcard || lw == l) {
						return true
					}
				}
			}
		}
		return false
	}
}

// keepsAll reports whether keep keeps every entry of every list of g.
func keepsAll(g *dyngraph.Graph, keep keeper, nvl int) bool {
	for v := range g.NumVertices() {
		for l := range nvl {
			if !keep(graph.VertexID(v), graph.Label(l)) {
				return false
			}
		}
	}
	return true
}

// randomLabeledQueries draws one to three connected queries of two to five
// vertices whose labels are the dictionary's "0" to "3", "9" (which no
// vertex has) and, when wild, wildcards.
func randomLabeledQueries(t *testing.T, r *rand.Rand, d *graph.Dict, directed, wild bool) []*query.Query {
	t.Helper()
	names := []string{"0", "1", "2", "3", "9"}
	var qs []*query.Query
	for len(qs) < 1+r.IntN(3) {
		n := 2 + r.IntN(4)
		p := &query.Pattern{Name: fmt.Sprint("q", len(qs))}
		for i := range n {
			v := query.Vertex{Name: fmt.Sprint("v", i), Label: names[r.IntN(len(names))]}
			if wild && r.IntN(6) == 0 {
				v = query.Vertex{Name: v.Name, Wildcard: true}
			}
			p.Vertices = append(p.Vertices, v)
		}
		for i := 1; i < n; i++ {
			p.Edges = append(p.Edges, query.Edge{From: r.IntN(i), To: i, Wildcard: true, Directed: directed})
		}
		q, err := query.Compile(p, d, directed, query.Embeddings)
		if err != nil {
			t.Fatal(err)
		}
		qs = append(qs, q)
	}
	return qs
}

// TestReadsTrim packs random graphs of four vertex labels for random query
// sets, with and without wildcards, and checks every list of the block
// against the lists filtered by naiveKeep, and Pack's choice against the
// greedy rule on the filtered lengths.
func TestReadsTrim(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	d := graph.NewDict()
	for l := range 4 {
		d.Intern(strconv.Itoa(l)) // labels 0-3 are the graph's
	}
	trimmed := 0
	for _, directed := range []bool{false, true} {
		for _, multi := range []bool{false, true} {
			g, _ := labeledGraph(t, r, directed, multi, 300, 3000, 4)
			var b Block
			for trial := range 30 {
				where := fmt.Sprintf("%s trial %d", describe(directed, multi), trial)
				qs := randomLabeledQueries(t, r, d, directed, trial%3 == 0)
				reads := NewReads(g, qs)
				keep := naiveKeep(g, qs)
				all := keepsAll(g, keep, 4)
				if reads == nil && !all {
					t.Fatalf("%s: NewReads is nil, yet the queries do not read every entry", where)
				}
				if reads == nil {
					keep = nil
				}
				if !all {
					trimmed++
				}
				keys := make([]uint32, 0, sampler.NumKeys(g))
				for k := range sampler.NumKeys(g) {
					keys = append(keys, uint32(k))
				}
				r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
				budget := r.Int64N(4*blockWords(g, nonEmpty(g)) + 100)
				checkPack(t, where, &b, g, keys, budget, reads, keep)
			}
		}
	}
	if trimmed < 40 {
		t.Fatalf("only %d of 120 query sets trimmed any list", trimmed)
	}
}

// TestReadsWhole: one vertex label, or wildcards everywhere, leave every
// list whole.
func TestReadsWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	d := graph.NewDict()
	for l := range 4 {
		d.Intern(strconv.Itoa(l))
	}
	one, _ := randomGraph(t, r, false, false, 50, 200)
	if reads := NewReads(one, randomLabeledQueries(t, r, d, false, false)); reads != nil {
		t.Errorf("a graph of one vertex label trims its lists")
	}
	four, _ := labeledGraph(t, r, false, false, 50, 200, 4)
	p := &query.Pattern{Name: "wild", Vertices: []query.Vertex{{Name: "a", Wildcard: true}, {Name: "b", Label: "1"}}, Edges: []query.Edge{{From: 0, To: 1, Wildcard: true}}}
	q, err := query.Compile(p, d, false, query.Embeddings)
	if err != nil {
		t.Fatal(err)
	}
	// a reads b's label 1 from every list, and b reads everything.
	reads := NewReads(four, []*query.Query{q})
	if reads == nil {
		t.Fatalf("(*)-(1) trims nothing: the lists of labels 0, 2 and 3 need only label 1")
	}
	for v := range four.NumVertices() {
		a := four.Out(graph.VertexID(v))
		want := len(a.Sorted) + len(a.Appended)
		if four.VertexLabel(graph.VertexID(v)) != 1 {
			want = keptLen(four, uint32(v), func(_ graph.VertexID, l graph.Label) bool { return l == 1 })
		}
		if got := reads.listLen(four, uint32(v)); got != want {
			t.Fatalf("vertex %d of label %d: %d entries kept, want %d", v, four.VertexLabel(graph.VertexID(v)), got, want)
		}
	}
	// The same Reads on a graph of one vertex label, whose lists are
	// sorted by id alone, leaves them whole.
	for v := range one.NumVertices() {
		a := one.Out(graph.VertexID(v))
		if got, want := reads.listLen(one, uint32(v)), len(a.Sorted)+len(a.Appended); got != want {
			t.Fatalf("one label, vertex %d: %d entries kept of %d", v, got, want)
		}
	}
	p.Vertices[1] = query.Vertex{Name: "b", Wildcard: true}
	if q, err = query.Compile(p, d, false, query.Embeddings); err != nil {
		t.Fatal(err)
	}
	if NewReads(four, []*query.Query{q}) != nil {
		t.Errorf("(*)-(*) trims lists")
	}
}

// TestReadsMemo packs one graph for one query set batch after batch, with
// the lists changing between the batches (insertions, deletions, merges),
// so that the cuts a Reads remembers go stale: every block must still hold
// exactly what the queries read.
func TestReadsMemo(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	d := graph.NewDict()
	for l := range 4 {
		d.Intern(strconv.Itoa(l))
	}
	// One span per label: 0 reads 1 and 2, 1 reads 0, 2 reads 0.
	qs := []*query.Query{compile(t, d, "(a:0)-[]-(b:1), (a)-[]-(c:2)", false)}
	const nv = 400
	g, _ := labeledGraph(t, r, false, false, nv, 6000, 4)
	reads, keep := NewReads(g, qs), naiveKeep(g, qs)
	all := make([]uint32, nv)
	for k := range all {
		all[k] = uint32(k)
	}
	var b Block
	remembered := 0
	for round := range 12 {
		where := fmt.Sprintf("round %d", round)
		if _, err := Pack(&b, g, all, 1<<30, reads); err != nil {
			t.Fatal(err)
		}
		checkBlock(t, where, &b, g, greedy(g, all, 1<<30, keep), keep)
		remembered = 0
		for _, m := range reads.memo {
			if m.key != 0 {
				remembered++
			}
		}
		g.Reorganize()
		var batch []graph.Update
		for range 300 {
			a, c := uint32(r.IntN(nv/8)), uint32(r.IntN(nv)) // hubs gain and lose most
			if a == c {
				continue
			}
			op := graph.Insert
			if r.IntN(2) == 0 {
				if adj := g.Out(a); len(adj.Sorted) > 0 {
					op, c = graph.Delete, adj.Sorted[r.IntN(len(adj.Sorted))]&dyngraph.IDMask
				}
			}
			batch = append(batch, edge(op, a, c, 0))
		}
		if _, _, _, err := g.Apply(batch); err != nil {
			t.Fatal(err)
		}
	}
	if remembered < nv/4 {
		t.Fatalf("the Reads remembers %d cuts of %d lists", remembered, nv)
	}
}
