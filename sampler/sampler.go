// Package sampler estimates, before a batch is matched, how often the
// matching will read each neighbour list: GCSM's random-walk estimator
// (the GCSM paper, section IV; docs/gpu.md). The cache package packs the
// lists it ranks hottest into the GPU's DCSR block.
//
// Matching one term of a query for a batch is a tree (paper Fig. 4): the
// roots are the update edges, in each orientation the incremental matcher
// tries; a node at depth d is a partial match of plan levels 0..d; its
// children are the candidates of level d+1; and each node reads the lists
// of the matched vertices that constrain the next query vertex. The tree is
// exactly the CPU walker's (package incremental): same plans, same old/new/
// stable views, same label, injectivity and symmetry filters, so Exact
// counts the reads the matchers make, and its leaves are the batch's match
// deltas (the tests check that against brute force). A walk picks a root
// with probability 1/|ΔE| and then, at every node, each child with
// probability 1/D (D the maximum degree), stopping otherwise; so it takes a
// step at depth i with probability 1/(|ΔE|·D^(i-1)) and
//
//	C̃_v = Σ_i |ΔE|·D^(i-1)·c_{v,i}                               (formula 3)
//
// is an unbiased estimate of the reads of list v, averaged over M walks per
// term tree. All walks run in one pass (paper IV-B): each root gets
// M/|ΔE| walks, rounded up or down at random (the paper draws
// B_1 ~ Bin(M, 1/|ΔE|); the rounding keeps the mean and drops the spread),
// and the B walks at a node are spread over the D slots of its driver as a
// comb (walker.expand), so each child gets B/D of them in expectation, as
// the paper's Bin(B, 1/D) gives, and subtrees no walk reaches are never
// built. A four-vertex pattern's walks are multiplied at the roots'
// children (Options.Boost), each then standing for less. M starts at the
// paper's |ΔE|·D^(n-2)/32^n, at least 4|ΔE|, and is raised once by
// formula (5),
//
//	M >= (n-1)(2+α)|ΔE|D^(n-2) / (α²(1-δ)C_y),
//
// with C_y the estimate at the rank of the lists a cache would keep, within
// a cost budget: the walks estimate the tree's size too, and the second
// pass may take at most a tenth as many steps as the tree has nodes.
//
// Cost: a pass visits at most min(tree size, M·(n-2)) nodes, and a node
// costs O(1) random numbers plus one binary search per constraint for each
// slot a walk lands on, never a whole intersection. On BenchmarkEstimate's
// 2^20-edge R-MAT graph with a batch of 4096 an estimate takes 9% of the
// time incremental.CPU takes to count the batch for a triangle, 6% for a
// labeled house and 0.5% for an unlabeled one (docs/benchmarks.md). Space is O(|V|): one array of 4 bytes per list, the
// index of the sparse set of totals (Estimator), and per worker a hash
// table of the lists its walks read (sums) and one of label cuts (cuts),
// all reused from batch to batch; nothing is allocated per step. Workers split the work units (update edge, term); every unit
// has its own random stream, derived from (seed, pass, unit), and sums are
// kept as integers, so an estimate depends on the seed only, never on the
// number of workers.
//
// A list is named by a key: the vertex id on undirected graphs, and
// vertex<<1|dir on directed ones (dir 0 for the out-list, 1 for the in-list);
// see ListKey.
package sampler

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// ListKey names list (v, in) of a graph: v on undirected graphs, where a
// vertex has one list, and v<<1|in on directed ones. Vertex ids are below
// 2^31, so a key fits 32 bits.
func ListKey(v graph.VertexID, in, directed bool) uint32 {
	if !directed {
		return v
	}
	k := v << 1
	if in {
		k |= 1
	}
	return k
}

// KeyList is ListKey's inverse.
func KeyList(k uint32, directed bool) dyngraph.ListRef {
	if !directed {
		return dyngraph.ListRef{V: k}
	}
	return dyngraph.ListRef{V: k >> 1, In: k&1 != 0}
}

