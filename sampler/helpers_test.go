package sampler

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// The tests build their graphs here: imports point one way, and the bench
// package's R-MAT generator is above sampler in the import table.

var (
	shapeEdge     = [][2]int{{0, 1}}
	shapePath     = [][2]int{{0, 1}, {1, 2}}
	shapeTriangle = [][2]int{{0, 1}, {1, 2}, {2, 0}}
	shapeSquare   = [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}}
	shapeTailed   = [][2]int{{0, 1}, {1, 2}, {2, 0}, {2, 3}}
	shapeHouse    = [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 4}, {1, 4}}
)

// pattern builds a pattern of n vertices; vlabels cycles over the vertices
// ("" is a wildcard), elabel "" is a wildcard edge label.
func pattern(name string, n int, edges [][2]int, vlabels []string, elabel string, undirected bool) *query.Pattern {
	p := &query.Pattern{Name: name}
	for i := range n {
		l := ""
		if vlabels != nil {
			l = vlabels[i%len(vlabels)]
		}
		p.Vertices = append(p.Vertices, query.Vertex{Name: string(rune('a' + i)), Label: l, Wildcard: l == ""})
	}
	for _, e := range edges {
		p.Edges = append(p.Edges, query.Edge{From: e[0], To: e[1], Label: elabel, Wildcard: elabel == "", Directed: !undirected})
	}
	return p
}

func compile(tb testing.TB, d *graph.Dict, directed bool, sem query.Semantics, ps ...*query.Pattern) []*query.Query {
	tb.Helper()
	var qs []*query.Query
	for _, p := range ps {
		q, err := query.Compile(p, d, directed, sem)
		if err != nil {
			tb.Fatal(err)
		}
		qs = append(qs, q)
	}
	return qs
}

func newGraph(tb testing.TB, directed bool) *dyngraph.Graph {
	tb.Helper()
	// Small slabs, so that lists move between slabs as they grow. The
	// allocator is dyngraph's default (mmap): sampler may not import
	// internal/hostmem, not even in tests.
	g, err := dyngraph.New(dyngraph.Options{Directed: directed, SlabEntries: 1024})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = g.Close() })
	return g
}

type edgeKey struct{ a, b, l uint32 }

// scenario is a small random graph with a pending batch, and the edge sets
// before and after it for brute force.
type scenario struct {
	name     string
	directed bool
	g        *dyngraph.Graph
	dict     *graph.Dict
	delta    []graph.Change
	old, new map[edgeKey]bool
	nv       int
	elabels  []graph.Label
	cfg      scenarioConfig
}

type scenarioConfig struct {
	name     string
	directed bool
	multi    bool // two edge labels
	vlabels  int  // vertex labels (1: unlabeled)
	nv, ne   int
	ins, del int // the batch
}

func (c scenarioConfig) key(a, b, l uint32) edgeKey {
	if !c.directed && a > b {
		a, b = b, a
	}
	return edgeKey{a, b, l}
}

