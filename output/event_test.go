package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// wireEvent is the output event of docs/operations.md, decoded by encoding/json to check AppendJSON.
type wireEvent struct {
	Query     string       `json:"query"`
	Change    string       `json:"change"`
	Match     orderedMatch `json:"match"`
	Edges     [][3]string  `json:"edges"`
	Transfers []Transfer   `json:"transfers"`
	Batch     uint64       `json:"batch"`
	EventTime string       `json:"event_time"`
	Source    *Source      `json:"source"`
	Initial   bool         `json:"initial"`
	Key       string       `json:"key"`
}

// orderedMatch decodes a JSON object into bindings in member order, which a map would lose.
type orderedMatch []Binding

func (m *orderedMatch) UnmarshalJSON(data []byte) error {
	d := json.NewDecoder(bytes.NewReader(data))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("match is not an object: %v %v", tok, err)
	}
	*m = orderedMatch{}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return err
		}
		v, err := d.Token()
		if err != nil {
			return err
		}
		id, ok := v.(string)
		if !ok {
			return fmt.Errorf("match value %v is not a string", v)
		}
		*m = append(*m, Binding{k.(string), id})
	}
	_, err := d.Token()
	return err
}

// decodeEvent decodes data strictly: one object, no unknown keys, nothing after it.
func decodeEvent(data []byte) (wireEvent, error) {
	var w wireEvent
	if !json.Valid(data) {
		return w, fmt.Errorf("invalid JSON %q", data)
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&w); err != nil {
		return w, fmt.Errorf("cannot decode %q: %w", data, err)
	}
	if d.More() {
		return w, fmt.Errorf("data after the object in %q", data)
	}
	return w, nil
}

// sanitize is what encoding/json makes of s on a round trip: each byte of invalid UTF-8 becomes U+FFFD
// (ranging over a string yields RuneError for each such byte).
func sanitize(s string) string { return string([]rune(s)) }

// wantWire is e as it must come back from JSON.
func wantWire(e *Event) wireEvent {
	w := wireEvent{
		Query: sanitize(e.Query), Change: sanitize(e.Change), Match: orderedMatch{}, Edges: [][3]string{},
		Batch: e.Batch, EventTime: sanitize(e.EventTime), Initial: e.Initial, Key: sanitize(e.Key),
	}
	for _, b := range e.Match {
		w.Match = append(w.Match, Binding{sanitize(b.Var), sanitize(b.ID)})
	}
	for _, ed := range e.Edges {
		w.Edges = append(w.Edges, [3]string{sanitize(ed[0]), sanitize(ed[1]), sanitize(ed[2])})
	}
	if e.Edges == nil {
		for i, ends := range e.EdgeEnds {
			w.Edges = append(w.Edges, [3]string{sanitize(e.Match[ends[0]].ID), sanitize(e.Match[ends[1]].ID), sanitize(e.EdgeLabels[i])})
		}
	}
	for _, t := range e.Transfers {
		w.Transfers = append(w.Transfers, Transfer{sanitize(t.Var), sanitize(t.ID), sanitize(t.Time)})
	}
	if e.Source != nil {
		s := *e.Source
		s.Topic = sanitize(s.Topic)
		w.Source = &s
	}
	return w
}

func checkRoundTrip(t *testing.T, e *Event) []byte {
	t.Helper()
	data := AppendJSON(nil, e)
	got, err := decodeEvent(data)
	if err != nil {
		t.Fatal(err)
	}
	if want := wantWire(e); !reflect.DeepEqual(got, want) {
		t.Fatalf("round trip of %s:\ngot  %+v\nwant %+v", data, got, want)
	}
	return data
}

// exampleEvent is the output event of docs/operations.md.
func exampleEvent() Event {
	m := []Binding{{"a", "acct:17"}, {"b", "acct:42"}, {"c", "acct:9"}}
	return Event{
		Query:  "ring3",
		Change: Appeared,
		Match:  m,
		Edges: [][3]string{
			{"acct:17", "acct:42", "TRANSFER"}, {"acct:42", "acct:9", "TRANSFER"}, {"acct:9", "acct:17", "TRANSFER"},
		},
		Batch:     1834,
		EventTime: "2026-11-21T10:00:00.000Z",
		Source:    &Source{Topic: "edges", Partition: 0, FromOffset: 91822, ToOffset: 93870},
		Key:       Key("ring3", "", m),
	}
}