// NumKeys is the number of list keys of g: one past the largest.
func NumKeys(g *dyngraph.Graph) int {
	if g.Directed() {
		return 2 * g.NumVertices()
	}
	return g.NumVertices()
}

// Plans selects which of a query's per-term plans the walks follow.
type Plans uint8

const (
	// Terms are query.Query.Terms: what the GPU kernel walks in every mode
	// and the CPU executor in Enumerate mode.
	Terms Plans = iota
	// CountTerms are query.Query.CountTerms: what the CPU executor walks in
	// Count mode (symmetry-broken plans, multiplied back).
	CountTerms
)

// Options configure an estimate.
type Options struct {
	// Walks fixes M, the number of walks per term tree. Zero starts at the
	// paper's |ΔE|·D^(n-2)/32^n (at least MinWalks·|ΔE|) and raises M once
	// by formula (5), within Budget. Patterns of at most three vertices,
	// whose trees read lists only at the roots, start at 256·|ΔE| instead
	// and take one pass: there M costs nothing, as a root costs the same
	// whatever its walks.
	Walks int
	// Seed picks the random streams: the same seed gives the same estimate.
	Seed uint64
	// Workers is the number of goroutines; zero means GOMAXPROCS. The
	// estimate does not depend on it.
	Workers int
	// Plans is the plans the matcher that will read the cache walks.
	Plans Plans

	// Formula (5), used when Walks is zero: rank correctly, with
	// confidence Delta, two lists whose reads differ by a factor 1+Alpha.
	// Defaults 1 and 0.9.
	Alpha, Delta float64
	// Top places C_y: the estimate of the list at rank Top·(lists with a
	// positive estimate), the boundary of the lists a cache is likely to
	// keep. Default 0.05: the paper's top 5%, which takes over 80% of the
	// reads (Fig. 15a).
	Top float64
	// Budget bounds the passes after the first: the walks' steps, the
	// first pass's roots excepted (the matcher visits every root anyway),
	// may number at most Budget times the trees' nodes, which the passes
	// so far estimate (Estimate.Nodes). A step costs about what the
	// matcher spends on a node, and the nodes are a lower bound of its work
	// (the last level's intersections are not nodes), so the default, 0.1,
	// keeps within the paper's target of an estimation overhead under 10%
	// (VI-B, Table II). Formula (5) asks for far more walks than that on
	// skewed graphs, where C_y is small next to |ΔE|·D^(n-2).
	Budget float64
	// MaxWalks, when positive, caps M, the start included.
	MaxWalks int
	// Deadline, when positive, bounds the passes after the first by time:
	// a pass starts only if the estimate's time so far, and the next pass's
	// at the last pass's time per walk, stay within it. The estimate is
	// then no longer the seed's alone: a pass may go or stay with the
	// machine's speed. It is there because a batch's trees can cost
	// several times as much per step as the last batch's, which no number
	// of walks set from that batch can foresee.
	Deadline time.Duration
	// Weighted sends a walk at a node to one of the node's own L slots
	// (probability 1/L) and multiplies what it stands for by L: Knuth's
	// estimator of a tree's size, applied to its reads. It stays unbiased,
	// and walks end only at slots that hold no candidate, where the
	// paper's 1/D ends most of them at once on skewed graphs (a node of
	// degree L keeps a walk with probability L/D). Off, the estimate is the
	// paper's (formula 3).
	Weighted bool
	// Boost is K, the factor by which the paper's walks are multiplied at
	// the children of a four-vertex pattern's roots (the last nodes that
	// read lists): K·B walks leave a root with B, each standing for 1/K
	// of a read, so the estimate stays unbiased. 0 picks autoBoost's K, 1
	// turns it off. Weighted walks are never boosted.
	Boost int
}

// Why boost: a four-vertex pattern's reads past the roots are the lists of
// the roots' children, and the paper's walk reaches a child with
// probability 1/D. On a 2^27-edge R-MAT graph (D ~ 10^5) the walks a 5%
// share of the kernel allowed reached a few hundred children for a batch
// of 2,048, so the most read lists, hubs next to many updated vertices, were
// rarely rated: top-1% coverage was 0.13-0.24 for the 4-cycle, where the
// house's, whose walks go deeper, was 0.87-1.00. Walks sent to those
// children cost one step each and go no further, so K of them per walk
// buy coverage at the rate of one step each, not of a whole walk.

