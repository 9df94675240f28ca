package ingest

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/graph"
)

// The set events of docs/patterns.md.
const (
	vertexSetEvent = `{"op":"set","vertex":"acct:17","props":{"status":"flagged","score":0.93}}`
	edgeSetEvent   = `{"op":"set","edge":"tx-981","props":{"amount":12500}}`
)

func TestDecodeSet(t *testing.T) {
	num, str := graph.NumberValue, graph.StringValue
	null := graph.Value{}
	tests := []struct {
		name string
		in   string
		keep *PropFilter
		want Record
	}{
		{"vertex", vertexSetEvent, AllProps(),
			Record{Op: graph.SetVertex, Src: "acct:17", SrcProps: []graph.Prop{{Name: "status", Value: str("flagged")}, {Name: "score", Value: num(0.93)}}}},
		{"edge", edgeSetEvent, AllProps(),
			Record{Op: graph.SetEdge, ID: "tx-981", Props: []graph.Prop{{Name: "amount", Value: num(12500)}}}},
		{"integer ids, as other ids", `{"op":"set","vertex":17,"props":{"a":1}}`, AllProps(),
			Record{Op: graph.SetVertex, Src: "17", SrcProps: []graph.Prop{{Name: "a", Value: num(1)}}}},
		{"integer transfer id, decimal as an edge's id", `{"op":"set","edge":981,"props":{"a":true}}`, AllProps(),
			Record{Op: graph.SetEdge, ID: "981", Props: []graph.Prop{{Name: "a", Value: graph.BoolValue(true)}}}},
		// A set's null removes the property, so it is kept as a value; a
		// name given twice keeps its last value, null or not.
		{"nulls kept", `{"op":"set","vertex":"v","props":{"a":null,"b":1,"b":null,"c":null,"c":"x"}}`, AllProps(),
			Record{Op: graph.SetVertex, Src: "v", SrcProps: []graph.Prop{{Name: "a", Value: null}, {Name: "b", Value: null}, {Name: "c", Value: str("x")}}}},
		{"ts optional, read as on edges", `{"op":"set","edge":"t","ts":"2026-11-21T10:00:00Z","props":{}}`, AllProps(),
			Record{Op: graph.SetEdge, ID: "t", Time: 1795255200000}},
		{"vertex props filtered as vertex properties", `{"op":"set","vertex":"v","props":{"a":1,"amount":2,"country":"DE"}}`, fuzzKeep,
			Record{Op: graph.SetVertex, Src: "v", SrcProps: []graph.Prop{{Name: "a", Value: num(1)}, {Name: "country", Value: str("DE")}}}},
		{"edge props filtered as edge properties", `{"op":"set","edge":"t","props":{"a":1,"amount":2,"country":"DE"}}`, fuzzKeep,
			Record{Op: graph.SetEdge, ID: "t", Props: []graph.Prop{{Name: "a", Value: num(1)}, {Name: "amount", Value: num(2)}}}},
		{"nothing kept", vertexSetEvent, nil, Record{Op: graph.SetVertex, Src: "acct:17"}},
		{"null target field is absent", `{"op":"set","vertex":"v","edge":null,"src":null,"props":{}}`, nil, Record{Op: graph.SetVertex, Src: "v"}},
		{"keys folded by encoding/json", `{"op":"set","Vertex":"v","PROPS":{"a":2}}`, AllProps(),
			Record{Op: graph.SetVertex, Src: "v", SrcProps: []graph.Prop{{Name: "a", Value: num(2)}}}},
	}
	for _, tt := range tests {
		d := Decoder{Keep: tt.keep}
		got, err := d.Decode([]byte(tt.in))
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Decode(%s)\n got %+v, %v\nwant %+v", tt.name, tt.in, got, err, tt.want)
			continue
		}
		roundTrip(t, []byte(tt.in), got, tt.keep)
	}
}

