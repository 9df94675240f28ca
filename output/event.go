package output

import (
	"strconv"

	"github.com/gcsm/gcsm/internal/jsonstr"
)

// The values of Event.Change.
const (
	Appeared    = "appeared"
	Disappeared = "disappeared"
)

// Source is the input range of a batch on one partition.
type Source struct {
	Topic      string `json:"topic"`
	Partition  int    `json:"partition"`
	FromOffset int64  `json:"from_offset"`
	ToOffset   int64  `json:"to_offset"`
}

// Binding is one query vertex's name and the external id of the data vertex it matched.
type Binding struct{ Var, ID string }

// Transfer is the edge a query edge's variable bound, for queries over
// parallel transfers (package bundle): the variable, the transfer's id ("" for
// an edge sent without one) and its event time ("" when unknown).
type Transfer struct {
	Var  string `json:"var"`
	ID   string `json:"id"`
	Time string `json:"ts,omitempty"`
}

// Field is one item of a query's RETURN: its name and its value, already
// JSON (a number, a string, true, false or null).
type Field struct {
	Name  string
	Value []byte
}

// Event is one match delta, as docs/operations.md ("Kafka") describes it.
type Event struct {
	Query  string
	Change string      // Appeared or Disappeared
	Match  []Binding   // in query-vertex order; marshalled as a JSON object in this order
	Edges  [][3]string // [src id, dst id, edge label] per query edge, in query-edge order; see EdgeEnds
	// EdgeEnds and EdgeLabels give the edges without copying ids, where
	// Edges is nil: per query edge, the indexes in Match of its two ends,
	// and its label. One query's events share both slices; a 24-vertex
	// pattern's 60 edges made of strings cost more to build than the rest
	// of the event.
	EdgeEnds   [][2]int
	EdgeLabels []string
	Transfers  []Transfer // per binding of a query over transfers; nil omits the field
	// Return is the query's RETURN row, in item order; nil omits the
	// field. A disappeared match carries the row it had.
	Return    []Field
	Batch     uint64
	EventTime string  // RFC 3339 (UTC, millisecond precision), "" omits the field
	Source    *Source // nil omits the field (e.g. deletions made by window expiry)
	Initial   bool    // part of a new query's initial snapshot; false omits the field
	Key       string
}

// appendEdge appends the i-th edge of "edges".
func appendEdge(dst []byte, i int, from, to, label string) []byte {
	if i > 0 {
		dst = append(dst, ',')
	}
	dst = append(dst, '[')
	dst = jsonstr.Append(dst, from)
	dst = append(dst, ',')
	dst = jsonstr.Append(dst, to)
	dst = append(dst, ',')
	dst = jsonstr.Append(dst, label)
	return append(dst, ']')
}

// MarshalJSON encodes e with AppendJSON, so that encoding/json (the HTTP API, tests) writes the same
// object as the sinks do rather than one keyed by Go field names.
func (e Event) MarshalJSON() ([]byte, error) {
	return AppendJSON(nil, &e), nil
}

// AppendJSON appends e as one JSON object, without a newline, to dst and returns the extended buffer. The
// keys come in the order "query", "change", "match", "edges", "transfers", "return", "batch", "event_time",
// "source", "initial", "key"; "transfers", "return", "event_time", "source" and "initial" are left out when
// empty. Match is an object whose members keep
// the order of e.Match. Strings are escaped as encoding/json escapes them with SetEscapeHTML(false): invalid
// UTF-8 becomes U+FFFD, so the output is always valid JSON.
//
// It allocates nothing when dst has room: encoding/json would cost a reflection walk and a map per match
// for the same bytes.
func AppendJSON(dst []byte, e *Event) []byte {
	dst = append(dst, `{"query":`...)
	dst = jsonstr.Append(dst, e.Query)
	dst = append(dst, `,"change":`...)
	dst = jsonstr.Append(dst, e.Change)
	dst = append(dst, `,"match":{`...)
	for i := range e.Match {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, e.Match[i].Var)
		dst = append(dst, ':')
		dst = jsonstr.Append(dst, e.Match[i].ID)
	}
	dst = append(dst, `},"edges":[`...)
	for i := range e.Edges {
		edge := &e.Edges[i]
		dst = appendEdge(dst, i, edge[0], edge[1], edge[2])
	}
	if e.Edges == nil {
		for i, ends := range e.EdgeEnds {
			dst = appendEdge(dst, i, e.Match[ends[0]].ID, e.Match[ends[1]].ID, e.EdgeLabels[i])
		}
	}
	dst = append(dst, ']')
	if len(e.Transfers) > 0 {
		dst = append(dst, `,"transfers":[`...)
		for i := range e.Transfers {
			t := &e.Transfers[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"var":`...)
			dst = jsonstr.Append(dst, t.Var)
			dst = append(dst, `,"id":`...)
			dst = jsonstr.Append(dst, t.ID)
			if t.Time != "" {
				dst = append(dst, `,"ts":`...)
				dst = jsonstr.Append(dst, t.Time)
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if e.Return != nil {
		dst = append(dst, `,"return":{`...)
		for i := range e.Return {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonstr.Append(dst, e.Return[i].Name)
			dst = append(dst, ':')
			dst = append(dst, e.Return[i].Value...)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `,"batch":`...)
	dst = strconv.AppendUint(dst, e.Batch, 10)
	if e.EventTime != "" {
		dst = append(dst, `,"event_time":`...)
		dst = jsonstr.Append(dst, e.EventTime)
	}
	if s := e.Source; s != nil {
		dst = append(dst, `,"source":{"topic":`...)
		dst = jsonstr.Append(dst, s.Topic)
		dst = append(dst, `,"partition":`...)
		dst = strconv.AppendInt(dst, int64(s.Partition), 10)
		dst = append(dst, `,"from_offset":`...)
		dst = strconv.AppendInt(dst, s.FromOffset, 10)
		dst = append(dst, `,"to_offset":`...)
		dst = strconv.AppendInt(dst, s.ToOffset, 10)
		dst = append(dst, '}')
	}
	if e.Initial {
		dst = append(dst, `,"initial":true`...)
	}
	dst = append(dst, `,"key":`...)
	dst = jsonstr.Append(dst, e.Key)
	return append(dst, '}')
}
