package sampler

import (
	"testing"

	"github.com/gcsm/gcsm/graph"
)

// TestCutCache: the remembered label ranges are the searched ones, on hits,
// on collisions (a table far smaller than the cuts) and after a reset.
func TestCutCache(t *testing.T) {
	g, _, d, err := buildPowerLaw(10, 6000, 64, 5, []float64{0.5, 0.3, 0.2})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ord := g.Order()
	labels := []graph.Label{d.Intern("L0"), d.Intern("L1"), d.Intern("L2")}
	var c cutCache
	c.init(3) // eight slots: cuts of one part under different labels collide
	long, hits := 0, 0
	for round := range 3 {
		if round == 2 {
			c.reset()
			for i, s := range c.slots {
				if s.gen == c.gen {
					t.Fatalf("after a reset, slot %d is still current", i)
				}
			}
		}
		for v := range g.NumVertices() {
			part := g.Out(graph.VertexID(v)).Sorted
			if len(part) >= cutMinLen {
				long++
			}
			for _, l := range labels {
				lo, hi := ord.Range(part, l)
				if glo, ghi := c.rangeOf(ord, part, l); glo != lo || ghi != hi {
					t.Fatalf("round %d, vertex %d, label %d: cut [%d, %d), searched [%d, %d)", round, v, l, glo, ghi, lo, hi)
				}
			}
		}
		for _, s := range c.slots {
			if s.gen == c.gen {
				hits++
			}
		}
	}
	if long == 0 || hits == 0 {
		t.Fatalf("%d long parts, %d slots in use: the test did not reach the cache", long, hits)
	}
}
