package sampler

import (
	"math"
	"math/bits"
	"math/rand/v2"
)

// rng is one random stream. Every update edge gets its own, derived from the
// seed, the pass and the edge's index in ΔE, so that an estimate does not
// depend on which worker walked which edge or in what order.
//
// It wraps math/rand/v2's PCG by value: rand.New would allocate a Rand per
// stream, and the walk reseeds a stream per update edge.
type rng struct {
	src rand.PCG
	// The last set-ups: the roots of a pass all draw Bin(M, 1/|ΔE|), and
	// exp and log1p are most of an inversion's cost.
	inv invSetup
	bt  btpeSetup
}

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

// below is uniform on [0, n), n > 0, by Lemire's multiply-and-reject, which
// is exact and needs one division only when the first draw is rejected.
func (r *rng) below(n uint64) uint64 {
	hi, lo := bits.Mul64(r.src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(r.src.Uint64(), n)
		}
	}
	return hi
}

// binomial draws from Bin(n, p) exactly: as n Bernoulli trials for n <= 16,
// by inversion (sequential search of the CDF from 0) when n·min(p, 1-p) < 30, which takes about n·p+1 steps, and
// otherwise by Kachitvichyanukul and Schmeiser's BTPE rejection sampler
// (CACM 31(2), 1988), whose expected cost is a small constant for any n. The
// split at 30 and the BTPE code follow NumPy's random_binomial, corrections
// for v == 0 included.
func (r *rng) binomial(n uint64, p float64) uint64 {
	switch {
	case n == 0 || !(p > 0):
		return 0
	case p >= 1:
		return n
	case p > 0.5:
		// 1-p is exact for p in (0.5, 1) (Sterbenz), so this is the same
		// law; both methods want the smaller tail probability.
		return n - r.binomial(n, 1-p)
	}
	if n <= 16 {
		// Most nodes hold a few walks, and p changes from node to node: n
		// Bernoulli trials are cheaper than inversion's exp and log1p.
		x := uint64(0)
		for range n {
			if r.float64() < p {
				x++
			}
		}
		return x
	}
	if float64(n)*p < 30 {
		return r.inversion(n, p)
	}
	return r.btpe(n, p)
}

// invSetup is inversion's set-up for one (n, p).
type invSetup struct {
	n        uint64
	p        float64
	qn, s, a float64
}

// inversion walks the CDF of Bin(n, p), p <= 0.5 and n·p < 30. P(0) =
// (1-p)^n is at least e^-45 there, so it never underflows. A uniform that
// rounding leaves above the whole mass restarts the draw.
func (r *rng) inversion(n uint64, p float64) uint64 {
	in := &r.inv
	if in.n != n || in.p != p {
		in.n, in.p = n, p
		in.qn = math.Exp(float64(n) * math.Log1p(-p))
		in.s = p / (1 - p)
		in.a = float64(n+1) * in.s
	}
	for {
		u := r.float64()
		px := in.qn
		x := uint64(0)
		for u > px {
			u -= px
			x++
			if x > n {
				break
			}
			// P(x)/P(x-1) = (n-x+1)/x · p/q
			px *= in.a/float64(x) - in.s
		}
		if x <= n {
			return x
		}
	}
}

// btpeSetup is BTPE's set-up for one (n, p), kept because consecutive draws
// usually share it.
type btpeSetup struct {
	n                                                   uint64
	p                                                   float64
	r, q, fm, p1, xm, xl, xr, c, laml, lamr, p2, p3, p4 float64
	m                                                   int64
}

