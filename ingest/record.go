package ingest

import (
	"fmt"
	"strings"

	"github.com/gcsm/gcsm/graph"
)

// Record is one event as read, before ids and labels are interned. Empty
// label strings mean "not given".
//
// Readers do not reject self-loops (Src == Dst): whether they are an error is
// the consumer's policy, and Resolve applies gcsm's.
type Record struct {
	Op graph.Op
	// For AddVertex and SetVertex, Src is the vertex and Dst is empty; a
	// SetEdge names its transfer by ID alone, with Src and Dst empty.
	Src, Dst string
	Label    string // edge label
	SrcLabel string // for AddVertex, the vertex's label
	DstLabel string
	// ID names an edge event's own edge, one of the parallel edges of its
	// endpoints; empty if the event gives none. Vertex events have none.
	ID   string
	Time int64 // unix milliseconds; 0 if the input has no time
	Line int   // 1-based line in the source
	// Props are the edge's properties and SrcProps and DstProps its
	// endpoints' (for AddVertex and SetVertex, SrcProps are the vertex's;
	// for SetEdge, Props are the transfer's), in the order given: those
	// that the reader's PropFilter keeps, each named once and none Null but
	// in a set, where Null removes the property. They are nil when there
	// are none.
	Props, SrcProps, DstProps []graph.Prop
}

// Resolver interns the strings of Records into a graph's dictionaries. IDs and
// Labels must be set. A Resolver is not safe for concurrent use, as its IDs
// are not.
type Resolver struct {
	IDs    *graph.IDs
	Labels *graph.Dict
	// DefaultEdgeLabel is the label name of edges read without one. CSM files
	// label their edges "0", so "0" lets SNAP edges match CSM queries.
	DefaultEdgeLabel string
	// KeepTime gives every edge update a Tx with the record's Time, for
	// queries that read an edge's ts. Without it, an update has a Tx only
	// when its record has an ID or properties.
	KeepTime bool

	// recent are the last labels interned: a stream names a few labels
	// over and over, and the dictionary takes a lock per lookup.
	recent [4]recentLabel
	next   int
	// known are the labels that labelBytes met, looked up by bytes without
	// making a string (the human graph's vertices carry 44 labels, more
	// than recent holds): known[name] is the index in knownLabels.
	known       map[string]int
	knownLabels []recentLabel
}

type recentLabel struct {
	name  string
	label graph.Label
	set   bool
}

// Known are a record's endpoint ids looked up beforehand (graph.IDs.Lookup,
// which may run on many goroutines while nothing interns): ID[i] is valid
// where OK[i] is, for Src (0) and Dst (1).
type Known struct {
	ID [2]graph.VertexID
	OK [2]bool
}

// Resolve turns rec into an Update. Edge updates must name both endpoints
// and must not be self-loops (the error then wraps ErrSelfLoop); a vertex
// update must name the vertex and its label. A vertex set must name a
// vertex the dictionary knows (else the error wraps graph.ErrUnknownVertex):
// a set changes a vertex and never makes one, so a mistyped id is refused
// instead of becoming a vertex without edges. An edge set must name its
// transfer, whose presence is the graph's to judge. Errors are *LineError
// with the record's Line and no File, which the caller knows and may fill
// in.
//
// The update's Tx holds the record's ID, Time and properties when it has an
// ID or properties (a vertex record: properties), or, for an edge, when
// KeepTime is set, and always for a set; it is nil otherwise. Tx shares
// rec's strings and property lists.
//
// Resolve checks rec before interning anything, so a record refused for what
// it says adds no vertex or label.
func (r *Resolver) Resolve(rec Record) (graph.Update, error) {
	return r.ResolveKnown(rec, Known{})
}

