package dyngraph

import (
	"errors"
	"fmt"

	"github.com/gcsm/gcsm/graph"
)

// Build loads the initial graph: the batch's vertices and edges go straight
// into their lists, without the per-edge normalisation of Apply. It counts
// every list's length first, allocates each list once at its final size,
// fills it, then sorts and deduplicates it; on the human graph (86k edges)
// that is about three times faster than Apply with Reorganize.
//
// The graph must have no edges and no pending batch. The batch may hold
// AddVertex and Insert updates; a Delete makes Build refuse the whole batch
// (use Apply for streams). Refused updates are reported as by Apply. ΔE is
// not computed: a load has no matches to report.
func (g *Graph) Build(batch []graph.Update) ([]Reject, ApplyStats, error) {
	if g.pending || g.edges != 0 {
		return nil, ApplyStats{}, errors.New("dyngraph: Build needs an empty graph; use Apply")
	}
	st := ApplyStats{Updates: len(batch)}
	g.maxKnown = false // put does not keep MaxDegreeBound
	for i := range batch {
		if batch[i].Op == graph.Delete {
			return nil, st, fmt.Errorf("dyngraph: Build got a deletion (update %d); use Apply", i)
		}
	}
	var rejects []Reject
	nv := g.vertices
	accepted := make([]bool, len(batch))
	edgeUpdates := 0
	for i := range batch {
		u := &batch[i]
		if err := g.admit(u); err != nil {
			if !refusal(err) {
				return nil, st, err
			}
			rejects = append(rejects, Reject{Index: i, Err: err})
			continue
		}
		if u.Op != graph.Insert {
			continue
		}
		if err := g.noteEdgeLabel(u.Label); err != nil {
			return nil, st, err
		}
		accepted[i] = true
		edgeUpdates++
		g.out[u.Src].want++
		if g.opts.Directed {
			g.in[u.Dst].want++
		} else {
			g.out[u.Dst].want++
		}
	}
	for _, ls := range [][]list{g.out, g.in} {
		for i := range ls {
			if l := &ls[i]; l.want > 0 {
				if err := g.growTo(l, roundCap(l.want)); err != nil {
					return nil, st, err
				}
				l.want = 0
			}
		}
	}
	for i := range batch {
		if !accepted[i] {
			continue
		}
		u := &batch[i]
		g.put(&g.out[u.Src], u.Dst, u.Label)
		if g.opts.Directed {
			g.put(&g.in[u.Dst], u.Src, u.Label)
		} else {
			g.put(&g.out[u.Dst], u.Src, u.Label)
		}
	}
	var entries int64
	o := g.Order()
	for _, ls := range [][]list{g.out, g.in} {
		for i := range ls {
			if l := &ls[i]; l.n > 0 {
				g.sortDedup(o, l)
				entries += int64(l.n)
			}
		}
	}
	g.epoch++
	// Each edge holds two entries: both ends of an undirected edge, or the
	// out- and in-list of a directed one.
	g.edges = entries / 2
	st.Inserted = int(g.edges)
	st.Refreshed = edgeUpdates - st.Inserted // repeats of an edge already listed
	st.Rejected = len(rejects)
	st.Vertices = g.vertices - nv
	return rejects, st, nil
}

// put appends an entry to a list that has room, outside any batch.
func (g *Graph) put(l *list, id uint32, label graph.Label) {
	s := &g.slabs[l.slab]
	s.ids[l.off+l.n] = id
	if s.lbls != nil {
		s.lbls[l.off+l.n] = label
	}
	l.n++
	l.app = l.n
}

// sortDedup sorts a freshly filled list and drops repeated entries: an edge
// listed twice in a graph file, or both ways round in an undirected one.
func (g *Graph) sortDedup(o Order, l *list) {
	s := &g.slabs[l.slab]
	ids := s.ids[l.off : l.off+l.n]
	var lbls []uint32
	if s.lbls != nil {
		lbls = s.lbls[l.off : l.off+l.n]
	}
	g.scratches(1)[0].sortPart(o, ids, lbls)
	w := 0
	for r := range ids {
		if r > 0 && ids[r] == ids[w-1] && (lbls == nil || lbls[r] == lbls[w-1]) {
			continue
		}
		ids[w] = ids[r]
		if lbls != nil {
			lbls[w] = lbls[r]
		}
		w++
	}
	l.n, l.app = uint32(w), uint32(w)
}
