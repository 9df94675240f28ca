package incremental

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
)

// TestMatchUnits: the units of the first k changes, every term, give what
// Match gives on delta[:k], in both modes, match for match; a unit out of
// range is an error.
func TestMatchUnits(t *testing.T) {
	scenarios := mmScenarios(t)
	if len(scenarios) > 3 {
		scenarios = scenarios[:3]
	}
	checked := 0
	for _, s := range scenarios {
		s.replay(t, &CPU{Workers: 1}, 200, func(bi int, g *dyngraph.Graph, delta []graph.Change, _ []Counts) {
			k := len(delta) / 2
			var units []Unit
			for qi, q := range s.queries {
				for tm := range q.Terms {
					for c := range k {
						units = append(units, Unit{qi, tm, c})
					}
				}
			}
			for _, mode := range []Mode{Count, Enumerate} {
				where := fmt.Sprintf("%s, batch %d, mode %d", s, bi, mode)
				var mu sync.Mutex
				got := map[string]int{}
				want := map[string]int{}
				sink := func(into map[string]int) Sink {
					if mode != Enumerate {
						return nil
					}
					return func(_, q int, sign graph.Sign, m []graph.VertexID) {
						mu.Lock()
						into[fmt.Sprint(q, sign, m)]++
						mu.Unlock()
					}
				}
				wantC, err := (&CPU{Workers: 2}).Match(g, delta[:k], s.queries, mode, sink(want))
				if err != nil {
					t.Fatal(err)
				}
				gotC, err := (&CPU{Workers: 3}).MatchUnits(g, delta, s.queries, units, mode, sink(got))
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(gotC, wantC) {
					t.Fatalf("%s: MatchUnits %v, Match on the first %d changes %v", where, gotC, k, wantC)
				}
				if len(got) != len(want) {
					t.Fatalf("%s: MatchUnits emitted %d distinct matches, Match %d", where, len(got), len(want))
				}
				for m, n := range got {
					if want[m] != n {
						t.Fatalf("%s: %s emitted %d times by MatchUnits, %d by Match", where, m, n, want[m])
					}
				}
				if wantC[0] != (Counts{}) {
					checked++
				}
			}
		}, nil)
	}
	if checked == 0 {
		t.Fatal("no batch had matches: the test compared nothing")
	}
	s := scenarios[0]
	s.replay(t, &CPU{Workers: 1}, 200, func(bi int, g *dyngraph.Graph, delta []graph.Change, _ []Counts) {
		if bi > 0 {
			return
		}
		if _, err := (&CPU{}).MatchUnits(g, delta, s.queries, []Unit{{0, 0, len(delta)}}, Count, nil); err == nil {
			t.Error("a unit past the last change was accepted")
		}
	}, nil)
}