// autoBoost is the K that Options.Boost 0 picks: D/1024, a power of two,
// so that the fewest walks a root gets (MinWalks) send 1/256 of a walk to
// each child slot; or 1 when no live pattern has four vertices. The walk
// cap (kernels' EstimateShare) raises the walks from there. A larger K
// rates the hot lists better but makes even the cap's fewest walks take
// most of a batch (D/64 spent 83 ms of a 187 ms batch estimating).
// K is halved until D^(n-2)·2^62·K fits the 128-bit sums, for the largest
// pattern n of the estimate.
func autoBoost(c *config, n int, opts Options) uint64 {
	const boostDiv = 1024
	if opts.Weighted || opts.Boost == 1 {
		return 1
	}
	k := uint64(opts.Boost)
	if k == 0 {
		four := false
		for qi, q := range c.queries {
			four = four || (c.live[qi] && q.N() == 4)
		}
		if !four || c.d < 2*boostDiv {
			return 1
		}
		k = 1 << (bits.Len64(c.d/boostDiv) - 1)
	}
	k = min(k, 1<<20)
	for k > 1 && c.pow[n-1].mul(1<<62).mul(k) == u128Max {
		k >>= 1
	}
	return k
}

// DefaultBudget is Options.Budget's default.
const DefaultBudget = 0.1

// MinWalks is the floor of the starting M per update edge: with M = 4|ΔE|
// a root is left unvisited with probability e^-4 ≈ 2%. The paper's start
// |ΔE|·D^(n-2)/32^n is below |ΔE| for small patterns on graphs of small
// degree (a triangle needs D > 32^3).
const MinWalks = 4

