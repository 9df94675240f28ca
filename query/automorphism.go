package query

import (
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
	n := q.N()
	s := &autSearch{q: q, kinds: pairKinds(q), img: make([]int, n), used: make([]bool, n)}

	fixed := make([]bool, n)
	size := uint64(1)
	var less [][2]int
	for {
		bestV, bestOrbit := -1, []int(nil)
		for v := 0; v < n; v++ {
			if fixed[v] {
				continue
			}
			orbit := []int{v}
			for w := 0; w < n; w++ {
				if w != v && !fixed[w] && s.exists(fixed, v, w) {
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
	s := &autSearch{q: q, kinds: pairKinds(q), img: make([]int, n), used: make([]bool, n)}
	for i := range s.img {
		s.img[i] = -1
	}
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
		if s.used[c] || s.q.Labels[c] != s.q.Labels[u] {
			continue
		}
		s.img[u], s.used[c] = c, true
		if s.consistent(u) {
			s.all(u+1, found)
		}
		s.img[u], s.used[c] = -1, false
	}
}

type autSearch struct {
	q     *Query
	kinds [][]pairKind
	img   []int
	used  []bool
}

// exists reports whether an automorphism fixes every vertex marked in fixed
// and maps v to w.
func (s *autSearch) exists(fixed []bool, v, w int) bool {
	n := s.q.N()
	for i := range s.img {
		s.img[i], s.used[i] = -1, false
	}
	for u := 0; u < n; u++ {
		if fixed[u] {
			s.img[u], s.used[u] = u, true
		}
	}
	if s.used[w] || s.q.Labels[v] != s.q.Labels[w] {
		return false
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
		if s.used[c] || s.q.Labels[c] != s.q.Labels[u] {
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
