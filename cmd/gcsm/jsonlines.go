package main

import (
	"encoding/json"

	"github.com/gcsm/gcsm/graph"
)

// emitJSON is a match as --emit --json writes it: one JSON line.
type emitJSON struct {
	Sign  string   `json:"sign,omitempty"` // "+" or "-" in replay; none in match
	Query string   `json:"query"`
	Match []string `json:"match"` // external vertex ids, in query vertex order
}

// matchJSON formats one match for --emit --json, the JSON form of
// matchLine.
func (s *session) matchJSON(sign, query string, m []graph.VertexID) string {
	e := emitJSON{Sign: sign, Query: query, Match: make([]string, len(m))}
	for i, v := range m {
		e.Match[i] = s.ids.Name(v)
	}
	b, err := json.Marshal(e)
	if err != nil {
		panic("BUG: a match does not marshal: " + err.Error())
	}
	return string(b) + "\n"
}
