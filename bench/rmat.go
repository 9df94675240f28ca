package bench

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"sync"
)

// RMAT describes a recursive-matrix (R-MAT) power-law graph: each edge falls
// into one quadrant of the adjacency matrix with probabilities A, B, C and
// D = 1-A-B-C, recursively, Scale times. The zero values of A, B and C, all
// three, mean the customary 0.57, 0.19 and 0.19 (Graph500).
//
// The graph is undirected and simple. Vertex labels follow a Zipf law so that
// a few labels are common and most are rare, as in real labeled graphs; edge
// labels are uniform.
type RMAT struct {
	Scale   int   // log2 of the number of vertices, 1 to 31
	Edges   int64 // distinct undirected edges to generate
	A, B, C float64

	VertexLabels int     // number of vertex labels; 0 means 1
	LabelSkew    float64 // Zipf exponent s > 1 of the vertex labels, e.g. 1.5; 0 means uniform
	EdgeLabels   int     // number of edge labels; 0 means 1

	Seed uint64
}

// rmatNoise bounds the per-level perturbation of the quadrant probabilities.
// Without it R-MAT's degree distribution is a staircase with peaks at the
// binomial modes; 0.1 is the value that Seshadhri, Pinar and Kolda ("An
// in-depth analysis of stochastic Kronecker graphs", 2013) show smooths it.
const rmatNoise = 0.1

// rmatMaxDraws bounds the work Generate spends on duplicates and self-loops,
// as a multiple of Edges. At Graph500 density (16 edges a vertex) a graph of
// scale 20 takes 1.14 draws an edge, one of scale 16 1.33 and one of scale
// 10 2.7; a request that needs ten is too dense for its skew, and the last
// few edges of a complete graph could take millions.
const rmatMaxDraws = 10

// Salts that separate the random streams drawn from one seed, so that, for
// example, a graph and a stream split from it with the same seed are not
// correlated.
const (
	saltStructure = iota + 1
	saltVertexLabel
	saltEdgeLabel
	saltSplit
	saltTransfers
	saltWalk
	saltAmounts
	saltSets
)

// Validate reports whether r describes a graph that Generate can produce.
func (r RMAT) Validate() error {
	if r.Scale < 1 || r.Scale > 31 {
		return fmt.Errorf("bench: R-MAT scale %d is outside [1, 31]", r.Scale)
	}
	n := int64(1) << r.Scale
	if most := n * (n - 1) / 2; r.Edges < 0 || r.Edges > most {
		return fmt.Errorf("bench: R-MAT of scale %d cannot have %d edges: a simple graph of %d vertices has at most %d", r.Scale, r.Edges, n, most)
	}
	a, b, c := r.probabilities()
	for _, p := range []float64{a, b, c} {
		if !(p >= 0 && p <= 1) {
			return fmt.Errorf("bench: R-MAT probabilities %g, %g, %g are not in [0, 1]", a, b, c)
		}
	}
	if a+b+c > 1 {
		return fmt.Errorf("bench: R-MAT probabilities %g, %g, %g sum to more than 1", a, b, c)
	}
	if r.VertexLabels < 0 || r.EdgeLabels < 0 {
		return fmt.Errorf("bench: R-MAT label counts %d and %d must not be negative", r.VertexLabels, r.EdgeLabels)
	}
	if !validSkew(r.LabelSkew) {
		return fmt.Errorf("bench: R-MAT label skew %g is neither 0 (uniform) nor a finite Zipf exponent above 1", r.LabelSkew)
	}
	return nil
}

func validSkew(s float64) bool { return s == 0 || s > 1 && !math.IsInf(s, 1) }

func (r RMAT) probabilities() (a, b, c float64) {
	if r.A == 0 && r.B == 0 && r.C == 0 {
		return 0.57, 0.19, 0.19
	}
	return r.A, r.B, r.C
}

// Generate calls emit once for each edge of the graph, in a deterministic
// order for the seed, with src < dst. It stops at emit's first error and
// returns it.
//
// Duplicates are removed with open-addressing sets of about 11 bytes an
// edge (8-byte keys at load 3/4), so 2^28 edges take 2.9 GiB. An edge costs
// about 0.3µs, most of it the sets' cache misses, so Generate spreads them
// over all cores: each core owns the keys of one shard, and a key and its
// duplicates fall in the same one. The draws stay sequential, in blocks,
// and a drawn edge is new exactly when no earlier draw drew it, whatever
// the shards: the graph does not depend on the core count. When the request
// is so dense that duplicates outnumber new edges ten to one, Generate
// gives up and returns an error after emitting what it found.
func (r RMAT) Generate(emit func(src, dst uint32, label uint32) error) error {
	return r.generate(emit, runtime.GOMAXPROCS(0))
}

// drawBlock is how many edges Generate draws before the shards look them
// up, in parallel.
const drawBlock = 1 << 16

