package sampler

import (
	"math"
	"testing"
)

// TestBinomialMoments checks mean and variance of many draws against np and
// np(1-p), within five standard errors, on both methods and both sides of
// p = 1/2.
func TestBinomialMoments(t *testing.T) {
	cases := []struct {
		n     uint64
		p     float64
		draws int
	}{
		{1, 0.5, 100000},
		{7, 0.5, 100000},
		{20, 0.1, 100000},         // inversion
		{1000, 0.01, 100000},      // inversion, n·p = 10
		{100, 0.29, 100000},       // inversion, n·p = 29
		{100, 0.31, 100000},       // BTPE, n·p = 31
		{1000, 0.2, 100000},       // BTPE
		{50, 0.7, 100000},         // 1-p: inversion
		{1000, 0.9, 100000},       // 1-p: BTPE
		{1 << 20, 1e-3, 100000},   // BTPE, far from the set-up's n
		{1e9, 1e-3, 100000},       // large n
		{1 << 40, 0.5, 50000},     // huge n
		{4096, 1.0 / 4096, 1e5},   // a root's draw with M = |ΔE|
		{3e6, 1.0 / 4096, 100000}, // a root's draw with the paper's M
	}
	var r rng
	r.seed(1, 0, 0)
	for _, c := range cases {
		n := float64(c.n)
		mu, sigma2 := n*c.p, n*c.p*(1-c.p)
		// Sums of deviations from np: squares of draws near 2^39 would
		// lose the variance to rounding.
		var sum, sum2 float64
		for range c.draws {
			x := r.binomial(c.n, c.p)
			if x > c.n {
				t.Fatalf("Bin(%d, %v) drew %d", c.n, c.p, x)
			}
			f := float64(x) - mu
			sum += f
			sum2 += f * f
		}
		nd := float64(c.draws)
		mean := mu + sum/nd
		vr := (sum2 - sum*sum/nd) / (nd - 1)
		if se := math.Sqrt(sigma2 / nd); math.Abs(mean-mu) > 5*se {
			t.Errorf("Bin(%d, %v): mean %v, want %v ± %v", c.n, c.p, mean, mu, 5*se)
		}
		// The sample variance's standard error: sqrt((μ4 - σ⁴)/N), with the
		// binomial's central fourth moment μ4 = npq(1 + 3(n-2)pq).
		pq := c.p * (1 - c.p)
		mu4 := n * pq * (1 + 3*(n-2)*pq)
		// (Zero for Bernoulli(1/2), whose sample variance still moves by
		// O(σ²/N).)
		if se := math.Sqrt((mu4-sigma2*sigma2)/nd) + 10*sigma2/nd; math.Abs(vr-sigma2) > 5*se {
			t.Errorf("Bin(%d, %v): variance %v, want %v ± %v", c.n, c.p, vr, sigma2, 5*se)
		}
	}
}

// TestBinomialEdges: the degenerate cases return at once.
func TestBinomialEdges(t *testing.T) {
	var r rng
	r.seed(2, 0, 0)
	for range 100 {
		if x := r.binomial(0, 0.5); x != 0 {
			t.Fatalf("Bin(0, .5) = %d", x)
		}
		if x := r.binomial(10, 0); x != 0 {
			t.Fatalf("Bin(10, 0) = %d", x)
		}
		if x := r.binomial(10, 1); x != 10 {
			t.Fatalf("Bin(10, 1) = %d", x)
		}
		if x := r.binomial(1<<50, 1); x != 1<<50 {
			t.Fatalf("Bin(2^50, 1) = %d", x)
		}
		if x := r.binomial(10, math.NaN()); x != 0 {
			t.Fatalf("Bin(10, NaN) = %d", x)
		}
	}
}

