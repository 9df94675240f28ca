package sampler

import (
	"cmp"
	"runtime"
	"slices"
	"sync"
)

// hotRec is a list key with its estimate, laid out so that ascending order
// is Hottest's: c is the complement of the estimate's bits (estimates are
// positive, so their bits order as they do), then the key.
type hotRec struct {
	c uint64
	k uint32
}

// radixMin is the fewest records sortHot sorts by radix: at 1,024 records
// a comparison sort is as fast (31 against 29 µs), and from a few thousand,
// as a house's batch of 64 rates, the radix sort is two to four times
// faster.
const radixMin = 1 << 10

// sortHot sorts recs into Hottest's order, using tmp and hist as scratch,
// writes their keys to keys, and returns the three for reuse. The records
// carry their estimate, so no comparison reads the estimate at random, and
// a least-significant-digit radix sort moves each a few times. Large sorts
// spread each pass over the cores: on one, the 0.5M records a 5-cycle's
// batch rates take tens of ms.
func sortHot(keys []uint32, recs, tmp []hotRec, hist []int) ([]hotRec, []hotRec, []int) {
	if len(recs) < radixMin {
		slices.SortFunc(recs, func(a, b hotRec) int {
			if c := cmp.Compare(a.c, b.c); c != 0 {
				return c
			}
			return cmp.Compare(a.k, b.k)
		})
	} else {
		tmp = slices.Grow(tmp[:0], len(recs))[:len(recs)]
		// Stable passes of 8 bits, least significant first: the key's
		// four, then the estimate's eight. Each of parts contiguous
		// chunks counts its digits, and scatters them in order after
		// the same digit's records in the chunks before it, so a pass
		// stays stable. A pass whose digit is the same in every record
		// moves nothing and is skipped.
		parts := 1
		if len(recs) >= parallelSort {
			parts = min(runtime.GOMAXPROCS(0), len(recs)/(parallelSort/4))
		}
		if len(hist) < parts<<8 {
			hist = make([]int, parts<<8)
		}
		for d := range 12 {
			inParts(parts, false, recs, nil, d, hist)
			if first := digit(recs[0], d); sumDigit(hist, parts, first) == len(recs) {
				continue
			}
			at := 0
			for x := range 1 << 8 {
				for p := range parts {
					c := hist[p<<8+x]
					hist[p<<8+x] = at
					at += c
				}
			}
			inParts(parts, true, recs, tmp, d, hist)
			recs, tmp = tmp, recs
		}
	}
	for i, r := range recs {
		keys[i] = r.k
	}
	return recs, tmp, hist
}

// parallelSort is the fewest records sortHot spreads over the cores, each
// taking at least a quarter of it.
const parallelSort = 1 << 16

// inParts runs a pass's counting (scatter false) or scattering on parts
// parts of src, on goroutines when there are several. It takes no closure,
// so that a sort in one part allocates nothing.
func inParts(parts int, scatter bool, src, dst []hotRec, d int, hist []int) {
	if parts == 1 {
		if scatter {
			scatterDigits(src, dst, 1, 0, d, hist)
		} else {
			countDigits(src, 1, 0, d, hist)
		}
		return
	}
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			if scatter {
				scatterDigits(src, dst, parts, p, d, hist)
			} else {
				countDigits(src, parts, p, d, hist)
			}
		})
	}
	wg.Wait()
}

// chunk is part p's share of n records.
func chunk(n, parts, p int) (lo, hi int) { return n * p / parts, n * (p + 1) / parts }

// countDigits counts digit d of part p's records into its 256 entries of
// hist.
func countDigits(recs []hotRec, parts, p, d int, hist []int) {
	n := hist[p<<8 : (p+1)<<8]
	clear(n)
	lo, hi := chunk(len(recs), parts, p)
	for _, r := range recs[lo:hi] {
		n[digit(r, d)]++
	}
}

// scatterDigits moves part p's records from src to dst, each to the next
// place hist gives its digit d.
func scatterDigits(src, dst []hotRec, parts, p, d int, hist []int) {
	n := hist[p<<8 : (p+1)<<8]
	lo, hi := chunk(len(src), parts, p)
	for _, r := range src[lo:hi] {
		x := digit(r, d)
		dst[n[x]] = r
		n[x]++
	}
}

// sumDigit is how many records of all parts have digit x.
func sumDigit(hist []int, parts int, x uint8) int {
	n := 0
	for p := range parts {
		n += hist[p<<8+int(x)]
	}
	return n
}

// digit is byte d of a record's sort key, 0 the least significant: bytes
// 0-3 are the key's, 4-11 the estimate's.
func digit(r hotRec, d int) uint8 {
	if d < 4 {
		return uint8(r.k >> (8 * d))
	}
	return uint8(r.c >> (8 * (d - 4)))
}
