package dyngraph

import (
	"bytes"
	"testing"

	"github.com/gcsm/gcsm/graph"
)

// TestForget: a vertex can be forgotten only without edges and between
// batches; its id is then born again with another label, which a vertex
// that exists could not take (a label conflict), and LabelEpoch moves at
// both steps.
func TestForget(t *testing.T) {
	for _, directed := range []bool{false, true} {
		g, err := New(Options{Directed: directed})
		if err != nil {
			t.Fatal(err)
		}
		a, b := graph.Label(1), graph.Label(2)
		apply := func(us ...graph.Update) []Reject {
			t.Helper()
			_, rej, _, err := g.Apply(us)
			if err != nil {
				t.Fatal(err)
			}
			return rej
		}
		apply(graph.Update{Op: graph.Insert, Src: 0, Dst: 1, SrcLabel: a, DstLabel: a})
		if err := g.Forget(0); err == nil {
			t.Fatal("Forget while pending")
		}
		g.Reorganize()
		if g.Isolated(0) || g.Forget(1) == nil {
			t.Fatalf("directed=%v: vertex 1 with an edge is isolated %v or forgotten", directed, g.Isolated(1))
		}
		apply(graph.Update{Op: graph.Delete, Src: 0, Dst: 1, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
		g.Reorganize()
		if !g.Isolated(0) || !g.Isolated(1) {
			t.Fatalf("directed=%v: after the delete 0 isolated %v, 1 isolated %v", directed, g.Isolated(0), g.Isolated(1))
		}
		if rej := apply(graph.Update{Op: graph.Insert, Src: 0, Dst: 2, SrcLabel: b, DstLabel: a}); len(rej) != 1 {
			t.Fatalf("directed=%v: relabelling a vertex that exists was not refused: %v", directed, rej)
		}
		g.Reorganize()
		epoch, born := g.LabelEpoch(), g.Born()
		if err := g.Forget(0); err != nil {
			t.Fatal(err)
		}
		if g.LabelEpoch() == epoch || g.Born() != born-1 || g.Isolated(0) {
			t.Fatalf("directed=%v: after Forget epoch %d (was %d), born %d (was %d)", directed, g.LabelEpoch(), epoch, g.Born(), born)
		}
		if err := g.Forget(0); err != nil {
			t.Fatalf("forgetting twice: %v", err)
		}
		if rej := apply(graph.Update{Op: graph.Insert, Src: 0, Dst: 2, SrcLabel: b, DstLabel: a}); len(rej) != 0 {
			t.Fatalf("directed=%v: the forgotten id reborn with another label was refused: %v", directed, rej)
		}
		if g.VertexLabels()[0] != b {
			t.Fatalf("directed=%v: reborn vertex has label %d, want %d", directed, g.VertexLabels()[0], b)
		}
		g.Reorganize()
		g.Close()
	}
}

// TestForgetCheckpoint: a graph whose vertices were forgotten, the last
// ones included, round-trips through a checkpoint with the same vertices,
// labels and edges.
func TestForgetCheckpoint(t *testing.T) {
	for _, directed := range []bool{false, true} {
		g, err := New(Options{Directed: directed})
		if err != nil {
			t.Fatal(err)
		}
		var us []graph.Update
		for v := range graph.VertexID(10) {
			us = append(us, graph.Update{Op: graph.Insert, Src: v, Dst: (v + 1) % 10, SrcLabel: graph.Label(v % 2), DstLabel: graph.Label((v + 1) % 2)})
		}
		if _, _, _, err := g.Apply(us); err != nil {
			t.Fatal(err)
		}
		g.Reorganize()
		// Cut the ring at 7-8, 8-9 and 9-0: 8 and 9, the last, are left alone.
		var del []graph.Update
		for _, v := range []graph.VertexID{7, 8, 9} {
			del = append(del, graph.Update{Op: graph.Delete, Src: v, Dst: (v + 1) % 10, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
		}
		if _, _, _, err := g.Apply(del); err != nil {
			t.Fatal(err)
		}
		g.Reorganize()
		for _, v := range []graph.VertexID{8, 9} {
			if !g.Isolated(v) {
				t.Fatalf("directed=%v: %d is not isolated", directed, v)
			}
			if err := g.Forget(v); err != nil {
				t.Fatal(err)
			}
		}
		var buf bytes.Buffer
		if _, err := g.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		h, err := Read(bytes.NewReader(buf.Bytes()), Options{Directed: directed})
		if err != nil {
			t.Fatalf("directed=%v: %v", directed, err)
		}
		if h.Born() != 8 || h.NumEdges() != g.NumEdges() || h.Isolated(8) || h.Isolated(9) {
			t.Fatalf("directed=%v: loaded %d vertices, %d edges; want 8, %d", directed, h.Born(), h.NumEdges(), g.NumEdges())
		}
		for v := range graph.VertexID(8) {
			if h.VertexLabels()[v] != g.VertexLabels()[v] || len(h.Out(v).Sorted) != len(g.Out(v).Sorted) {
				t.Fatalf("directed=%v: vertex %d differs after the load", directed, v)
			}
		}
		g.Close()
		h.Close()
	}
}