func (o *Options) validate() error {
	if o.Walks < 0 || o.Workers < 0 || o.MaxWalks < 0 || o.Boost < 0 || o.Deadline < 0 {
		return errors.New("sampler: Walks, Workers, MaxWalks, Boost and Deadline must not be negative")
	}
	if o.Alpha == 0 {
		o.Alpha = 1
	}
	if o.Delta == 0 {
		o.Delta = 0.9
	}
	if o.Top == 0 {
		o.Top = 0.05
	}
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	if !(o.Alpha > 0) || !(o.Delta > 0 && o.Delta < 1) || !(o.Top > 0 && o.Top <= 1) || !(o.Budget > 0) {
		return fmt.Errorf("sampler: need Alpha > 0, 0 < Delta < 1, 0 < Top <= 1 and Budget > 0 (got %v, %v, %v, %v)",
			o.Alpha, o.Delta, o.Top, o.Budget)
	}
	if o.Plans > CountTerms {
		return fmt.Errorf("sampler: unknown Plans %d", o.Plans)
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	return nil
}

// Estimate is the estimated reads of every list for one batch. It belongs to
// the Estimator and is valid until its next Estimate.
type Estimate struct {
	// Walks is the M used, per term tree, over all passes.
	Walks int
	// Wanted is the M that formula (5) asked for (0 when Walks was fixed
	// or the first pass sufficed); Walks is less when Budget or MaxWalks
	// capped it.
	Wanted int
	// Passes is 1, or up to maxPasses when formula (5) raised M.
	Passes int
	// Steps is the number of tree nodes the walks visited: the cost.
	Steps int64
	// Nodes estimates the number of nodes of the trees (the leaves, which
	// read nothing, excluded): the work of matching the batch, by the same
	// estimator as a list's reads.
	Nodes float64
	// MaxDegree is D: at least the largest list (dyngraph's
	// MaxDegreeBound), or the largest out- plus in-list on directed graphs
	// when a query has an undirected edge.
	MaxDegree int
	// Boost is the K the walks used (Options.Boost).
	Boost int

	keys   []uint32 // keys with a positive estimate
	sorted bool     // keys are in Hottest order
	// vals[i] is list order[i]'s estimate, and at[k] is where list k's is
	// when order[at[k]] == k: the Estimator's sparse set of totals, which
	// an Estimate shares until the next one. n is NumKeys of the graph.
	vals  []float64
	order []uint32
	at    []uint32
	n     int
	// recs are keys with their estimates, for Hottest; tmp and hist are
	// its scratch.
	recs, tmp []hotRec
	hist      []int
}

// Count is the estimated number of reads of list k (see ListKey).
func (e *Estimate) Count(k uint32) float64 {
	if int(k) < len(e.at) {
		if i := e.at[k]; int(i) < len(e.order) && e.order[i] == k {
			return e.vals[i]
		}
	}
	return 0
}

// Counts appends to dst every list's estimated reads, NumKeys of the graph
// of them in key order, and returns it.
func (e *Estimate) Counts(dst []float64) []float64 {
	dst = slices.Grow(dst, e.n)
	for k := range e.n {
		dst = append(dst, e.Count(uint32(k)))
	}
	return dst
}

// Rated is the number of lists with a positive estimate.
func (e *Estimate) Rated() int { return len(e.keys) }

// Hottest appends to dst the keys with a positive estimate, most read first
// (ties by key), and returns it.
func (e *Estimate) Hottest(dst []uint32) []uint32 {
	if !e.sorted {
		e.recs, e.tmp, e.hist = sortHot(e.keys, e.recs, e.tmp, e.hist)
		e.sorted = true
	}
	return append(dst, e.keys...)
}

// Estimator runs estimates. It keeps its arrays from batch to batch, so that
// after the first batches of a graph an estimate allocates nothing (with one
// worker; more workers cost a goroutine each). It is not safe for
// concurrent use.
type Estimator struct {
	cfg   config
	ws    []*walker
	est   Estimate
	live  []bool
	terms []termRef
	ranks []float64 // formula (5)'s scratch
	roots int64     // steps at the roots in the first pass
	// The workers' sums over the passes so far, Σ B·D^(d-1), of the lists
	// with a non-zero one, as a sparse set: totals[i] is list touched[i]'s,
	// and at[k] is where list k's is when touched[at[k]] == k. at has an
	// entry per list (the estimator's O(|V|)) and is never cleared, so an
	// estimate costs nothing for the lists the one before it rated, where
	// clearing a dense array would charge a small estimate for the 0.2M
	// lists a large one before it rated (1.3 ms for 33 steps).
	// tree is the sum over the trees' nodes.
	at      []uint32
	touched []uint32
	totals  []u128
	tree    u128
}

// Estimate estimates the reads of every list for the batch g has applied
// and not yet reorganized; delta is its ΔE as dyngraph.Graph.Apply returned
// it. g is only read.
func (e *Estimator) Estimate(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, opts Options) (*Estimate, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if len(delta) > 0 && !g.Pending() {
		return nil, errors.New("sampler: Estimate on a graph with no pending batch")
	}
	start := time.Now()
	est := &e.est
	nk := NumKeys(g)
	if len(e.at) < nk {
		e.at = prefault(make([]uint32, nk+nk/4))
	}
	e.touched, e.totals, e.tree = e.touched[:0], e.totals[:0], u128{}
	*est = Estimate{keys: est.keys[:0], recs: est.recs[:0], tmp: est.tmp, hist: est.hist, vals: est.vals[:0], at: e.at, n: nk}

	c := &e.cfg
	n := e.setup(c, g, delta, queries, opts.Plans)
	if n == 0 || len(delta) == 0 {
		return est, nil
	}
	est.MaxDegree = int(c.d)
	e.roots = 0
	c.exact, c.leaves, c.seed, c.weighted = false, false, opts.Seed, opts.Weighted
	c.pRoot = 1 / float64(len(delta))
	c.boost = autoBoost(c, n, opts)
	for d := range c.pow {
		c.powK[d] = c.pow[d].mul(c.boost)
	}
	est.Boost = int(c.boost)

	m := uint64(opts.Walks)
	shallow := n <= 3 // every read happens at a root
	if m == 0 {
		m = startWalks(len(delta), c.d, n)
		if shallow {
			// A root costs the same whatever its B, so M is free: 256
			// walks per root put its weight within about 6%.
			m = max(m, 256*uint64(len(delta)))
		}
	}
	if opts.MaxWalks > 0 {
		m = min(m, uint64(opts.MaxWalks))
	}
	ws := e.walkers(c, opts.Workers, c.units())
	e.pass(ws, 0, m)
	total := m
	est.Passes = 1
	// More passes over shallow trees would only redraw the roots' B.
	if opts.Walks == 0 && !shallow {
		total = e.morePasses(ws, n, len(delta), m, opts, start)
	}
	est.Walks = int(total)
	e.readOut(len(delta), total, opts.Workers)
	return est, nil
}

// prefault writes a zero into every page of s's array and returns s. A
// fresh large array is mapped on first touch, and a batch reads and writes
// a few thousand of its entries at random: on 2^22 vertices with 16
// workers they faulted in hundreds to thousands of pages per batch. This
// pays for the mapping once, when the array is made.
func prefault[T any](s []T) []T {
	var zero T
	all := s[:cap(s)]
	step := max(1, 4096/int(unsafe.Sizeof(zero)))
	for i := 0; i < len(all); i += step {
		all[i] = zero
	}
	return s
}

// maxPasses bounds the passes of one estimate: each pass walks the roots
// again.
const maxPasses = 4

// morePasses raises M from the first pass's m towards formula (5)'s, within
// opts.Budget, opts.MaxWalks and opts.Deadline (from start), and returns
// the M reached.
//
// A pass of Δm walks costs s(Δm) steps, and s is concave: as Δm grows, more
// walks share each node (a node costs one step whatever its B). So the
// steps per walk of the last pass bound those of a larger next pass, and
// the next pass takes as many walks as the steps left allow at that rate.
// Extrapolating from the first pass alone left most of the budget unspent
// (a tenth to a half of it on R-MAT graphs), with the coverage of the top
// lists to match.
func (e *Estimator) morePasses(ws []*walker, n, edges int, m uint64, opts Options, start time.Time) uint64 {
	est := &e.est
	e.readOut(edges, m, opts.Workers)
	want := e.formula5(n, edges, uint64(est.MaxDegree), opts)
	if want <= m {
		return m
	}
	est.Wanted = int(min(want, math.MaxInt64/2))
	if opts.MaxWalks > 0 {
		want = min(want, uint64(opts.MaxWalks))
	}
	roots := e.roots // the first pass's
	total, last, lastSteps := m, m, est.Steps
	lastTime := time.Since(start) // the first pass's, setup and all: an upper bound
	for est.Passes < maxPasses && total < want {
		// The first pass's roots are not charged: the matcher visits
		// every root anyway, at about the same cost.
		left := opts.Budget*est.Nodes - float64(est.Steps-roots)
		if left <= 0 || lastSteps <= 0 {
			break
		}
		next := min(want-total, uint64(left*float64(last)/float64(lastSteps)))
		if next < total/8 {
			break // not worth another walk over the roots
		}
		if opts.Deadline > 0 && time.Since(start)+time.Duration(float64(lastTime)*float64(next)/float64(last)) > opts.Deadline {
			break
		}
		before, t0 := est.Steps, time.Now()
		e.pass(ws, est.Passes, next)
		est.Passes++
		total += next
		last, lastSteps = next, est.Steps-before
		e.readOut(edges, total, opts.Workers)
		lastTime = time.Since(t0)
	}
	return total
}

// startWalks is the paper's M = |ΔE|·D^(n-2)/32^n, at least MinWalks·|ΔE|.
func startWalks(edges int, d uint64, n int) uint64 {
	m := float64(edges) * math.Pow(float64(d), float64(n-2)) / math.Pow(32, float64(n))
	m = max(m, float64(MinWalks*edges))
	return uint64(min(math.Ceil(m), 1<<40))
}

// formula5 is the M that formula (5) asks for, given the first pass's
// estimate.
func (e *Estimator) formula5(n, edges int, d uint64, opts Options) uint64 {
	r := append(e.ranks[:0], e.est.vals...)
	e.ranks = r
	if len(r) == 0 {
		return 0
	}
	slices.Sort(r)
	rank := int(math.Ceil(opts.Top * float64(len(r))))
	cy := r[len(r)-rank] // rank-th largest
	a := opts.Alpha
	want := float64(n-1) * (2 + a) * float64(edges) * math.Pow(float64(d), float64(n-2)) / (a * a * (1 - opts.Delta) * cy)
	return uint64(min(math.Ceil(want), 1<<40))
}

// setup fills the pass configuration and returns the largest pattern that
// can match (0 when none can).
func (e *Estimator) setup(c *config, g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, plans Plans) int {
	*c = config{
		g: g, vl: g.VertexLabels(), ord: g.Order(), multi: g.MultiLabel(), directed: g.Directed(),
		delta: delta, queries: queries, plans: plans,
	}
	e.live = e.live[:0]
	e.terms = e.terms[:0]
	n, anyDir := 0, false
	for qi, q := range queries {
		ok := edgeLabelsPossible(g, q)
		e.live = append(e.live, ok)
		if !ok {
			continue
		}
		for t := range q.Terms {
			e.terms = append(e.terms, termRef{int32(qi), int32(t)})
		}
		n = max(n, q.N())
		anyDir = anyDir || hasAny(q, plans)
	}
	c.live, c.terms = e.live, e.terms
	if n == 0 || len(delta) == 0 {
		return n
	}
	c.d = maxSlots(g, anyDir)
	c.pow[1] = u128{lo: 1}
	for d := 2; d < len(c.pow); d++ {
		c.pow[d] = c.pow[d-1].mul(c.d)
	}
	return n
}

// hasAny reports whether a plan reads both lists of a vertex for one
// constraint (an undirected query edge on a directed graph).
func hasAny(q *query.Query, plans Plans) bool {
	ps := q.Terms
	if plans == CountTerms {
		ps = q.CountTerms
	}
	for _, p := range ps {
		for _, l := range p.Levels {
			for _, c := range l.Cons {
				if c.Dir == query.Any {
					return true
				}
			}
		}
	}
	return false
}

// maxSlots is D: no driver has more slots. A driver's slots are entries of
// one list, or of a vertex's out- and in-list for an undirected query edge
// on a directed graph. The first is dyngraph's MaxDegreeBound, O(1); the
// second costs a pass over the vertex table.
func maxSlots(g *dyngraph.Graph, anyDir bool) uint64 {
	if !anyDir || !g.Directed() {
		return uint64(max(g.MaxDegreeBound(), 1))
	}
	d := 1
	for v := range g.NumVertices() {
		o, i := g.Out(graph.VertexID(v)), g.In(graph.VertexID(v))
		d = max(d, len(o.Sorted)+len(o.Appended)+len(i.Sorted)+len(i.Appended))
	}
	return uint64(d)
}

// edgeLabelsPossible is false when the graph has one edge label and the
// query needs another: the matchers skip such queries, so nothing is read.
func edgeLabelsPossible(g *dyngraph.Graph, q *query.Query) bool {
	if g.MultiLabel() {
		return true
	}
	l, ok := g.EdgeLabel()
	if !ok {
		return false
	}
	for _, e := range q.Edges {
		if e.Label != graph.Wildcard && e.Label != l {
			return false
		}
	}
	return true
}

// walkers readies the workers' walkers.
func (e *Estimator) walkers(c *config, workers, units int) []*walker {
	workers = max(1, min(workers, units))
	for len(e.ws) < workers {
		e.ws = append(e.ws, &walker{})
	}
	ws := e.ws[:workers]
	for _, w := range ws {
		w.c = c
		w.steps = 0
		w.cuts.reset()
	}
	return ws
}

// unitChunk is how many work units a worker claims at once, at most:
// trees vary by orders of magnitude, so chunks stay small.
const unitChunk = 8

// pass runs m walks per term tree and adds every worker's sums to the
// Estimator's.
func (e *Estimator) pass(ws []*walker, pass int, m uint64) {
	c := ws[0].c
	c.pass, c.walks = pass, m
	units := c.units()
	if len(ws) == 1 {
		for u := range units {
			ws[0].runUnit(u)
		}
	} else {
		// Small batches take smaller chunks, so that every worker gets
		// units: 64 edges in chunks of 8 kept half of 16 cores idle.
		chunk := max(1, min(unitChunk, units/(4*len(ws))))
		var next atomic.Int64
		var wg sync.WaitGroup
		for _, w := range ws {
			wg.Go(func() {
				for {
					u0 := int(next.Add(int64(chunk)) - int64(chunk))
					if u0 >= units {
						return
					}
					for u := u0; u < min(u0+chunk, units); u++ {
						w.runUnit(u)
					}
				}
			})
		}
		wg.Wait()
	}
	for _, w := range ws {
		w.acc.drain(e.addSum)
		e.tree = e.tree.add(w.tree)
		w.tree = u128{}
		e.est.Steps += w.steps
		e.roots += w.roots
		w.steps, w.roots = 0, 0
	}
}

// addSum adds a worker's sum x for list k to the totals.
func (e *Estimator) addSum(k uint32, x u128) {
	if i := e.at[k]; int(i) < len(e.touched) && e.touched[i] == k {
		e.totals[i] = e.totals[i].add(x)
		return
	}
	if x.isZero() {
		return // rated lists have a positive estimate
	}
	e.at[k] = uint32(len(e.touched))
	e.touched = append(e.touched, k)
	e.totals = append(e.totals, x)
}

// readOut turns the totals into estimates: a total is Σ B·D^(d-1) in units
// of 1/K (Options.Boost), and each walk stands for |ΔE|/M of a read.
func (e *Estimator) readOut(edges int, m uint64, workers int) {
	est := &e.est
	scale := float64(edges) / float64(m) / float64(e.cfg.boost)
	keys := e.touched
	est.recs = slices.Grow(est.recs[:0], len(keys))[:len(keys)]
	est.vals = slices.Grow(est.vals[:0], len(keys))[:len(keys)]
	if len(keys) < parallelMin {
		e.readKeys(0, len(keys), scale)
	} else {
		inParallel(len(keys), workers, func(lo, hi int) { e.readKeys(lo, hi, scale) })
	}
	est.Nodes = e.tree.float() * scale
	est.keys = append(est.keys[:0], e.touched...)
	est.order = e.touched
	est.sorted = false
}

// readKeys reads out the estimates of touched keys [lo, hi).
func (e *Estimator) readKeys(lo, hi int, scale float64) {
	est := &e.est
	for i, k := range e.touched[lo:hi] {
		c := e.totals[lo+i].float() * scale
		est.vals[lo+i] = c
		est.recs[lo+i] = hotRec{^math.Float64bits(c), k}
	}
}

// parallelMin is the fewest keys that readOut splits over the workers:
// a 5-cycle batch at 2^27 edges rates 0.2-0.5M lists.
const parallelMin = 1 << 14

// inParallel calls f over [0, n) split in up to workers parts.
func inParallel(n, workers int, f func(lo, hi int)) {
	parts := max(1, min(workers, n/(parallelMin/4)))
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() { f(n*p/parts, n*(p+1)/parts) })
	}
	wg.Wait()
}

