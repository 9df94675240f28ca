package incremental

import (
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// A walk places a vertex only to find, levels later, that it has no
// neighbour of the label a later query vertex needs: on a path query of
// eight labelled vertices most partial matches end so. The neighbour label
// filter (NLF, as in the static matchers' candidate filtering) drops such
// a vertex where it is placed: per data vertex, a mask of the labels of
// its neighbours (bit l%64 for label l, both lists), and per level of a
// counting plan the mask of the labels its later query neighbours need.
//
// The masks grow with every batch's insertions and are never cleared by a
// deletion: a bit may stand for a neighbour gone, never the other way
// round, so the filter drops no vertex that a view, old or new, could
// place. A matcher that missed a batch builds them again from the lists.
type neighbourLabels struct {
	g     *dyngraph.Graph
	epoch uint64 // the graph's Epoch when last brought up to date
	mask  []uint64
}

func labelBit(l graph.Label) uint64 { return 1 << (l & 63) }

// update brings the masks up to g's pending batch, whose changes are its
// Delta.
func (n *neighbourLabels) update(g *dyngraph.Graph) []uint64 {
	nv := g.NumVertices()
	if n.g != g || g.Epoch() > n.epoch+1 || g.Epoch() < n.epoch {
		n.rebuild(g)
		return n.mask
	}
	if g.Epoch() == n.epoch {
		return n.mask
	}
	for len(n.mask) < nv {
		n.mask = append(n.mask, 0)
	}
	vl := g.VertexLabels()
	for _, ch := range g.Delta() {
		if ch.Sign > 0 {
			n.mask[ch.Src] |= labelBit(vl[ch.Dst])
			n.mask[ch.Dst] |= labelBit(vl[ch.Src])
		}
	}
	n.epoch = g.Epoch()
	return n.mask
}

// rebuild computes the masks from g's lists, the pending batch's entries
// and tombstones included.
func (n *neighbourLabels) rebuild(g *dyngraph.Graph) {
	nv := g.NumVertices()
	n.g, n.epoch = g, g.Epoch()
	n.mask = zeroed(n.mask, nv)
	vl := g.VertexLabels()
	for v := range nv {
		m := uint64(0)
		lists := []dyngraph.Adj{g.Out(graph.VertexID(v))}
		if g.Directed() {
			lists = append(lists, g.In(graph.VertexID(v)))
		}
		for _, a := range lists {
			for _, e := range a.Sorted {
				m |= labelBit(vl[e&dyngraph.IDMask])
			}
			for _, u := range a.Appended {
				m |= labelBit(vl[u])
			}
		}
		n.mask[v] = m
	}
}

// needs is, per level of p, the mask of the labels of the query vertex's
// neighbours placed at later levels; wildcards need nothing.
func needs(q *query.Query, p *query.Plan) []uint64 {
	depth := make([]int, q.N())
	for d, lv := range p.Levels {
		depth[lv.Vertex] = d
	}
	need := make([]uint64, len(p.Levels))
	for _, e := range q.Edges {
		a, b := depth[e.A], depth[e.B]
		if a > b {
			a, b = b, a
		}
		if l := q.Labels[p.Levels[b].Vertex]; l != graph.Wildcard {
			need[a] |= labelBit(l)
		}
	}
	return need
}