func TestDecodeSetErrors(t *testing.T) {
	tests := []struct {
		in, reason, detail string
	}{
		{`{"op":"set","vertex":"v","edge":"t","props":{}}`, ReasonBadSet, `a set names a vertex ("vertex") or a transfer ("edge"), not both`},
		{`{"op":"set","props":{"a":1}}`, ReasonMissingField, `missing field "vertex" or "edge": a set names the vertex or the transfer whose properties it sets`},
		{`{"op":"set","vertex":"v"}`, ReasonMissingField, `missing field "props": a set gives the properties it sets`},
		{`{"op":"set","vertex":"v","props":null}`, ReasonMissingField, `missing field "props": a set gives the properties it sets`},
		{`{"op":"set","vertex":"","props":{}}`, ReasonMissingField, `field "vertex" is empty`},
		{`{"op":"set","edge":"","props":{}}`, ReasonMissingField, `field "edge" is empty`},
		{`{"op":"set","vertex":"v","props":[1]}`, ReasonBadValue, `field "props" must be an object of properties, got [1]`},
		{`{"op":"set","vertex":"v","props":"status"}`, ReasonBadValue, `field "props" must be an object of properties, got "status"`},
		{`{"op":"set","vertex":"v","props":{"a":{"b":1}}}`, ReasonBadValue, `field "props" key "a" must be a number, a string, a boolean or null, got {"b":1}`},
		{`{"op":"set","vertex":1.5,"props":{}}`, ReasonBadValue, `field "vertex" must be a string or an integer, got 1.5`},
		{`{"op":"set","edge":{"id":1},"props":{}}`, ReasonBadValue, `field "edge" must be a string or an integer, got {"id":1}`},
		{`{"op":"set","vertex":"v","src":"a","props":{}}`, ReasonBadSet, `a set takes no field "src": it names a vertex with "vertex" or a transfer with "edge", and gives "props"`},
		{`{"op":"set","edge":"t","dst":"b","props":{}}`, ReasonBadSet, `a set takes no field "dst": it names a vertex with "vertex" or a transfer with "edge", and gives "props"`},
		{`{"op":"set","edge":"t","id":"t","props":{}}`, ReasonBadSet, `a set takes no field "id": it names a vertex with "vertex" or a transfer with "edge", and gives "props"`},
		{`{"op":"set","vertex":"v","label":"Account","props":{}}`, ReasonBadSet, `a set takes no field "label": it names a vertex with "vertex" or a transfer with "edge", and gives "props"`},
		{`{"op":"set","vertex":"v","src_props":{"a":1},"props":{}}`, ReasonBadSet, `a set takes no field "src_props": it names a vertex with "vertex" or a transfer with "edge", and gives "props"`},
		{`{"op":"set","vertex":"v","ts":-1,"props":{}}`, ReasonTSOutOfRange, `field "ts" is negative (-1): a numeric ts counts milliseconds since 1970`},
		// The time is checked first, as for other events.
		{`{"op":"set","ts":"today","props":{}}`, ReasonBadTime, `field "ts": "today" is not an RFC 3339 time`},
		{`{"op":"set","vertex":"v","props":{"s":"\ud800"}}`, ReasonInvalidUTF8, `field "props" key "s" is not valid UTF-8: \ud800 is half of a surrogate pair`},
	}
	for _, tt := range tests {
		var d Decoder
		rec, err := d.Decode([]byte(tt.in))
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("Decode(%s) = %+v, %v; want a *DecodeError", tt.in, rec, err)
			continue
		}
		if de.Reason != tt.reason || de.Detail != tt.detail {
			t.Errorf("Decode(%s):\n got %s: %s\nwant %s: %s", tt.in, de.Reason, de.Detail, tt.reason, tt.detail)
		}
	}
	d := Decoder{MaxIDBytes: 4}
	for in, want := range map[string]string{
		`{"op":"set","vertex":"acct:1","props":{}}`: `field "vertex" is 6 bytes, over the limit of 4 for ids and labels`,
		`{"op":"set","edge":"tx-981","props":{}}`:   `field "edge" is 6 bytes, over the limit of 4 for ids and labels`,
	} {
		var de *DecodeError
		if _, err := d.Decode([]byte(in)); !errors.As(err, &de) || de.Reason != ReasonIDTooLong || de.Detail != want {
			t.Errorf("Decode(%s) with MaxIDBytes 4: %v, want %s: %s", in, err, ReasonIDTooLong, want)
		}
	}
}

