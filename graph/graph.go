// Package graph is gcsm's vocabulary: vertex ids, labels, edges, updates and
// the dictionaries that map the outside world's names onto dense integers.
//
// Every other package speaks in these types. graph imports nothing of ours,
// so that parsers, the engine, the GPU executor and the service can all agree
// on what an update or a label is without depending on one another.
package graph

import (
	"fmt"
	"math"
)

// VertexID is a dense internal vertex id. Ids are assigned in order of first
// appearance, so a graph of n vertices uses ids 0..n-1.
type VertexID = uint32

// Label is an interned vertex or edge label. Labels are small integers handed
// out by a Dict.
type Label = uint32

// Wildcard is the label of a query vertex or query edge that matches any
// data label. It is never a data label.
const Wildcard Label = math.MaxUint32

// NoLabel marks an update whose vertex label was not given; the graph then
// uses the label the vertex already has, or its default for a new vertex.
const NoLabel Label = math.MaxUint32 - 1

// MaxVertices is the number of distinct internal vertex ids. The top bit of a
// neighbour entry is reserved for dyngraph's tombstone, so ids stay below 2^31.
const MaxVertices = 1 << 31

// Op is the kind of an update.
type Op uint8

const (
	// Insert adds the edge (Src, Dst, Label), or refreshes it when present.
	Insert Op = iota + 1
	// Delete removes the edge (Src, Dst, Label); deleting an absent edge is a no-op.
	Delete
	// AddVertex introduces vertex Src with label SrcLabel; Dst and Label are unused.
	AddVertex
	// SetVertex sets properties of vertex Src, which must exist: Tx.SrcProps
	// are the new values (Null removes one). Dst and Label are unused.
	SetVertex
	// SetEdge sets properties of the transfer whose id is Tx.ID, which must
	// be present: Tx.Props are the new values (Null removes one). Src, Dst
	// and Label are unused; the transfer keeps its endpoints.
	SetEdge
)

func (o Op) String() string {
	switch o {
	case Insert:
		return "insert"
	case Delete:
		return "delete"
	case AddVertex:
		return "vertex"
	case SetVertex:
		return "set vertex"
	case SetEdge:
		return "set edge"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Update is one event of a stream, in internal ids. SrcLabel and DstLabel
// are NoLabel when the event did not name a vertex label.
type Update struct {
	Op       Op
	Src, Dst VertexID
	Label    Label // edge label
	SrcLabel Label
	DstLabel Label
	// Tx is the event's id, time and properties, for deployments whose
	// queries read them (package bundle); nil otherwise.
	Tx *Transfer
}

// Edge is a data edge. On undirected graphs (Src, Dst) is unordered.
type Edge struct {
	Src, Dst VertexID
	Label    Label
}

// Sign says whether a change or a match delta is an appearance or a disappearance.
type Sign int8

const (
	// Positive marks an inserted edge or a match that appeared.
	Positive Sign = 1
	// Negative marks a deleted edge or a match that disappeared.
	Negative Sign = -1
)

func (s Sign) String() string {
	if s < 0 {
		return "-"
	}
	return "+"
}

// Change is one edge of a normalised batch, ΔE: every data edge occurs at
// most once, inserted (absent before, present after) or deleted.
type Change struct {
	Edge
	Sign Sign
}
