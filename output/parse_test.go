package output

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestUnmarshalEventRoundTrip(t *testing.T) {
	events := []Event{exampleEvent()}
	for i, s := range awkward {
		if !utf8.ValidString(s) {
			continue // AppendJSON replaces invalid bytes, so they cannot come back
		}
		events = append(events, Event{Query: "q" + s, Change: Disappeared, Match: []Binding{{"v" + s, s}, {"w", s + "x"}},
			Edges: [][3]string{{s, s, s}}, Batch: uint64(i), EventTime: s, Initial: i%2 == 0, Key: "k" + s,
			Source: &Source{Topic: s, Partition: i, FromOffset: int64(-i), ToOffset: int64(i)}})
	}
	for _, want := range events {
		data := AppendJSON(nil, &want)
		var got Event
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatalf("Unmarshal(%s): %v", data, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Unmarshal(%s):\ngot  %+v\nwant %+v", data, got, want)
		}
	}
}

func TestUnmarshalEventErrors(t *testing.T) {
	const ok = `"query":"q","change":"appeared","key":"q/1"`
	for _, tt := range []struct{ data, want string }{
		{`[]`, "cannot unmarshal array"},
		{`{"change":"appeared","match":{"a":"1"},"key":"q/1"}`, `no "query"`},
		{`{"query":"q","change":"gone","match":{"a":"1"},"key":"q/1"}`, `"change" must be "appeared" or "disappeared"`},
		{`{"query":"q","change":"appeared","match":{"a":"1"}}`, `no "key"`},
		{`{` + ok + `}`, `"match": missing`},
		{`{` + ok + `,"match":null}`, `"match": missing`},
		{`{` + ok + `,"match":["a","1"]}`, `"match": not an object`},
		{`{` + ok + `,"match":{}}`, `"match": no bindings`},
		{`{` + ok + `,"match":{"a":1}}`, `"match": the id of "a" is not a string`},
		{`{` + ok + `,"match":{"a":"1","a":"2"}}`, `"match": variable "a" twice`},
		{`{` + ok + `,"match":{"a":"1"},"batch":-1}`, "cannot unmarshal number -1"},
		{`{` + ok + `,"match":{"a":"1"}} x`, "invalid character"},
	} {
		var e Event
		err := json.Unmarshal([]byte(tt.data), &e)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Unmarshal(%s) = %v, want an error with %q", tt.data, err, tt.want)
		}
	}
	// Members this version does not know are skipped.
	var e Event
	if err := json.Unmarshal([]byte(`{`+ok+`,"match":{"a":"1"},"future":{"x":[1]}}`), &e); err != nil || e.Match[0] != (Binding{"a", "1"}) {
		t.Fatalf("unknown member: %+v, %v", e, err)
	}
}

// FuzzUnmarshalEvent checks that whatever Unmarshal accepts, AppendJSON writes back as an object that
// decodes to the same Event.
func FuzzUnmarshalEvent(f *testing.F) {
	e := exampleEvent()
	f.Add(AppendJSON(nil, &e))
	f.Add([]byte(`{"query":"q","change":"disappeared","match":{"a":"\u00e9\ud800"},"key":"k","initial":true,"edges":[]}`))
	f.Add([]byte(`{"query":"q","change":"appeared","match":{"a":"1","b":{"c":"2"}},"key":"k"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var first Event
		if err := json.Unmarshal(data, &first); err != nil {
			return
		}
		again := AppendJSON(nil, &first)
		var second Event
		if err := json.Unmarshal(again, &second); err != nil {
			t.Fatalf("Unmarshal(%s) accepted, but not AppendJSON's %s: %v", data, again, err)
		}
		if !reflect.DeepEqual(first, second) {
			t.Fatalf("Unmarshal(%s) = %+v, but its AppendJSON %s decodes to %+v", data, first, again, second)
		}
	})
}
