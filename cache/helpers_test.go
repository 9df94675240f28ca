package cache

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/sampler"
)

func newGraph(tb testing.TB, directed bool) *dyngraph.Graph {
	tb.Helper()
	// Small slabs, so that lists move between slabs as they grow.
	g, err := dyngraph.New(dyngraph.Options{Directed: directed, Alloc: hostmem.Heap{}, SlabEntries: 1024})
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

func edge(op graph.Op, a, b uint32, l graph.Label) graph.Update {
	return graph.Update{Op: op, Src: a, Dst: b, Label: l, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}
}

// randomGraph loads a random graph of nv vertices and ne edges (with two
// edge labels when multi, and a skew towards low ids so that list lengths
// vary) and leaves a batch of insertions and deletions pending, so that
// lists carry tombstones and appended parts.
func randomGraph(tb testing.TB, r *rand.Rand, directed, multi bool, nv, ne int) (*dyngraph.Graph, []graph.Change) {
	tb.Helper()
	return labeledGraph(tb, r, directed, multi, nv, ne, 1)
}

// labeledGraph is randomGraph with vertex labels drawn from 0 to nvl-1.
func labeledGraph(tb testing.TB, r *rand.Rand, directed, multi bool, nv, ne, nvl int) (*dyngraph.Graph, []graph.Change) {
	tb.Helper()
	g := newGraph(tb, directed)
	type key struct{ a, b, l uint32 }
	present := map[key]bool{}
	draw := func() key {
		for {
			a, b := uint32(r.IntN(nv)), uint32(r.IntN(nv))
			if r.IntN(2) == 0 {
				a = uint32(r.IntN(max(1, nv/8))) // hubs
			}
			k := key{a, b, 0}
			if multi && r.IntN(3) == 0 {
				k.l = 1
			}
			if !directed && k.a > k.b {
				k.a, k.b = k.b, k.a
			}
			if k.a != k.b && !present[k] {
				return k
			}
		}
	}
	var load []graph.Update
	for v := range nv {
		u := graph.Update{Op: graph.AddVertex, Src: uint32(v)}
		if nvl > 1 {
			u.SrcLabel = graph.Label(r.IntN(nvl))
		}
		load = append(load, u)
	}
	var edges []key
	for range ne {
		k := draw()
		present[k] = true
		edges = append(edges, k)
		load = append(load, edge(graph.Insert, k.a, k.b, k.l))
	}
	if _, rej, _, err := g.Apply(load); err != nil || len(rej) > 0 {
		tb.Fatalf("load: %v, %d rejects", err, len(rej))
	}
	g.Reorganize()
	var batch []graph.Update
	for _, k := range edges[:ne/10] {
		batch = append(batch, edge(graph.Delete, k.a, k.b, k.l))
	}
	for range ne / 10 {
		k := draw()
		present[k] = true
		batch = append(batch, edge(graph.Insert, k.a, k.b, k.l))
	}
	delta, rej, _, err := g.Apply(batch)
	if err != nil || len(rej) > 0 {
		tb.Fatalf("batch: %v, %d rejects", err, len(rej))
	}
	return g, delta
}

// compile compiles a Cypher-style pattern under embeddings semantics.
func compile(tb testing.TB, d *graph.Dict, cypher string, directed bool) *query.Query {
	tb.Helper()
	p, err := query.ParseCypher("q", cypher)
	if err != nil {
		tb.Fatal(err)
	}
	q, err := query.Compile(p, d, directed, query.Embeddings)
	if err != nil {
		tb.Fatal(err)
	}
	return q
}

// keeper says whether the list of vertex v keeps its entries of vertex
// label l in a block; nil keeps every entry.
type keeper func(v graph.VertexID, l graph.Label) bool

// expected returns list key's parts, and their edge labels, as a block
// holds them under keep: written out apart from Reads.
func expected(g *dyngraph.Graph, key uint32, keep keeper) (s, a []uint32, ls, la []graph.Label) {
	adj := adjOf(g, key)
	if keep == nil {
		return adj.Sorted, adj.Appended, adj.SortedLabels, adj.AppendedLabels
	}
	v := sampler.KeyList(key, g.Directed()).V
	filter := func(ids []uint32, lbls []graph.Label) (o []uint32, ol []graph.Label) {
		for i, e := range ids {
			if keep(v, g.VertexLabel(e&dyngraph.IDMask)) {
				o = append(o, e)
				if lbls != nil {
					ol = append(ol, lbls[i])
				}
			}
		}
		return o, ol
	}
	s, ls = filter(adj.Sorted, adj.SortedLabels)
	a, la = filter(adj.Appended, adj.AppendedLabels)
	return s, a, ls, la
}

// keptLen is the length of list key under keep.
func keptLen(g *dyngraph.Graph, key uint32, keep keeper) int {
	s, a, _, _ := expected(g, key, keep)
	return len(s) + len(a)
}

// blockWords is the size of a block holding exactly keys (no repeats, all
// non-empty), by the rule FORMAT.md states.
func blockWords(g *dyngraph.Graph, keys []uint32) int64 {
	if len(keys) == 0 {
		return 0
	}
	per := int64(1)
	if g.MultiLabel() {
		per = 2
	}
	w := int64(1)
	for _, k := range keys {
		w += 3 + per*int64(wholeLen(g, k))
	}
	return w
}

// nonEmpty returns every key of a non-empty list, ascending.
func nonEmpty(g *dyngraph.Graph) []uint32 {
	var ks []uint32
	for k := range sampler.NumKeys(g) {
		if wholeLen(g, uint32(k)) > 0 {
			ks = append(ks, uint32(k))
		}
	}
	return ks
}

func describe(directed, multi bool) string {
	return fmt.Sprintf("directed=%v/multi=%v", directed, multi)
}
