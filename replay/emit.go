package replay

import (
	"encoding/json"
	"strings"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/query"
)

// EmitJSON is a match as --emit --json writes it: one JSON line.
type EmitJSON struct {
	Sign  string   `json:"sign,omitempty"` // "+" or "-" in replay; none in match
	Query string   `json:"query"`
	Match []string `json:"match"` // external vertex ids, in query vertex order
	// Transfers are the ids of the transfers a match over transfers binds,
	// in the order of the query's edge variables; "" for one sent without.
	Transfers []string `json:"transfers,omitempty"`
	// Return is the query's RETURN row as an object, its items in order.
	Return json.RawMessage `json:"return,omitempty"`
}

// matchJSON formats one match for --emit --json, the JSON form of
// matchLine.
func (s *Session) matchJSON(sign, query string, m []graph.VertexID) string {
	e := EmitJSON{Sign: sign, Query: query, Match: make([]string, len(m))}
	for i, v := range m {
		e.Match[i] = s.ids.Name(v)
	}
	b, err := json.Marshal(e)
	if err != nil {
		panic("BUG: a match does not marshal: " + err.Error())
	}
	return string(b) + "\n"
}

// matchJSONTx is matchJSON for a match over transfers, with its RETURN
// row, ret (nil without one).
func (s *Session) matchJSONTx(sign, query string, m []graph.VertexID, tx []bundle.Tx, ret []byte) string {
	e := EmitJSON{Sign: sign, Query: query, Match: make([]string, len(m)), Transfers: make([]string, len(tx)), Return: ret}
	for i, v := range m {
		e.Match[i] = s.ids.Name(v)
	}
	for i, t := range tx {
		if t != incremental.NoTransfer {
			e.Transfers[i] = s.core.Store().ID(t)
		}
	}
	b, err := json.Marshal(e)
	if err != nil {
		panic("BUG: a match does not marshal: " + err.Error())
	}
	return string(b) + "\n"
}

// matchLine formats one match for --emit: an optional prefix (the sign),
// the query name, then the external id of each query vertex's data vertex.
func (s *Session) matchLine(prefix, query string, m []graph.VertexID) string {
	var b strings.Builder
	if prefix != "" {
		b.WriteString(prefix)
		b.WriteByte(' ')
	}
	b.WriteString(query)
	for _, v := range m {
		b.WriteByte(' ')
		b.WriteString(s.ids.Name(v))
	}
	b.WriteByte('\n')
	return b.String()
}

// matchLineTx is matchLine for a match over transfers: the transfer ids
// follow in brackets, then its RETURN row, ret, if it has one.
func (s *Session) matchLineTx(prefix, query string, m []graph.VertexID, tx []bundle.Tx, ret []byte) string {
	line := s.matchLine(prefix, query, m)
	line = line[:len(line)-1] + " " + s.transfersText(tx)
	if ret != nil {
		line += " " + string(ret)
	}
	return line + "\n"
}

// returnJSON is the RETURN row of a match that b reported for q, the
// qi-th query of its call, as a JSON object; nil when q has no RETURN.
func (s *Session) returnJSON(b *incremental.Binder, qi int, q *query.Query, sign graph.Sign, m []graph.VertexID, tx []bundle.Tx) []byte {
	if q.Return == nil {
		return nil
	}
	row := b.Returns(qi, sign, m, tx, nil)
	out := []byte{'{'}
	for i, it := range q.Return.Items {
		if i > 0 {
			out = append(out, ',')
		}
		out = query.AppendJSONValue(out, graph.StringValue(it.Name))
		out = append(out, ':')
		if it.Vertex >= 0 {
			out = query.AppendJSONValue(out, graph.StringValue(s.ids.Name(m[it.Vertex])))
		} else {
			out = query.AppendJSONValue(out, row[i])
		}
	}
	return append(out, '}')
}
