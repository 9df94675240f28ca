package cache

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/sampler"
)

// Policy names a way of choosing the lists to cache; the GPU executor's
// cache placements (kernels.GCSM, Degree, KHop) carry the same names.
type Policy string

const (
	// PolicyGCSM caches the lists the sampler estimates the batch will
	// read most (GCSM).
	PolicyGCSM Policy = "gcsm"
	// PolicyDegree caches the longest lists (the paper's Naive baseline).
	PolicyDegree Policy = "degree"
	// PolicyKHop caches every list within k hops of the batch, or fails
	// (VSGM's baseline).
	PolicyKHop Policy = "khop"
)

// ParsePolicy reads a policy name.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(s); p {
	case PolicyGCSM, PolicyDegree, PolicyKHop:
		return p, nil
	}
	return "", fmt.Errorf("unknown cache policy %q: want gcsm, degree or khop", s)
}

// GCSM appends the keys of est in the order of their estimated reads, most
// first: sampler.Estimate.Hottest.
func GCSM(dst []uint32, est *sampler.Estimate) []uint32 { return est.Hottest(dst) }

// Longest appends the keys of every non-empty list, longest first (entries
// in use, tombstones and appended part included) and ties by key: the
// order of the paper's Naive baseline, which Degree cuts to a budget, and
// of the gcsm placement's fill. It reads every list's length on all cores
// and sorts by a stable radix sort of the lengths, in scratch of 16 bytes a
// list that it allocates: O(L) for L lists. A comparison sort takes over
// a second for the 8M lists of a 2^27-edge graph, twice the radix sort's
// time.
func Longest(dst []uint32, g *dyngraph.Graph) []uint32 {
	nk := sampler.NumKeys(g)
	// rec is (longest - length)<<32 | key: ascending is Longest's order.
	recs := make([]uint64, nk)
	parts := min(runtime.GOMAXPROCS(0), nk/parallelLists+1)
	longest := make([]uint64, parts)
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() {
			for k := nk * p / parts; k < nk*(p+1)/parts; k++ {
				n := uint64(wholeLen(g, uint32(k)))
				recs[k] = n<<32 | uint64(k)
				longest[p] = max(longest[p], n)
			}
		})
	}
	wg.Wait()
	top := slices.Max(append(longest, 0))
	n := 0
	for _, r := range recs {
		if r>>32 > 0 {
			recs[n] = (top-r>>32)<<32 | r&math.MaxUint32
			n++
		}
	}
	recs = recs[:n]
	for _, r := range sortHigh(recs, make([]uint64, n), top) {
		dst = append(dst, uint32(r))
	}
	return dst
}

// sortHigh sorts recs by their high 32 bits, none over top, stably: a
// radix sort a byte at a time, over as many bytes as top has, in scratch
// tmp as long as recs. It returns the sorted records: recs or tmp.
func sortHigh(recs, tmp []uint64, top uint64) []uint64 {
	for shift := 32; top>>(shift-32) > 0 && shift < 64; shift += 8 {
		var at [257]int
		for _, r := range recs {
			at[(r>>shift)&0xff+1]++
		}
		for b := 1; b < len(at); b++ {
			at[b] += at[b-1]
		}
		for _, r := range recs {
			b := (r >> shift) & 0xff
			tmp[at[b]] = r
			at[b]++
		}
		recs, tmp = tmp, recs
	}
	return recs
}

// Degree appends the first keys of order (Longest's) whose lists, trimmed
// to reads, Pack fits in budget bytes: packing the result packs all of it.
// With reads, it trims only the lists it considers, in windows that double,
// on all cores.
func Degree(dst []uint32, g *dyngraph.Graph, order []uint32, budget int64, reads *Reads) []uint32 {
	// Pack's selection, in a scratch block that is never written: the
	// order names each list once, so its bitset only costs the memory.
	b := Block{seen: make([]uint64, (sampler.NumKeys(g)+63)/64)}
	sz := newSizer(budget, g.MultiLabel())
	_ = b.take(g, order, &sz, reads) // Longest's keys all name lists of g
	return append(dst, b.sel...)
}

