package bench

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/gcsm/gcsm/graph"
)

// Shape is a benchmark query: a small connected pattern with undirected,
// unlabeled edges. Vertex i is named vi.
type Shape struct {
	Name     string
	Cypher   string   // the pattern with wildcard vertices, e.g. "(v0)-[]-(v1), (v1)-[]-(v2), (v2)-[]-(v0)"
	Vertices int      // number of vertices
	Edges    [][2]int // the edges as pairs of vertex indices
}

// Labeled returns the pattern with vertex i labeled labels[i], written in
// decimal; graph.Wildcard leaves a vertex unlabeled. It panics unless there
// is one label per vertex.
func (s Shape) Labeled(labels []uint32) string {
	if len(labels) != s.Vertices {
		panic(fmt.Sprintf("bench: %s has %d vertices, got %d labels", s.Name, s.Vertices, len(labels)))
	}
	return formatPattern(s.Vertices, s.Edges, labels)
}

// Shapes returns the benchmark query shapes (docs/benchmarks.md), smallest
// first. The slice is new on each call.
func Shapes() []Shape {
	shapes := []Shape{
		{Name: "triangle", Vertices: 3, Edges: [][2]int{{0, 1}, {1, 2}, {2, 0}}},
		{Name: "4-cycle", Vertices: 4, Edges: [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}}},
		// A 4-cycle with the chord v0-v2.
		{Name: "diamond", Vertices: 4, Edges: [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 2}}},
		{Name: "4-clique", Vertices: 4, Edges: [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 2}, {1, 3}}},
		// The square v0-v1-v2-v3 with the roof v4 over v0-v1.
		{Name: "house", Vertices: 5, Edges: [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 4}, {4, 1}}},
		{Name: "5-cycle", Vertices: 5, Edges: [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 0}}},
		// The 6-vertex dense pattern: K6 less the perfect matching v0-v3,
		// v1-v4, v2-v5, every vertex of degree 4. A 6-clique would be
		// denser still but has almost no matches in sparse graphs.
		{Name: "octahedron", Vertices: 6, Edges: [][2]int{
			{0, 1}, {0, 2}, {0, 4}, {0, 5}, {1, 2}, {1, 3},
			{1, 5}, {2, 3}, {2, 4}, {3, 4}, {3, 5}, {4, 5},
		}},
	}
	for i := range shapes {
		shapes[i].Cypher = formatPattern(shapes[i].Vertices, shapes[i].Edges, nil)
	}
	return shapes
}

// formatPattern writes edges as a Cypher-style pattern with one
// comma-separated path per edge, giving each vertex its label, if any, at
// its first appearance. A nil labels leaves every vertex unlabeled.
func formatPattern(vertices int, edges [][2]int, labels []uint32) string {
	var b strings.Builder
	named := make([]bool, vertices)
	node := func(v int) {
		b.WriteString("(v")
		b.WriteString(strconv.Itoa(v))
		if !named[v] && labels != nil && labels[v] != graph.Wildcard {
			b.WriteByte(':')
			b.WriteString(strconv.FormatUint(uint64(labels[v]), 10))
		}
		named[v] = true
		b.WriteByte(')')
	}
	for i, e := range edges {
		if i > 0 {
			b.WriteString(", ")
		}
		node(e[0])
		b.WriteString("-[]-")
		node(e[1])
	}
	return b.String()
}

const (
	// walkAttempts is how many random walks RandomWalkQuery tries before
	// giving up. Dense queries are the rarest: on an R-MAT graph of scale
	// 16 and average degree 32, one walk in 3000 yields a K4 and one in 160
	// a dense query of 6. A walk of 6 takes 3.5µs there, so giving up
	// costs about a third of a second.
	walkAttempts = 100_000
	// walkSteps bounds one walk, as a multiple of the query size, so that a
	// walk trapped in a small component ends.
	walkSteps = 20
)

