package incremental

import (
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
)

// A level's candidates come from its driver's list, within the level's
// vertex label, in ascending order of id; each other constraint checks
// that a candidate is in its own list. A binary search per candidate reads
// the label of every probed entry (lists are ordered by label, then id);
// on a skewed graph, where two hubs' lists of thousands are intersected
// for every partial match, those reads were most of matching. Restricted
// to the label's range, a list is ordered by id alone, so the search can
// go forward from the last candidate's place, galloping: linear in the
// two lists where they are alike in size, logarithmic where one is far
// shorter. Lists that the pending batch changed (appended entries or
// tombstones) and graphs of several edge labels keep the general probe.

// seekFrom readies forward search in the lists of level d's constraints
// other than the driver drv, for candidates of label l.
func (w *walker) seekFrom(d, drv int, l graph.Label) {
	if w.multi {
		return
	}
	for i := range w.plan.Levels[d].Cons {
		if i == drv || w.nadj[d][i] != 1 {
			continue
		}
		a := &w.adj[d][i][0]
		if len(a.Appended) > 0 || a.Tombstones > 0 {
			continue
		}
		lo, hi := w.ord.Range(a.Sorted, l)
		w.seeking[d][i], w.seekAt[d][i], w.seekTo[d][i] = true, int32(lo), int32(hi)
	}
}

// seekOff ends level d's forward search.
func (w *walker) seekOff(d int) {
	w.seeking[d] = [len(w.seeking[d])]bool{}
}

// seek says whether v, not below the last vertex sought at (d, i), is in
// that constraint's list.
func (w *walker) seek(d, i int, v uint32) bool {
	s := w.adj[d][i][0].Sorted
	p, end := int(w.seekAt[d][i]), int(w.seekTo[d][i])
	if p < end && s[p]&dyngraph.IDMask < v {
		// Gallop: s[q] < v, then bisect [q+1, q+step).
		q, step := p, 1
		for q+step < end && s[q+step]&dyngraph.IDMask < v {
			q += step
			step <<= 1
		}
		lo, hi := q+1, min(q+step, end)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if s[m]&dyngraph.IDMask < v {
				lo = m + 1
			} else {
				hi = m
			}
		}
		p = lo
	}
	w.seekAt[d][i] = int32(p)
	return p < end && s[p]&dyngraph.IDMask == v
}
