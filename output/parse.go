package output

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// UnmarshalJSON decodes the object that AppendJSON writes, for consumers of the output topic such as gcsm
// tail. "query", "change", "match" and "key" are required, and "match" must keep its members' order, which
// a Go map would lose; members that this version does not know are ignored, so that an older reader can
// read a newer writer's events. An empty "edges" or "transfers" decodes as nil, so that decoding what AppendJSON wrote
// gives back an equal Event.
func (e *Event) UnmarshalJSON(data []byte) error {
	var w struct {
		Query     *string         `json:"query"`
		Change    *string         `json:"change"`
		Match     json.RawMessage `json:"match"`
		Edges     [][3]string     `json:"edges"`
		Transfers []Transfer      `json:"transfers"`
		Return    json.RawMessage `json:"return"`
		Batch     uint64          `json:"batch"`
		EventTime string          `json:"event_time"`
		Source    *Source         `json:"source"`
		Initial   bool            `json:"initial"`
		Key       *string         `json:"key"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	switch {
	case w.Query == nil || *w.Query == "":
		return errors.New(`no "query"`)
	case w.Change == nil || *w.Change != Appeared && *w.Change != Disappeared:
		return fmt.Errorf(`"change" must be %q or %q`, Appeared, Disappeared)
	case w.Key == nil || *w.Key == "":
		return errors.New(`no "key"`)
	}
	match, err := parseMatch(w.Match)
	if err != nil {
		return fmt.Errorf(`"match": %w`, err)
	}
	ret, err := parseReturn(w.Return)
	if err != nil {
		return fmt.Errorf(`"return": %w`, err)
	}
	if len(w.Edges) == 0 {
		w.Edges = nil
	}
	if len(w.Transfers) == 0 {
		w.Transfers = nil
	}
	*e = Event{
		Query: *w.Query, Change: *w.Change, Match: match, Edges: w.Edges, Transfers: w.Transfers, Return: ret, Batch: w.Batch,
		EventTime: w.EventTime, Source: w.Source, Initial: w.Initial, Key: *w.Key,
	}
	return nil
}

// parseMatch decodes a non-empty JSON object of strings into bindings, in member order. A variable given
// twice is an error: the query binds each variable once.
func parseMatch(data json.RawMessage) ([]Binding, error) {
	if len(data) == 0 || string(data) == "null" {
		return nil, errors.New("missing")
	}
	d := json.NewDecoder(bytes.NewReader(data))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var m []Binding
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, err
		}
		v, err := d.Token()
		if err != nil {
			return nil, err
		}
		id, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("the id of %q is not a string", k)
		}
		for _, b := range m {
			if b.Var == k {
				return nil, fmt.Errorf("variable %q twice", k)
			}
		}
		m = append(m, Binding{Var: k.(string), ID: id})
	}
	if len(m) == 0 {
		return nil, errors.New("no bindings")
	}
	// The closing brace; json.Unmarshal has already checked that nothing follows.
	if _, err := d.Token(); err != nil {
		return nil, err
	}
	return m, nil
}

// parseReturn decodes a RETURN row, a JSON object of values, into fields in
// member order (a Go map would lose it); absent or null is no row.
func parseReturn(data json.RawMessage) ([]Field, error) {
	if len(data) == 0 || string(data) == "null" {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(data))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	out := []Field{}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			return nil, fmt.Errorf("%v: %w", k, err)
		}
		out = append(out, Field{Name: k.(string), Value: v})
	}
	return out, nil
}
