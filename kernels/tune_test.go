package kernels

import (
	"math"
	"testing"
	"time"

	"github.com/gcsm/gcsm/sampler"
)

// The walk budget moves half way (in log scale) towards the one that would
// have made the estimate take the asked share of the match.
func TestNextWalkBudget(t *testing.T) {
	// 1 µs per step, 10 ns per node: 5% of the match buys 0.0005 steps per
	// node; clamped to the floor 0.001, then half way from the default.
	got := nextWalkBudget(0, 0.05, 100*time.Millisecond, 100_000, time.Second, 1e8)
	if want := math.Sqrt(sampler.DefaultBudget * minWalkBudget); math.Abs(got-want) > 1e-12 {
		t.Fatalf("from the default: got %v, want %v", got, want)
	}
	// Repeated batches at the same speeds converge on the target.
	b := 0.0
	for range 40 {
		b = nextWalkBudget(b, 0.05, 100*time.Millisecond, 100_000, 20*time.Second, 1e8)
	}
	if want := 0.05 * (20.0 / 1e8) / (0.1 / 100_000); math.Abs(b-want)/want > 1e-6 {
		t.Fatalf("after 40 batches: got %v, want %v", b, want)
	}
	// A slow kernel never asks for more than one step per node.
	if got := nextWalkBudget(1, 0.05, time.Millisecond, 1000, time.Hour, 10); got != 1 {
		t.Fatalf("ceiling: got %v, want 1", got)
	}
	// Nothing measured: the budget stays.
	for _, c := range []struct {
		est, match time.Duration
		steps      int64
		nodes      float64
	}{{0, time.Second, 10, 10}, {time.Second, 0, 10, 10}, {time.Second, time.Second, 0, 10}, {time.Second, time.Second, 10, 0}} {
		if got := nextWalkBudget(0.02, 0.05, c.est, c.steps, c.match, c.nodes); got != 0.02 {
			t.Errorf("%+v: got %v, want the budget unchanged", c, got)
		}
	}
}
