package incremental

import (
	"math/big"
	"math/bits"
	"slices"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// Counting, the static search stops short of a plan's independent tail:
// its last levels, none of which constrains or conditions another (a
// sparse query's leaves, typically). Once every level above the tail holds
// a vertex, each tail level's candidates are fixed, and the matches below
// are the ways to pick one candidate per tail level, all distinct: counted
// from the sets, not walked. Walking them costs the product of the sets'
// sizes; counting, a few intersections of them.
//
// Candidates of levels with different labels never meet (a data vertex has
// one label), so the tail splits into groups of one label (a wildcard level
// joins every group into one), and the count is the product of the groups'.
// A group's count of distinct picks is, by Möbius inversion over the
// partitions of its levels (Rota 1964), a sum over the partitions π of
// Π over blocks B of π of (-1)^(|B|-1) (|B|-1)! |∩_{i∈B} S_i|: with one level
// |S|, with two |S1||S2| - |S1∩S2|. DistinctPicks sums it block by block.
// A group of more than MaxGroup levels is walked, only its last level
// counted. The GPU's match_space counts its tails the same way (space.cu,
// sp_tail).

// MaxGroup bounds the levels of one group counted by partitions: a group of
// 6 has 203 partitions and 57 intersections.
const MaxGroup = 6

// DistinctPicks is the number of ways to pick one item from each of t sets,
// all different, given size[mask], the size of the intersection of the
// sets whose bits mask sets. It takes the block of the partition that holds
// the lowest set first: picks(U) = Σ over B ⊆ U holding U's lowest of
// (-1)^(|B|-1) (|B|-1)! size[B] picks(U \ B).
//
// The sum's terms may wrap, but arithmetic mod 2^64 leaves it exact
// whenever the true count is below 2^64, and that count is at most the
// product of the sets' sizes: where that product fits a uint64 the sum
// runs in int64 words, as fast as ever; where it does not (a dense
// pattern's hub, past 10^19 picks) it runs in math/big.
func DistinctPicks(t int, size *[1 << MaxGroup]int64) graph.Count {
	bound := uint64(1)
	for i := range t {
		hi, lo := bits.Mul64(bound, uint64(size[1<<i]))
		if hi != 0 {
			return distinctPicksBig(t, size)
		}
		bound = lo
	}
	var picks [1 << MaxGroup]int64
	picks[0] = 1
	for u := 1; u < 1<<t; u++ {
		low := u & -u
		rest := u ^ low
		sum := int64(0)
		for sub := rest; ; sub = (sub - 1) & rest { // every subset of rest
			b := sub | low
			k := bits.OnesCount(uint(b))
			term := size[b] * picks[u^b]
			for j := 2; j < k; j++ {
				term *= int64(j)
			}
			if k%2 == 0 {
				term = -term
			}
			sum += term
			if sub == 0 {
				break
			}
		}
		picks[u] = sum
	}
	return graph.CountOf(uint64(picks[1<<t-1]))
}

// distinctPicksBig is DistinctPicks's sum in math/big, for sets whose
// product of sizes passes 2^64.
func distinctPicksBig(t int, size *[1 << MaxGroup]int64) graph.Count {
	var picks [1 << MaxGroup]*big.Int
	picks[0] = big.NewInt(1)
	term := new(big.Int)
	for u := 1; u < 1<<t; u++ {
		low := u & -u
		rest := u ^ low
		sum := new(big.Int)
		for sub := rest; ; sub = (sub - 1) & rest {
			b := sub | low
			k := bits.OnesCount(uint(b))
			term.SetInt64(size[b])
			term.Mul(term, picks[u^b])
			for j := 2; j < k; j++ {
				term.Mul(term, big.NewInt(int64(j)))
			}
			if k%2 == 0 {
				term.Neg(term)
			}
			sum.Add(sum, term)
			if sub == 0 {
				break
			}
		}
		picks[u] = sum
	}
	return graph.CountOfBig(picks[1<<t-1])
}

// countPlan is the plan that counts q's matches from start, and the factor
// its count is multiplied by. Leaves go last, to be counted as above. The
// symmetry conditions that let a count walk one match of each automorphism
// class (query.StaticPlan's forCount) order like leaves one after another,
// which leaves only the last of them to count: on a star they forgo a
// count of the leaves to save a factor of their arrangements, most of
// which counting the tail saves anyway. So where they shorten the tail,
// the plan drops them.
func countPlan(q *query.Query, start int, counts []int) (query.Plan, int64) {
	plan := q.StaticPlanLeavesLast(start, counts, true)
	if q.CountFactor == 1 {
		return plan, 1
	}
	bare := q.StaticPlanLeavesLast(start, counts, false)
	if IndependentTail(&bare) < IndependentTail(&plan) {
		return bare, 1
	}
	return plan, int64(q.CountFactor)
}

// CountPlan is countPlan from the vertex with the fewest candidates, for a
// counting search elsewhere (the GPU's); ok is false when a vertex has none.
func (c *Candidates) CountPlan(q *query.Query) (plan query.Plan, factor int64, ok bool) {
	start, ok := c.start()
	if !ok {
		return query.Plan{}, 0, false
	}
	plan, factor = countPlan(q, start, c.Count)
	return plan, factor, true
}

// IndependentTail is the first depth of p's independent tail: the longest
// run of last levels whose constraints and symmetry conditions read only
// depths above it. It is the last depth where there is no such run of two
// or more.
func IndependentTail(p *query.Plan) int {
	n := len(p.Levels)
	k := n - 1
	for k > 1 {
		d := k - 1
		for e := k; e < n; e++ {
			lv := &p.Levels[e]
			for _, c := range lv.Cons {
				if c.From == d {
					return k
				}
			}
			if slices.Contains(lv.Above, d) || slices.Contains(lv.Below, d) {
				return k
			}
		}
		k = d
	}
	return k
}

// TailGroups splits the depths of p's tail, from depth tail on, into the
// groups whose candidates may meet: the depths of one label, or all of
// them where a level is a wildcard.
func TailGroups(p *query.Plan, tail int) [][]int {
	levels := p.Levels[tail:]
	for _, lv := range levels {
		if lv.Label == graph.Wildcard {
			all := make([]int, len(levels))
			for i := range all {
				all[i] = tail + i
			}
			return [][]int{all}
		}
	}
	var groups [][]int
	at := map[graph.Label]int{}
	for i, lv := range levels {
		g, ok := at[lv.Label]
		if !ok {
			g = len(groups)
			at[lv.Label] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], tail+i)
	}
	return groups
}

