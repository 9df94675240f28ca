package cache

import (
	"math"
	"testing"
	"time"

	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/sampler"
)

// The walks per update edge move the estimate's time beyond its fixed part
// towards its target, along the slope of the last two estimates, within
// bounds, and per update edge across batch sizes.
func TestNextWalks(t *testing.T) {
	fixed := estimateFixed.Seconds()
	const share = 0.05
	// step is an estimate of walks per edge on a batch of 64 edges whose
	// walks' part took over times its target for a kernel of 10 ms.
	const kernel = 0.01
	target := share*kernel - fixed
	step := func(walks, over float64) walkStep {
		return walkStep{walks: walks, edges: 64, vary: over * target, kernel: kernel}
	}
	g := defaultGamma
	for _, c := range []struct {
		name       string
		last, prev walkStep
		edges      int
		want       float64
	}{
		{"one estimate: γ's default", step(1000, math.Pow(2, g)), walkStep{}, 64, 500},
		{"under: more walks, in proportion", step(1000, 0.25), walkStep{}, 64, 4000},
		{"under along a shallow slope: still in proportion", step(2000, 0.5), step(1000, 0.45), 64, 4000},
		{"time √walks: a quarter to halve it", step(4000, 2), step(1000, 1), 64, 1000},
		{"steeper than walks: as if in proportion", step(2000, 8), step(1000, 1), 64, 250},
		{"flat: γ at least 1/4", step(1e6, 2), step(1000, 1), 64, 1e6 / 16},
		{"out of order: the default", step(2000, 2), step(1000, 4), 64, 2000 * math.Pow(2, -1/g)},
		{"too close: the default", step(1050, 2), step(1000, 1), 64, 1050 * math.Pow(2, -1/g)},
		{"another size before: the default", step(4000, 2), walkStep{walks: 1000, edges: 32, vary: target, kernel: kernel}, 64, 4000 * math.Pow(2, -1/g)},
		{"far over: by 4096 at most", step(1e6, 1e9), walkStep{}, 64, 1e6 / 4096},
		// An estimate within its fixed part counts as a sixteenth of it.
		{"within the fixed part", step(1000, 0), walkStep{}, 64, 1000 * target / (fixed / 16)},
		{"within the fixed part of a long kernel: by 64 at most", walkStep{walks: 1000, edges: 64, kernel: 100 * kernel}, walkStep{}, 64, 64000},
		{"never under MinWalks", step(100, 1e3), walkStep{}, 64, sampler.MinWalks},
		{"nothing measured", walkStep{walks: 1000, edges: 64}, walkStep{}, 64, 1000},
		// Eight times the edges: eight times the kernel, and a target
		// less the fixed part that is (8·0.5 ms − f)/8 per edge against
		// (0.5 ms − f) before.
		{"on target, eight times the edges", step(1000, 1), walkStep{}, 512,
			1000 * (8*share*kernel - fixed) / 8 / target},
		// A kernel so short that its share is under the fixed part: the
		// walks' part gets a quarter of it.
		{"target under the fixed part", walkStep{walks: 1000, edges: 64, vary: fixed / 4, kernel: fixed}, walkStep{}, 64, 1000},
	} {
		if got := nextWalks(c.last, c.prev, share, c.edges); math.Abs(got-c.want) > 1e-9*c.want {
			t.Errorf("%s: nextWalks(%+v, %+v, %d) = %v, want %v", c.name, c.last, c.prev, c.edges, got, c.want)
		}
	}
	if got := nextWalks(step(1000, 2), walkStep{}, -1, 64); got != 1000 {
		t.Errorf("no share: got %v, want the last walks", got)
	}
}

// A set's kernel is short when its last one, without the cache and scaled
// to the batch's edges, took less than the minimum; a set not run yet is
// not.
func TestShortKernel(t *testing.T) {
	a, b := &query.Query{}, &query.Query{}
	w := walkCaps{}
	qa := []*query.Query{a}
	if w.short(qa, 64, time.Millisecond) {
		t.Fatal("a set not run yet is short")
	}
	w[querySet(qa)] = walkCap{bare: 500 * time.Microsecond, kernelEdges: 64}
	for _, c := range []struct {
		qs    []*query.Query
		edges int
		min   time.Duration
		want  bool
	}{
		{qa, 64, time.Millisecond, true},
		{qa, 127, time.Millisecond, true},
		{qa, 128, time.Millisecond, false}, // twice the edges: 1 ms
		{qa, 64, 500 * time.Microsecond, false},
		{qa, 64, -1, false},                          // never
		{[]*query.Query{a, b}, 64, time.Hour, false}, // another set
	} {
		if got := w.short(c.qs, c.edges, c.min); got != c.want {
			t.Errorf("short(%d queries, %d edges, %v) = %v, want %v", len(c.qs), c.edges, c.min, got, c.want)
		}
	}
}

// A kernel that read from the cache counts as longer without it: by the
// list bytes it read over those from host memory, at most fourfold.
func TestBareKernel(t *testing.T) {
	for _, c := range []struct {
		slab, block uint64
		want        time.Duration
	}{
		{100, 0, 2 * time.Millisecond},     // no cache
		{0, 0, 2 * time.Millisecond},       // no reads
		{50, 50, 4 * time.Millisecond},     // half from the cache
		{25, 75, 8 * time.Millisecond},     // three quarters
		{3, 97, 8 * time.Millisecond},      // 97% from it: fourfold at most
		{0, 100, 8 * time.Millisecond},     // all of it
		{75, 25, 8 * time.Millisecond / 3}, // a quarter
	} {
		if got := bareKernel(2*time.Millisecond, HitRatio(c.slab, c.block)); got != c.want {
			t.Errorf("%d from host, %d from the cache: %v, want %v", c.slab, c.block, got, c.want)
		}
	}
}