// ResolveKnown is Resolve for a record whose endpoints may have been looked
// up already: those are not looked up again. The ids must still be the
// names' (nothing released them since).
func (r *Resolver) ResolveKnown(rec Record, k Known) (graph.Update, error) {
	switch rec.Op {
	case graph.AddVertex:
		if rec.Src == "" || rec.SrcLabel == "" {
			return graph.Update{}, recordError(rec, nil, "vertex record needs an id and a label")
		}
		id, err := r.vertex(rec, rec.Src, k, 0)
		if err != nil {
			return graph.Update{}, err
		}
		u := graph.Update{Op: rec.Op, Src: id, SrcLabel: r.label(rec.SrcLabel), DstLabel: graph.NoLabel}
		if len(rec.SrcProps) > 0 {
			u.Tx = &graph.Transfer{Time: rec.Time, SrcProps: rec.SrcProps}
		}
		return u, nil
	case graph.SetVertex:
		if rec.Src == "" {
			return graph.Update{}, recordError(rec, nil, "set record needs a vertex")
		}
		id, ok := k.ID[0], k.OK[0]
		if !ok {
			// Not known before the batch, but an earlier record of it
			// may have interned the name since.
			id, ok = r.IDs.Lookup(rec.Src)
		}
		if !ok {
			return graph.Update{}, recordError(rec, graph.ErrUnknownVertex, "set on unknown vertex %q", rec.Src)
		}
		return graph.Update{Op: rec.Op, Src: id, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel,
			Tx: &graph.Transfer{Time: rec.Time, SrcProps: rec.SrcProps}}, nil
	case graph.SetEdge:
		if rec.ID == "" {
			return graph.Update{}, recordError(rec, nil, "set record needs a transfer id")
		}
		return graph.Update{Op: rec.Op, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel,
			Tx: &graph.Transfer{ID: rec.ID, Time: rec.Time, Props: rec.Props}}, nil
	case graph.Insert, graph.Delete:
		if rec.Src == "" || rec.Dst == "" {
			return graph.Update{}, recordError(rec, nil, "edge record needs both endpoints")
		}
		// graph.IDs maps distinct spellings to distinct vertices, so comparing
		// the strings finds every self-loop before anything is interned.
		if rec.Src == rec.Dst {
			return graph.Update{}, recordError(rec, ErrSelfLoop, "self-loop on vertex %q", rec.Src)
		}
		src, err := r.vertex(rec, rec.Src, k, 0)
		if err != nil {
			return graph.Update{}, err
		}
		dst, err := r.vertex(rec, rec.Dst, k, 1)
		if err != nil {
			return graph.Update{}, err
		}
		label := rec.Label
		if label == "" {
			label = r.DefaultEdgeLabel
		}
		return graph.Update{
			Op:       rec.Op,
			Src:      src,
			Dst:      dst,
			Label:    r.label(label),
			SrcLabel: r.vertexLabel(rec.SrcLabel),
			DstLabel: r.vertexLabel(rec.DstLabel),
			Tx:       r.transfer(rec),
		}, nil
	}
	return graph.Update{}, recordError(rec, nil, "unknown op %v", rec.Op)
}

// transfer returns the Tx of an edge record, nil when it needs none.
func (r *Resolver) transfer(rec Record) *graph.Transfer {
	if rec.ID == "" && len(rec.Props) == 0 && len(rec.SrcProps) == 0 && len(rec.DstProps) == 0 && !r.KeepTime {
		return nil
	}
	return &graph.Transfer{ID: rec.ID, Time: rec.Time, Props: rec.Props, SrcProps: rec.SrcProps, DstProps: rec.DstProps}
}

func (r *Resolver) vertex(rec Record, name string, k Known, i int) (graph.VertexID, error) {
	if k.OK[i] {
		return k.ID[i], nil
	}
	id, _, err := r.IDs.Intern(name)
	if err != nil {
		return 0, recordError(rec, err, "%v", err)
	}
	return id, nil
}

func (r *Resolver) vertexLabel(name string) graph.Label {
	if name == "" {
		return graph.NoLabel
	}
	return r.label(name)
}

// label interns a label name, from the recent ones when it is one of them.
func (r *Resolver) label(name string) graph.Label {
	for i := range r.recent {
		if c := &r.recent[i]; c.set && c.name == name {
			return c.label
		}
	}
	l := r.Labels.Intern(name)
	r.recent[r.next] = recentLabel{name: strings.Clone(name), label: l, set: true}
	r.next = (r.next + 1) % len(r.recent)
	return l
}

// labelBytes is label of a name that is still bytes of a line: only a
// label it has not met before becomes a string.
func (r *Resolver) labelBytes(name []byte) graph.Label {
	for i := range r.recent {
		if c := &r.recent[i]; c.set && c.name == string(name) {
			return c.label
		}
	}
	if k, ok := r.known[string(name)]; ok {
		r.recent[r.next] = r.knownLabels[k]
		r.next = (r.next + 1) % len(r.recent)
		return r.knownLabels[k].label
	}
	s := string(name)
	l := r.label(s)
	if r.known == nil {
		r.known = make(map[string]int)
	}
	r.known[s] = len(r.knownLabels)
	r.knownLabels = append(r.knownLabels, recentLabel{name: s, label: l, set: true})
	return l
}

func recordError(rec Record, class error, format string, args ...any) *LineError {
	return &LineError{Line: rec.Line, Reason: fmt.Sprintf(format, args...), Err: class}
}
