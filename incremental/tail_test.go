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
			if got := DistinctPicks(k, &size); got != want {
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
		if got, want := DistinctPicks(k, &size), walk(0, 0); got != want {
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
				edge(0, k) // a pendant or two on the root
				edge(0, k+1)
			}
			for v := range n {
				l := vlabel()
				p.Vertices = append(p.Vertices, query.Vertex{Name: fmt.Sprintf("v%d", v), Label: l, Wildcard: l == ""})
			}
			q, err := query.Compile(p, labels, dir, sem)
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
