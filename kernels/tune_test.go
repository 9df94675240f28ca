package kernels

import (
	"math"
	"testing"
	"time"

	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/sampler"
)

// The walks per update edge move the estimate's time towards its target,
// along the slope of the last two estimates, within bounds.
func TestNextWalkCap(t *testing.T) {
	for _, c := range []struct {
		last, prev walkStep
		want       float64
	}{
		{walkStep{1000, math.Pow(2, defaultGamma)}, walkStep{}, 500},       // one estimate: γ's default
		{walkStep{1000, math.Pow(0.2, defaultGamma)}, walkStep{}, 5000},    // under: more walks
		{walkStep{4000, 2}, walkStep{1000, 1}, 1000},                       // time √walks: a quarter to halve it
		{walkStep{2000, 8}, walkStep{1000, 1}, 250},                        // steeper than walks: as if in proportion
		{walkStep{1e6, 2}, walkStep{1000, 1}, 1e6 / 16},                    // flat: γ at least 1/4
		{walkStep{2000, 2}, walkStep{1000, 4}, 2000 * math.Pow(2, -1/0.7)}, // out of order: the default
		{walkStep{1050, 2}, walkStep{1000, 1}, 1050 * math.Pow(2, -1/0.7)}, // too close: the default
		{walkStep{1e6, 1e9}, walkStep{}, 1e6 / 4096},                       // far over: by 4096 at most
		{walkStep{1000, 1e-9}, walkStep{}, 64000},                          // far under: by 64 at most
		{walkStep{100, 1e3}, walkStep{}, sampler.MinWalks},                 // never under MinWalks
		{walkStep{1000, 0}, walkStep{}, 1000},                              // nothing measured
		{walkStep{1000, math.Inf(1)}, walkStep{}, 1000},
	} {
		if got := nextWalkCap(c.last, c.prev); math.Abs(got-c.want) > 1e-9*c.want {
			t.Errorf("nextWalkCap(%+v, %+v) = %v, want %v", c.last, c.prev, got, c.want)
		}
	}
}

// A set's kernel is short when its last one, scaled to the batch's edges,
// took less than the minimum; a set not run yet is not.
func TestShortKernel(t *testing.T) {
	a, b := &query.Query{}, &query.Query{}
	w := walkCaps{}
	qa := []*query.Query{a}
	if w.short(qa, 64, time.Millisecond) {
		t.Fatal("a set not run yet is short")
	}
	w[w.key(qa)] = walkCap{kernel: 500 * time.Microsecond, kernelEdges: 64}
	for _, c := range []struct {
		qs    []*query.Query
		edges int
		min   time.Duration
		want  bool
	}{
		{qa, 64, time.Millisecond, true},
		{qa, 127, time.Millisecond, true},
		{qa, 128, time.Millisecond, false}, // twice the edges: 1 ms
		{qa, 64, 500 * time.Microsecond, false},
		{qa, 64, -1, false},                          // never
		{[]*query.Query{a, b}, 64, time.Hour, false}, // another set
	} {
		if got := w.short(c.qs, c.edges, c.min); got != c.want {
			t.Errorf("short(%d queries, %d edges, %v) = %v, want %v", len(c.qs), c.edges, c.min, got, c.want)
		}
	}
}

// Caps are kept per set of queries, and scale with the square root of the
// batch.
func TestWalkCaps(t *testing.T) {
	a, b := &query.Query{}, &query.Query{}
	w := walkCaps{}
	if got := w.maxWalks([]*query.Query{a}, 64, 0); got != 0 {
		t.Fatalf("no cap yet: got %d, want 0", got)
	}
	if got := w.maxWalks([]*query.Query{a}, 64, 256); got != 64*256 {
		t.Fatalf("no cap yet, first 256: got %d, want %d", got, 64*256)
	}
	w[w.key([]*query.Query{a})] = walkCap{perEdge: 10, edges: 64}
	if got := w.maxWalks([]*query.Query{a}, 64, 256); got != 640 {
		t.Fatalf("cap for {a}: got %d, want 640", got)
	}
	// Four times the edges: twice the walks, not four times.
	if got := w.maxWalks([]*query.Query{a}, 256, 256); got != 1280 {
		t.Fatalf("cap for {a} at 256 edges: got %d, want 1280", got)
	}
	if got := w.maxWalks([]*query.Query{a}, 16, 256); got != 320 {
		t.Fatalf("cap for {a} at 16 edges: got %d, want 320", got)
	}
	for _, qs := range [][]*query.Query{{b}, {a, b}, {b, a}} {
		if got := w.maxWalks(qs, 64, 0); got != 0 {
			t.Fatalf("another set of queries took {a}'s cap %d", got)
		}
	}
}
