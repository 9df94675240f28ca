package incremental

import (
	"testing"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// TestExpandAllocs: expanding a vertex map into its transfers allocates
// nothing once warm, as it runs for every candidate match.
func TestExpandAllocs(t *testing.T) {
	d := graph.NewDict()
	label := d.Intern("T")
	p, err := query.ParseCypher("w", "(a)-[t1:T]->(b)-[t2:T]->(a) WHERE t1.amount > 1 AND t1.ts < t2.ts")
	if err != nil {
		t.Fatal(err)
	}
	q, err := query.Compile(p, d, true, query.Embeddings)
	if err != nil {
		t.Fatal(err)
	}
	g, err := dyngraph.New(dyngraph.Options{Directed: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s := bundle.New(true)
	b := &Binder{Store: s}
	b.Register([]*query.Query{q})
	var batch []graph.Update
	for i, e := range [][2]graph.VertexID{{0, 1}, {0, 1}, {1, 0}, {1, 0}} {
		batch = append(batch, graph.Update{Op: graph.Insert, Src: e[0], Dst: e[1], Label: label, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel,
			Tx: &graph.Transfer{ID: string(rune('a' + i)), Time: int64(1000 * (i + 1)),
				Props: []graph.Prop{{Name: "amount", Value: graph.NumberValue(float64(i + 2))}}}})
	}
	if _, _, _, err := g.ApplyFolded(batch, s); err != nil {
		t.Fatal(err)
	}
	plans, err := b.plan(g, []*query.Query{q})
	if err != nil {
		t.Fatal(err)
	}
	b.prepare(1)
	x, _ := b.expander(0)
	m := []graph.VertexID{0, 1}
	if n := x.expand(g, plans[0], graph.Positive, false, m); n != 4 {
		t.Fatalf("%d matches, want 4", n)
	}
	if a := testing.AllocsPerRun(100, func() { x.expand(g, plans[0], graph.Positive, false, m) }); a != 0 {
		t.Fatalf("expand allocates %v times", a)
	}
}
