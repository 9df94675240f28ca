package service

import (
	"context"
	"fmt"
	"testing"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/output"
)

// eventFixture returns a service with testConfig's queries registered, and per query matches of
// distinct accounts whose first edge a one-message batch changed, so that each event has a source.
func eventFixture(tb testing.TB, matches int) (*Service, *batchState, map[string][][]graph.VertexID) {
	cfg := testConfig(tb, []string{"127.0.0.1:1"}) // New does not connect
	s, err := New(Options{Config: cfg})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.close)
	if err := s.registerConfigured(context.Background()); err != nil {
		tb.Fatal(err)
	}
	batch := &batchState{
		msgs:      []ingest.Message{{Partition: 0, Offset: 100}},
		msgTime:   []int64{1764000000000},
		ranges:    map[int][2]int64{0: {100, 4195}},
		changedBy: map[edgeKey]int{},
	}
	all := map[string][][]graph.VertexID{}
	for _, st := range s.queries {
		n := st.q.N()
		for i := range matches {
			m := make([]graph.VertexID, n)
			for j := range m {
				// Reversed name order, so that the canonical order is not the engine's.
				if m[j], _, err = s.ids.Intern(fmt.Sprintf("%s:%d", st.cfg.Name, i*n+n-j)); err != nil {
					tb.Fatal(err)
				}
			}
			e := st.q.Edges[0]
			batch.changedBy[s.key(graph.Edge{Src: m[e.A], Dst: m[e.B], Label: e.Label})] = 0
			all[st.cfg.Name] = append(all[st.cfg.Name], m)
		}
	}
	return s, batch, all
}

// TestEventAllocs bounds the allocations of building one event: the match, the edges, the key, the
// source, the event time and, for the canonical order, the vertices' names and their reordering.
func TestEventAllocs(t *testing.T) {
	s, batch, all := eventFixture(t, 1)
	for _, st := range s.queries {
		m := all[st.cfg.Name][0]
		if n := testing.AllocsPerRun(100, func() { s.event(batch, st, output.Appeared, m, false) }); n > 7 {
			t.Errorf("%s: an event costs %v allocations, want at most 7", st.cfg.Name, n)
		}
	}
}

// BenchmarkEvent measures building one match event on the service side, the step before a sink encodes
// it: the vertices' names, the canonical order among automorphisms, the edges, the source offsets, the
// event time and the key. ns/op is per event; ring3 has 3 automorphisms to compare, split 2.
func BenchmarkEvent(b *testing.B) {
	const matches = 4096
	s, batch, all := eventFixture(b, matches)
	for _, st := range s.queries {
		b.Run(st.cfg.Name, func(b *testing.B) {
			ms := all[st.cfg.Name]
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				ev := s.event(batch, st, output.Appeared, ms[i%matches], false)
				if ev.Source == nil {
					b.Fatal("event without its source")
				}
				i++
			}
		})
	}
}
