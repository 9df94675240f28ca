package query

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// pairKind describes the edges between an ordered pair of query vertices
// (a, b): each entry is a label with a direction code, 0 for an undirected
// edge, 1 for a→b, 2 for b→a. Two pairs are interchangeable by an
// automorphism exactly when their kinds are equal.
type pairKind []uint64

// symmetryBreaking returns the size of the automorphism group of q (labels,
// edge labels and directions preserved) and conditions f(u) < f(v) that keep
// exactly one map of every automorphism class (Grochow and Kellis, RECOMB
// 2007): repeatedly take the vertex v with the largest orbit under the
// automorphisms that fix every vertex taken so far, require v's image to be
// the smallest of its orbit's images, and fix v.
//
// Orbits are found by searching for one automorphism per (v, w) pair rather
// than by listing the group, which for a star of 31 leaves has 31! elements.
func symmetryBreaking(q *Query) (uint64, [][2]int) {
	return newAutSearch(q).breaking()
}

func (s *autSearch) breaking() (uint64, [][2]int) {
	n := s.q.N()
	fixed := make([]bool, n)
	size := uint64(1)
	var less [][2]int
	for {
		// Vertices an automorphism fixing the fixed ones relates have the
		// same colour once those are told apart.
		base, _, _ := s.refine(fixed, -1, -1)
		bestV, bestOrbit := -1, []int(nil)
		for v := 0; v < n; v++ {
			if fixed[v] {
				continue
			}
			orbit := []int{v}
			for w := 0; w < n; w++ {
				if w != v && !fixed[w] && base[w] == base[v] && s.exists(fixed, v, w) {
					orbit = append(orbit, w)
				}
			}
			if len(orbit) > len(bestOrbit) {
				bestV, bestOrbit = v, orbit
			}
		}
		if bestV < 0 || len(bestOrbit) == 1 {
			return size, less
		}
		if size > math.MaxUint64/uint64(len(bestOrbit)) {
			size = math.MaxUint64
		} else {
			size *= uint64(len(bestOrbit))
		}
		for _, w := range bestOrbit[1:] {
			less = append(less, [2]int{bestV, w})
		}
		fixed[bestV] = true
	}
}

// pairKinds computes the pairKind of every ordered pair of q's vertices.
func pairKinds(q *Query) [][]pairKind {
	n := q.N()
	kinds := make([][]pairKind, n)
	for a := range kinds {
		kinds[a] = make([]pairKind, n)
	}
	for _, e := range q.Edges {
		code := uint64(0)
		if e.Directed {
			code = 1
		}
		kinds[e.A][e.B] = append(kinds[e.A][e.B], uint64(e.Label)<<2|code)
		back := code
		if e.Directed {
			back = 2
		}
		kinds[e.B][e.A] = append(kinds[e.B][e.A], uint64(e.Label)<<2|back)
	}
	for a := range kinds {
		for b := range kinds[a] {
			slices.Sort(kinds[a][b])
		}
	}
	return kinds
}

// AutomorphismList lists the automorphisms of q (labels, edge labels and
// directions preserved) as permutations, p[u] being u's image, the
// identity first. It returns nil when there are more than limit: the group
// of a star of 31 leaves has 31! elements. Under Instances semantics the
// service uses them to report every instance by one canonical map.
func (q *Query) AutomorphismList(limit int) [][]int {
	if q.Automorphisms > uint64(limit) {
		return nil
	}
	n := q.N()
	if q.Automorphisms == 1 { // also when predicates leave only the identity
		id := make([]int, n)
		for i := range id {
			id[i] = i
		}
		return [][]int{id}
	}
	s := newAutSearch(q)
	for i := range s.img {
		s.img[i] = -1
	}
	s.colA, _, _ = s.refine(make([]bool, n), -1, -1)
	s.colB = s.colA
	var out [][]int
	s.all(0, func() { out = append(out, slices.Clone(s.img)) })
	return out
}

// all calls found for every completion of the partial map in s.img, in
// lexicographic order of the images, so the identity comes first.
func (s *autSearch) all(u int, found func()) {
	n := s.q.N()
	if u == n {
		found()
		return
	}
	for c := 0; c < n; c++ {
		if s.used[c] || s.colB[c] != s.colA[u] {
			continue
		}
		s.img[u], s.used[c] = c, true
		if s.consistent(u) {
			s.all(u+1, found)
		}
		s.img[u], s.used[c] = -1, false
	}
}

// autSearch looks for automorphisms by extending a partial map vertex by
// vertex. A vertex may map only to one of its colour: colour refinement
// (1-dimensional Weisfeiler-Leman) of the pattern with the vertices already
// mapped told apart, which every automorphism extending the map preserves.
// Without it the search walked every arrangement of a clique of
// like-labelled vertices before finding that two vertices of different
// degree cannot swap: 10!·5! on labeled_snu's human query_dense_20_7.
type autSearch struct {
	q     *Query
	kinds [][]pairKind
	kind  [][]int // kinds interned, 0 for no edge
	img   []int
	used  []bool
	// colA and colB colour the map's domain and image sides: u may map to
	// c only when colA[u] == colB[c].
	colA, colB []int
}