func (b *btpeSetup) setup(n uint64, p float64) {
	nf := float64(n)
	b.n, b.p = n, p
	b.r = min(p, 1-p)
	b.q = 1 - b.r
	b.fm = nf*b.r + b.r
	b.m = int64(math.Floor(b.fm))
	b.p1 = math.Floor(2.195*math.Sqrt(nf*b.r*b.q)-4.6*b.q) + 0.5
	b.xm = float64(b.m) + 0.5
	b.xl = b.xm - b.p1
	b.xr = b.xm + b.p1
	b.c = 0.134 + 20.5/(15.3+float64(b.m))
	a := (b.fm - b.xl) / (b.fm - b.xl*b.r)
	b.laml = a * (1 + a/2)
	a = (b.xr - b.fm) / (b.xr * b.q)
	b.lamr = a * (1 + a/2)
	b.p2 = b.p1 * (1 + 2*b.c)
	b.p3 = b.p2 + b.c/b.laml
	b.p4 = b.p3 + b.c/b.lamr
}

// btpe draws from Bin(n, p) for p <= 0.5 and n·p >= 30. The majorising
// function is a triangle in the middle, two parallelograms beside it and
// exponential tails; most draws are accepted in the triangle with two
// uniforms and no logarithm.
func (r *rng) btpe(n uint64, p float64) uint64 {
	b := &r.bt
	if b.n != n || b.p != p {
		b.setup(n, p)
	}
	nf := float64(n)
	nrq := nf * b.r * b.q
	for {
		u := r.float64() * b.p4
		v := r.float64()
		var y int64
		switch {
		case u <= b.p1: // triangle: accept outright
			return uint64(int64(math.Floor(b.xm - b.p1*v + u)))
		case u <= b.p2: // parallelograms
			x := b.xl + (u-b.p1)/b.c
			v = v*b.c + 1 - math.Abs(float64(b.m)-x+0.5)/b.p1
			if v > 1 {
				continue
			}
			y = int64(math.Floor(x))
		case u <= b.p3: // left exponential tail
			y = int64(math.Floor(b.xl + math.Log(v)/b.laml))
			if y < 0 || v == 0 {
				continue
			}
			v = v * (u - b.p2) * b.laml
		default: // right exponential tail
			y = int64(math.Floor(b.xr - math.Log(v)/b.lamr))
			if y > int64(n) || v == 0 {
				continue
			}
			v = v * (u - b.p3) * b.lamr
		}
		k := y - b.m
		if k < 0 {
			k = -k
		}
		if k <= 20 || float64(k) >= nrq/2-1 {
			// Near the mode or far out: evaluate f(y)/f(m) by recursion.
			s := b.r / b.q
			a := s * (nf + 1)
			f := 1.0
			if b.m < y {
				for i := b.m + 1; i <= y; i++ {
					f *= a/float64(i) - s
				}
			} else if b.m > y {
				for i := y + 1; i <= b.m; i++ {
					f /= a/float64(i) - s
				}
			}
			if v > f {
				continue
			}
			return uint64(y)
		}
		// Squeeze on log f(y)/f(m), then the Stirling-corrected bound.
		kf := float64(k)
		rho := (kf / nrq) * ((kf*(kf/3+0.625)+0.16666666666666666)/nrq + 0.5)
		t := -kf * kf / (2 * nrq)
		A := math.Log(v)
		if A < t-rho {
			return uint64(y)
		}
		if A > t+rho {
			continue
		}
		x1 := float64(y + 1)
		f1 := float64(b.m + 1)
		z := nf + 1 - float64(b.m)
		w := nf - float64(y) + 1
		bound := b.xm*math.Log(f1/x1) + (nf-float64(b.m)+0.5)*math.Log(z/w) +
			float64(y-b.m)*math.Log(w*b.r/(x1*b.q)) +
			stirling(f1) + stirling(z) + stirling(x1) + stirling(w)
		if A > bound {
			continue
		}
		return uint64(y)
	}
}

// stirling is the tail of Stirling's series for log x! used by BTPE's final
// acceptance test.
func stirling(x float64) float64 {
	x2 := x * x
	return (13680 - (462-(132-(99-140/x2)/x2)/x2)/x2) / x / 166320
}