// Exact counts, deterministically, the reads of every list made by the
// trees that Estimate samples (all of them, visited once each): the
// reference for tests and for Coverage. It costs a matching of the batch
// without its last level, spread over all cores like Estimate's units
// (counts add up the same in any order). The slice has NumKeys(g) entries.
func Exact(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, plans Plans) []uint64 {
	var e Estimator
	c := &e.cfg
	ex := make([]uint64, NumKeys(g))
	if e.setup(c, g, delta, queries, plans) == 0 {
		return ex
	}
	c.exact = true
	units := c.units()
	ws := make([]*walker, max(1, min(runtime.GOMAXPROCS(0), units)))
	var next atomic.Int64
	var wg sync.WaitGroup
	for i := range ws {
		ws[i] = &walker{c: c, ex: ex}
		if i > 0 {
			ws[i].ex = make([]uint64, len(ex))
		}
		wg.Go(func() {
			for u := int(next.Add(1) - 1); u < units; u = int(next.Add(1) - 1) {
				ws[i].runUnit(u)
			}
		})
	}
	wg.Wait()
	for _, w := range ws[1:] {
		for k, n := range w.ex {
			ex[k] += n
		}
	}
	return ex
}

func exactWalker(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, plans Plans, leaves bool) *walker {
	var e Estimator
	c := &e.cfg
	w := &walker{c: c, ex: make([]uint64, NumKeys(g))}
	if e.setup(c, g, delta, queries, plans) == 0 {
		return w
	}
	c.exact, c.leaves = true, leaves
	for u := range c.units() {
		w.runUnit(u)
	}
	return w
}

