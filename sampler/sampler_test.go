package sampler

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

var scenarioConfigs = []scenarioConfig{
	{name: "undirected", nv: 12, ne: 30, ins: 5, del: 5, vlabels: 1},
	{name: "labeled", nv: 12, ne: 34, ins: 6, del: 6, vlabels: 2, multi: true},
	{name: "directed", nv: 10, ne: 34, ins: 6, del: 6, vlabels: 1, directed: true},
	{name: "directed-labeled", nv: 10, ne: 36, ins: 6, del: 6, vlabels: 2, directed: true, multi: true},
}

// scenarioQueries are the patterns tried on a scenario: wildcards and
// concrete labels, and on directed graphs directed and undirected query
// edges (which read out- and in-lists for one constraint).
func scenarioQueries(c scenarioConfig) []*query.Pattern {
	ps := []*query.Pattern{
		pattern("edge", 2, shapeEdge, nil, "", false),
		pattern("path", 3, shapePath, nil, "", false),
		pattern("triangle", 3, shapeTriangle, nil, "", false),
		pattern("square", 4, shapeSquare, nil, "", false),
		pattern("tailed", 4, shapeTailed, nil, "x", false),
		pattern("house", 5, shapeHouse, nil, "", false),
	}
	if c.vlabels > 1 {
		ps = append(ps,
			pattern("tailed-L", 4, shapeTailed, []string{"L0", "", "L1"}, "", false),
			pattern("square-L", 4, shapeSquare, []string{"L0", "L1"}, "y", false))
	}
	if c.directed {
		ps = append(ps,
			pattern("cycle3", 3, shapeTriangle, nil, "", true),
			pattern("dsquare", 4, shapeSquare, nil, "", true),
			pattern("dtailed", 4, shapeTailed, nil, "x", true),
			// Two query edges between a and b: level 1 of a term checks
			// the other one.
			pattern("mutual", 3, [][2]int{{0, 1}, {1, 0}, {1, 2}, {2, 0}}, nil, "", false))
	}
	return ps
}

// TestExactIsTheMatchingTree: the tree Exact and Estimate walk is the
// incremental matcher's. Its leaves (which the walks never build) must be
// exactly the matches the batch made or broke, found by brute force, for
// every plan flavour: Terms under Embeddings (no symmetry breaking), Terms
// under Instances, and CountTerms multiplied back.
func TestExactIsTheMatchingTree(t *testing.T) {
	for _, c := range scenarioConfigs {
		for seed := range uint64(3) {
			s := newScenario(t, c, seed)
			for _, p := range scenarioQueries(c) {
				for _, sem := range []query.Semantics{query.Embeddings, query.Instances} {
					q := compile(t, s.dict, c.directed, sem, p)[0]
					want := s.deltaMatches(q)
					w := exactWalker(s.g, s.delta, []*query.Query{q}, Terms, true)
					if w.nleafs != want {
						t.Errorf("%s %s %v: %d leaves, brute force finds %d changed matches", s.name, p.Name, sem, w.nleafs, want)
					}
					if sem == query.Embeddings {
						w := exactWalker(s.g, s.delta, []*query.Query{q}, CountTerms, true)
						if got := w.nleafs * q.CountFactor; got != want {
							t.Errorf("%s %s CountTerms: %d leaves × %d, brute force finds %d", s.name, p.Name, w.nleafs, q.CountFactor, want)
						}
					}
				}
			}
		}
	}
}

