package ingest

import (
	"maps"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/graph"
)

// TestDecodeSeen: a Decoder with a catalog notes every property of every
// event it takes, kept or not, with its kind, under the labels of its edge
// and vertices, on the scanner's path and on encoding/json's alike; refused
// events and nulls add nothing.
func TestDecodeSeen(t *testing.T) {
	seen := &graph.Catalog{DefaultEdgeLabel: "0"}
	d := Decoder{Keep: NewPropFilter([]string{"amount"}, nil), Seen: seen}
	for _, ev := range []string{
		issueEvent, // the scanner's path
		// Keys out of order and an escaped name: encoding/json's path.
		`{"src":"a","op":"+","dst":"b","label":"TRANSFER","props":{"amount":"12","fe\u0065":1.5,"none":null},"dst_props":{"since":2019}}`,
		`{"op":"+","src":"a","dst":"c","props":{"w":true}}`, // no labels
		`{"op":"vertex","id":"m","label":"Merchant","props":{"mcc":5411}}`,
		`{"op":"+","src":"CSM","dst":"x","label":"7"}`, // without properties
	} {
		if _, err := d.Decode([]byte(ev)); err != nil {
			t.Fatalf("%s: %v", ev, err)
		}
	}
	for _, bad := range []string{
		`{"op":"+","src":"a","dst":"b","label":"BAD","props":{"p":1},"ts":"yesterday"}`,
		`{"op":"+","src":"a","dst":"b","label":"BAD","props":{"p":1,"q":[1]}}`,
		`{"op":"+","src":"` + strings.Repeat("x", DefaultMaxIDBytes+1) + `","dst":"b","label":"BAD","props":{"p":1}}`,
	} {
		if _, err := d.Decode([]byte(bad)); err == nil {
			t.Fatalf("%s: taken", bad)
		}
	}
	n, s, b := graph.KindsOf(graph.Number), graph.KindsOf(graph.String), graph.KindsOf(graph.Bool)
	for _, tt := range []struct {
		vertex bool
		label  string
		want   map[string]graph.Kinds
	}{
		{false, "TRANSFER", map[string]graph.Kinds{"amount": n | s, "currency": s, "flagged": b, "fee": n}},
		{false, "0", map[string]graph.Kinds{"w": b}},
		{false, "BAD", map[string]graph.Kinds{}},
		// Vertex properties of events that named no vertex label (all
		// but the vertex event here) count for every vertex label.
		{true, "Merchant", map[string]graph.Kinds{"mcc": n, "country": s, "since": n}},
		{true, "Other", map[string]graph.Kinds{"country": s, "since": n}},
	} {
		got, _ := seen.Props(tt.vertex, tt.label, false)
		if !maps.Equal(got, tt.want) {
			t.Errorf("Props(%v, %q) = %v, want %v", tt.vertex, tt.label, got, tt.want)
		}
	}
}

// TestReaderSeen: a Reader notes as a Decoder does, and only JSON lines
// carry properties.
func TestReaderSeen(t *testing.T) {
	seen := &graph.Catalog{}
	r := NewReader(strings.NewReader(issueEvent+"\n"+`{"op":"+","src":"a","dst":"b","label":"PAYS","props":{"fee":"x"}}`+"\n"), Options{Seen: seen})
	for {
		if _, err := r.Next(); err != nil {
			break
		}
	}
	got, _ := seen.Props(false, "", true)
	want := map[string]graph.Kinds{"amount": graph.KindsOf(graph.Number), "currency": graph.KindsOf(graph.String),
		"flagged": graph.KindsOf(graph.Bool), "fee": graph.KindsOf(graph.String)}
	if !maps.Equal(got, want) {
		t.Errorf("seen %v, want %v", got, want)
	}
}

// TestReaderSeenCSV: a CSV file's property columns are noted, kept or not,
// under each line's label, a number where the field is one; an empty field
// gives nothing, and a refused line notes nothing.
func TestReaderSeenCSV(t *testing.T) {
	seen := &graph.Catalog{}
	in := "src,dst,label,amount,memo,empty\n" +
		"a,b,PAYS,12.5,rent,\n" +
		"b,c,PAYS,x7,,\n" +
		"c,d,OWES,3,\xff,\n" // invalid UTF-8: refused
	r := NewReader(strings.NewReader(in), Options{Format: FormatSNAP, Seen: seen, SkipBad: true})
	for {
		if _, err := r.Next(); err != nil {
			break
		}
	}
	got, _ := seen.Props(false, "PAYS", false)
	want := map[string]graph.Kinds{"amount": graph.KindsOf(graph.Number) | graph.KindsOf(graph.String), "memo": graph.KindsOf(graph.String)}
	if !maps.Equal(got, want) {
		t.Errorf("PAYS: seen %v, want %v", got, want)
	}
	if got, _ := seen.Props(false, "OWES", false); len(got) != 0 {
		t.Errorf("OWES, whose only line was refused: seen %v", got)
	}
}

// TestDecodeSeenAllocs: once a stream's names are known, noting them costs
// Decode no allocation.
func TestDecodeSeenAllocs(t *testing.T) {
	for _, keep := range []*PropFilter{nil, testKeep} {
		d := Decoder{Keep: keep, Seen: &graph.Catalog{}}
		value := []byte(issueEvent)
		if _, err := d.Decode(value); err != nil {
			t.Fatal(err)
		}
		want := 1.0
		if keep != nil {
			want = 2
		}
		if n := testing.AllocsPerRun(100, func() { d.Decode(value) }); n != want {
			t.Errorf("Decode with a catalog: %v allocations, want %v", n, want)
		}
	}
}