// generate is Generate with the draws looked up in shards sets, on as many
// goroutines.
func (r RMAT) generate(emit func(src, dst uint32, label uint32) error, shards int) error {
	if err := r.Validate(); err != nil {
		return err
	}
	d := r.newDrawer()
	shards = max(1, min(shards, int(r.Edges/drawBlock)+1, math.MaxUint16))
	sets := make([]*edgeSet, shards)
	for i := range sets {
		sets[i] = newEdgeSet(r.Edges / int64(shards))
	}
	edgeLabels := uint64(max(r.EdgeLabels, 1))
	labelKey := mix64(r.Seed ^ saltEdgeLabel)

	keys := make([]uint64, 0, drawBlock)
	shard := make([]uint16, 0, drawBlock)
	fresh := make([]bool, drawBlock)
	var found, draws int64
	limit := rmatMaxDraws*r.Edges + 64
	for found < r.Edges {
		// Draw a block of edges, self-loops left out.
		keys, shard = keys[:0], shard[:0]
		var n int64
		keys, n = d.drawInto(keys, drawBlock, limit-draws)
		draws += n
		for _, key := range keys {
			// The shard takes the hash's low bits, and the set's slot its
			// high ones (edgeSet.add).
			shard = append(shard, uint16(uint64(uint32(mix64(key)))*uint64(shards)>>32))
		}
		// Each shard marks its keys new or seen, in draw order.
		var wg sync.WaitGroup
		for sh := range sets {
			wg.Go(func() {
				for j, k := range keys {
					if int(shard[j]) == sh {
						fresh[j] = sets[sh].add(k)
					}
				}
			})
		}
		wg.Wait()
		for j, key := range keys {
			if !fresh[j] {
				continue
			}
			found++
			label, _ := bits.Mul64(mix64(key^labelKey), edgeLabels)
			if err := emit(uint32(key>>32), uint32(key), uint32(label)); err != nil {
				return err
			}
			if found == r.Edges {
				return nil
			}
		}
		if draws == limit {
			return fmt.Errorf("bench: R-MAT found only %d distinct edges of the %d requested in %d draws: too dense for its skew", found, r.Edges, draws)
		}
	}
	return nil
}

// drawer draws the edges of an R-MAT graph from its seed's stream,
// duplicates included.
type drawer struct {
	pcg    *rand.PCG
	levels [][3]uint64
	perm   scrambler
}

func (r RMAT) newDrawer() drawer {
	pcg := rand.NewPCG(r.Seed, saltStructure)
	rng := rand.New(pcg)
	levels := r.levels(rng)
	return drawer{pcg: pcg, levels: levels, perm: newScrambler(r.Scale, rng)}
}

// drawInto draws up to draws edges, and appends to keys each that is no
// self-loop, as src<<32 | dst with src < dst (so that no key is 0, the edge
// sets' empty slot), until keys holds max. It returns keys and the draws
// made. One call draws a whole block, not one call per draw: the draws are
// the one part of Generate that runs on one core.
func (d *drawer) drawInto(keys []uint64, max int, draws int64) ([]uint64, int64) {
	var n int64
	for ; n < draws && len(keys) < max; n++ {
		// Each level takes 32 random bits u and picks the quadrant by
		// comparing u with the level's thresholds. The comparisons are
		// arithmetic rather than branches, which the CPU would mispredict
		// half the time: this makes a draw over three times faster.
		var src, dst, x uint64
		for i, t := range d.levels {
			if i%2 == 0 {
				x = d.pcg.Uint64()
			}
			u := x & (1<<32 - 1)
			x >>= 32
			// Quadrants c and d set the source bit; b and d the destination
			// bit.
			src = src<<1 | atLeast(u, t[1])
			dst = dst<<1 | (atLeast(u, t[0]) ^ atLeast(u, t[1]) ^ atLeast(u, t[2]))
		}
		src, dst = d.perm.apply(src), d.perm.apply(dst)
		if src == dst {
			continue
		}
		if src > dst {
			src, dst = dst, src
		}
		keys = append(keys, src<<32|dst)
	}
	return keys, n
}

// levels returns, for each recursion level, the cumulative probabilities of
// the first three quadrants as 32-bit fixed-point thresholds. Each level's
// a, b, c and d are perturbed as in Seshadhri, Pinar and Kolda's noisy SKG:
// b and c move by mu and a and d absorb it in proportion, so the four still
// sum to 1 and stay non-negative.
func (r RMAT) levels(rng *rand.Rand) [][3]uint64 {
	a, b, c := r.probabilities()
	d := 1 - a - b - c
	limit := min(rmatNoise, b, c, (a+d)/2)
	fixed := func(p float64) uint64 { return uint64(math.Round(min(max(p, 0), 1) * (1 << 32))) }
	out := make([][3]uint64, r.Scale)
	for i := range out {
		ai, bi, ci := a, b, c
		if limit > 0 {
			mu := limit * (2*rng.Float64() - 1)
			ai, bi, ci = a-2*mu*a/(a+d), b+mu, c+mu
		}
		out[i] = [3]uint64{fixed(ai), fixed(ai + bi), fixed(ai + bi + ci)}
	}
	return out
}

// atLeast returns 1 if u >= t and 0 otherwise, for u and t below 2^33,
// without a branch.
func atLeast(u, t uint64) uint64 { return (u-t)>>63 ^ 1 }

