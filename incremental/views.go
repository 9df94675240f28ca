package incremental

import (
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
)

// View is a state of the graph that a constraint is checked in (DESIGN.md
// §3). The values are part of the GPU kernel's program format.
type View uint8

const (
	viewOld    View = iota // before the batch
	viewNew                // after the batch
	viewStable             // in both
)

// TermView returns the view in which query edge j is checked by the term of
// update edge i for an update of the given sign.
func TermView(j, i int, sign graph.Sign) View {
	if sign > 0 {
		if j < i {
			return viewStable
		}
		return viewNew
	}
	if j < i {
		return viewOld
	}
	return viewStable
}

// probe reports whether list a holds neighbour w, with an edge label that
// the filter accepts, before the batch (inOld) and after it (inNew). With no
// label array (a single-label graph) the label filter has been checked by
// the caller once for the whole batch.
//
// Entries of one neighbour are adjacent (lists are sorted by id, then label),
// so a multi-label run is scanned after one binary search.
func probe(o dyngraph.Order, a *dyngraph.Adj, w uint32, label graph.Label) (inOld, inNew bool) {
	s := a.Sorted
	if len(s) > 0 {
		i, _ := o.Search(s, w)
		for ; i < len(s) && s[i]&dyngraph.IDMask == w; i++ {
			if a.SortedLabels != nil && label != graph.Wildcard && a.SortedLabels[i] != label {
				continue
			}
			inOld = true
			if s[i]&dyngraph.Tombstone == 0 {
				inNew = true
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
	return inOld, inNew
}

// holds applies a view to a probe's result. Stable means present in both,
// which for a wildcard edge on a multi-label graph is "some edge before and
// some edge after", not "one edge that stayed": the delta rules need the
// predicate of the query edge, not the identity of the data edge.
func holds(v View, inOld, inNew bool) bool {
	switch v {
	case viewOld:
		return inOld
	case viewNew:
		return inNew
	}
	return inOld && inNew
}

// viewSize is the number of entries of a in view v on a single-label graph.
func viewSize(a *dyngraph.Adj, v View) int {
	switch v {
	case viewOld:
		return len(a.Sorted)
	case viewNew:
		return len(a.Sorted) - a.Tombstones + len(a.Appended)
	}
	return len(a.Sorted) - a.Tombstones
}