// Caps are kept per set of queries and follow nextWalks, per update edge.
func TestWalkCaps(t *testing.T) {
	a, b := &query.Query{}, &query.Query{}
	w := walkCaps{}
	qa := []*query.Query{a}
	if got := w.maxWalks(qa, 64, 0, 0.05); got != 0 {
		t.Fatalf("no cap yet: got %d, want 0", got)
	}
	if got := w.maxWalks(qa, 64, 256, 0.05); got != 64*256 {
		t.Fatalf("no cap yet, first 256: got %d, want %d", got, 64*256)
	}
	last := walkStep{walks: 10, edges: 64, vary: 0.001, kernel: 0.01}
	w[querySet(qa)] = walkCap{last: last}
	for _, edges := range []int{16, 64, 256} {
		want := int(nextWalks(last, walkStep{}, 0.05, edges) * float64(edges))
		if got := w.maxWalks(qa, edges, 256, 0.05); got != want || got == 0 {
			t.Errorf("cap for {a} at %d edges: got %d, want %d", edges, got, want)
		}
	}
	for _, qs := range [][]*query.Query{{b}, {a, b}, {b, a}} {
		if got := w.maxWalks(qs, 64, 0, 0.05); got != 0 {
			t.Fatalf("another set of queries took {a}'s cap %d", got)
		}
	}
}

// The sampler's deadline is half as much again as the estimate's target,
// from the set's last estimated batch, scaled to the edges, past the fixed
// part; none before that batch or without a share.
func TestEstimateDeadline(t *testing.T) {
	a, b := &query.Query{}, &query.Query{}
	w := walkCaps{}
	qa := []*query.Query{a}
	if got := w.deadline(qa, 64, 0.05); got != 0 {
		t.Fatalf("no batch yet: %v", got)
	}
	w[querySet(qa)] = walkCap{last: walkStep{walks: 10, edges: 64, vary: 0.001, kernel: 0.01}}
	for _, c := range []struct {
		qs    []*query.Query
		edges int
		share float64
		want  time.Duration
	}{
		{qa, 64, 0.05, estimateFixed + 750*time.Microsecond},
		{qa, 128, 0.05, estimateFixed + 1500*time.Microsecond},
		{qa, 64, -1, 0},
		{[]*query.Query{b}, 64, 0.05, 0},
	} {
		if got := w.deadline(c.qs, c.edges, c.share); got != c.want {
			t.Errorf("%d edges, share %v: %v, want %v", c.edges, c.share, got, c.want)
		}
	}
}

// tuneEstimate records each estimate's walks per edge, its time beyond the
// fixed part and its kernel, keeps the one before only for a batch of the
// same size, and records nothing outside the gcsm placement or without a
// share.
func TestTuneEstimate(t *testing.T) {
	q := []*query.Query{{}}
	x := &Planner{}
	o := Options{Policy: PolicyGCSM}
	batch := func(edges, walks int, est, kernel time.Duration) walkCap {
		x.last = &sampler.Estimate{Walks: walks}
		x.Tune(q, edges, o, est, kernel, 0)
		return x.caps[querySet(q)]
	}
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	c := batch(64, 6400, ms(0.65), ms(10))
	want := walkStep{walks: 100, edges: 64, vary: 0.0005, kernel: 0.01}
	if d := math.Abs(c.last.vary - want.vary); d > 1e-12 || c.last.walks != want.walks || c.last.edges != 64 || c.last.kernel != want.kernel || c.prev != (walkStep{}) {
		t.Fatalf("first batch: %+v, want last %+v and no prev", c, want)
	}
	if c.bare != ms(10) || c.kernelEdges != 64 {
		t.Fatalf("first batch's kernel: %v on %d edges", c.bare, c.kernelEdges)
	}
	c = batch(64, 12800, ms(0.1), ms(10))
	if c.prev.walks != 100 || c.last.walks != 200 || c.last.vary != 0 {
		t.Fatalf("second batch of 64: %+v, want prev 100 walks, last 200 and no time past the fixed part", c)
	}
	c = batch(512, 51200, ms(1), ms(80))
	if c.prev != (walkStep{}) || c.last.edges != 512 || c.last.walks != 100 {
		t.Fatalf("a batch of 512 after 64: %+v, want no prev", c)
	}
	x.last = nil // a skipped batch: its kernel counts, its estimate does not
	x.Tune(q, 512, o, 0, ms(2), 0)
	if c2 := x.caps[querySet(q)]; c2.last != c.last || c2.bare != ms(2) {
		t.Fatalf("a skipped batch: %+v, want the last estimate kept and the kernel updated", c2)
	}
	x.Tune(q, 512, o, 0, ms(2), HitRatio(50, 50))
	if c2 := x.caps[querySet(q)]; c2.bare != ms(4) {
		t.Fatalf("a batch that read half from the cache: its kernel counts as %v, want 4ms", c2.bare)
	}
	for _, o := range []Options{{Policy: PolicyGCSM, EstimateShare: -1}, {Policy: PolicyDegree}} {
		x := &Planner{}
		x.last = &sampler.Estimate{Walks: 6400}
		x.Tune(q, 64, o, ms(1), ms(10), 0)
		if c := x.caps[querySet(q)]; c.last != (walkStep{}) {
			t.Errorf("%+v: recorded %+v", o, c.last)
		}
	}
}
