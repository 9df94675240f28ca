package incremental

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// TestDistinctPicks checks the count of distinct picks against brute force
// over random small sets, and on t copies of one set of s items, which
// have s(s-1)...(s-t+1).
func TestDistinctPicks(t *testing.T) {
	for k := 1; k <= MaxGroup; k++ {
		for s := int64(0); s <= 9; s++ {
			var size [1 << MaxGroup]int64
			for mask := 1; mask < 1<<k; mask++ {
				size[mask] = s
			}
			want := int64(1)
			for i := range int64(k) {
				want *= s - i
			}
			if got := DistinctPicks(k, &size); got != countOf(int(want)) {
				t.Fatalf("%d copies of a set of %d: %d distinct picks, want %d", k, s, got, want)
			}
		}
	}
	r := rand.New(rand.NewPCG(5, 5))
	for trial := range 300 {
		k := 1 + trial%MaxGroup
		sets := make([][]int, k)
		for i := range sets {
			for v := range 7 {
				if r.IntN(2) == 0 {
					sets[i] = append(sets[i], v)
				}
			}
		}
		var size [1 << MaxGroup]int64
		for mask := 1; mask < 1<<k; mask++ {
			for v := range 7 {
				in := true
				for i := range k {
					if mask>>i&1 == 1 && !slices.Contains(sets[i], v) {
						in = false
					}
				}
				if in {
					size[mask]++
				}
			}
		}
		var walk func(i int, used uint) int64
		walk = func(i int, used uint) int64 {
			if i == k {
				return 1
			}
			n := int64(0)
			for _, v := range sets[i] {
				if used>>v&1 == 0 {
					n += walk(i+1, used|1<<v)
				}
			}
			return n
		}
		if got, want := DistinctPicks(k, &size), countOf(int(walk(0, 0))); got != want {
			t.Fatalf("sets %v: %d distinct picks, want %d", sets, got, want)
		}
	}
}

