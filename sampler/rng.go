package sampler

import (
	"math"
	"math/rand/v2"
)

// rng is one random stream. Every update edge gets its own, derived from the
// seed, the pass and the edge's index in ΔE, so that an estimate does not
// depend on which worker walked which edge or in what order.
//
// It wraps math/rand/v2's PCG by value: rand.New would allocate a Rand per
// stream, and the walk reseeds a stream per update edge.
type rng struct{ src rand.PCG }

// mix is SplitMix64's finaliser: it turns (seed, stream) pairs that differ in
// a few low bits into unrelated PCG states.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// seed starts stream (pass, index) of seed.
func (r *rng) seed(seed uint64, pass int, index int) {
	a := mix(seed)
	r.src.Seed(mix(a^uint64(pass)<<48), mix(a+uint64(index)*0x2545f4914f6cdd1d))
}

// float64 is uniform on [0, 1) with 53 random bits.
func (r *rng) float64() float64 { return float64(r.src.Uint64()>>11) * 0x1p-53 }

// round returns ⌊x⌋ or ⌈x⌉, the latter with probability x-⌊x⌋: x in
// expectation, with a variance under 1/4. A root's walks are drawn so
// rather than as the paper's Bin(M, 1/|ΔE|), whose spread (√B when each
// root gets B) weighs every subtree by chance before its own sampling. On
// TestCoverage's 2^12-vertex power-law graph the 4-cycle boosted by 8
// (Options.Boost) covered 0.78 of the top 1% with the draw and 0.95 with
// the rounding; unboosted, 0.89 and 0.92.
func (r *rng) round(x float64) uint64 {
	f := math.Floor(x)
	if r.float64() < x-f {
		f++
	}
	return uint64(f)
}
