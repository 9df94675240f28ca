package query

import "github.com/gcsm/gcsm/graph"

// View is a state of the graph that a term checks a query edge in
// (docs/architecture.md, "The delta rules"): the delta rules give each query edge of a term one view.
// The values are part of the GPU kernel's program format.
type View uint8

const (
	ViewOld    View = iota // before the batch
	ViewNew                // after the batch
	ViewStable             // in both
)

// TermView returns the view in which query edge j is checked by the term of
// update edge i for an update of the given sign.
func TermView(j, i int, sign graph.Sign) View {
	if sign > 0 {
		if j < i {
			return ViewStable
		}
		return ViewNew
	}
	if j < i {
		return ViewOld
	}
	return ViewStable
}

// Holds applies the view to a probe's result: whether the edge is present
// before the batch and after it. Stable means present in both, which for a
// wildcard edge on a multi-label graph is "some edge before and some edge
// after", not "one edge that stayed": the delta rules need the predicate of
// the query edge, not the identity of the data edge.
//
// A query edge that one data edge stands for (a concrete label, or any label
// on a single-label graph, and one direction) is stable only where that edge
// is kept, which Holds cannot tell from inOld and inNew when the batch
// renewed the edge: see HoldsEntry.
func (v View) Holds(inOld, inNew bool) bool {
	switch v {
	case ViewOld:
		return inOld
	case ViewNew:
		return inNew
	}
	return inOld && inNew
}

// HoldsEntry is Holds for a query edge that one data edge stands for: kept
// says the probe found that edge untouched by the batch (dyngraph's Probe).
func (v View) HoldsEntry(inOld, inNew, kept bool) bool {
	if v == ViewStable {
		return kept
	}
	return v.Holds(inOld, inNew)
}