// TestIndependentTail pins where the counted tail starts.
func TestIndependentTail(t *testing.T) {
	labels := graph.NewDict()
	labels.Intern("A")
	labels.Intern("x")
	compile := func(sem query.Semantics, edges ...[2]int) *query.Query {
		p := &query.Pattern{Name: "p"}
		n := 0
		for _, e := range edges {
			n = max(n, e[0]+1, e[1]+1)
			p.Edges = append(p.Edges, query.Edge{From: e[0], To: e[1], Label: "x"})
		}
		for v := range n {
			p.Vertices = append(p.Vertices, query.Vertex{Name: fmt.Sprintf("v%d", v), Label: "A"})
		}
		q, err := query.Compile(p, labels, false, sem)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	for _, tc := range []struct {
		name  string
		q     *query.Query
		start int
		want  int
	}{
		// A star from its centre: every leaf is counted.
		{"star", compile(query.Embeddings, [2]int{0, 1}, [2]int{0, 2}, [2]int{0, 3}, [2]int{0, 4}), 0, 1},
		// A path of four from an end: its far end alone is left.
		{"path", compile(query.Embeddings, [2]int{0, 1}, [2]int{1, 2}, [2]int{2, 3}), 0, 3},
		// A triangle with a pendant on each corner: the pendants.
		{"pendants", compile(query.Embeddings, [2]int{0, 1}, [2]int{1, 2}, [2]int{2, 0}, [2]int{0, 3}, [2]int{1, 4}, [2]int{2, 5}), 0, 3},
		// Counting instances of a star, symmetry conditions order its
		// leaves one after another: only the last is left.
		{"star, instances", compile(query.Instances, [2]int{0, 1}, [2]int{0, 2}, [2]int{0, 3}), 0, 3},
	} {
		counts := slices.Repeat([]int{5}, tc.q.N())
		p, _ := countPlan(tc.q, tc.start, counts)
		if got := IndependentTail(&p); got != tc.want {
			t.Errorf("%s: tail from depth %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestStaticCountsTail compares Static's count, which counts independent
// tails, with the brute-force oracle on patterns with many leaves: stars of
// up to eight leaves (a group past MaxGroup is walked), spiders and random
// trees with pendants; labels one or two, some query vertices wildcards;
// directed and not; both semantics.
func TestStaticCountsTail(t *testing.T) {
	trials := 60
	if testing.Short() {
		trials = 16
	}
	counted := 0
	for i := range trials {
		r := rand.New(rand.NewPCG(uint64(11000+i), 7))
		dir := i%2 == 1
		sem := []query.Semantics{query.Embeddings, query.Instances}[i/2%2]
		labels, names := trialLabels(r)
		nv := 10 + r.IntN(8)
		g, o := staticGraph(t, r, labels, dir, nv,
			func() string { return names[r.IntN(len(names))] },
			func() int { return 2*nv + r.IntN(nv) })
		vlabel := func() string {
			if r.IntN(6) == 0 {
				return "" // wildcard
			}
			return names[r.IntN(len(names))]
		}
		for _, shape := range []string{"star", "spider", "tree"} {
			q, err := query.Compile(shapedPattern(r, shape, dir, vlabel), labels, dir, sem)
			if err != nil {
				t.Fatal(err)
			}
			f := Filter(g, q)
			if start, ok := f.start(); ok {
				plan, _ := countPlan(q, start, f.Count)
				if IndependentTail(&plan) < q.N()-1 {
					counted++
				}
			}
			want := (&scenario{}).filter(q, o.matches(q))
			for _, cpu := range []*CPU{{Workers: 1}, {Workers: 3}} {
				checkStaticSet(t, fmt.Sprintf("trial %d directed=%v %v %s %s, %d workers", i, dir, sem, shape, describe(q), cpu.Workers), g, cpu, q, want)
			}
		}
		g.Close()
	}
	if counted < trials {
		t.Fatalf("only %d of %d queries had a tail of two or more levels to count", counted, 3*trials)
	}
}

// shapedPattern is a pattern with many leaves, edges labelled x: a star of
// 3 to 8 leaves, a spider, or a random tree with two pendants on its root,
// its vertices labelled by vlabel ("" for a wildcard).
func shapedPattern(r *rand.Rand, shape string, dir bool, vlabel func() string) *query.Pattern {
	p := &query.Pattern{Name: shape}
	n := 0
	edge := func(a, b int) {
		if r.IntN(2) == 0 {
			a, b = b, a
		}
		p.Edges = append(p.Edges, query.Edge{From: a, To: b, Label: "x", Directed: dir})
		n = max(n, a+1, b+1)
	}
	switch shape {
	case "star":
		for v := 1; v <= 3+r.IntN(6); v++ {
			edge(0, v)
		}
	case "spider":
		edge(0, 1)
		edge(1, 2)
		edge(0, 3)
		edge(0, 4)
		edge(4, 5)
		edge(1, 6)
	case "tree":
		k := 4 + r.IntN(4)
		for v := 1; v < k; v++ {
			edge(r.IntN(v), v)
		}
		edge(0, k)
		edge(0, k+1)
	}
	for v := range n {
		l := vlabel()
		p.Vertices = append(p.Vertices, query.Vertex{Name: fmt.Sprintf("v%d", v), Label: l, Wildcard: l == ""})
	}
	return p
}

// TestDeltaCountsTail compares the delta walk's counts, which count
// independent tails (countwalk.go), and its enumerated matches with the
// brute-force oracle on stars, spiders and trees whose leaves often share
// a label, over insertions, deletions and both, one update at a time and
// in batches, on one worker and on three; directed and not; both
// semantics.
func TestDeltaCountsTail(t *testing.T) {
	trials := 48
	if testing.Short() {
		trials = 12
	}
	counted := 0
	for i := range trials {
		r := rand.New(rand.NewPCG(uint64(12000+i), 9))
		s := &scenario{seed: uint64(12000 + i), directed: i%2 == 1, sem: []query.Semantics{query.Embeddings, query.Instances}[i/2%2],
			kind: []string{"insert", "delete", "mixed"}[i%3], maxBatch: []int{1, 6}[i/6%2]}
		var names []string
		s.labels, names = trialLabels(r)
		vlabel := func() string {
			if r.IntN(8) == 0 {
				return "" // wildcard
			}
			return names[r.IntN(len(names))]
		}
		for _, shape := range []string{"star", "spider", "tree"} {
			q, err := query.Compile(shapedPattern(r, shape, s.directed, vlabel), s.labels, s.directed, s.sem)
			if err != nil {
				t.Fatal(err)
			}
			for _, ct := range countTerms(q, []int{1}) {
				if ct.tail < q.N()-1 {
					counted++
				}
			}
			s.queries = append(s.queries, q)
		}
		nv := 10 + r.IntN(6)
		for v := range nv {
			s.initial = append(s.initial, graph.Update{Op: graph.AddVertex, Src: uint32(v), SrcLabel: s.labels.Intern(names[r.IntN(len(names))])})
		}
		x := s.labels.Intern("x")
		edge := func(op graph.Op) graph.Update {
			a, b := uint32(r.IntN(nv)), uint32(r.IntN(nv-1))
			if b >= a {
				b++
			}
			return graph.Update{Op: op, Src: a, Dst: b, Label: x, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}
		}
		for range 3 * nv {
			s.initial = append(s.initial, edge(graph.Insert))
		}
		for range 4 {
			var batch []graph.Update
			for range 1 + r.IntN(s.maxBatch) {
				op := graph.Insert
				if s.kind == "delete" || s.kind == "mixed" && r.IntN(2) == 0 {
					op = graph.Delete
				}
				u := edge(op)
				if op == graph.Delete { // an edge of the initial graph, mostly present
					e := s.initial[nv+r.IntN(3*nv)]
					u.Src, u.Dst = e.Src, e.Dst
				}
				batch = append(batch, u)
			}
			s.batches = append(s.batches, batch)
		}
		s.check(t, 1+2*(i%2))
	}
	if counted < trials {
		t.Fatalf("only %d terms counted a tail of two or more levels in %d trials", counted, trials)
	}
}

// countOf is n as a graph.Count, for comparing counts with lengths.
func countOf(n int) graph.Count { return graph.CountOf(uint64(n)) }

// TestDistinctPicksPastInt64 checks DistinctPicks on copies of one set of
// n, whose picks are n(n-1)...(n-t+1), where the product of the sizes is
// just below 2^64 (the sum in int64 words, its result past 2^63) and just
// above it (the sum in math/big), up to a count near 2^126 and one past
// 2^128, which saturates.
func TestDistinctPicksPastInt64(t *testing.T) {
	for _, tc := range []struct{ t, n int64 }{{6, 1620}, {6, 1630}, {6, 2000}, {6, 1 << 21}, {5, 1 << 26}} {
		var size [1 << MaxGroup]int64
		for mask := 1; mask < 1<<tc.t; mask++ {
			size[mask] = tc.n
		}
		want := fallingFactorial(tc.n, tc.t)
		if got := DistinctPicks(int(tc.t), &size); got != graph.CountOfBig(want) {
			t.Errorf("%d copies of a set of %d: %v distinct picks, want %v", tc.t, tc.n, got, want)
		}
	}
}
