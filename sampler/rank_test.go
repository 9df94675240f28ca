package sampler

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortHot: the radix sort and the comparison sort both give Hottest's
// order (descending estimate, ties by key), with many ties and estimates
// spread over many exponents.
func TestSortHot(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var recs, tmp []hotRec
	var hist []int
	for _, n := range []int{0, 1, 17, radixMin - 1, radixMin, 3 * radixMin, parallelSort, 3*parallelSort + 7} {
		cnt := make([]float64, 4*n+1)
		keys := r.Perm(len(cnt))[:n]
		ks := make([]uint32, n)
		for i, k := range keys {
			ks[i] = uint32(k)
			switch r.IntN(3) {
			case 0:
				cnt[k] = float64(r.IntN(5) + 1) // ties
			case 1:
				cnt[k] = r.Float64() * 1e-3
			default:
				cnt[k] = r.ExpFloat64() * 1e12
			}
		}
		want := slices.Clone(ks)
		slices.SortFunc(want, func(a, b uint32) int {
			switch {
			case cnt[a] > cnt[b]:
				return -1
			case cnt[a] < cnt[b]:
				return 1
			}
			return int(a) - int(b)
		})
		recs = recs[:0]
		for _, k := range ks {
			recs = append(recs, hotRec{^math.Float64bits(cnt[k]), k})
		}
		recs, tmp, hist = sortHot(ks, recs, tmp, hist)
		if !slices.Equal(ks, want) {
			t.Fatalf("%d keys: sorted differently from the comparison sort", n)
		}
	}
}

func BenchmarkSortHot(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const n = 1 << 19
	cnt := make([]float64, 1<<23)
	keys := make([]uint32, n)
	for i := range keys {
		keys[i] = uint32(r.IntN(len(cnt)))
		cnt[keys[i]] = r.ExpFloat64() * 1e9
	}
	ks := make([]uint32, n)
	var recs, tmp, in []hotRec
	var hist []int
	for _, k := range keys {
		in = append(in, hotRec{^math.Float64bits(cnt[k]), k})
	}
	for b.Loop() {
		recs = append(recs[:0], in...)
		recs, tmp, hist = sortHot(ks, recs, tmp, hist)
	}
}
