package dyngraph

import "github.com/gcsm/gcsm/graph"

// Probe reports whether list a holds neighbour w, with an edge label that
// label accepts (graph.Wildcard accepts any), before the pending batch
// (inOld) and after it (inNew), and whether such an entry is kept: in the
// list before and after the batch, untouched. An entry can be in the list
// before and after without being kept when the batch renewed it (deleted
// and inserted again, dyngraph.Folder): the old and the new edge differ. With no label array (a single-label graph)
// the label is not checked here: the caller checks it once for the whole
// graph.
//
// Entries of one neighbour are adjacent (lists are sorted by id, then label),
// so a multi-label run is scanned after one binary search.
func (o Order) Probe(a *Adj, w uint32, label graph.Label) (inOld, inNew, kept bool) {
	s := a.Sorted
	if len(s) > 0 {
		i, _ := o.Search(s, w)
		for ; i < len(s) && s[i]&IDMask == w; i++ {
			if a.SortedLabels != nil && label != graph.Wildcard && a.SortedLabels[i] != label {
				continue
			}
			inOld = true
			if s[i]&Tombstone == 0 {
				inNew, kept = true, true
			}
		}
	}
	if !inNew && len(a.Appended) > 0 {
		ap := a.Appended
		j, _ := o.Search(ap, w)
		for ; j < len(ap) && ap[j] == w; j++ {
			if a.AppendedLabels == nil || label == graph.Wildcard || a.AppendedLabels[j] == label {
				inNew = true
				break
			}
		}
	}
	return inOld, inNew, kept
}

// StandsForFlip decides, for a query edge whose truth between x and y can
// rest on several data edges (a wildcard label on a multi-label graph, or,
// with bothWays, an undirected query edge on a directed graph), whether
// change ch is the one that the delta rules count. The query edge must hold
// after the batch and not before (insertion) or before and not after
// (deletion), and of the changed entries that make it flip only the first,
// in the order out-list then in-list and by label, stands for the flip;
// otherwise parallel changes would find the same match several times.
func (g *Graph) StandsForFlip(ch *graph.Change, x, y graph.VertexID, label graph.Label, bothWays bool) bool {
	o := g.Order()
	lists := [2]Adj{g.Out(x)}
	n := 1
	if bothWays {
		lists[1], n = g.In(x), 2
	}
	var inOld, inNew bool
	for k := 0; k < n; k++ {
		old, nw, _ := o.Probe(&lists[k], y, label)
		inOld, inNew = inOld || old, inNew || nw
	}
	if (ch.Sign > 0 && inOld) || (ch.Sign < 0 && inNew) {
		return false
	}
	// This change's entry: in x's out-list when x is its source (always on
	// undirected graphs), else in x's in-list.
	mine := 0
	if g.opts.Directed && ch.Src != x {
		mine = 1
	}
	for k := 0; k < n; k++ {
		a := &lists[k]
		if ch.Sign > 0 {
			i, _ := o.Search(a.Appended, y)
			for ; i < len(a.Appended) && a.Appended[i] == y; i++ {
				l := LabelAt(a.AppendedLabels, i, ch.Label)
				if label == graph.Wildcard || l == label {
					return k == mine && l == ch.Label
				}
			}
		} else {
			i, _ := o.Search(a.Sorted, y)
			for ; i < len(a.Sorted) && a.Sorted[i]&IDMask == y; i++ {
				if a.Sorted[i]&Tombstone == 0 {
					continue
				}
				l := LabelAt(a.SortedLabels, i, ch.Label)
				if label == graph.Wildcard || l == label {
					return k == mine && l == ch.Label
				}
			}
		}
	}
	panic("BUG: dyngraph: a changed edge is missing from its list")
}

// LabelAt is the edge label of entry i of a list part whose label array is
// lbls: lbls[i], or single on a single-label graph, which keeps no array.
func LabelAt(lbls []graph.Label, i int, single graph.Label) graph.Label {
	if lbls == nil {
		return single
	}
	return lbls[i]
}
