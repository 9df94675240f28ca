package sampler

import (
	"cmp"
	"slices"
)

// hotRec is a list key with its estimate, laid out so that ascending order
// is Hottest's: c is the complement of the estimate's bits (estimates are
// positive, so their bits order as they do), then the key.
type hotRec struct {
	c uint64
	k uint32
}

// radixMin is the fewest records sortHot sorts by radix: below it a
// comparison sort is as fast. On the 2-core VM a comparison sort of 1,024
// records took 31 µs and the radix sort 29 µs; of 6,000, 0.53 ms against
// 0.18-0.25 ms, and of 32,768, 3.5 ms against 0.9 ms. The house's batch of
// 64 on a 2^27-edge R-MAT graph rates about 5,700 lists, whose comparison
// sort took 0.75-1.15 ms on the H100's host, when this bound was 32,768.
const radixMin = 1 << 10

// sortHot sorts recs into Hottest's order, using tmp and hist as scratch,
// writes their keys to keys, and returns the three for reuse. Sorting the
// keys with a comparison that looked their estimates up read two random
// entries of the estimate per comparison: on the H100's host, ranking the
// 0.2-0.6M lists a 5-cycle batch rated took 50-270 ms at 2^27 edges. The
// records carry their estimate, and a least-significant-digit radix sort
// moves each a few times.
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
		// four, then the estimate's eight. A pass whose digit is the same
		// in every record moves nothing and is skipped.
		if len(hist) < 1<<8 {
			hist = make([]int, 1<<8)
		}
		n := hist
		for d := range 12 {
			clear(n)
			for _, r := range recs {
				n[digit(r, d)]++
			}
			if n[digit(recs[0], d)] == len(recs) {
				continue
			}
			at := 0
			for i, c := range n {
				n[i] = at
				at += c
			}
			for _, r := range recs {
				x := digit(r, d)
				tmp[n[x]] = r
				n[x]++
			}
			recs, tmp = tmp, recs
		}
	}
	for i, r := range recs {
		keys[i] = r.k
	}
	return recs, tmp, hist
}

// digit is byte d of a record's sort key, 0 the least significant: bytes
// 0-3 are the key's, 4-11 the estimate's.
func digit(r hotRec, d int) uint8 {
	if d < 4 {
		return uint8(r.k >> (8 * d))
	}
	return uint8(r.c >> (8 * (d - 4)))
}