// VertexLabel returns the label of vertex v, in [0, VertexLabels). It is a
// pure function of the seed and v, so a loader can label vertices in any
// order, in parallel, without a table. With LabelSkew s > 1, label k has
// probability proportional to (k+1)^-s, so label 0 is the most frequent.
//
// It panics if LabelSkew is invalid; Validate reports that.
func (r RMAT) VertexLabel(v uint32) uint32 {
	if !validSkew(r.LabelSkew) {
		panic(fmt.Sprintf("bench: R-MAT label skew %g is neither 0 (uniform) nor a finite Zipf exponent above 1", r.LabelSkew))
	}
	n := uint64(max(r.VertexLabels, 1))
	h := mix64(uint64(v) ^ mix64(r.Seed^saltVertexLabel))
	if r.LabelSkew == 0 || n == 1 {
		label, _ := bits.Mul64(h, n)
		return uint32(label)
	}
	// The Zipf sampler rejects some draws, so it takes a generator rather
	// than one hash: a PCG seeded from the vertex.
	return uint32(zipf(rand.NewPCG(h, r.Seed), r.LabelSkew, n-1))
}

// zipf draws k in [0, imax] with probability proportional to (k+1)^-q, for
// q > 1, by Hörmann and Derflinger's rejection-inversion ("Rejection-
// inversion to generate variates from monotone discrete distributions",
// 1996), as math/rand/v2's Zipf does. That one needs a *rand.Rand, and so
// costs three allocations and 0.8µs a call; this one allocates nothing and
// takes 0.35µs.
func zipf(pcg *rand.PCG, q float64, imax uint64) uint64 {
	// h is an antiderivative of (x+1)^-q, the density that the sampler
	// inverts, and hinv is its inverse.
	h := func(x float64) float64 { return math.Exp((1-q)*math.Log1p(x)) / (1 - q) }
	hinv := func(y float64) float64 { return math.Exp(math.Log((1-q)*y)/(1-q)) - 1 }
	hxm := h(float64(imax) + 0.5)
	span := h(0.5) - 1 - hxm
	s := 1 - hinv(h(1.5)-math.Exp(-q*math.Ln2))
	for {
		u := float64(pcg.Uint64()>>11) * 0x1p-53
		ur := hxm + u*span
		x := hinv(ur)
		k := math.Floor(x + 0.5)
		if k-x <= s || ur >= h(k+0.5)-math.Exp(-q*math.Log1p(k)) {
			return uint64(k)
		}
	}
}

// scrambler is a seeded bijection on [0, 2^scale). R-MAT gives the highest
// degrees to the lowest ids; Graph500 permutes ids so that degree says
// nothing about an id and caches cannot profit from hubs being adjacent.
type scrambler struct {
	mask, mul1, add, mul2 uint64
	shift                 uint
}

func newScrambler(scale int, rng *rand.Rand) scrambler {
	return scrambler{
		mask:  1<<scale - 1,
		mul1:  rng.Uint64() | 1,
		add:   rng.Uint64(),
		mul2:  rng.Uint64() | 1,
		shift: uint(scale+1) / 2,
	}
}

// apply maps v through two rounds of multiply-by-odd and xorshift, each a
// bijection modulo 2^scale.
func (s scrambler) apply(x uint64) uint64 {
	x = (x*s.mul1 + s.add) & s.mask
	x ^= x >> s.shift
	x = x * s.mul2 & s.mask
	x ^= x >> s.shift
	return x
}

// edgeSet is an open-addressing hash set of non-zero uint64 keys with linear
// probing, sized for its expected population and grown past a load of 3/4:
// a shard's share of the edges is a little more than its expected share
// as often as not. A map[uint64]struct{} takes three times as much: 24 to
// 36 bytes an entry in Go 1.26's maps.
type edgeSet struct {
	slots []uint64
	n     int // keys held
}

func newEdgeSet(n int64) *edgeSet {
	return &edgeSet{slots: make([]uint64, n+n/3+n/64+64)}
}

// add inserts key and reports whether it was absent.
func (s *edgeSet) add(key uint64) bool {
	if 4*(s.n+1) > 3*len(s.slots) {
		s.grow()
	}
	if s.put(key) {
		s.n++
		return true
	}
	return false
}

// put inserts key into the table and reports whether it was absent.
func (s *edgeSet) put(key uint64) bool {
	n := uint64(len(s.slots))
	// Multiply-high maps the hash onto a table of any size, so the table
	// need not be rounded up to a power of two.
	i, _ := bits.Mul64(mix64(key), n)
	for {
		switch s.slots[i] {
		case 0:
			s.slots[i] = key
			return true
		case key:
			return false
		}
		if i++; i == n {
			i = 0
		}
	}
}

// grow moves the keys to a table a quarter larger.
func (s *edgeSet) grow() {
	old := s.slots
	s.slots = make([]uint64, len(old)+len(old)/4+64)
	for _, k := range old {
		if k != 0 {
			s.put(k)
		}
	}
}

// mix64 is SplitMix64's finalizer: a bijection whose output bits each
// depend on every input bit.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
