package ingest

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gcsm/gcsm/graph"
)

// jsonLine receives one line of FormatJSON. Every field stays raw so that the
// reader, not encoding/json, says what is wrong with a value. RawMessage
// appends into its slice, so one jsonLine reused from line to line reuses
// their memory too.
type jsonLine struct {
	Op       json.RawMessage `json:"op"`
	ID       json.RawMessage `json:"id"`
	Src      json.RawMessage `json:"src"`
	Dst      json.RawMessage `json:"dst"`
	Label    json.RawMessage `json:"label"`
	SrcLabel json.RawMessage `json:"src_label"`
	DstLabel json.RawMessage `json:"dst_label"`
	TS       json.RawMessage `json:"ts"`
}

// reset empties the fields, keeping their memory: Unmarshal leaves the
// fields of absent keys alone.
func (j *jsonLine) reset() {
	j.Op, j.ID, j.Src, j.Dst = j.Op[:0], j.ID[:0], j.Src[:0], j.Dst[:0]
	j.Label, j.SrcLabel, j.DstLabel, j.TS = j.Label[:0], j.SrcLabel[:0], j.DstLabel[:0], j.TS[:0]
}

// absent reports whether a field was left out or set to null.
func absent(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// parseJSON reads a line of FormatJSON.
func (r *Reader) parseJSON(line []byte) (Record, bool, *LineError) {
	if line[0] != '{' {
		return Record{}, false, r.errorf("expected a JSON object, got %s", quote(line))
	}
	j := &r.js
	j.reset()
	if err := json.Unmarshal(line, j); err != nil {
		return Record{}, false, r.errorf("invalid JSON: %v", err)
	}
	rec := Record{Line: r.line}
	switch string(j.Op) {
	case `"+"`, `"insert"`:
		rec.Op = graph.Insert
	case `"-"`, `"delete"`:
		rec.Op = graph.Delete
	case `"vertex"`:
		rec.Op = graph.AddVertex
	default:
		if absent(j.Op) {
			return Record{}, false, r.errorf(`missing field "op"`)
		}
		return Record{}, false, r.errorf("unknown op %s", clip(j.Op))
	}
	var err *LineError
	if rec.Time, err = r.jsonTime(j.TS); err != nil {
		return Record{}, false, err
	}
	if rec.Op == graph.AddVertex {
		id, key := j.ID, "id"
		if absent(id) && !absent(j.Src) {
			id, key = j.Src, "src"
		}
		if rec.Src, err = r.jsonRequired(id, key); err != nil {
			return Record{}, false, err
		}
		if rec.SrcLabel, err = r.jsonRequired(j.Label, "label"); err != nil {
			return Record{}, false, err
		}
		return rec, true, nil
	}
	if rec.Src, err = r.jsonRequired(j.Src, "src"); err != nil {
		return Record{}, false, err
	}
	if rec.Dst, err = r.jsonRequired(j.Dst, "dst"); err != nil {
		return Record{}, false, err
	}
	if rec.Label, err = r.jsonName(j.Label, "label"); err != nil {
		return Record{}, false, err
	}
	if rec.SrcLabel, err = r.jsonName(j.SrcLabel, "src_label"); err != nil {
		return Record{}, false, err
	}
	if rec.DstLabel, err = r.jsonName(j.DstLabel, "dst_label"); err != nil {
		return Record{}, false, err
	}
	return rec, true, nil
}

// jsonRequired is jsonName of a field that must be given and not empty.
func (r *Reader) jsonRequired(raw json.RawMessage, key string) (string, *LineError) {
	if absent(raw) {
		return "", r.errorf("missing field %q", key)
	}
	s, err := r.jsonName(raw, key)
	if err == nil && s == "" {
		err = r.errorf("field %q is empty", key)
	}
	return s, err
}

// jsonName decodes an id or a label: a JSON string, or an integer, which
// becomes its decimal spelling. An absent name is "".
func (r *Reader) jsonName(raw json.RawMessage, key string) (string, *LineError) {
	switch {
	case absent(raw):
		return "", nil
	case raw[0] == '"':
		return r.jsonString(raw, key)
	}
	if u, ok := parseUint(raw); ok {
		return strconv.FormatUint(u, 10), nil
	}
	if i, ok := parseInt(raw); ok {
		return strconv.FormatInt(i, 10), nil
	}
	return "", r.errorf("field %q must be a string or an integer, got %s", key, clip(raw))
}

// jsonString decodes a JSON string literal.
func (r *Reader) jsonString(raw json.RawMessage, key string) (string, *LineError) {
	// Most strings have no escapes: copy them without a trip through the
	// decoder. (Unmarshal has checked the syntax already.)
	if body := raw[1 : len(raw)-1]; bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", r.errorf("field %q: %v", key, err)
	}
	return s, nil
}

// jsonTime decodes "ts": an RFC 3339 string or integer unix milliseconds.
func (r *Reader) jsonTime(raw json.RawMessage) (int64, *LineError) {
	switch {
	case absent(raw):
		return 0, nil
	case raw[0] == '"':
		s, err := r.jsonString(raw, "ts")
		if err != nil {
			return 0, err
		}
		t, perr := time.Parse(time.RFC3339, s)
		if perr != nil {
			return 0, r.errorf(`field "ts": %s is not an RFC 3339 time`, quote([]byte(s)))
		}
		return t.UnixMilli(), nil
	}
	if ms, ok := parseInt(raw); ok {
		return ms, nil
	}
	return 0, r.errorf(`field "ts" must be an RFC 3339 string or integer unix milliseconds, got %s`, clip(raw))
}