// Coverage measures an estimate's ranking: with S the top fraction of the
// lists that exact reads at all, ranked by exact count, and T as many lists
// ranked by estimate (positive estimates only), it returns |S∩T|/|S|. It
// is stricter than the paper's metric, CacheCoverage, whose T is the whole
// cache. It is 1 when no list is read.
func Coverage(exact []uint64, est []float64, fraction float64) float64 {
	s := topOf(exact, fraction)
	if s.size == 0 {
		return 1
	}
	var t []uint32
	for k, x := range est {
		if x > 0 {
			t = append(t, uint32(k))
		}
	}
	slices.SortFunc(t, func(a, b uint32) int {
		if est[a] != est[b] {
			if est[a] > est[b] {
				return -1
			}
			return 1
		}
		return int(a) - int(b)
	})
	return s.overlap(exact, t[:min(s.size, len(t))])
}

// CacheCoverage is the paper's coverage metric (VI-D, Fig. 15): with S the
// top fraction of the lists that exact reads at all, ranked by exact count,
// and T the lists the cache holds (keys, distinct, in any order), it
// returns |S∩T|/|S|. It is 1 when no list is read.
func CacheCoverage(exact []uint64, keys []uint32, fraction float64) float64 {
	s := topOf(exact, fraction)
	if s.size == 0 {
		return 1
	}
	return s.overlap(exact, keys)
}

