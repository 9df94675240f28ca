package par

import (
	"sync/atomic"
	"testing"
)

// TestRangeCovers: every index is handed out once, in ranges of at most
// RangeSize, whether the loop stays on the caller or spreads.
func TestRangeCovers(t *testing.T) {
	for _, n := range []int{0, 1, 63, 64, 65, 511, 512, 10_000} {
		seen := make([]atomic.Int32, n)
		Range(n, func(lo, hi int) {
			if hi-lo > RangeSize || lo >= hi {
				t.Errorf("n=%d: range [%d, %d)", n, lo, hi)
			}
			for i := lo; i < hi; i++ {
				seen[i].Add(1)
			}
		})
		var sum atomic.Int64
		Each(n, func(i int) { sum.Add(int64(i)) })
		for i := range seen {
			if c := seen[i].Load(); c != 1 {
				t.Fatalf("n=%d: index %d handed out %d times", n, i, c)
			}
		}
		if want := int64(n) * int64(n-1) / 2; sum.Load() != want {
			t.Fatalf("n=%d: Each summed %d, want %d", n, sum.Load(), want)
		}
	}
}
