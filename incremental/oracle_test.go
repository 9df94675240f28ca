package incremental

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/query"
)

// The oracle recomputes every match of a small graph by brute force, with
// none of the engine's machinery: plain maps for edges, all injective
// assignments in vertex order, every query edge checked by lookup.

type oracleEdge struct{ a, b, l uint32 }

type oracleGraph struct {
	directed bool
	vlabel   map[uint32]graph.Label
	edges    map[oracleEdge]bool
}

func newOracle(directed bool) *oracleGraph {
	return &oracleGraph{directed: directed, vlabel: map[uint32]graph.Label{}, edges: map[oracleEdge]bool{}}
}

func (o *oracleGraph) key(a, b, l uint32) oracleEdge {
	if !o.directed && a > b {
		a, b = b, a
	}
	return oracleEdge{a, b, l}
}

// apply mirrors docs/architecture.md's semantics directly: updates in order.
func (o *oracleGraph) apply(batch []graph.Update, defLabel graph.Label) {
	for _, u := range batch {
		switch u.Op {
		case graph.AddVertex:
			if _, ok := o.vlabel[u.Src]; !ok {
				o.vlabel[u.Src] = u.SrcLabel
			}
			continue
		}
		if u.Src == u.Dst {
			continue
		}
		conflict := false
		for _, p := range [][2]uint32{{u.Src, u.SrcLabel}, {u.Dst, u.DstLabel}} {
			if l, ok := o.vlabel[p[0]]; ok && p[1] != graph.NoLabel && l != p[1] {
				conflict = true
			}
		}
		if conflict {
			continue
		}
		for _, p := range [][2]uint32{{u.Src, u.SrcLabel}, {u.Dst, u.DstLabel}} {
			if _, ok := o.vlabel[p[0]]; !ok {
				l := p[1]
				if l == graph.NoLabel {
					l = defLabel
				}
				o.vlabel[p[0]] = l
			}
		}
		k := o.key(u.Src, u.Dst, u.Label)
		if u.Op == graph.Insert {
			o.edges[k] = true
		} else {
			delete(o.edges, k)
		}
	}
}

func (o *oracleGraph) has(a, b uint32, e query.QEdge) bool {
	try := func(a, b uint32) bool {
		if e.Label != graph.Wildcard {
			return o.edges[o.key(a, b, e.Label)]
		}
		for k := range o.edges {
			if (k.a == a && k.b == b) || (!o.directed && k.a == b && k.b == a) {
				return true
			}
		}
		return false
	}
	if try(a, b) {
		return true
	}
	return o.directed && !e.Directed && try(b, a)
}

// matches returns every embedding of q as a string key.
func (o *oracleGraph) matches(q *query.Query) map[string]bool {
	var verts []uint32
	for v := range o.vlabel {
		verts = append(verts, v)
	}
	slices.Sort(verts)
	n := q.N()
	m := make([]uint32, n)
	used := map[uint32]bool{}
	out := map[string]bool{}
	var rec func(u int)
	rec = func(u int) {
		if u == n {
			out[mapKey(m)] = true
			return
		}
		for _, v := range verts {
			if used[v] || (q.Labels[u] != graph.Wildcard && o.vlabel[v] != q.Labels[u]) {
				continue
			}
			m[u] = v
			ok := true
			for _, e := range q.Edges {
				if (e.A == u && e.B < u) || (e.B == u && e.A < u) {
					if !o.has(m[e.A], m[e.B], e) {
						ok = false
						break
					}
				}
			}
			if !ok {
				continue
			}
			used[v] = true
			rec(u + 1)
			used[v] = false
		}
	}
	rec(0)
	return out
}

func mapKey(m []uint32) string {
	var b strings.Builder
	for i, v := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, v)
	}
	return b.String()
}

// bruteAutomorphisms lists the permutations of q's vertices that preserve
// vertex labels and the multiset of (endpoints, label, direction) edges.
func bruteAutomorphisms(q *query.Query) [][]int {
	n := q.N()
	type ek struct {
		a, b int
		l    graph.Label
		d    bool
	}
	set := map[ek]bool{}
	norm := func(a, b int, l graph.Label, d bool) ek {
		if !d && a > b {
			a, b = b, a
		}
		return ek{a, b, l, d}
	}
	for _, e := range q.Edges {
		set[norm(e.A, e.B, e.Label, e.Directed)] = true
	}
	var out [][]int
	perm := make([]int, n)
	used := make([]bool, n)
	var rec func(i int)
	rec = func(i int) {
		if i == n {
			for _, e := range q.Edges {
				if !set[norm(perm[e.A], perm[e.B], e.Label, e.Directed)] {
					return
				}
			}
			out = append(out, slices.Clone(perm))
			return
		}
		for c := 0; c < n; c++ {
			if !used[c] && q.Labels[c] == q.Labels[i] {
				used[c], perm[i] = true, c
				rec(i + 1)
				used[c] = false
			}
		}
	}
	rec(0)
	return out
}

// randomPattern draws a connected pattern of n vertices over the given label
// alphabets; "" in an alphabet stands for a wildcard.
func randomPattern(r *rand.Rand, n int, vlabels, elabels []string, directedEdges bool) *query.Pattern {
	p := &query.Pattern{Name: fmt.Sprintf("p%d", r.IntN(1e6))}
	for i := 0; i < n; i++ {
		l := vlabels[r.IntN(len(vlabels))]
		p.Vertices = append(p.Vertices, query.Vertex{Name: fmt.Sprintf("v%d", i), Label: l, Wildcard: l == ""})
	}
	addEdge := func(a, b int) {
		l := elabels[r.IntN(len(elabels))]
		p.Edges = append(p.Edges, query.Edge{From: a, To: b, Label: l, Wildcard: l == "", Directed: directedEdges && r.IntN(4) != 0})
	}
	for i := 1; i < n; i++ {
		a, b := r.IntN(i), i
		if r.IntN(2) == 0 {
			a, b = b, a
		}
		addEdge(a, b)
	}
	extra := r.IntN(n)
	for k := 0; k < extra; k++ {
		a, b := r.IntN(n), r.IntN(n)
		if a != b {
			addEdge(a, b)
		}
	}
	return p
}

func newTestGraph(directed bool) *dyngraph.Graph {
	g, err := dyngraph.New(dyngraph.Options{Directed: directed, Alloc: hostmem.Heap{}, SlabEntries: 1024})
	if err != nil {
		panic(err)
	}
	return g
}
