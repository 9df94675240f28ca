package dyngraph

import (
	"bytes"
	"math/rand/v2"
	"slices"
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

// TestRelabelled keeps copies of VertexLabels as of several label epochs and
// brings each up to date from Relabelled, as the GPU does, across random
// births with random labels (new ids and ids forgotten before) and
// forgettings: each must equal VertexLabels. A copy older than the graph
// remembers is refused.
func TestRelabelled(t *testing.T) {
	g, err := New(Options{Directed: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	type copyOf struct {
		labels []graph.Label
		epoch  uint64
	}
	var copies []copyOf
	snapshot := func() {
		copies = append(copies, copyOf{slices.Clone(g.VertexLabels()), g.LabelEpoch()})
	}
	snapshot()
	const nv = 300
	for batch := range 200 {
		var us []graph.Update
		for range 1 + r.IntN(40) {
			a, b := graph.VertexID(r.IntN(nv)), graph.VertexID(r.IntN(nv))
			if a != b {
				// A random label: a new vertex takes it, an existing one
				// of another label rejects the update.
				us = append(us, graph.Update{Op: graph.Insert, Src: a, Dst: b, SrcLabel: graph.Label(1 + r.IntN(3)), DstLabel: graph.Label(1 + r.IntN(3))})
			}
		}
		if _, _, _, err := g.Apply(us); err != nil {
			t.Fatal(err)
		}
		g.Reorganize()
		// Delete some vertices' edges and forget them, so that their ids
		// are born again later.
		var dels []graph.Update
		for range r.IntN(20) {
			v := graph.VertexID(r.IntN(g.NumVertices()))
			for _, w := range g.Out(v).Sorted {
				dels = append(dels, graph.Update{Op: graph.Delete, Src: v, Dst: w & IDMask, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
			}
			for _, w := range g.In(v).Sorted {
				dels = append(dels, graph.Update{Op: graph.Delete, Src: w & IDMask, Dst: v, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
			}
		}
		if _, _, _, err := g.Apply(dels); err != nil {
			t.Fatal(err)
		}
		g.Reorganize()
		for v := range graph.VertexID(nv) {
			if g.Isolated(v) && r.IntN(2) == 0 {
				if err := g.Forget(v); err != nil {
					t.Fatal(err)
				}
			}
		}
		if batch%25 == 0 {
			snapshot()
		}
	}
	want := g.VertexLabels()
	for i, c := range copies {
		vs, ok := g.Relabelled(nil, c.epoch)
		if !ok {
			t.Fatalf("copy %d (epoch %d of %d): refused", i, c.epoch, g.LabelEpoch())
		}
		got := slices.Grow(c.labels, len(want)-len(c.labels))[:len(want)]
		copy(got[len(c.labels):], want[len(c.labels):])
		for _, v := range vs {
			got[v] = want[v]
		}
		if !slices.Equal(got, want) {
			t.Fatalf("copy %d (epoch %d) brought up to date differs from VertexLabels", i, c.epoch)
		}
	}
	// Past maxRelabels changes the oldest copy can no longer catch up.
	for i := 0; g.LabelEpoch()-copies[0].epoch <= maxRelabels; i++ {
		v := graph.VertexID(nv + i)
		if _, _, _, err := g.Apply([]graph.Update{{Op: graph.Insert, Src: v, Dst: 0, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}}); err != nil {
			t.Fatal(err)
		}
		g.Reorganize()
	}
	if _, ok := g.Relabelled(nil, copies[0].epoch); ok {
		t.Fatal("a copy older than the graph remembers was not refused")
	}
	if _, ok := g.Relabelled(nil, g.LabelEpoch()); !ok {
		t.Fatal("a current copy was refused")
	}
}