// TestExactReads checks Exact's counts by hand on a path a-b-c-d, where
// inserting b-c makes the one path of three vertices through it.
func TestExactReads(t *testing.T) {
	g := newGraph(t, false)
	d := graph.NewDict()
	el := d.Intern("e")
	ins := func(a, b uint32) graph.Update {
		return graph.Update{Op: graph.Insert, Src: a, Dst: b, Label: el, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}
	}
	if _, _, _, err := g.Apply([]graph.Update{ins(0, 1), ins(2, 3)}); err != nil {
		t.Fatal(err)
	}
	g.Reorganize()
	delta, _, _, err := g.Apply([]graph.Update{ins(1, 2)})
	if err != nil {
		t.Fatal(err)
	}
	q := compile(t, d, false, query.Embeddings, pattern("path", 3, shapePath, nil, "", false))[0]
	// Term 0 maps the change onto (a, b) in both orientations; the third
	// vertex hangs off b, so the roots (1, 2) and (2, 1) read lists 2 and
	// 1. Term 1 maps it onto (b, c), and the third vertex hangs off b:
	// the roots read lists 1 and 2 again. Each root is a node of its own.
	got := Exact(g, delta, []*query.Query{q}, Terms)
	if want := []uint64{0, 2, 2, 0}; !slices.Equal(got, want) {
		t.Fatalf("Exact = %v, want %v (plans %+v)", got, want, q.Terms)
	}
}

// TestUnbiased: over many seeds, the mean estimate of every list converges
// to Exact, with the paper's walks, boosted or not, and with weighted ones. The tolerance is
// a z-test on the sample standard deviation of the estimates; a list Exact
// never reads must never get an estimate.
func TestUnbiased(t *testing.T) {
	var e Estimator
	const runs = 400
	for _, c := range scenarioConfigs {
		s := newScenario(t, c, 11)
		qs := compile(t, s.dict, c.directed, query.Embeddings, scenarioQueries(c)...)
		for _, run := range []struct {
			plans    Plans
			walks    int // per update edge
			weighted bool
			boost    int
		}{{Terms, 2, false, 1}, {CountTerms, 2, false, 1}, {Terms, 1000, false, 1}, {Terms, 2, true, 0},
			{CountTerms, 1000, true, 0}, {Terms, 2, false, 8}, {CountTerms, 1, false, 64}} {
			plans := run.plans
			exact := Exact(s.g, s.delta, qs, plans)
			nk := len(exact)
			sum, sum2 := make([]float64, nk), make([]float64, nk)
			var steps int64
			for seed := range uint64(runs) {
				// A small M makes each estimate noisy, so a bias would
				// show against the spread; a large one sends more walks
				// to a node than its driver has slots.
				est, err := e.Estimate(s.g, s.delta, qs, Options{Walks: run.walks * len(s.delta), Seed: seed, Plans: plans, Workers: 1, Weighted: run.weighted, Boost: run.boost})
				if err != nil {
					t.Fatal(err)
				}
				steps += est.Steps
				if want := max(run.boost, 1); est.Boost != want && !(want > 1 && !hasFour(qs)) {
					t.Fatalf("%s: the estimate's boost is %d, want %d", s.name, est.Boost, want)
				}
				for k, x := range est.Counts(nil) {
					if x != 0 && exact[k] == 0 {
						t.Fatalf("%s: list %d has estimate %v but is never read", s.name, k, x)
					}
					sum[k] += x
					sum2[k] += x * x
				}
			}
			worst, worstKey := 0.0, -1
			var tot, totExact float64
			for k := range nk {
				mean := sum[k] / runs
				tot += mean
				totExact += float64(exact[k])
				sd := math.Sqrt(max(0, (sum2[k]-sum[k]*mean)/(runs-1)))
				diff := math.Abs(mean - float64(exact[k]))
				if sd == 0 {
					if diff > 1e-9*float64(exact[k]) {
						t.Errorf("%s: list %d: every estimate is %v, exact %d", s.name, k, mean, exact[k])
					}
					continue
				}
				if z := diff / (sd / math.Sqrt(runs)); z > worst {
					worst, worstKey = z, k
				}
			}
			// Bonferroni over a few dozen lists at a 1e-5 family error is
			// z ≈ 5.3; 5.5 leaves room for the estimates' skew.
			if worst > 5.5 {
				k := worstKey
				t.Errorf("%s plans %d, M = %d|ΔE|, weighted %v, boost %d: list %d: mean %v, exact %d (z = %.1f)", s.name, plans, run.walks, run.weighted, run.boost, k, sum[k]/runs, exact[k], worst)
			}
			t.Logf("%s plans %d, M = %d|ΔE|, weighted %v, boost %d: %d lists read, %.0f reads (estimated %.0f), worst z %.2f, %d steps per estimate",
				s.name, plans, run.walks, run.weighted, run.boost, countPositive(exact), totExact, tot, worst, steps/runs)
		}
	}
}

