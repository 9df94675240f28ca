// Package par runs a loop's iterations on all cores.
package par

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// RangeSize is the most indexes Range hands f at a time.
const RangeSize = 64

// Each calls f(0..n-1) on all cores; small n stays on the caller's
// goroutine, where starting goroutines would cost more than it saves.
func Each(n int, f func(i int)) {
	Range(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			f(i)
		}
	})
}

// Range calls f on ranges [lo, hi) of at most RangeSize indexes that cover
// 0..n-1, on all cores, as Each does.
func Range(n int, f func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if n < 512 || workers == 1 {
		for lo := 0; lo < n; lo += RangeSize {
			f(lo, min(lo+RangeSize, n))
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				lo := int(next.Add(RangeSize)) - RangeSize
				if lo >= n {
					return
				}
				f(lo, min(lo+RangeSize, n))
			}
		})
	}
	wg.Wait()
}
