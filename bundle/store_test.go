package bundle_test

import (
	"errors"
	"testing"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
)

func newGraph(t testing.TB) (*dyngraph.Graph, *bundle.Store) {
	t.Helper()
	g, err := dyngraph.New(dyngraph.Options{Directed: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	s := bundle.New(true)
	s.EdgeColumn("amount")
	return g, s
}

func tx(op graph.Op, src, dst graph.VertexID, id string, amount float64) graph.Update {
	u := graph.Update{Op: op, Src: src, Dst: dst, Label: 0, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}
	if id != "" || amount != 0 {
		u.Tx = &graph.Transfer{ID: id}
		if amount != 0 {
			u.Tx.Props = []graph.Prop{{Name: "amount", Value: graph.NumberValue(amount)}}
		}
	}
	return u
}

// view lists pair e's transfers in v as "id:amount" strings, marking those
// the batch changed with a star.
func view(s *bundle.Store, e graph.Edge, v bundle.View) []string {
	var out []string
	s.Each(e, v, func(t bundle.Tx, changed bool) bool {
		x := s.ID(t) + ":" + s.Value(t, 0).String()
		if t == bundle.Implicit {
			x = "implicit"
		}
		if changed {
			x += "*"
		}
		out = append(out, x)
		return true
	})
	return out
}

func step(t testing.TB, g *dyngraph.Graph, s *bundle.Store, batch ...graph.Update) ([]graph.Change, []dyngraph.Reject) {
	t.Helper()
	delta, rej, _, err := g.ApplyFolded(batch, s)
	if err != nil {
		t.Fatal(err)
	}
	return append([]graph.Change(nil), delta...), append([]dyngraph.Reject(nil), rej...)
}

func settle(g *dyngraph.Graph, s *bundle.Store) {
	s.Settle()
	g.Reorganize()
}

func same(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, x := range a {
		seen[x]++
	}
	for _, x := range b {
		seen[x]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

func TestParallelTransfers(t *testing.T) {
	g, s := newGraph(t)
	e := graph.Edge{Src: 1, Dst: 2}

	// Two transfers on a new pair: the pair is inserted once.
	delta, _ := step(t, g, s, tx(graph.Insert, 1, 2, "a", 10), tx(graph.Insert, 1, 2, "b", 20))
	if len(delta) != 1 || delta[0].Sign != graph.Positive {
		t.Fatalf("first batch ΔE = %v, want the pair inserted once", delta)
	}
	if got := view(s, e, bundle.After); !same(got, []string{"a:10*", "b:20*"}) {
		t.Fatalf("after: %v", got)
	}
	settle(g, s)

	// A third transfer and a replaced one: the pair is renewed (in ΔE
	// deleted and inserted), the old view keeps a:10 and the new has a:11.
	delta, _ = step(t, g, s, tx(graph.Insert, 1, 2, "c", 30), tx(graph.Insert, 1, 2, "a", 11))
	if len(delta) != 2 || delta[0].Sign != graph.Negative || delta[1].Sign != graph.Positive {
		t.Fatalf("renewing batch ΔE = %v, want - then + of the pair", delta)
	}
	if got := view(s, e, bundle.Before); !same(got, []string{"a:10*", "b:20"}) {
		t.Fatalf("before: %v", got)
	}
	if got := view(s, e, bundle.After); !same(got, []string{"a:11*", "b:20", "c:30*"}) {
		t.Fatalf("after: %v", got)
	}
	settle(g, s)

	// Re-sending a transfer with the same content is a refresh: no change.
	delta, _ = step(t, g, s, tx(graph.Insert, 1, 2, "b", 20))
	if len(delta) != 0 {
		t.Fatalf("refresh ΔE = %v, want none", delta)
	}
	settle(g, s)

	// Deleting one of three keeps the pair; deleting the rest removes it.
	delta, _ = step(t, g, s, tx(graph.Delete, 1, 2, "b", 0))
	if len(delta) != 2 {
		t.Fatalf("delete of one parallel transfer: ΔE = %v, want the pair renewed", delta)
	}
	settle(g, s)
	delta, _ = step(t, g, s, tx(graph.Delete, 1, 2, "a", 0), tx(graph.Delete, 1, 2, "c", 0))
	if len(delta) != 1 || delta[0].Sign != graph.Negative || g.HasEdge(1, 2, 0) {
		t.Fatalf("deleting the last transfers: ΔE = %v, edge present %v", delta, g.HasEdge(1, 2, 0))
	}
	settle(g, s)
	if s.Len() != 0 || s.Pairs() != 0 {
		t.Fatalf("store keeps %d transfers on %d pairs after all were deleted", s.Len(), s.Pairs())
	}
}

func TestInsertDeleteInOneBatch(t *testing.T) {
	g, s := newGraph(t)
	step(t, g, s, tx(graph.Insert, 1, 2, "a", 10))
	settle(g, s)
	// b comes and goes inside the batch: in neither view, and the pair is
	// not renewed.
	delta, _ := step(t, g, s, tx(graph.Insert, 1, 2, "b", 5), tx(graph.Delete, 1, 2, "b", 0))
	if len(delta) != 0 {
		t.Fatalf("ΔE = %v, want none", delta)
	}
	e := graph.Edge{Src: 1, Dst: 2}
	if got := view(s, e, bundle.After); !same(got, []string{"a:10"}) {
		t.Fatalf("after: %v", got)
	}
	settle(g, s)
}

func TestIDLessDeleteRemovesThePair(t *testing.T) {
	g, s := newGraph(t)
	step(t, g, s, tx(graph.Insert, 1, 2, "a", 1), tx(graph.Insert, 1, 2, "b", 2), tx(graph.Insert, 1, 2, "", 3))
	settle(g, s)
	delta, _ := step(t, g, s, tx(graph.Delete, 1, 2, "", 0))
	if len(delta) != 1 || delta[0].Sign != graph.Negative {
		t.Fatalf("ΔE = %v, want the pair deleted", delta)
	}
	if got := view(s, graph.Edge{Src: 1, Dst: 2}, bundle.Before); !same(got, []string{"a:1*", "b:2*", ":3*"}) {
		t.Fatalf("before: %v", got)
	}
	settle(g, s)
}

func TestMovedIDRefused(t *testing.T) {
	g, s := newGraph(t)
	step(t, g, s, tx(graph.Insert, 1, 2, "a", 1))
	settle(g, s)
	delta, rej := step(t, g, s, tx(graph.Insert, 3, 4, "a", 1), tx(graph.Insert, 3, 4, "b", 1))
	var moved *bundle.MovedError
	if len(rej) != 1 || rej[0].Index != 0 || !errors.As(rej[0].Err, &moved) || moved.ID != "a" {
		t.Fatalf("rejects = %v, want update 0 refused with a MovedError for a", rej)
	}
	if len(delta) != 1 || delta[0].Src != 3 {
		t.Fatalf("ΔE = %v, want only 3->4 inserted", delta)
	}
	if got := view(s, graph.Edge{Src: 1, Dst: 2}, bundle.After); !same(got, []string{"a:1"}) {
		t.Fatalf("the refused update changed a's transfer: %v", got)
	}
	settle(g, s)
}

func TestImplicitPair(t *testing.T) {
	// A pair the graph had before the store saw it has one implicit
	// transfer; a transfer with an id joins it.
	g, s := newGraph(t)
	if _, _, _, err := g.Apply([]graph.Update{tx(graph.Insert, 1, 2, "", 0)}); err != nil {
		t.Fatal(err)
	}
	g.Reorganize()
	e := graph.Edge{Src: 1, Dst: 2}
	if got := view(s, e, bundle.After); !same(got, []string{"implicit"}) {
		t.Fatalf("unknown pair: %v", got)
	}
	delta, _ := step(t, g, s, tx(graph.Insert, 1, 2, "a", 7))
	if len(delta) != 2 {
		t.Fatalf("ΔE = %v, want the pair renewed", delta)
	}
	if got := view(s, e, bundle.After); !same(got, []string{":null", "a:7*"}) {
		t.Fatalf("after: %v", got)
	}
	settle(g, s)
}

func TestVertexPropertiesOnlyWhileBare(t *testing.T) {
	g, s := newGraph(t)
	c := s.VertexColumn("country")
	u := tx(graph.Insert, 1, 2, "a", 1)
	u.Tx.SrcProps = []graph.Prop{{Name: "country", Value: graph.StringValue("DE")}}
	step(t, g, s, u)
	settle(g, s)
	u = tx(graph.Insert, 1, 3, "b", 1)
	u.Tx.SrcProps = []graph.Prop{{Name: "country", Value: graph.StringValue("FR")}}
	u.Tx.DstProps = []graph.Prop{{Name: "country", Value: graph.StringValue("IT")}}
	step(t, g, s, u)
	settle(g, s)
	if got := s.VertexValue(1, c); got.Str != "DE" {
		t.Errorf("vertex 1 country = %v, want the first value DE", got)
	}
	if got := s.VertexValue(3, c); got.Str != "IT" {
		t.Errorf("vertex 3 country = %v, want IT (it had no edges)", got)
	}
}

func TestExpire(t *testing.T) {
	g, s := newGraph(t)
	at := func(u graph.Update, ms int64) graph.Update { u.Tx.Time = ms; return u }
	step(t, g, s, at(tx(graph.Insert, 1, 2, "a", 1), 1000), at(tx(graph.Insert, 1, 2, "b", 2), 5000), at(tx(graph.Insert, 2, 3, "c", 3), 2000))
	settle(g, s)
	// a is refreshed (same content) at 6000: no query reads times, so its
	// time moves on and it outlives b.
	step(t, g, s, at(tx(graph.Insert, 1, 2, "a", 1), 6000))
	settle(g, s)
	exp := s.Expire(5500, nil)
	var ids []string
	for _, u := range exp {
		if u.Op != graph.Delete || u.Tx == nil {
			t.Fatalf("expiry update %+v", u)
		}
		ids = append(ids, u.Tx.ID)
	}
	if !same(ids, []string{"b", "c"}) {
		t.Fatalf("expired %v, want b and c", ids)
	}
	delta, _ := step(t, g, s, exp...)
	settle(g, s)
	if len(delta) != 3 || !g.HasEdge(1, 2, 0) || g.HasEdge(2, 3, 0) {
		t.Fatalf("ΔE %v: want 1->2 renewed and 2->3 deleted", delta)
	}
	if got := view(s, graph.Edge{Src: 1, Dst: 2}, bundle.After); !same(got, []string{"a:1"}) {
		t.Fatalf("after expiry: %v", got)
	}
	if again := s.Expire(5500, nil); len(again) != 0 {
		t.Fatalf("expired twice: %v", again)
	}
}

// TestNotASlot: the markers for bindings without a transfer read as empty,
// not as an index out of range.
func TestNotASlot(t *testing.T) {
	_, s := newGraph(t)
	for _, x := range []bundle.Tx{bundle.Implicit, bundle.Implicit - 1, 12345} {
		if s.ID(x) != "" || s.Time(x) != 0 || s.Value(x, 0).Kind != graph.Null {
			t.Errorf("slot %d reads as something", x)
		}
	}
}
