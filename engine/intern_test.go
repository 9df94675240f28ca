package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
)

// TestInternSet interns a batch with sets under a window: a vertex set
// finds a vertex first named by an edge earlier in the batch or by an
// earlier batch, interns no new one, and needs no time; an edge set names
// no vertex.
func TestInternSet(t *testing.T) {
	c, err := New(Config{DefaultVertexLabel: "V", DefaultEdgeLabel: "E", Window: Window{Size: time.Hour}, Recycle: true})
	if err != nil {
		t.Fatal(err)
	}
	props := []graph.Prop{{Name: "status", Value: graph.StringValue("flagged")}}
	first := []Decoded{{Rec: ingest.Record{Op: graph.Insert, Src: "a", Dst: "b", Time: 1}}}
	c.Intern(first, false)
	if first[0].ResolveErr != nil {
		t.Fatal(first[0].ResolveErr)
	}
	dec := []Decoded{
		{Rec: ingest.Record{Op: graph.SetVertex, Src: "c", SrcProps: props, Line: 1}},          // before any edge names c
		{Rec: ingest.Record{Op: graph.Insert, Src: "b", Dst: "c", Time: 2, Line: 2}},           // names c
		{Rec: ingest.Record{Op: graph.SetVertex, Src: "c", SrcProps: props, Line: 3}},          // c is known now
		{Rec: ingest.Record{Op: graph.SetVertex, Src: "a", SrcProps: props, Time: 3, Line: 4}}, // known from the first batch
		{Rec: ingest.Record{Op: graph.SetEdge, ID: "tx-1", Props: props, Line: 5}},             // names no vertex
		{Rec: ingest.Record{Op: graph.Insert, Src: "c", Dst: "d", Line: 6}},                    // an edge without time: skipped
		{Rec: ingest.Record{Op: graph.SetVertex, Src: "d", SrcProps: props, Line: 7}},          // so d stays unknown
	}
	c.Intern(dec, false)
	if err := dec[0].ResolveErr; !errors.Is(err, graph.ErrUnknownVertex) || err.Error() != `line 1: set on unknown vertex "c"` {
		t.Errorf("set before c is named: %v", err)
	}
	ids := c.ids
	for _, i := range []int{2, 3} {
		d := dec[i]
		if d.ResolveErr != nil || d.U.Op != graph.SetVertex || ids.Name(d.U.Src) != d.Rec.Src || d.U.Tx == nil || len(d.U.Tx.SrcProps) != 1 {
			t.Errorf("set %d: %+v, %v", i+1, d.U, d.ResolveErr)
		}
	}
	if d := dec[4]; d.ResolveErr != nil || d.U.Op != graph.SetEdge || d.U.Tx == nil || d.U.Tx.ID != "tx-1" {
		t.Errorf("edge set: %+v, %v", d.U, d.ResolveErr)
	}
	if d := dec[5]; d.ResolveErr != nil || d.U.Op != 0 {
		t.Errorf("an edge without time under a window was resolved: %+v, %v", d.U, d.ResolveErr)
	}
	if !errors.Is(dec[6].ResolveErr, graph.ErrUnknownVertex) {
		t.Errorf("set on d, named only by a skipped edge: %v", dec[6].ResolveErr)
	}
	if ids.Len() != 3 {
		t.Errorf("%d ids, want a, b and c", ids.Len())
	}
}

// TestInternSetKeepsVertex hands on a vertex that batch 1 left without
// edges once batch 2 is interned: a set on it in batch 2 keeps it from
// being released, as an edge naming it would, while an edge set does not.
func TestInternSetKeepsVertex(t *testing.T) {
	for _, set := range []bool{false, true} {
		c, err := New(Config{DefaultVertexLabel: "V", DefaultEdgeLabel: "E", Window: Window{Size: time.Hour}, Recycle: true})
		if err != nil {
			t.Fatal(err)
		}
		b1 := []Decoded{{Rec: ingest.Record{Op: graph.Insert, Src: "a", Dst: "b", Time: 1}}}
		_, seq := c.Intern(b1, false)
		a := b1[0].U.Src
		b2 := []Decoded{{Rec: ingest.Record{Op: graph.SetEdge, ID: "t", Props: []graph.Prop{{Name: "x"}}}}}
		if set {
			b2[0].Rec = ingest.Record{Op: graph.SetVertex, Src: "a", SrcProps: []graph.Prop{{Name: "x"}}}
		}
		c.Intern(b2, false)
		if b2[0].ResolveErr != nil {
			t.Fatal(b2[0].ResolveErr)
		}
		c.recycle.hand(seq, []graph.VertexID{a})
		released, _ := c.Intern(nil, false)
		if got := len(released) == 1 && released[0] == a; got == set {
			t.Errorf("set on it %v: released %v", set, released)
		}
	}
}