// TestAppendEventSet writes set records as their events, "props" always
// and nulls kept, and reads them back.
func TestAppendEventSet(t *testing.T) {
	tests := []struct {
		rec  Record
		want string
	}{
		{Record{Op: graph.SetVertex, Src: "acct:17", SrcProps: []graph.Prop{{Name: "status", Value: graph.StringValue("flagged")}, {Name: "score", Value: graph.NumberValue(0.93)}}},
			vertexSetEvent},
		{Record{Op: graph.SetEdge, ID: "tx-981", Props: []graph.Prop{{Name: "amount", Value: graph.NumberValue(12500)}}}, edgeSetEvent},
		{Record{Op: graph.SetEdge, ID: "7", Time: 5, Props: []graph.Prop{{Name: "a"}}}, `{"op":"set","edge":"7","ts":5,"props":{"a":null}}`},
		{Record{Op: graph.SetVertex, Src: "v"}, `{"op":"set","vertex":"v","props":{}}`},
	}
	for _, tt := range tests {
		got := string(AppendEvent(nil, tt.rec))
		if got != tt.want {
			t.Errorf("AppendEvent(%+v)\n got %s\nwant %s", tt.rec, got, tt.want)
			continue
		}
		roundTrip(t, []byte(got), tt.rec, AllProps())
	}
}

func TestResolveSet(t *testing.T) {
	res := &Resolver{IDs: graph.NewIDs(), Labels: graph.NewDict(), DefaultEdgeLabel: "E"}
	props := []graph.Prop{{Name: "status", Value: graph.StringValue("flagged")}}

	// A set on a name no event has named is refused, and interns nothing.
	_, err := res.Resolve(Record{Op: graph.SetVertex, Src: "acct:9", SrcProps: props, Line: 3})
	var le *LineError
	if !errors.Is(err, graph.ErrUnknownVertex) || !errors.As(err, &le) || err.Error() != `line 3: set on unknown vertex "acct:9"` {
		t.Fatalf("set on an unknown vertex: %v, want a *LineError of line 3 wrapping graph.ErrUnknownVertex", err)
	}
	if res.IDs.Len() != 0 || res.Labels.Len() != 0 {
		t.Fatalf("a refused set interned %d ids and %d labels", res.IDs.Len(), res.Labels.Len())
	}

	// Once an edge has named it, the set finds it, and interns nothing.
	e, err := res.Resolve(Record{Op: graph.Insert, Src: "acct:9", Dst: "acct:1", Line: 4})
	if err != nil {
		t.Fatal(err)
	}
	u, err := res.Resolve(Record{Op: graph.SetVertex, Src: "acct:9", Time: 7, SrcProps: props, Line: 5})
	want := graph.Update{Op: graph.SetVertex, Src: e.Src, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel,
		Tx: &graph.Transfer{Time: 7, SrcProps: props}}
	if err != nil || !reflect.DeepEqual(u, want) || res.IDs.Len() != 2 {
		t.Fatalf("set on a known vertex: %+v, %v; want %+v", u, err, want)
	}
	// An id looked up beforehand is taken as it is.
	if u, err := res.ResolveKnown(Record{Op: graph.SetVertex, Src: "acct:9"}, Known{ID: [2]graph.VertexID{e.Src}, OK: [2]bool{true}}); err != nil || u.Src != e.Src {
		t.Fatalf("ResolveKnown: %+v, %v", u, err)
	}

	// An edge set needs no vertex: its transfer is the graph's to find.
	u, err = res.Resolve(Record{Op: graph.SetEdge, ID: "tx-981", Time: 8, Props: props})
	want = graph.Update{Op: graph.SetEdge, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel, Tx: &graph.Transfer{ID: "tx-981", Time: 8, Props: props}}
	if err != nil || !reflect.DeepEqual(u, want) || res.IDs.Len() != 2 {
		t.Fatalf("edge set: %+v, %v; want %+v", u, err, want)
	}
	for _, rec := range []Record{{Op: graph.SetVertex}, {Op: graph.SetEdge}} {
		if _, err := res.Resolve(rec); err == nil || errors.Is(err, graph.ErrUnknownVertex) {
			t.Errorf("Resolve(%+v): %v, want a refusal for the missing name", rec, err)
		}
	}
}