func TestAppendJSONExample(t *testing.T) {
	e := exampleEvent()
	got := string(AppendJSON([]byte("prefix "), &e))
	want := `prefix {"query":"ring3","change":"appeared","match":{"a":"acct:17","b":"acct:42","c":"acct:9"},` +
		`"edges":[["acct:17","acct:42","TRANSFER"],["acct:42","acct:9","TRANSFER"],["acct:9","acct:17","TRANSFER"]],` +
		`"batch":1834,"event_time":"2026-11-21T10:00:00.000Z",` +
		`"source":{"topic":"edges","partition":0,"from_offset":91822,"to_offset":93870},` +
		`"key":"ring3/ff8281fc3aa2edd9513ef343f4697a18"}`
	if got != want {
		t.Fatalf("AppendJSON:\ngot  %s\nwant %s", got, want)
	}
	checkRoundTrip(t, &e)

	// MarshalJSON writes the same object, so encoding/json callers agree with the sinks.
	viaJSON, err := json.Marshal(e)
	if err != nil || string(viaJSON) != want[len("prefix "):] {
		t.Fatalf("json.Marshal = %s, %v", viaJSON, err)
	}
}

// TestAppendJSONReturn writes a RETURN row as an object in item order, after
// the transfers, and reads it back.
func TestAppendJSONReturn(t *testing.T) {
	e := exampleEvent()
	e.Source, e.EventTime = nil, ""
	e.Return = []Field{{"a", []byte(`"acct:17"`)}, {"total", []byte(`12500`)}, {"span", []byte(`"1h30m"`)}, {"top", []byte(`null`)}}
	got := string(AppendJSON(nil, &e))
	want := `{"query":"ring3","change":"appeared","match":{"a":"acct:17","b":"acct:42","c":"acct:9"},` +
		`"edges":[["acct:17","acct:42","TRANSFER"],["acct:42","acct:9","TRANSFER"],["acct:9","acct:17","TRANSFER"]],` +
		`"return":{"a":"acct:17","total":12500,"span":"1h30m","top":null},"batch":1834,` +
		`"key":"ring3/ff8281fc3aa2edd9513ef343f4697a18"}`
	if got != want {
		t.Fatalf("AppendJSON:\ngot  %s\nwant %s", got, want)
	}
	var back Event
	if err := json.Unmarshal([]byte(got), &back); err != nil || !reflect.DeepEqual(back, e) {
		t.Fatalf("Unmarshal(%s) = %+v, %v; want %+v", got, back, err, e)
	}
}

func TestAppendJSONOmitted(t *testing.T) {
	e := Event{Query: "q", Change: Disappeared, Batch: 7, Key: "q/00"}
	data := checkRoundTrip(t, &e)
	want := `{"query":"q","change":"disappeared","match":{},"edges":[],"batch":7,"key":"q/00"}`
	if string(data) != want {
		t.Fatalf("got %s, want %s", data, want)
	}
	e.Initial = true
	data = checkRoundTrip(t, &e)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		t.Fatal(err)
	}
	if string(fields["initial"]) != "true" {
		t.Fatalf("initial missing in %s", data)
	}
	for _, k := range []string{"event_time", "source"} {
		if _, ok := fields[k]; ok {
			t.Errorf("empty %s not omitted in %s", k, data)
		}
	}
}

var awkward = []string{
	"",
	`"quoted"`,
	`back\slash`,
	"new\nline\ttab\rcr\bbs\fff",
	"\x00\x01\x1f\x7f",
	"ünïcödé ✓ 漢字 🦀",
	"\u2028\u2029 line separators",
	"<html>&amp;</html>",
	"\xff\xfe invalid",
	"trunc\xe2\x82",
	"\xed\xa0\x80 surrogate",
	"\xc0\xaf overlong",
	`\u0041 escaped-looking`,
}