// ErrOverBudget is wrapped by KHop's error when the neighbourhood does not
// fit.
var ErrOverBudget = errors.New("cache: over budget")

// KHopError says how much a k-hop neighbourhood needs.
type KHopError struct {
	Hops   int
	Lists  int
	Bytes  int64 // the block they need
	Budget int64
}

func (e *KHopError) Error() string {
	return fmt.Sprintf("cache: the %d-hop neighbourhood of the batch needs %d bytes (%d lists), over the budget of %d bytes",
		e.Hops, e.Bytes, e.Lists, e.Budget)
}

// Unwrap makes errors.Is(err, ErrOverBudget) hold.
func (e *KHopError) Unwrap() error { return ErrOverBudget }

// KHop appends the keys of every non-empty list of the vertices within k
// hops of the endpoints of the batch's changed edges (the endpoints are 0
// hops away), in ascending order: VSGM's baseline, which caches the whole
// neighbourhood a match of diameter k can reach. A hop follows any entry of
// any list of a vertex, deleted and inserted ones included (the matching
// reads the old and the new graph), and both directions on directed graphs.
// When the lists, trimmed to reads, need more than budget bytes it returns
// them all the same, with a *KHopError that says how many bytes they need.
//
// It is a breadth-first search over the neighbourhood, with a visited
// bitset of |V| bits that it allocates.
func KHop(dst []uint32, g *dyngraph.Graph, delta []graph.Change, k int, budget int64, reads *Reads) ([]uint32, error) {
	if k < 0 {
		return dst, fmt.Errorf("cache: negative hop count %d", k)
	}
	nv := g.NumVertices()
	seen := make([]uint64, (nv+63)/64)
	var frontier, next []graph.VertexID
	visit := func(v graph.VertexID) {
		if seen[v/64]&(1<<(v%64)) == 0 {
			seen[v/64] |= 1 << (v % 64)
			next = append(next, v)
		}
	}
	for _, c := range delta {
		visit(c.Src)
		visit(c.Dst)
	}
	vertices := slices.Clone(next)
	for range k {
		frontier, next = next, frontier[:0]
		for _, v := range frontier {
			for in := range 1 + b2i(g.Directed()) {
				a := g.Out(v)
				if in == 1 {
					a = g.In(v)
				}
				for _, e := range a.Sorted {
					visit(e & dyngraph.IDMask)
				}
				for _, e := range a.Appended {
					visit(e)
				}
			}
		}
		vertices = append(vertices, next...)
	}
	slices.Sort(vertices)
	sz := newSizer(0, g.MultiLabel())
	start := len(dst)
	for _, v := range vertices {
		for in := range 1 + b2i(g.Directed()) {
			key := sampler.ListKey(v, in == 1, g.Directed())
			if n := reads.listLen(g, key); n > 0 {
				sz.used += sz.cost(n)
				dst = append(dst, key)
			}
		}
	}
	if need := 4 * sz.used; need > budget {
		return dst, &KHopError{Hops: k, Lists: len(dst) - start, Bytes: need, Budget: budget}
	}
	return dst, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Diameter is the largest diameter of the queries' patterns (edges taken as
// undirected): the k for KHop, since every vertex of a match lies within
// that many hops of its update edge.
func Diameter(queries []*query.Query) int {
	d := 0
	for _, q := range queries {
		n := q.N()
		adj := make([][]int, n)
		for _, e := range q.Edges {
			adj[e.A] = append(adj[e.A], e.B)
			adj[e.B] = append(adj[e.B], e.A)
		}
		for s := range n {
			dist := make([]int, n)
			for i := range dist {
				dist[i] = -1
			}
			dist[s] = 0
			queue := []int{s}
			for len(queue) > 0 {
				u := queue[0]
				queue = queue[1:]
				for _, w := range adj[u] {
					if dist[w] < 0 {
						dist[w] = dist[u] + 1
						d = max(d, dist[w])
						queue = append(queue, w)
					}
				}
			}
		}
	}
	return d
}
