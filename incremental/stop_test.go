package incremental

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
)

// TestSetStop stops one query at once and another after some steps: the
// first finds nothing, the second at most what it finds unstopped, and the
// queries nobody stops find exactly their full counts, in both modes and
// with the batch split or not.
func TestSetStop(t *testing.T) {
	scenarios := mmScenarios(t)
	if len(scenarios) > 3 {
		scenarios = scenarios[:3]
	}
	// stopped counts the batches in which query 0 has matches to lose, so
	// the test cannot pass by finding nothing to stop.
	stopped := 0
	for _, s := range scenarios {
		if len(s.queries) < 3 {
			continue
		}
		for _, bs := range []int{1, 200} {
			s.replay(t, &CPU{Workers: 1}, bs, func(bi int, g *dyngraph.Graph, delta []graph.Change, _ []Counts) {
				for _, mode := range []Mode{Count, Enumerate} {
					where := fmt.Sprintf("%s, batch size %d, batch %d, mode %d", s, bs, bi, mode)
					var sink Sink
					if mode == Enumerate {
						sink = func(int, int, graph.Sign, []graph.VertexID) {}
					}
					full, err := (&CPU{Workers: 3}).Match(g, delta, s.queries, mode, sink)
					if err != nil {
						t.Fatal(err)
					}
					cpu := &CPU{Workers: 3}
					cpu.SetStop(stopFirstTwo())
					got, err := cpu.Match(g, delta, s.queries, mode, sink)
					if err != nil {
						t.Fatal(err)
					}
					if full[0] != (Counts{}) {
						stopped++
					}
					if got[0] != (Counts{}) {
						t.Fatalf("%s: query 0 stopped from the start found %+v", where, got[0])
					}
					if got[1].Positive.Cmp(full[1].Positive) > 0 || got[1].Negative.Cmp(full[1].Negative) > 0 {
						t.Fatalf("%s: stopped query 1 found %+v, more than unstopped %+v", where, got[1], full[1])
					}
					for qi := 2; qi < len(got); qi++ {
						if got[qi] != full[qi] {
							t.Fatalf("%s: query %d, never stopped, found %+v, want %+v", where, qi, got[qi], full[qi])
						}
					}
				}
			}, nil)
		}
	}
	if stopped == 0 {
		t.Fatal("no batch had matches of query 0 to stop")
	}
}

// TestStaticStop: Static honours SetStop as Match does. A query stopped from
// the start finds nothing, one stopped later at most its full count, and the
// others exactly theirs.
func TestStaticStop(t *testing.T) {
	scenarios := mmScenarios(t)
	if len(scenarios) > 3 {
		scenarios = scenarios[:3]
	}
	lost := 0
	for _, s := range scenarios {
		if len(s.queries) < 3 {
			continue
		}
		g := s.load(t)
		full, err := (&CPU{Workers: 2}).Static(g, s.queries, Count, nil)
		if err != nil {
			t.Fatal(err)
		}
		cpu := &CPU{Workers: 2}
		cpu.SetStop(stopFirstTwo())
		got, err := cpu.Static(g, s.queries, Count, nil)
		g.Close()
		if err != nil {
			t.Fatal(err)
		}
		if !full[0].IsZero() {
			lost++
		}
		if !got[0].IsZero() {
			t.Errorf("%s: query 0 stopped from the start found %d of %d", s, got[0], full[0])
		}
		if got[1].Cmp(full[1]) > 0 {
			t.Errorf("%s: stopped query 1 found %d, more than its full %d", s, got[1], full[1])
		}
		for qi := 2; qi < len(got); qi++ {
			if got[qi] != full[qi] {
				t.Errorf("%s: query %d, never stopped, found %d, want %d", s, qi, got[qi], full[qi])
			}
		}
	}
	if lost == 0 {
		t.Fatal("no scenario's query 0 had matches to lose; the test checks nothing")
	}
}

// stopFirstTwo stops query 0 from the start and query 1 after it has been
// asked twice; the others run to the end.
func stopFirstTwo() func(q int) bool {
	var asked atomic.Int64
	return func(q int) bool {
		switch q {
		case 0:
			return true
		case 1:
			return asked.Add(1) > 2
		}
		return false
	}
}