func newAutSearch(q *Query) *autSearch {
	n := q.N()
	s := &autSearch{q: q, kinds: pairKinds(q), img: make([]int, n), used: make([]bool, n), kind: make([][]int, n)}
	ids := map[string]int{}
	for a := range n {
		s.kind[a] = make([]int, n)
		for b, k := range s.kinds[a] {
			if len(k) == 0 {
				continue
			}
			key := fmt.Sprint(k)
			if ids[key] == 0 {
				ids[key] = len(ids) + 1
			}
			s.kind[a][b] = ids[key]
		}
	}
	return s
}

// refine colours two copies of the pattern, A and B, by label, with each
// fixed vertex alone in its colour on both and v in A and w in B (when v
// is not -1) sharing a colour of their own, and refines both by the
// colours and edge kinds of each vertex's neighbours until the colouring
// stops splitting. ok is false when A and B end with different colour
// counts: then no automorphism fixes the fixed vertices and maps v to w.
func (s *autSearch) refine(fixed []bool, v, w int) (colA, colB []int, ok bool) {
	n := s.q.N()
	ids := map[string]int{}
	intern := func(key []byte) int {
		id, seen := ids[string(key)]
		if !seen {
			id = len(ids)
			ids[string(key)] = id
		}
		return id
	}
	var key []byte
	start := func(x int, pinned int) int {
		key = key[:0]
		switch {
		case fixed[x]:
			key = binary.AppendUvarint(append(key, 'f'), uint64(x))
		case x == pinned:
			key = append(key, 'p')
		default:
			key = binary.AppendUvarint(append(key, 'l'), uint64(s.q.Labels[x]))
		}
		return intern(key)
	}
	colA, colB = make([]int, n), make([]int, n)
	for x := range n {
		colA[x], colB[x] = start(x, v), start(x, w)
	}
	nextA, nextB := make([]int, n), make([]int, n)
	var pairs [][2]int
	sig := func(col []int, x int) int {
		pairs = pairs[:0]
		for y := range n {
			if k := s.kind[x][y]; k != 0 {
				pairs = append(pairs, [2]int{k, col[y]})
			}
		}
		slices.SortFunc(pairs, func(a, b [2]int) int {
			if a[0] != b[0] {
				return a[0] - b[0]
			}
			return a[1] - b[1]
		})
		key = binary.AppendUvarint(key[:0], uint64(col[x]))
		for _, p := range pairs {
			key = binary.AppendUvarint(binary.AppendUvarint(key, uint64(p[0])), uint64(p[1]))
		}
		return intern(key)
	}
	classes := func(col []int) int {
		seen := map[int]bool{}
		for _, c := range col {
			seen[c] = true
		}
		return len(seen)
	}
	before := -1
	for {
		if !sameCounts(colA, colB) {
			return colA, colB, false
		}
		now := classes(colA)
		if now == before {
			return colA, colB, true
		}
		before = now
		clear(ids) // the new colours' names only
		for x := range n {
			nextA[x] = sig(colA, x)
			nextB[x] = sig(colB, x)
		}
		colA, nextA = nextA, colA
		colB, nextB = nextB, colB
	}
}

// sameCounts reports whether each colour colours as many vertices in a as
// in b.
func sameCounts(a, b []int) bool {
	m := map[int]int{}
	for i := range a {
		m[a[i]]++
		m[b[i]]--
	}
	for _, c := range m {
		if c != 0 {
			return false
		}
	}
	return true
}

// exists reports whether an automorphism fixes every vertex marked in fixed
// and maps v to w.
func (s *autSearch) exists(fixed []bool, v, w int) bool {
	n := s.q.N()
	if s.q.Labels[v] != s.q.Labels[w] {
		return false
	}
	var ok bool
	if s.colA, s.colB, ok = s.refine(fixed, v, w); !ok {
		return false
	}
	for i := range s.img {
		s.img[i], s.used[i] = -1, false
	}
	for u := 0; u < n; u++ {
		if fixed[u] {
			s.img[u], s.used[u] = u, true
		}
	}
	s.img[v], s.used[w] = w, true
	if !s.consistent(v) {
		return false
	}
	return s.extend(0)
}

// consistent checks u's image against every other assigned vertex.
func (s *autSearch) consistent(u int) bool {
	for x, ix := range s.img {
		if ix < 0 || x == u {
			continue
		}
		if !slices.Equal(s.kinds[u][x], s.kinds[s.img[u]][ix]) {
			return false
		}
	}
	return true
}

func (s *autSearch) extend(u int) bool {
	n := s.q.N()
	for u < n && s.img[u] >= 0 {
		u++
	}
	if u == n {
		return true
	}
	for c := 0; c < n; c++ {
		if s.used[c] || s.colB[c] != s.colA[u] {
			continue
		}
		s.img[u], s.used[c] = c, true
		if s.consistent(u) && s.extend(u+1) {
			return true
		}
		s.img[u], s.used[c] = -1, false
	}
	return false
}
