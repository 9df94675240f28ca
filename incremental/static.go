package incremental

import (
	"fmt"
	"math/bits"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// Static implements Matcher: filter, order, build the candidate space, and
// search it. The filter keeps, for each query vertex, the data vertices with
// its label, enough degree in each direction, enough neighbours of every
// label its neighbours need (GraphQL's neighbourhood profile with exact
// counts), and then refines the sets over the query's edges until they stop
// shrinking. The order starts at the query vertex with the fewest
// candidates (query.StaticPlan). The search (search.go) walks the candidate
// space depth first, its workers splitting the deepest-running subtrees
// among themselves.
func (c *CPU) Static(g *dyngraph.Graph, queries []*query.Query, mode Mode, sink Sink) ([]int64, error) {
	if g.Pending() {
		return nil, fmt.Errorf("incremental: Static on a graph with a pending batch")
	}
	if mode == Enumerate && sink == nil {
		return nil, fmt.Errorf("incremental: Enumerate needs a sink")
	}
	res := make([]int64, len(queries))
	c.static = StaticStats{}
	for qi, q := range queries {
		if !edgeLabelsPossible(g, q) {
			continue
		}
		f := Filter(g, q)
		start := 0
		for u := range f.Count {
			if f.Count[u] < f.Count[start] {
				start = u
			}
		}
		if f.Count[start] == 0 {
			continue
		}
		plan := q.StaticPlan(start, f.Count, mode == Count)
		budget := c.SpaceEntries
		if budget == 0 {
			budget = DefaultSpaceEntries
		}
		sp := newSpace(g, f, &plan, budget)
		res[qi] = c.search(g, sp, qi, mode, sink)
		if mode == Count {
			res[qi] *= int64(q.CountFactor)
		}
	}
	return res, nil
}

// Candidates are the static matcher's per-query-vertex candidate sets.
type Candidates struct {
	Sets  [][]uint64 // bitset over data vertices, per query vertex
	Count []int      // set sizes
}

// Members lists the data vertices in the set of query vertex u, ascending.
func (c *Candidates) Members(u int) []graph.VertexID {
	out := make([]graph.VertexID, 0, c.Count[u])
	for i, word := range c.Sets[u] {
		for word != 0 {
			b := word & -word
			out = append(out, graph.VertexID(i*64+bits.TrailingZeros64(b)))
			word &^= b
		}
	}
	return out
}

// Filter computes the candidate sets of q in g (not pending).
func Filter(g *dyngraph.Graph, q *query.Query) *Candidates {
	n, nv := q.N(), g.NumVertices()
	words := (nv + 63) / 64
	c := &Candidates{Sets: make([][]uint64, n), Count: make([]int, n)}

	// What each query vertex needs: distinct out-, in- and any-direction
	// neighbours, and per concrete label the number of distinct neighbours
	// carrying it.
	type need struct {
		out, in, all int
		labels       map[graph.Label]int
	}
	needs := make([]need, n)
	nbrs := make([]map[int]bool, n)
	for u := range nbrs {
		nbrs[u] = map[int]bool{}
		needs[u].labels = map[graph.Label]int{}
	}
	outN := make([]map[int]bool, n)
	inN := make([]map[int]bool, n)
	for u := range outN {
		outN[u], inN[u] = map[int]bool{}, map[int]bool{}
	}
	for _, e := range q.Edges {
		nbrs[e.A][e.B], nbrs[e.B][e.A] = true, true
		if q.Directed && e.Directed {
			outN[e.A][e.B], inN[e.B][e.A] = true, true
		}
	}
	for u := range needs {
		needs[u].all, needs[u].out, needs[u].in = len(nbrs[u]), len(outN[u]), len(inN[u])
		for x := range nbrs[u] {
			if l := q.Labels[x]; l != graph.Wildcard {
				needs[u].labels[l]++
			}
		}
	}

	have := map[graph.Label]int{}
	vl := g.VertexLabels()
	for u := 0; u < n; u++ {
		set := make([]uint64, words)
		nd := &needs[u]
		for v := 0; v < nv; v++ {
			if q.Labels[u] != graph.Wildcard && vl[v] != q.Labels[u] {
				continue
			}
			out, in := g.Out(graph.VertexID(v)), g.In(graph.VertexID(v))
			do, di := len(out.Sorted), len(in.Sorted)
			da := do
			if q.Directed {
				da += di
			}
			if da < nd.all || (q.Directed && (do < nd.out || di < nd.in)) {
				continue
			}
			if len(nd.labels) > 0 {
				clear(have)
				countLabels(have, nd.labels, vl, out.Sorted)
				if q.Directed {
					countLabels(have, nd.labels, vl, in.Sorted)
				}
				ok := true
				for l, k := range nd.labels {
					if have[l] < k {
						ok = false
						break
					}
				}
				if !ok {
					continue
				}
			}
			set[v>>6] |= 1 << (uint(v) & 63)
			c.Count[u]++
		}
		c.Sets[u] = set
	}
	refine(g, q, c)
	return c
}

func countLabels(have, need map[graph.Label]int, vl []graph.Label, ids []uint32) {
	for _, x := range ids {
		if l := vl[x]; need[l] > 0 {
			have[l]++
		}
	}
}

// refine drops candidate v of u when, for some query edge (u, u'), no
// neighbour of v over a fitting data edge is a candidate of u', until no set
// shrinks: a round costs less than the search saves on one more level of
// dead ends, and the sets settle in a few rounds.
func refine(g *dyngraph.Graph, q *query.Query, c *Candidates) {
	single, _ := g.EdgeLabel()
	for {
		changed := false
		for u := 0; u < q.N(); u++ {
			for _, v := range c.Members(u) {
				for _, e := range q.Edges {
					var other int
					var lists [2]dyngraph.Adj
					k := 1
					switch {
					case e.A == u:
						other = e.B
						lists[0] = g.Out(v)
					case e.B == u:
						other = e.A
						lists[0] = g.In(v)
					default:
						continue
					}
					if q.Directed && !e.Directed {
						lists[0], lists[1], k = g.Out(v), g.In(v), 2
					}
					if !anyIn(lists[:k], e.Label, single, c.Sets[other]) {
						c.Sets[u][v>>6] &^= 1 << (v & 63)
						c.Count[u]--
						changed = true
						break
					}
				}
			}
		}
		if !changed {
			return
		}
	}
}

func anyIn(lists []dyngraph.Adj, label, single graph.Label, set []uint64) bool {
	for _, a := range lists {
		for i, x := range a.Sorted {
			l := dyngraph.LabelAt(a.SortedLabels, i, single)
			if label != graph.Wildcard && l != label {
				continue
			}
			if set[x>>6]&(1<<(x&63)) != 0 {
				return true
			}
		}
	}
	return false
}
