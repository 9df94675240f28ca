package service

import (
	"context"
	"fmt"
	"testing"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/output"
)

// BenchmarkEvent measures building one match event on the service side, the step before a sink encodes
// it: the vertices' names, the canonical order among automorphisms, the edges, the source offsets, the
// event time and the key. ns/op is per event; ring3 has 3 automorphisms to compare, split 2.
func BenchmarkEvent(b *testing.B) {
	cfg := testConfig(b, []string{"127.0.0.1:1"}) // New does not connect
	s, err := New(Options{Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.close)
	if err := s.registerConfigured(context.Background()); err != nil {
		b.Fatal(err)
	}
	const matches = 4096
	for _, st := range s.queries {
		b.Run(st.cfg.Name, func(b *testing.B) {
			n := st.q.N()
			ms := make([][]graph.VertexID, matches)
			batch := &batchState{
				msgs:      []ingest.Message{{Partition: 0, Offset: 100}},
				msgTime:   []int64{1764000000000},
				ranges:    map[int][2]int64{0: {100, 4195}},
				changedBy: map[edgeKey]int{},
			}
			for i := range ms {
				m := make([]graph.VertexID, n)
				for j := range m {
					// Reversed name order, so that the canonical order is not the engine's.
					if m[j], _, err = s.ids.Intern(fmt.Sprintf("acct:%d", i*n+n-j)); err != nil {
						b.Fatal(err)
					}
				}
				e := st.q.Edges[0]
				batch.changedBy[s.key(graph.Edge{Src: m[e.A], Dst: m[e.B], Label: e.Label})] = 0
				ms[i] = m
			}
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
