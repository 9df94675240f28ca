package replay

import (
	"encoding/json"
	"strings"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
)

// EmitJSON is a match as --emit --json writes it: one JSON line.
type EmitJSON struct {
	Sign  string   `json:"sign,omitempty"` // "+" or "-" in replay; none in match
	Query string   `json:"query"`
	Match []string `json:"match"` // external vertex ids, in query vertex order
	// Transfers are the ids of the transfers a match over transfers binds,
	// in the order of the query's edge variables; "" for one sent without.
	Transfers []string `json:"transfers,omitempty"`
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

// matchJSONTx is matchJSON for a match over transfers.
func (s *Session) matchJSONTx(sign, query string, m []graph.VertexID, tx []bundle.Tx) string {
	e := EmitJSON{Sign: sign, Query: query, Match: make([]string, len(m)), Transfers: make([]string, len(tx))}
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
// follow in brackets.
func (s *Session) matchLineTx(prefix, query string, m []graph.VertexID, tx []bundle.Tx) string {
	line := s.matchLine(prefix, query, m)
	return line[:len(line)-1] + " " + s.transfersText(tx) + "\n"
}
