package kernels

import (
	"testing"
	"time"

	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/sampler"
)

// The walks per update edge scale by how far the estimate was from its
// share of the match, within bounds.
func TestNextWalkCap(t *testing.T) {
	for _, c := range []struct {
		walks           float64
		estimate, match time.Duration
		want            float64
	}{
		{1000, 100 * time.Millisecond, time.Second, 500},       // 10% of the match: halve
		{1000, 10 * time.Millisecond, time.Second, 5000},       // 1%: five times the walks
		{1e6, 100 * time.Millisecond, time.Millisecond, 500},   // 2000 times over: the full step
		{1e6, time.Hour, time.Millisecond, 1e6 / 4096},         // further: by 4096 at most
		{1000, time.Nanosecond, time.Hour, 64000},              // far under: by 64 at most
		{100, 10 * time.Second, time.Second, sampler.MinWalks}, // never under MinWalks
		{1000, 0, time.Second, 1000},                           // nothing measured
		{1000, time.Second, 0, 1000},
	} {
		if got := nextWalkCap(c.walks, 0.05, c.estimate, c.match); got != c.want {
			t.Errorf("nextWalkCap(%v walks, estimate %v, match %v) = %v, want %v", c.walks, c.estimate, c.match, got, c.want)
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