// newScenario loads a random graph and applies one batch of c.ins
// insertions of absent edges and c.del deletions of present ones.
func newScenario(tb testing.TB, c scenarioConfig, seed uint64) *scenario {
	tb.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	d := graph.NewDict()
	var vl []graph.Label
	for i := range max(c.vlabels, 1) {
		vl = append(vl, d.Intern(fmt.Sprintf("L%d", i)))
	}
	el := []graph.Label{d.Intern("x"), d.Intern("y")}
	s := &scenario{name: fmt.Sprintf("%s/%d", c.name, seed), directed: c.directed, dict: d, old: map[edgeKey]bool{}, nv: c.nv, elabels: el, cfg: c}
	var load []graph.Update
	for v := range c.nv {
		load = append(load, graph.Update{Op: graph.AddVertex, Src: uint32(v), SrcLabel: vl[r.IntN(len(vl))]})
	}
	draw := func() edgeKey {
		for {
			a, b := uint32(r.IntN(c.nv)), uint32(r.IntN(c.nv))
			l := el[0]
			if c.multi && r.IntN(3) == 0 {
				l = el[1]
			}
			if k := c.key(a, b, l); a != b && !s.old[k] {
				return k
			}
		}
	}
	var present []edgeKey
	for range c.ne {
		k := draw()
		s.old[k] = true
		present = append(present, k)
		load = append(load, graph.Update{Op: graph.Insert, Src: k.a, Dst: k.b, Label: k.l, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
	}
	s.g = newGraph(tb, c.directed)
	if _, rej, _, err := s.g.Apply(load); err != nil || len(rej) > 0 {
		tb.Fatalf("loading: %v, %d rejects", err, len(rej))
	}
	s.g.Reorganize()
	s.new = map[edgeKey]bool{}
	for k := range s.old {
		s.new[k] = true
	}
	var batch []graph.Update
	r.Shuffle(len(present), func(i, j int) { present[i], present[j] = present[j], present[i] })
	for _, k := range present[:c.del] {
		delete(s.new, k)
		batch = append(batch, graph.Update{Op: graph.Delete, Src: k.a, Dst: k.b, Label: k.l, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
	}
	for range c.ins {
		var k edgeKey
		for {
			k = draw()
			if !s.new[k] {
				break
			}
		}
		s.new[k] = true
		batch = append(batch, graph.Update{Op: graph.Insert, Src: k.a, Dst: k.b, Label: k.l, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
	}
	delta, rej, _, err := s.g.Apply(batch)
	if err != nil || len(rej) > 0 {
		tb.Fatalf("batch: %v, %d rejects", err, len(rej))
	}
	s.delta = delta
	return s
}

// has reports whether query edge e holds between data vertices a and b in
// edge set es.
func (s *scenario) has(es map[edgeKey]bool, e query.QEdge, a, b uint32) bool {
	for _, l := range s.elabels {
		if e.Label != graph.Wildcard && l != e.Label {
			continue
		}
		switch {
		case !s.directed:
			if es[s.cfg.key(a, b, l)] {
				return true
			}
		case e.Directed:
			if es[edgeKey{a, b, l}] {
				return true
			}
		default:
			if es[edgeKey{a, b, l}] || es[edgeKey{b, a, l}] {
				return true
			}
		}
	}
	return false
}

// delta counts by brute force the maps of q that the batch made or broke:
// injective, label-preserving, and (under Instances) symmetry-broken.
func (s *scenario) deltaMatches(q *query.Query) uint64 {
	n := q.N()
	f := make([]uint32, n)
	var count uint64
	var rec func(i int)
	rec = func(i int) {
		if i == n {
			for _, lt := range q.Less {
				if f[lt[0]] >= f[lt[1]] {
					return
				}
			}
			inOld, inNew := true, true
			for _, e := range q.Edges {
				inOld = inOld && s.has(s.old, e, f[e.A], f[e.B])
				inNew = inNew && s.has(s.new, e, f[e.A], f[e.B])
			}
			if inOld != inNew {
				count++
			}
			return
		}
		for v := range s.nv {
			if q.Labels[i] != graph.Wildcard && s.g.VertexLabel(uint32(v)) != q.Labels[i] {
				continue
			}
			used := false
			for _, u := range f[:i] {
				used = used || u == uint32(v)
			}
			if used {
				continue
			}
			f[i] = uint32(v)
			rec(i + 1)
		}
	}
	rec(0)
	return count
}

// rmat draws an R-MAT edge on 2^scale vertices with quadrant probabilities
// a, b, c (d = 1-a-b-c).
func rmat(r *rand.Rand, scale int, a, b, c float64) (uint32, uint32) {
	var s, d uint32
	for range scale {
		s, d = s<<1, d<<1
		switch p := r.Float64(); {
		case p < a:
		case p < a+b:
			d |= 1
		case p < a+b+c:
			s |= 1
		default:
			s, d = s|1, d|1
		}
	}
	return s, d
}

// powerLaw builds an undirected R-MAT graph of 2^scale vertices and edges
// distinct edges, with ids scrambled so that hubs spread over the id space,
// and applies a batch of half insertions of absent edges and half deletions
// of present ones. The graph is closed when the test ends.
func powerLaw(tb testing.TB, scale, edges, batch int, seed uint64) (*dyngraph.Graph, []graph.Change, *graph.Dict) {
	tb.Helper()
	g, delta, d, err := buildPowerLaw(scale, edges, batch, seed, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = g.Close() })
	return g, delta, d
}

// buildPowerLaw is powerLaw's generator. labelShare, when not nil, gives
// vertex labels L0, L1, ... with those shares. It loads through Build,
// several times faster than Apply.
func buildPowerLaw(scale, edges, batch int, seed uint64, labelShare []float64) (*dyngraph.Graph, []graph.Change, *graph.Dict, error) {
	r := rand.New(rand.NewPCG(seed, 3))
	nv := 1 << scale
	perm := r.Perm(nv)
	d := graph.NewDict()
	el := d.Intern("e")
	var vl []graph.Label
	for i := range labelShare {
		vl = append(vl, d.Intern(fmt.Sprintf("L%d", i)))
	}
	seen := make(map[uint64]bool, edges)
	var list [][2]uint32
	for len(list) < edges+batch/2 {
		a, b := rmat(r, scale, 0.45, 0.22, 0.22)
		a, b = uint32(perm[a]), uint32(perm[b])
		if a == b {
			continue
		}
		if a > b {
			a, b = b, a
		}
		k := uint64(a)<<32 | uint64(b)
		if seen[k] {
			continue
		}
		seen[k] = true
		list = append(list, [2]uint32{a, b})
	}
	load := make([]graph.Update, 0, edges+nv)
	for v := range nv {
		u := graph.Update{Op: graph.AddVertex, Src: uint32(v)}
		if vl != nil {
			p, l := r.Float64(), 0
			for l < len(vl)-1 && p >= labelShare[l] {
				p -= labelShare[l]
				l++
			}
			u.SrcLabel = vl[l]
		}
		load = append(load, u)
	}
	for _, e := range list[:edges] {
		load = append(load, graph.Update{Op: graph.Insert, Src: e[0], Dst: e[1], Label: el, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
	}
	g, err := dyngraph.New(dyngraph.Options{})
	if err != nil {
		return nil, nil, nil, err
	}
	if rej, _, err := g.Build(load); err != nil || len(rej) > 0 {
		return nil, nil, nil, fmt.Errorf("build: %v, %d rejects", err, len(rej))
	}
	var upd []graph.Update
	for i := range batch / 2 {
		e := list[r.IntN(edges)]
		upd = append(upd, graph.Update{Op: graph.Delete, Src: e[0], Dst: e[1], Label: el, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
		e = list[edges+i]
		upd = append(upd, graph.Update{Op: graph.Insert, Src: e[0], Dst: e[1], Label: el, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
	}
	delta, rej, _, err := g.Apply(upd)
	if err != nil || len(rej) > 0 {
		return nil, nil, nil, fmt.Errorf("batch: %v, %d rejects", err, len(rej))
	}
	return g, delta, d, nil
}