// countTail counts the matches below the partial match whose tail, from
// depth d, is left: f.cand[d] holds depth d's candidates, and the other
// tail levels' are computed here.
func (f *finder) countTail(d int) {
	n := len(f.plan.Levels)
	for e := d; e < n; e++ {
		cands := f.cand[e]
		if e > d {
			cands = f.candidates(e, f.cand[e][:0])
			f.cand[e] = cands
		}
		if len(cands) == 0 {
			return
		}
		verts := f.sp.verts[e]
		set := room(f.sets[e][:0], len(cands))
		for _, x := range cands {
			set = append(set, verts[x])
		}
		f.sets[e] = set
	}
	if f.halting(uint32(n - d)) {
		return
	}
	total := graph.CountOf(1)
	for _, g := range f.groups {
		if total = total.Mul(f.distinct(g)); total.IsZero() {
			return
		}
	}
	f.count = f.count.Add(total)
}

// distinct is the number of ways to pick one data vertex from each of the
// sets of the levels in g, all different.
func (f *finder) distinct(g []int) graph.Count {
	if len(g) > MaxGroup {
		return f.walkGroup(g, 0)
	}
	return f.picks.distinct(&f.sets, g, nil)
}

// picks is the scratch space of DistinctPicks over a group's sets: per
// subset of the group the intersection of its sets and its size.
type picks struct {
	inter    [1 << MaxGroup][]graph.VertexID
	interBuf [1 << MaxGroup][]graph.VertexID
	size     [1 << MaxGroup]int64
}

// distinct is the number of ways to pick one vertex from each of the sets
// of the depths in g (at most MaxGroup; each set ascending), all
// different, none of them in placed: the sets may hold the vertices
// placed above them, and an intersection's size leaves those out.
func (p *picks) distinct(sets *[query.MaxVertices][]graph.VertexID, g []int, placed []graph.VertexID) graph.Count {
	t := len(g)
	for mask := 1; mask < 1<<t; mask++ {
		low := mask & -mask
		i := bits.TrailingZeros(uint(low))
		if mask == low {
			p.inter[mask] = sets[g[i]]
		} else {
			p.interBuf[mask] = intersect(p.interBuf[mask][:0], p.inter[mask^low], sets[g[i]])
			p.inter[mask] = p.interBuf[mask]
		}
		p.size[mask] = int64(len(p.inter[mask]))
		for _, v := range placed {
			if _, ok := slices.BinarySearch(p.inter[mask], v); ok {
				p.size[mask]--
			}
		}
	}
	if t == 1 {
		return graph.CountOf(uint64(p.size[1]))
	}
	return DistinctPicks(t, &p.size)
}

// walkGroup counts the distinct picks of a group too large for
// DistinctPicks by walking it: each pick at levels k and on is marked in
// f.visited (which holds the placed vertices already), and the last level
// counts its unmarked vertices.
func (f *finder) walkGroup(g []int, k int) graph.Count {
	set := f.sets[g[k]]
	if k == len(g)-1 {
		n := uint64(0)
		for _, v := range set {
			if f.visited[v>>6]&(1<<(v&63)) == 0 {
				n++
			}
		}
		return graph.CountOf(n)
	}
	var n graph.Count
	for _, v := range set {
		if f.visited[v>>6]&(1<<(v&63)) != 0 {
			continue
		}
		f.visited[v>>6] |= 1 << (v & 63)
		n = n.Add(f.walkGroup(g, k+1))
		f.visited[v>>6] &^= 1 << (v & 63)
	}
	return n
}

// intersect appends a ∩ b (both ascending) to out: by merging where the
// two are alike in size, by galloping through the longer otherwise, so
// that a few candidates against a hub's list cost a few searches.
func intersect(out, a, b []graph.VertexID) []graph.VertexID {
	if len(a) > len(b) {
		a, b = b, a
	}
	out = room(out, len(a))
	if len(b) > 16*len(a) {
		lo := 0
		for _, v := range a {
			i, ok := slices.BinarySearch(b[lo:], v)
			lo += i
			if ok {
				out = append(out, v)
			}
		}
		return out
	}
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			out = append(out, a[i])
			i++
			j++
		}
	}
	return out
}