// Top returns S of Coverage and CacheCoverage: the keys of the top fraction
// of the lists that exact reads at all, most read first, ties by key.
func Top(exact []uint64, fraction float64) []uint32 {
	var s []uint32
	for k, n := range exact {
		if n > 0 {
			s = append(s, uint32(k))
		}
	}
	slices.SortStableFunc(s, func(a, b uint32) int {
		switch {
		case exact[a] > exact[b]:
			return -1
		case exact[a] < exact[b]:
			return 1
		}
		return 0
	})
	return s[:int(math.Ceil(fraction*float64(len(s))))]
}

// topSet is S, the top lists by exact count, by its boundary: the lists read
// more than last are in it, and size-above of those read exactly last.
//
// Exact counts tie, often at the boundary of S (a triangle's lists are read
// a few times each), and which of the tied lists S holds is arbitrary; so a
// list of T tied with S's last one counts as in S, as long as S has room
// for ties: the overlap is the best over the ways of breaking the ties.
type topSet struct {
	size, above int
	last        uint64
}

func topOf(exact []uint64, fraction float64) topSet {
	s := Top(exact, fraction)
	if len(s) == 0 {
		return topSet{}
	}
	t := topSet{size: len(s), last: exact[s[len(s)-1]]}
	for t.above < t.size && exact[s[t.above]] > t.last {
		t.above++
	}
	return t
}

// overlap is |S∩T|/|S| for the lists t.
func (s topSet) overlap(exact []uint64, t []uint32) float64 {
	hit, tied := 0, 0
	for _, k := range t {
		switch n := exact[k]; {
		case n > s.last:
			hit++
		case n == s.last:
			tied++
		}
	}
	return float64(hit+min(tied, s.size-s.above)) / float64(s.size)
}
