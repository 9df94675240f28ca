package kernels

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/query"
)

// TestEncodeSpace checks match_space's layout without a GPU: a host walk of
// the encoded space, made as the kernel makes it, counts what the CPU's
// static matcher counts, and no depth's candidates outgrow the buffer that
// encodeSpace gives them.
func TestEncodeSpace(t *testing.T) {
	for name, c := range spaceCases {
		load, qs := c(t)
		g, err := dyngraph.New(dyngraph.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := g.Build(load); err != nil {
			t.Fatal(err)
		}
		want, err := (&incremental.CPU{}).Static(g, qs, incremental.Count, nil)
		if err != nil {
			t.Fatal(err)
		}
		tails := 0
		for qi, q := range qs {
			p, factor := spaceOf(t, g, q)
			if p.tail < p.n-1 {
				tails++
			}
			if got := countSpaceOnHost(t, p).MulUint64(uint64(factor)); got != want[qi] {
				t.Errorf("%s query %d: the encoded space counts %d, the CPU %d", name, qi, got, want[qi])
			}
		}
		if name == "leaves" && tails < len(qs)/2 {
			t.Errorf("leaves: %d of %d queries have a tail to count", tails, len(qs))
		}
		g.Close()
	}
}

// TestStaticSpace: match_space counts what the CPU counts, through Static
// and on its own, and deepens its seeds over more than one launch where
// the root candidates are few.
func TestStaticSpace(t *testing.T) {
	for name, c := range spaceCases {
		load, qs := c(t)
		x := openGPUWith(t, Options{Placement: Device, SpaceEntries: incremental.DefaultSpaceEntries})
		g, _, want := staticOnCPU(t, x, load, qs)
		for qi, q := range qs {
			where := fmt.Sprintf("%s query %d", name, qi)
			f := incremental.Filter(g, q)
			plan, factor, _ := f.CountPlan(q)
			n, ok, err := x.staticSpace(g, f, &plan)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				t.Fatalf("%s: match_space did not take the query", where)
			}
			if got := n.MulUint64(uint64(factor)); got != want[qi] {
				t.Errorf("%s: match_space counts %d, the CPU %d", where, got, want[qi])
			}
			if x.Last().Launches < 2 {
				t.Errorf("%s: %d launches, want the seeds deepened", where, x.Last().Launches)
			}
			got, err := x.Static(g, []*query.Query{q}, incremental.Count, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got[0] != want[qi] {
				t.Errorf("%s: Static counts %d, the CPU %d", where, got[0], want[qi])
			}
		}
		g.Close()
		x.Close()
	}
}

// spaceCases are the graphs and queries of the space tests.
var spaceCases = map[string]func(*testing.T) ([]graph.Update, []*query.Query){"hub": hubCase, "dense core": denseCoreCase, "pendants": pendantCase,
	"uneven degrees": unevenCase, "leaves": leavesCase}

// unevenCase is a graph whose vertices' degrees range from 1 to about 60,
// and queries whose vertices need different degrees: the candidates of a
// vertex of degree 2 are more than those of its neighbours of degree 4, so
// a level cannot scan theirs for its own (keptSource).
func unevenCase(t *testing.T) ([]graph.Update, []*query.Query) {
	t.Helper()
	d := graph.NewDict()
	a, x := d.Intern("A"), d.Intern("x")
	const n = 300
	var load []graph.Update
	for v := uint32(0); v < n; v++ {
		load = append(load, graph.Update{Op: graph.AddVertex, Src: v, SrcLabel: a})
	}
	for v := uint32(0); v < n; v++ {
		for w := v + 1; w < n; w++ {
			if (v*2654435761^w*40503)%1000 < (v%8+w%8)*(v%8+w%8) {
				load = append(load, graph.Update{Op: graph.Insert, Src: v, Dst: w, Label: x, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
			}
		}
	}
	// Ears: vertices of degree 2 on edges of the dense part, candidates
	// of a degree-2 query vertex but of none of degree 3 or more.
	for i := range uint32(20) {
		e, v := n+i, 8*i+7
		load = append(load, graph.Update{Op: graph.AddVertex, Src: e, SrcLabel: a},
			graph.Update{Op: graph.Insert, Src: e, Dst: v, Label: x, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel},
			graph.Update{Op: graph.Insert, Src: e, Dst: v + 8, Label: x, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
	}
	return load, compiled(t, d, "u", []pattern{
		{"(a)-[]-(b)-[]-(c)-[]-(a), (d)-[]-(a), (d)-[]-(b), (d)-[]-(c), (e)-[]-(a), (e)-[]-(b)", query.Embeddings},
		{"(a)-[]-(b)-[]-(c)-[]-(a), (d)-[]-(a), (d)-[]-(b), (d)-[]-(c), (e)-[]-(a), (e)-[]-(b)", query.Instances},
		{"(a)-[]-(b)-[]-(c)-[]-(d)-[]-(a), (a)-[]-(c), (e)-[]-(a), (e)-[]-(c), (f)-[]-(b), (f)-[]-(e)", query.Instances},
	})
}

// pendantCase is denseCoreCase's graph with queries whose last vertex
// hangs off one other and is symmetric to an earlier one: match_space
// counts those with sp_count_one, under symmetry bounds.
func pendantCase(t *testing.T) ([]graph.Update, []*query.Query) {
	return denseCoreWith(t, "p", []pattern{
		{"(a)-[]-(b), (a)-[]-(c), (a)-[]-(d)", query.Instances},
		{"(a)-[]-(b)-[]-(c)-[]-(a), (d)-[]-(a), (e)-[]-(a)", query.Instances},
		{"(a:A)-[]-(b:A)-[]-(c:A)-[]-(d:A)-[]-(a), (e:B)-[]-(a)", query.Instances},
		{"(a)-[]-(b)-[]-(c)-[]-(a), (d)-[]-(a), (e)-[]-(a)", query.Embeddings},
	})
}

// leavesCase is denseCoreCase's graph with queries that end in leaves:
// several of one label on one vertex (a group whose picks must differ),
// leaves of both labels (two groups), and a wildcard leaf (one group of
// all).
func leavesCase(t *testing.T) ([]graph.Update, []*query.Query) {
	return denseCoreWith(t, "l", []pattern{
		{"(a)-[]-(b)-[]-(c)-[]-(a), (d)-[]-(a), (e)-[]-(a), (f)-[]-(b)", query.Embeddings},
		{"(a:A)-[]-(b:A)-[]-(c:A)-[]-(a), (d:B)-[]-(a), (e:A)-[]-(a), (f:B)-[]-(b), (g:A)-[]-(c)", query.Embeddings},
		{"(a:A)-[]-(b:A)-[]-(c:A)-[]-(a), (d:B)-[]-(a), (e)-[]-(b), (f:A)-[]-(c)", query.Embeddings},
		{"(a:B)-[]-(b), (a)-[]-(c), (a)-[]-(d), (a)-[]-(e), (b)-[]-(f), (b)-[]-(g)", query.Embeddings},
	})
}

// denseCoreWith is denseCoreCase's graph with the patterns ps, named with
// prefix, over its labels A, B and x.
func denseCoreWith(t *testing.T, prefix string, ps []pattern) ([]graph.Update, []*query.Query) {
	t.Helper()
	load, _ := denseCoreCase(t)
	d := graph.NewDict()
	d.Intern("A")
	d.Intern("B")
	d.Intern("x")
	return load, compiled(t, d, prefix, ps)
}

// spaceOf encodes the candidate space of q's static counting plan on g,
// and returns the factor its count is multiplied by.
func spaceOf(t *testing.T, g *dyngraph.Graph, q *query.Query) (*spaceProgram, int64) {
	t.Helper()
	f := incremental.Filter(g, q)
	plan, factor, ok := f.CountPlan(q)
	if !ok {
		t.Fatalf("query %s: a vertex without candidates", q.Name)
	}
	sp, ok := f.Space(g, &plan, incremental.DefaultSpaceEntries)
	if !ok {
		t.Fatalf("query %s: the space did not fit", q.Name)
	}
	p, ok := encodeSpace(sp, &plan, incremental.IndependentTail(&plan))
	if !ok {
		t.Fatalf("query %s: the space could not be encoded", q.Name)
	}
	return p, factor
}

// countSpaceOnHost walks p depth first as match_space does and returns the
// count before the query's CountFactor. At a last depth of one constraint
// it checks sp_count_one's bounds against the candidates themselves, and
// at a depth with a kept source, that scanning the source's candidates
// finds what the lists do.
func countSpaceOnHost(t *testing.T, p *spaceProgram) graph.Count {
	t.Helper()
	idx, vid := make([]uint32, p.n), make([]uint32, p.n)
	// room[d]: the buffer encodeSpace gives depth d, between its offset and
	// the next depth's (the last buffered one ends at warpWords).
	room := make([]int, p.n)
	buffered := func(d int) bool { return d >= 1 && d < p.n && (d < p.n-1 || p.tail < p.n-1) }
	for d := 1; d < p.n; d++ {
		if !buffered(d) {
			continue
		}
		end := uint32(p.warpWords)
		if buffered(d + 1) {
			end = p.prog[(d+1)*spStride+spBuf]
		}
		room[d] = int(end - p.prog[d*spStride+spBuf])
	}
	bufs := make([][]uint32, p.n) // each depth's candidates on the current path
	// level makes depth d's candidates below the vertices placed at depths
	// [0, placed).
	level := func(d, placed int) []uint32 {
		w := p.prog[d*spStride : (d+1)*spStride]
		var lists [][]uint32
		for ci := range int(w[spNCons]) {
			c := p.cons[(int(w[spCons])+ci)*scStride:]
			off := p.offs[c[scOff]:]
			x := idx[c[scFrom]]
			lists = append(lists, p.nbrs[c[scNbr]+off[x]:c[scNbr]+off[x+1]])
		}
		var out []uint32
	next:
		for _, y := range lists[0] {
			for _, l := range lists[1:] {
				if _, ok := slices.BinarySearch(l, y); !ok {
					continue next
				}
			}
			if placeable(w, placed, vid, p.verts[w[spVerts]+y]) {
				out = append(out, y)
			}
		}
		if w[spSrc] != noSrc {
			if kept := keptOnHost(p, d, placed, bufs[w[spSrc]], lists, vid); !slices.Equal(kept, out) {
				t.Fatalf("depth %d: scanning depth %d's candidates gives %v, the lists %v", d, w[spSrc], kept, out)
			}
		}
		return out
	}
	var count graph.Count
	var walk func(d int)
	walk = func(d int) {
		if d == p.tail && d < p.n-1 {
			count = count.Add(tailOnHost(t, p, d, level, room, bufs))
			return
		}
		c := level(d, d)
		if d == p.n-1 {
			if p.prog[d*spStride+spNCons] == 1 {
				if one := countOneOnHost(p, d, idx, vid); one != len(c) {
					t.Fatalf("depth %d: the one-list count is %d, the candidates %d", d, one, len(c))
				}
			}
			count = count.AddUint64(uint64(len(c)))
			return
		}
		if len(c) > room[d] {
			t.Fatalf("depth %d: %d candidates in a buffer of %d", d, len(c), room[d])
		}
		bufs[d] = c
		for _, x := range c {
			idx[d], vid[d] = x, p.verts[p.prog[d*spStride+spVerts]+x]
			walk(d + 1)
		}
	}
	for x := range uint32(p.rootSeeds) {
		idx[0], vid[0] = x, p.verts[p.prog[spVerts]+x]
		walk(1)
	}
	return count
}

// tailOnHost is space.cu's sp_tail: the candidates of each depth from tail
// on, and the product over groups of their distinct picks.
func tailOnHost(t *testing.T, p *spaceProgram, tail int, level func(d, placed int) []uint32, room []int, bufs [][]uint32) graph.Count {
	t.Helper()
	groups := map[uint32][]int{}
	sets := make([][]uint32, p.n) // data vertices, ascending
	for d := tail; d < p.n; d++ {
		c := level(d, tail)
		if len(c) > room[d] {
			t.Fatalf("tail depth %d: %d candidates in a buffer of %d", d, len(c), room[d])
		}
		if len(c) == 0 {
			return graph.Count{}
		}
		bufs[d] = c
		for _, y := range c {
			sets[d] = append(sets[d], p.verts[p.prog[d*spStride+spVerts]+y])
		}
		g := p.prog[d*spStride+spGroup]
		groups[g] = append(groups[g], d)
	}
	total := graph.CountOf(1)
	for _, ds := range groups {
		var size [1 << incremental.MaxGroup]int64
		for mask := 1; mask < 1<<len(ds); mask++ {
			var in []uint32
			for i, d := range ds {
				if mask>>i&1 == 1 {
					if mask&(1<<i-1) == 0 { // the first in mask
						in = sets[d]
					} else {
						in = slices.DeleteFunc(slices.Clone(in), func(v uint32) bool {
							_, ok := slices.BinarySearch(sets[d], v)
							return !ok
						})
					}
				}
			}
			size[mask] = int64(len(in))
		}
		total = total.Mul(incremental.DistinctPicks(len(ds), &size))
	}
	return total
}

// countOneOnHost is space.cu's sp_count_one: the last depth d's count from
// its one list's symmetry bounds, less the placed vertices within them.
func countOneOnHost(p *spaceProgram, d int, idx, vid []uint32) int {
	w := p.prog[d*spStride : (d+1)*spStride]
	c := p.cons[int(w[spCons])*scStride:]
	off := p.offs[c[scOff]:]
	list := p.nbrs[c[scNbr]+off[idx[c[scFrom]]] : c[scNbr]+off[idx[c[scFrom]]+1]]
	dv := p.verts[w[spVerts] : w[spVerts]+w[spNVerts]]
	lo, hi := 0, len(list)
	for a := range d {
		if w[spAbove]>>a&1 == 1 {
			t, _ := slices.BinarySearch(dv, vid[a]+1) // the first above vid[a]
			lo = max(lo, lowerBound(list, uint32(t)))
		}
		if w[spBelow]>>a&1 == 1 {
			t, _ := slices.BinarySearch(dv, vid[a])
			hi = min(hi, lowerBound(list, uint32(t)))
		}
	}
	if lo >= hi {
		return 0
	}
	n := hi - lo
	for a := range d {
		if y, ok := slices.BinarySearch(dv, vid[a]); ok {
			if _, in := slices.BinarySearch(list[lo:hi], uint32(y)); in {
				n--
			}
		}
	}
	return n
}

func lowerBound(l []uint32, x uint32) int {
	i, _ := slices.BinarySearch(l, x)
	return i
}

// keptOnHost is sp_level's scan of the source depth's candidates kept:
// each translated to depth d's candidate index, checked against the lists
// of the constraints the source does not cover and against the placed
// vertices and d's symmetry conditions.
func keptOnHost(p *spaceProgram, d, placed int, kept []uint32, lists [][]uint32, vid []uint32) []uint32 {
	w := p.prog[d*spStride : (d+1)*spStride]
	src := p.prog[w[spSrc]*spStride:]
	dv := p.verts[w[spVerts] : w[spVerts]+w[spNVerts]]
	var out []uint32
next:
	for _, y := range kept {
		v := p.verts[src[spVerts]+y]
		if w[spSame] == 0 {
			i, ok := slices.BinarySearch(dv, v)
			if !ok {
				continue
			}
			y = uint32(i)
		}
		for ci, l := range lists {
			if w[spCover]>>ci&1 == 0 {
				if _, ok := slices.BinarySearch(l, y); !ok {
					continue next
				}
			}
		}
		if placeable(w, placed, vid, v) {
			out = append(out, y)
		}
	}
	return out
}

// placeable says whether data vertex v may go at a depth whose program
// words are w, below the vertices vid placed at depths [0, placed): none of
// them, and above and below those its symmetry conditions name.
func placeable(w []uint32, placed int, vid []uint32, v uint32) bool {
	for a := range placed {
		u := vid[a]
		if u == v || (w[spAbove]>>a&1 == 1 && v <= u) || (w[spBelow]>>a&1 == 1 && v >= u) {
			return false
		}
	}
	return true
}