// hasFour reports whether a query has four vertices: the patterns whose
// walks Options.Boost multiplies.
func hasFour(qs []*query.Query) bool {
	return slices.ContainsFunc(qs, func(q *query.Query) bool { return q.N() == 4 })
}

func countPositive(x []uint64) int {
	n := 0
	for _, v := range x {
		if v > 0 {
			n++
		}
	}
	return n
}

// TestDeterministic: an estimate depends on the seed only, not on the number
// of workers, and formula (5)'s second pass too.
func TestDeterministic(t *testing.T) {
	g, delta, d := powerLaw(t, 10, 6000, 256, 1)
	qs := compile(t, d, false, query.Embeddings,
		pattern("triangle", 3, shapeTriangle, nil, "", false),
		pattern("house", 5, shapeHouse, nil, "", false))
	run := func(e *Estimator, seed uint64, workers int) ([]float64, *Estimate) {
		est, err := e.Estimate(g, delta, qs, Options{Seed: seed, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		return est.Counts(nil), est
	}
	var e Estimator
	want, est := run(&e, 1, 1)
	steps, walks := est.Steps, est.Walks
	hot := est.Hottest(nil)
	t.Logf("M = %d (formula 5 wanted %d, %d passes), D = %d, %d steps, %d lists",
		est.Walks, est.Wanted, est.Passes, est.MaxDegree, est.Steps, len(hot))
	for _, workers := range []int{1, 2, 3, 8} {
		var e2 Estimator
		got, est := run(&e2, 1, workers)
		if !slices.Equal(got, want) || est.Steps != steps || est.Walks != walks {
			t.Errorf("workers %d: the estimate differs from one worker's", workers)
		}
		if h := est.Hottest(nil); !slices.Equal(h, hot) {
			t.Errorf("workers %d: Hottest differs", workers)
		}
		// Reusing an estimator gives the same answer again.
		if got, _ := run(&e, 1, workers); !slices.Equal(got, want) {
			t.Errorf("workers %d: a reused estimator differs", workers)
		}
	}
	if got, _ := run(&e, 2, 1); slices.Equal(got, want) {
		t.Error("seeds 1 and 2 gave the same estimate")
	}
}

// A deadline stops the passes after the first: one already passed leaves
// the first pass alone, and one far off changes nothing.
func TestDeadline(t *testing.T) {
	g, delta, d := powerLaw(t, 10, 6000, 256, 1)
	qs := compile(t, d, false, query.Embeddings, pattern("house", 5, shapeHouse, nil, "", false))
	run := func(deadline time.Duration) ([]float64, *Estimate) {
		var e Estimator
		est, err := e.Estimate(g, delta, qs, Options{Seed: 1, Deadline: deadline})
		if err != nil {
			t.Fatal(err)
		}
		return est.Counts(nil), est
	}
	want, free := run(0)
	if free.Passes < 2 {
		t.Fatalf("%d passes without a deadline: the test needs more", free.Passes)
	}
	if got, est := run(time.Hour); !slices.Equal(got, want) || est.Passes != free.Passes || est.Walks != free.Walks {
		t.Errorf("an hour's deadline: %d passes, %d walks; want %d, %d and the same estimate", est.Passes, est.Walks, free.Passes, free.Walks)
	}
	if _, est := run(time.Nanosecond); est.Passes != 1 || est.Walks >= free.Walks || est.Walks == 0 {
		t.Errorf("a deadline passed at once: %d passes, %d walks; want the first pass alone, of fewer than %d", est.Passes, est.Walks, free.Walks)
	}
	var e Estimator
	if _, err := e.Estimate(g, delta, qs, Options{Deadline: -1}); err == nil {
		t.Error("a negative deadline was taken")
	}
}

// TestHottest: positive keys only, by estimate descending, ties by key.
func TestHottest(t *testing.T) {
	count := []float64{0, 3, 1, 3, 0, 7}
	est := &Estimate{keys: []uint32{5, 1, 2, 3}}
	for _, k := range est.keys {
		est.recs = append(est.recs, hotRec{^math.Float64bits(count[k]), k})
	}
	if got, want := est.Hottest([]uint32{99}), []uint32{99, 5, 1, 3, 2}; !slices.Equal(got, want) {
		t.Fatalf("Hottest = %v, want %v", got, want)
	}
}

// TestAllocs: after warm-up an estimate with one worker allocates nothing,
// with formula (5)'s second pass, and Hottest into a large enough dst
// neither.
func TestAllocs(t *testing.T) {
	g, delta, d := powerLaw(t, 10, 6000, 256, 2)
	qs := compile(t, d, false, query.Embeddings,
		pattern("triangle", 3, shapeTriangle, nil, "", false),
		pattern("house", 5, shapeHouse, nil, "", false))
	var e Estimator
	dst := make([]uint32, 0, NumKeys(g))
	for _, opts := range []Options{{Workers: 1}, {Workers: 1, Walks: 5000}} {
		step := func() {
			opts.Seed++
			est, err := e.Estimate(g, delta, qs, opts)
			if err != nil {
				t.Fatal(err)
			}
			dst = est.Hottest(dst[:0])
		}
		for range 3 {
			step()
		}
		if a := testing.AllocsPerRun(5, step); a != 0 {
			t.Errorf("%+v: %v allocations per estimate", opts, a)
		}
	}
}

// TestCoverage: on a power-law graph, the lists the estimate ranks hottest
// are the ones the matching reads most (paper VI-D, Fig. 15b), and far more
// so than the lists ranked by length (the paper's Naive policy). With the
// default budget the walks cost 5-10% of the exact tree walk; a larger
// budget buys coverage, and so may a boost of the four-vertex pattern's
// walks (Options.Boost; this graph's D is under autoBoost's threshold).
func TestCoverage(t *testing.T) {
	g, delta, d := powerLaw(t, 12, 40000, 512, 3)
	degree := make([]float64, NumKeys(g))
	for v := range degree {
		a := g.Out(graph.VertexID(v))
		degree[v] = float64(len(a.Sorted) + len(a.Appended))
	}
	for _, p := range []*query.Pattern{
		pattern("triangle", 3, shapeTriangle, nil, "", false),
		pattern("square", 4, shapeSquare, nil, "", false),
		pattern("house", 5, shapeHouse, nil, "", false),
	} {
		qs := compile(t, d, false, query.Embeddings, p)
		exact := Exact(g, delta, qs, Terms)
		d1, d5 := Coverage(exact, degree, 0.01), Coverage(exact, degree, 0.05)
		for _, c := range []struct {
			budget float64
			boost  int
			min    float64
		}{{0, 0, 0.75}, {0.4, 0, 0.85}, {0, 16, 0.75}} {
			var e Estimator
			est, err := e.Estimate(g, delta, qs, Options{Seed: 1, Budget: c.budget, Boost: c.boost})
			if err != nil {
				t.Fatal(err)
			}
			counts := est.Counts(nil)
			c1, c5 := Coverage(exact, counts, 0.01), Coverage(exact, counts, 0.05)
			t.Logf("%s, budget %v, boost %d: %d lists read; M = %d, %d steps for %.0f nodes; coverage top 1%% %.2f, 5%% %.2f (by degree %.2f, %.2f)",
				p.Name, c.budget, est.Boost, countPositive(exact), est.Walks, est.Steps, est.Nodes, c1, c5, d1, d5)
			if c1 < c.min || c5 < c.min || c1 < d1+0.15 || c5 < d5+0.15 {
				t.Errorf("%s, budget %v, boost %d: coverage %.2f (1%%) and %.2f (5%%), want at least %v and 0.15 over the degree order's",
					p.Name, c.budget, est.Boost, c1, c5, c.min)
			}
		}
	}
}

func TestCoverageMetric(t *testing.T) {
	exact := []uint64{0, 10, 9, 8, 7, 0, 1, 1, 1, 1}
	est := []float64{5, 10, 0, 8, 0, 0, 0, 0, 0, 0}
	// 8 lists read; the top half is {1, 2, 3, 4}; the estimate's top four
	// positives are {1, 3, 0}.
	if got := Coverage(exact, est, 0.5); got != 0.5 {
		t.Fatalf("Coverage = %v, want 0.5", got)
	}
	if got := Coverage(make([]uint64, 3), est, 0.5); got != 1 {
		t.Fatalf("Coverage of nothing read = %v, want 1", got)
	}
	// Ties at the boundary: the top 3 of {9, 5, 5, 5, 1} are 9 and any two
	// of the 5s.
	exact = []uint64{9, 5, 5, 5, 1}
	if got := Coverage(exact, []float64{3, 0, 2, 1, 0}, 0.6); got != 1 {
		t.Errorf("tied lists: Coverage = %v, want 1", got)
	}
	if got := Coverage(exact, []float64{0, 1, 2, 3, 0}, 0.6); got != 2.0/3 {
		t.Errorf("ties fill only S's room: Coverage = %v, want 2/3", got)
	}
	if got := Coverage(exact, []float64{0, 0, 0, 0, 9}, 0.6); got != 0 {
		t.Errorf("Coverage = %v, want 0", got)
	}
}

func TestCacheCoverageMetric(t *testing.T) {
	exact := []uint64{0, 10, 9, 8, 7, 0, 1, 1, 1, 1}
	// The top half of the 8 lists read is {1, 2, 3, 4}; the cache holds 1
	// and 3 of them, and lists outside S do not count against it.
	if got := CacheCoverage(exact, []uint32{0, 3, 1, 6, 7, 8, 9}, 0.5); got != 0.5 {
		t.Fatalf("CacheCoverage = %v, want 0.5", got)
	}
	if got := CacheCoverage(exact, []uint32{4, 3, 2, 1}, 0.5); got != 1 {
		t.Fatalf("CacheCoverage = %v, want 1", got)
	}
	if got := CacheCoverage(exact, nil, 0.5); got != 0 {
		t.Fatalf("CacheCoverage of an empty cache = %v, want 0", got)
	}
	if got := CacheCoverage(make([]uint64, 3), nil, 0.5); got != 1 {
		t.Fatalf("CacheCoverage of nothing read = %v, want 1", got)
	}
	// Ties: the top 3 of {9, 5, 5, 5, 1} are 9 and any two of the 5s; a
	// cache of all three 5s covers two thirds, not one.
	exact = []uint64{9, 5, 5, 5, 1}
	if got := CacheCoverage(exact, []uint32{1, 2, 3}, 0.6); got != 2.0/3 {
		t.Errorf("ties fill only S's room: CacheCoverage = %v, want 2/3", got)
	}
}

func TestTop(t *testing.T) {
	exact := []uint64{0, 10, 9, 8, 7, 0, 1, 1, 1, 1}
	if got := Top(exact, 0.5); !slices.Equal(got, []uint32{1, 2, 3, 4}) {
		t.Errorf("Top(0.5) = %v, want [1 2 3 4]", got)
	}
	if got := Top(exact, 0.7); !slices.Equal(got, []uint32{1, 2, 3, 4, 6, 7}) {
		t.Errorf("Top(0.7) = %v, want the ties by key: [1 2 3 4 6 7]", got)
	}
	if got := Top(make([]uint64, 4), 0.5); len(got) != 0 {
		t.Errorf("Top of nothing read = %v", got)
	}
}

// TestExactParallel: Exact, which spreads the units over all cores, counts
// what one walker counts alone.
func TestExactParallel(t *testing.T) {
	g, delta, d := powerLaw(t, 11, 20000, 256, 5)
	qs := compile(t, d, false, query.Embeddings, pattern("house", 5, shapeHouse, nil, "", false))
	got := Exact(g, delta, qs, Terms)
	want := exactWalker(g, delta, qs, Terms, false).ex
	if countPositive(want) == 0 {
		t.Fatal("the batch reads no list")
	}
	if !slices.Equal(got, want) {
		t.Fatal("Exact's counts differ from one walker's")
	}
}

func TestErrors(t *testing.T) {
	s := newScenario(t, scenarioConfigs[0], 1)
	qs := compile(t, s.dict, false, query.Embeddings, pattern("triangle", 3, shapeTriangle, nil, "", false))
	var e Estimator
	for _, o := range []Options{{Walks: -1}, {Alpha: -1}, {Delta: 1}, {Top: 2}, {Plans: 7}} {
		if _, err := e.Estimate(s.g, s.delta, qs, o); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	s.g.Reorganize()
	if _, err := e.Estimate(s.g, s.delta, qs, Options{}); err == nil {
		t.Error("no error on a graph without a pending batch")
	}
	// No changes, or no query that can match: an empty estimate.
	est, err := e.Estimate(s.g, nil, qs, Options{})
	if err != nil || len(est.Hottest(nil)) != 0 || est.Walks != 0 {
		t.Errorf("empty batch: %v, %+v", err, est)
	}
	other := compile(t, s.dict, false, query.Embeddings, pattern("triangle", 3, shapeTriangle, nil, "y", false))
	s2 := newScenario(t, scenarioConfigs[0], 2)
	est, err = e.Estimate(s2.g, s2.delta, other, Options{})
	if err != nil || len(est.Hottest(nil)) != 0 {
		t.Errorf("a query on an absent edge label: %v, %d lists", err, len(est.Hottest(nil)))
	}
}

func TestListKey(t *testing.T) {
	for _, directed := range []bool{false, true} {
		for _, v := range []graph.VertexID{0, 1, 12345, graph.MaxVertices - 1} {
			for _, in := range []bool{false, true} {
				k := ListKey(v, in, directed)
				r := KeyList(k, directed)
				if r.V != v || r.In != (in && directed) {
					t.Errorf("directed %v: (%d, %v) → %d → %+v", directed, v, in, k, r)
				}
			}
		}
	}
	if fmt.Sprint(ListKey(5, true, true)) != "11" {
		t.Error("directed keys are v<<1|in")
	}
}

// autoBoost boosts only when a live pattern has four vertices and D is
// large enough, by D/1024 rounded down to a power of two, and gives way to
// Options.Boost, weighted walks and the 128-bit sums.
func TestAutoBoost(t *testing.T) {
	d := graph.NewDict()
	qs := compile(t, d, false, query.Embeddings,
		pattern("triangle", 3, shapeTriangle, nil, "", false),
		pattern("square", 4, shapeSquare, nil, "", false),
		pattern("house", 5, shapeHouse, nil, "", false))
	cfg := func(D uint64, live ...bool) *config {
		c := &config{queries: qs, live: live, d: D}
		c.pow[1] = u128{lo: 1}
		for i := 2; i < len(c.pow); i++ {
			c.pow[i] = c.pow[i-1].mul(D)
		}
		return c
	}
	for _, c := range []struct {
		name string
		c    *config
		n    int
		opts Options
		want uint64
	}{
		{"square, D 2^17", cfg(1<<17, true, true, true), 5, Options{}, 128},
		{"square, D 200k", cfg(200000, false, true, false), 4, Options{}, 128},
		{"D under 2048", cfg(2047, true, true, true), 5, Options{}, 1},
		{"square dead", cfg(1<<17, true, false, true), 5, Options{}, 1},
		{"weighted", cfg(1<<17, true, true, true), 5, Options{Weighted: true}, 1},
		{"forced", cfg(100, true, false, true), 5, Options{Boost: 8}, 8},
		{"off", cfg(1<<17, true, true, true), 5, Options{Boost: 1}, 1},
		{"capped", cfg(1<<17, true, true, true), 4, Options{Boost: 1 << 30}, 1 << 20},
		{"sums, D 2^17", cfg(1<<17, true, true, true), 5, Options{Boost: 1 << 30}, 1 << 14},
		// D^3·2^62 is 2^122 for D = 2^20: K = 2^5 still fits 2^127.
		{"sums", cfg(1<<20, true, true, true), 5, Options{Boost: 1 << 10}, 1 << 5},
	} {
		if got := autoBoost(c.c, c.n, c.opts); got != c.want {
			t.Errorf("%s: K = %d, want %d", c.name, got, c.want)
		}
	}
}