// TestBinomialDistribution is a chi-square test of whole distributions
// against the exact probability mass function, for each method: moments
// alone would miss a misplaced region of BTPE's hat.
func TestBinomialDistribution(t *testing.T) {
	cases := []struct {
		n uint64
		p float64
	}{
		{100, 0.05},  // inversion
		{60, 0.5},    // BTPE, small
		{500, 0.3},   // BTPE
		{5000, 0.02}, // BTPE, skewed
		{80, 0.8},    // BTPE on 1-p
	}
	const draws = 200000
	var r rng
	r.seed(3, 0, 0)
	for _, c := range cases {
		obs := make([]float64, c.n+1)
		for range draws {
			obs[r.binomial(c.n, c.p)]++
		}
		// Bins with expectation under 5 are merged with their neighbours.
		var chi2, e, o float64
		df := -1
		for x := uint64(0); x <= c.n; x++ {
			e += draws * pmf(c.n, c.p, x)
			o += obs[x]
			if e >= 5 {
				chi2 += (o - e) * (o - e) / e
				df++
				e, o = 0, 0
			}
		}
		if e > 0 {
			chi2 += (o - e) * (o - e) / max(e, 1e-300)
		}
		// χ² has mean df and sd sqrt(2df); 6 sd is a p-value near 1e-6.
		if limit := float64(df) + 6*math.Sqrt(2*float64(df)); chi2 > limit {
			t.Errorf("Bin(%d, %v): χ² = %.1f over %d degrees of freedom (limit %.1f)", c.n, c.p, chi2, df, limit)
		}
	}
}

func pmf(n uint64, p float64, x uint64) float64 {
	lg := func(v float64) float64 { l, _ := math.Lgamma(v); return l }
	nf, xf := float64(n), float64(x)
	return math.Exp(lg(nf+1) - lg(xf+1) - lg(nf-xf+1) + xf*math.Log(p) + (nf-xf)*math.Log1p(-p))
}

// TestBelow: uniform over [0, n) including n that do not divide 2^64.
func TestBelow(t *testing.T) {
	var r rng
	r.seed(4, 0, 0)
	for _, n := range []uint64{1, 3, 7, 1000} {
		cnt := make([]float64, n)
		const draws = 100000
		for range draws {
			x := r.below(n)
			if x >= n {
				t.Fatalf("below(%d) = %d", n, x)
			}
			cnt[x]++
		}
		e := float64(draws) / float64(n)
		var chi2 float64
		for _, o := range cnt {
			chi2 += (o - e) * (o - e) / e
		}
		df := float64(n - 1)
		if chi2 > df+6*math.Sqrt(2*df)+1 {
			t.Errorf("below(%d): χ² = %.1f over %v degrees of freedom", n, chi2, df)
		}
	}
}

var sink uint64

func BenchmarkBinomial(b *testing.B) {
	for _, c := range []struct {
		name string
		n    uint64
		p    float64
	}{
		{"inversion-np1", 4096, 1.0 / 4096},
		{"inversion-np20", 2000, 0.01},
		{"btpe-np700", 3e6, 1.0 / 4096},
		{"btpe-np1e6", 1e9, 1e-3},
	} {
		b.Run(c.name, func(b *testing.B) {
			var r rng
			r.seed(5, 0, 0)
			for range b.N {
				sink += r.binomial(c.n, c.p)
			}
		})
	}
}

// TestU128: the accumulators add and multiply exactly and saturate instead
// of wrapping.
func TestU128(t *testing.T) {
	a := u128{lo: ^uint64(0)}.add(u128{lo: 1})
	if a != (u128{hi: 1}) {
		t.Errorf("carry: %+v", a)
	}
	if m := (u128{hi: 1, lo: 3}).mul(1 << 20); m != (u128{hi: 1 << 20, lo: 3 << 20}) {
		t.Errorf("mul: %+v", m)
	}
	if m := (u128{hi: 1 << 63}).mul(2); m != u128Max {
		t.Errorf("mul overflow: %+v", m)
	}
	if m := (u128{hi: ^uint64(0), lo: 1 << 63}).mul(2); m != u128Max {
		t.Errorf("mul carry overflow: %+v", m)
	}
	if s := u128Max.add(u128{lo: 1}); s != u128Max {
		t.Errorf("add overflow: %+v", s)
	}
	if f := (u128{hi: 1, lo: 1}).float(); f != 0x1p64+1 {
		t.Errorf("float: %v", f)
	}
}
