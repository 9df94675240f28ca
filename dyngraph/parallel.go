package dyngraph

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// parallelMin is the default of Graph.parallelMin, the number of independent items (updates of a batch,
// touched lists) below which a step of Apply or Reorganize runs on the
// calling goroutine: starting workers costs microseconds, about what a few
// hundred list operations cost, and small batches (down to one update in
// per-update mode) must not pay it.
const parallelMin = 512

// scratch is one worker's buffers for sorting and merging lists.
type scratch struct {
	pairs pairs    // sortPart's sorter, kept to avoid an allocation
	keys  []uint64 // sortPart's key buffer
	ids   []uint32 // merge buffer
	lbls  []uint32
}

func (g *Graph) workers() int {
	if g.opts.Workers > 0 {
		return g.opts.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// scratches returns n workers' buffers; the first is the serial paths'.
func (g *Graph) scratches(n int) []scratch {
	for len(g.scr) < n {
		g.scr = append(g.scr, scratch{})
	}
	return g.scr[:n]
}

// each calls f, a method expression so that the serial path allocates
// nothing, on consecutive ranges that together cover [0, n), with a
// worker's own scratch. Below g.parallelMin items, or with one worker, it is
// one call on the calling goroutine. Otherwise the ranges are handed out in
// small chunks as workers ask for them, because on power-law graphs the
// cost of a list varies by orders of magnitude.
func (g *Graph) each(n int, f func(g *Graph, s *scratch, lo, hi int)) {
	// runtime.GOMAXPROCS takes a lock: one update at a time, asking it
	// for every small batch's every step showed in the profile.
	if n < g.parallelMin {
		f(g, &g.scratches(1)[0], 0, n)
		return
	}
	w := min(g.workers(), max(1, 2*n/g.parallelMin))
	if w <= 1 {
		f(g, &g.scratches(1)[0], 0, n)
		return
	}
	chunk := max(32, n/(8*w))
	var next atomic.Int64
	var wg sync.WaitGroup
	scr := g.scratches(w)
	for i := range scr {
		s := &scr[i]
		wg.Go(func() {
			for {
				hi := int(next.Add(int64(chunk)))
				lo := hi - chunk
				if lo >= n {
					return
				}
				f(g, s, lo, min(hi, n))
			}
		})
	}
	wg.Wait()
}