// TestReadSet reads set events from a JSON lines file, as gcsm replay and
// gcsm produce do, and refuses op "set" in a CSV file with its place.
func TestReadSet(t *testing.T) {
	in := `{"op":"+","src":"acct:17","dst":"acct:42","id":"tx-981"}` + "\n" + vertexSetEvent + "\n" + edgeSetEvent + "\n" +
		`{"op":"set","vertex":"acct:17","edge":"tx-981","props":{}}` + "\n"
	r := NewReader(strings.NewReader(in), Options{File: "events.jsonl", Keep: AllProps()})
	var got []Record
	var errs []string
	for {
		rec, err := r.Next()
		if err != nil {
			if le, ok := err.(*LineError); ok {
				errs = append(errs, le.Error())
				continue
			}
			break
		}
		got = append(got, rec)
	}
	if len(got) != 3 || got[1].Op != graph.SetVertex || got[1].Line != 2 || got[2].Op != graph.SetEdge || got[2].ID != "tx-981" {
		t.Errorf("records %+v", got)
	}
	if want := `events.jsonl:4: a set names a vertex ("vertex") or a transfer ("edge"), not both`; len(errs) != 1 || errs[0] != want {
		t.Errorf("errors %q, want %q", errs, want)
	}

	csv := "src,dst,op,amount\na,b,+,5\na,,set,7\n"
	r = NewReader(strings.NewReader(csv), Options{File: "events.csv"})
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	_, err := r.Next()
	if want := `events.csv:3: op "set" is JSON only: a CSV line cannot say whether it sets a vertex or a transfer; write set events as JSON lines`; err == nil || err.Error() != want {
		t.Errorf("CSV set: %v, want %s", err, want)
	}
}

// TestSeenSet notes a vertex set's properties under "", which counts for
// every vertex label, and no edge set's, whose label is not known.
func TestSeenSet(t *testing.T) {
	seen := &graph.Catalog{DefaultEdgeLabel: "TRANSFER"}
	d := Decoder{Seen: seen}
	for _, in := range []string{vertexSetEvent, edgeSetEvent, `{"op":"set","vertex":"v","props":{"gone":null}}`} {
		if _, err := d.Decode([]byte(in)); err != nil {
			t.Fatal(err)
		}
	}
	props, _ := seen.Props(true, "Account", false)
	if want := map[string]graph.Kinds{"status": graph.KindsOf(graph.String), "score": graph.KindsOf(graph.Number)}; !reflect.DeepEqual(props, want) {
		t.Errorf("vertex properties seen on Account: %v, want %v", props, want)
	}
	if props, _ := seen.Props(false, "", true); len(props) != 0 {
		t.Errorf("edge properties seen: %v, want none", props)
	}
	// A set refused adds nothing.
	if _, err := d.Decode([]byte(`{"op":"set","vertex":"v","src":"a","props":{"new":1}}`)); err == nil {
		t.Fatal("a set with src taken")
	}
	if props, _ := seen.Props(true, "", false); props["new"] != 0 {
		t.Errorf("a refused set noted %v", props)
	}
}