// RandomWalkQuery extracts a connected query of size vertices from a data
// graph, by the method of the CSM study (Sun et al., "An In-Depth Study of
// Continuous Subgraph Matching", VLDB 2022): a random walk from a random
// vertex until it has visited size distinct vertices, whose labels the
// query takes. The class says which edges among them it keeps:
//   - "tree": the edges by which the walk first reached each vertex, a
//     spanning tree;
//   - "sparse": the tree and at least one more edge of the data graph, with
//     an average degree of at most 3;
//   - "dense": every edge of the data graph among the vertices, with an
//     average degree above 3, or all possible edges when the query has fewer
//     than 5 vertices and so cannot reach that.
//
// The data graph has vertices 0 to nv-1; g(v) returns the neighbours of v,
// which RandomWalkQuery only reads, and labelOf(v) its label (graph.Wildcard
// leaves the query vertex unlabeled). g must be symmetric: an undirected
// graph.
//
// The query has one comma-separated path per edge, names vertex i vi, with
// v0 the walk's start, and gives each vertex its label where it first
// appears, as in "(v0:3)-[]-(v1:7), (v1)-[]-(v2:3)". It is deterministic
// for the seed. ok is false when the class is unknown, the size is less than 2 or
// more than nv, or none of walkAttempts walks found a query of the class.
func RandomWalkQuery(g func(v uint32) []uint32, labelOf func(uint32) uint32, nv int, class string, size int, seed uint64) (cypher string, ok bool) {
	if size < 2 || size > nv {
		return "", false
	}
	var keep func(rng *rand.Rand, tree, extra [][2]int) ([][2]int, bool)
	switch class {
	case "tree":
		keep = func(_ *rand.Rand, tree, _ [][2]int) ([][2]int, bool) { return tree, true }
	case "sparse":
		keep = func(rng *rand.Rand, tree, extra [][2]int) ([][2]int, bool) {
			// size-1+m edges have average degree at most 3 for
			// m <= size/2+1.
			most := min(len(extra), size/2+1)
			if most == 0 {
				return nil, false
			}
			rng.Shuffle(len(extra), func(i, j int) { extra[i], extra[j] = extra[j], extra[i] })
			return append(tree, extra[:1+rng.IntN(most)]...), true
		}
	case "dense":
		// Above 3 is more than 3*size/2 edges.
		need := min(3*size/2+1, size*(size-1)/2)
		keep = func(_ *rand.Rand, tree, extra [][2]int) ([][2]int, bool) {
			return append(tree, extra...), len(tree)+len(extra) >= need
		}
	default:
		return "", false
	}
	rng := rand.New(rand.NewPCG(seed, saltWalk))
	for range walkAttempts {
		vs, tree := walk(g, nv, size, rng)
		if len(vs) < size {
			continue
		}
		edges, ok := keep(rng, tree, induced(g, vs, tree))
		if !ok {
			continue
		}
		slices.SortFunc(edges, func(x, y [2]int) int {
			return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1]))
		})
		labels := make([]uint32, size)
		for i, v := range vs {
			labels[i] = labelOf(v)
		}
		return formatPattern(size, edges, labels), true
	}
	return "", false
}

// walk runs a random walk from a random vertex until it has seen size
// distinct vertices or run out of steps. It returns the vertices in the
// order first seen, and the tree of the edges that first reached them, each
// as (earlier index, later index).
func walk(g func(uint32) []uint32, nv, size int, rng *rand.Rand) (vs []uint32, tree [][2]int) {
	cur := uint32(rng.IntN(nv))
	vs = append(make([]uint32, 0, size), cur)
	at := 0 // index of cur in vs
	for range walkSteps * size {
		adj := g(cur)
		if len(adj) == 0 || len(vs) == size {
			break
		}
		cur = adj[rng.IntN(len(adj))]
		// A linear search: size is at most a few dozen.
		next := slices.Index(vs, cur)
		if next < 0 {
			next = len(vs)
			tree = append(tree, [2]int{at, next})
			vs = append(vs, cur)
		}
		at = next
	}
	return vs, tree
}

// induced returns the edges of the data graph among vs that are not in
// tree, each once, as (lower index, higher index).
//
// It looks for each pair in the shorter of the two neighbour lists. Walks
// keep returning to hubs, and scanning every list in full made a walk of 6
// on an R-MAT graph of scale 16 take 36µs instead of 3.5µs.
func induced(g func(uint32) []uint32, vs []uint32, tree [][2]int) [][2]int {
	n := len(vs)
	inTree := make([]bool, n*n)
	for _, e := range tree {
		inTree[e[0]*n+e[1]] = true
	}
	var extra [][2]int
	for i := range n {
		for j := i + 1; j < n; j++ {
			if inTree[i*n+j] {
				continue
			}
			list, other := g(vs[i]), vs[j]
			if lj := g(vs[j]); len(lj) < len(list) {
				list, other = lj, vs[i]
			}
			if slices.Contains(list, other) {
				extra = append(extra, [2]int{i, j})
			}
		}
	}
	return extra
}