func TestAppendJSONAwkwardStrings(t *testing.T) {
	for i, s := range awkward {
		e := Event{
			Query: s, Change: s, Match: []Binding{{s, s}, {"x" + s, s + "y"}},
			Edges: [][3]string{{s, s, s}}, Batch: uint64(i), EventTime: s,
			Source:  &Source{Topic: s, Partition: -i, FromOffset: -1 << 63, ToOffset: 1<<63 - 1},
			Initial: i%2 == 0, Key: s,
		}
		checkRoundTrip(t, &e)
	}
	e := Event{Batch: 1<<64 - 1}
	checkRoundTrip(t, &e)
}

func TestAppendJSONAllocs(t *testing.T) {
	e := exampleEvent()
	e.Match[1].ID = "needs \"escaping\"\n\xff"
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { buf = AppendJSON(buf[:0], &e) }); n != 0 {
		t.Fatalf("AppendJSON allocates %v times with room in dst", n)
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	e := exampleEvent()
	buf := AppendJSON(nil, &e)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendJSON(buf[:0], &e)
	}
}

// BenchmarkEncodingJSON is the reference AppendJSON is written to beat: encoding/json on an equivalent
// struct, with the match as a map (which also loses its order).
func BenchmarkEncodingJSON(b *testing.B) {
	e := exampleEvent()
	type wire struct {
		Query     string            `json:"query"`
		Change    string            `json:"change"`
		Match     map[string]string `json:"match"`
		Edges     [][3]string       `json:"edges"`
		Batch     uint64            `json:"batch"`
		EventTime string            `json:"event_time,omitempty"`
		Source    *Source           `json:"source,omitempty"`
		Initial   bool              `json:"initial,omitempty"`
		Key       string            `json:"key"`
	}
	w := wire{e.Query, e.Change, map[string]string{}, e.Edges, e.Batch, e.EventTime, e.Source, e.Initial, e.Key}
	for _, m := range e.Match {
		w.Match[m.Var] = m.ID
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(&w); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzAppendJSON(f *testing.F) {
	for i, s := range awkward {
		f.Add(s, s, s, s, "b", s+"2", s, "d", s, uint64(i), s, true, s, i, int64(-i), int64(i), i%2 == 0, s)
	}
	e := exampleEvent()
	f.Add(e.Query, e.Change, "a", "acct:17", "b", "acct:42", "acct:17", "acct:42", "TRANSFER", e.Batch,
		e.EventTime, true, "edges", 0, int64(91822), int64(93870), false, e.Key)
	f.Fuzz(func(t *testing.T, query, change, var1, id1, var2, id2, src, dst, label string, batch uint64,
		eventTime string, hasSource bool, topic string, partition int, from, to int64, initial bool, key string) {
		e := Event{
			Query: query, Change: change, Match: []Binding{{var1, id1}, {var2, id2}},
			Edges: [][3]string{{src, dst, label}, {dst, src, label}}, Batch: batch, EventTime: eventTime,
			Initial: initial, Key: key,
		}
		if hasSource {
			e.Source = &Source{Topic: topic, Partition: partition, FromOffset: from, ToOffset: to}
		}
		if initial {
			// Reuse the fuzzed strings for the transfers of a query over them.
			e.Transfers = []Transfer{{Var: var1, ID: id1, Time: eventTime}, {Var: var2, ID: id2}}
		}
		data := checkRoundTrip(t, &e)
		// The same edges given as ends in Match, as the service gives them,
		// encode to the same bytes.
		e.Edges, e.EdgeEnds, e.EdgeLabels = nil, [][2]int{{0, 1}, {1, 0}}, []string{label, label}
		if again := AppendJSON(nil, &e); string(again) != string(data) && src == id1 && dst == id2 {
			t.Fatalf("edges by ends encode as\n%s\nnot\n%s", again, data)
		}
		checkRoundTrip(t, &e)
	})
}
