package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/graph"
)

// designEvent is the input event that docs/operations.md shows.
const designEvent = `{"op":"+","src":"acct:17","dst":"acct:42","label":"TRANSFER","src_label":"Account","dst_label":"Account","ts":"2026-11-21T10:00:00Z"}`

func TestDecode(t *testing.T) {
	tests := []struct {
		name   string
		format Format
		in     string
		want   Record
	}{
		{"design event", FormatAuto, designEvent,
			Record{Op: graph.Insert, Src: "acct:17", Dst: "acct:42", Label: "TRANSFER", SrcLabel: "Account", DstLabel: "Account", Time: 1795255200000}},
		{"json ints, delete, epoch ms", FormatJSON, `{"op":"delete","src":1,"dst":-2,"label":3,"ts":1700000000123}`,
			timed(del(0, "1", "-2", "3"), 1700000000123)},
		{"json minus zero is 0", FormatJSON, `{"op":"-","src":-0,"dst":0}`, del(0, "0", "0", "")},
		{"json escapes, offset time, extra fields", FormatAuto,
			`{"op":"insert","src":"a\u00e9\n","dst":"\"b\"","ts":"2024-06-01T14:00:00.5+02:00","x":{"y":[1,2,{"z":null}]}}`,
			timed(ins(0, "aé\n", `"b"`, ""), 1717243200500)},
		{"json vertex", FormatAuto, `{"op":"vertex","id":"acct:1","label":"Account","ts":5}`,
			timed(vtx(0, "acct:1", "Account"), 5)},
		{"json vertex by src", FormatAuto, `{"op":"vertex","src":7,"label":"A"}`, vtx(0, "7", "A")},
		{"json keys folded by encoding/json", FormatAuto, `{"OP":"+","Src":1,"DST":2,"L\u0061bel":"x"}`, ins(0, "1", "2", "x")},
		{"json key given twice", FormatAuto, `{"op":"+","src":1,"src":3,"dst":2}`, ins(0, "3", "2", "")},
		{"json nulls", FormatAuto, `{"op":"+","src":1,"dst":2,"label":null,"ts":null}`, ins(0, "1", "2", "")},
		{"trimmed", FormatAuto, "\xef\xbb\xbf \t" + `{"op":"+","src":1,"dst":2}` + "\r\n", ins(0, "1", "2", "")},
		{"csm insert", FormatAuto, "e 1 2 7", ins(0, "1", "2", "7")},
		{"csm plus", FormatCSM, "+e 01 2\n", ins(0, "1", "2", "")},
		{"csm delete", FormatAuto, "-e 3 4 0", del(0, "3", "4", "0")},
		{"csm vertex", FormatAuto, "  v 9 3 12 ", vtx(0, "9", "3")},
	}
	var d Decoder
	for _, tt := range tests {
		d.Format = tt.format
		got, err := d.Decode([]byte(tt.in))
		if err != nil {
			t.Errorf("%s: Decode(%q): %v", tt.name, tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: Decode(%q)\n got %+v\nwant %+v", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		dec    Decoder
		in     string
		reason string
		detail string
	}{
		{Decoder{MaxBytes: 10}, `{"op":"+"} `, ReasonOversized, "value is 11 bytes, over the limit of 10"},
		{Decoder{}, "e 1 2" + strings.Repeat(" ", 1<<20), ReasonOversized, "value is 1048581 bytes, over the limit of 1048576"},
		{Decoder{}, "", ReasonEmpty, "value is blank"},
		{Decoder{}, " \r\n\t", ReasonEmpty, "value is blank"},
		{Decoder{}, "# e 1 2", ReasonEmpty, `value is a comment, not an event: "# e 1 2"`},
		{Decoder{Format: FormatJSON}, "% x", ReasonEmpty, `value is a comment, not an event: "% x"`},
		{Decoder{}, "t 5 4", ReasonEmpty, `value is a CSM "t" header, not an event`},
		{Decoder{}, `{"op":"+","src":1,"dst":2`, ReasonJSON, "invalid JSON: unexpected end of JSON input"},
		{Decoder{}, `{"op":"+"} x`, ReasonJSON, "invalid JSON: invalid character 'x' after top-level value"},
		{Decoder{}, `{"op":"+","src":01}`, ReasonJSON, "invalid JSON: invalid character '1' after object key:value pair"},
		{Decoder{Format: FormatJSON}, `[1,2]`, ReasonJSON, `expected a JSON object, got "[1,2]"`},
		{Decoder{Format: FormatJSON}, `e 1 2`, ReasonJSON, `expected a JSON object, got "e 1 2"`},
		{Decoder{}, `{"src":1,"dst":2}`, ReasonMissingField, `missing field "op"`},
		{Decoder{}, `{"op":null,"src":1,"dst":2}`, ReasonMissingField, `missing field "op"`},
		{Decoder{}, `{"op":"+","dst":2}`, ReasonMissingField, `missing field "src"`},
		{Decoder{}, `{"op":"+","src":1}`, ReasonMissingField, `missing field "dst"`},
		{Decoder{}, `{"op":"+","src":"","dst":2}`, ReasonMissingField, `field "src" is empty`},
		{Decoder{}, `{"op":"vertex","id":1}`, ReasonMissingField, `missing field "label"`},
		{Decoder{}, `{"op":"vertex","label":"A"}`, ReasonMissingField, `missing field "id"`},
		{Decoder{}, `{"op":"upsert","src":1,"dst":2}`, ReasonUnknownOp, `unknown op "upsert"`},
		{Decoder{}, `{"op":1,"src":1,"dst":2}`, ReasonUnknownOp, `unknown op 1`},
		{Decoder{}, `{"op":"set","vertex":"a","src":"a","props":{}}`, ReasonBadSet,
			`a set takes no field "src": it names a vertex with "vertex" or a transfer with "edge", and gives "props"`},
		{Decoder{}, `{"op":"+","src":1,"dst":2,"ts":"yesterday"}`, ReasonBadTime, `field "ts": "yesterday" is not an RFC 3339 time`},
		{Decoder{}, `{"op":"+","src":1,"dst":2,"ts":1.5e12}`, ReasonBadTime, `field "ts" must be an RFC 3339 string or an integer (unix milliseconds), got 1.5e12`},
		{Decoder{TSUnit: Seconds}, `{"op":"+","src":1,"dst":2,"ts":"x"}`, ReasonBadTime, `field "ts": "x" is not an RFC 3339 time`},
		{Decoder{}, `{"op":"+","src":1,"dst":2,"ts":-1}`, ReasonTSOutOfRange, `field "ts" is negative (-1): a numeric ts counts milliseconds since 1970`},
		{Decoder{TSUnit: Nanoseconds}, `{"op":"vertex","id":1,"label":"A","ts":-9223372036854775808}`, ReasonTSOutOfRange,
			`field "ts" is negative (-9223372036854775808): a numeric ts counts nanoseconds since 1970`},
		{Decoder{TSUnit: Seconds}, `{"op":"+","src":1,"dst":2,"ts":9223372036854776}`, ReasonTSOutOfRange,
			`field "ts" 9223372036854776 in seconds is past the largest time gcsm holds (year 292278994)`},
		{Decoder{}, `{"op":"+","src":1,"dst":2,"ts":"1969-12-31T23:59:59.999Z"}`, ReasonTSOutOfRange, `field "ts": "1969-12-31T23:59:59.999Z" is before 1970`},
		{Decoder{}, `{"op":"+","src":1,"ts":"1970-01-01T00:30:00+01:00"}`, ReasonTSOutOfRange, `field "ts": "1970-01-01T00:30:00+01:00" is before 1970`},
		// A negative time is refused before the missing dst, as a bad one is.
		{Decoder{}, `{"op":"+","src":1,"ts":-5}`, ReasonTSOutOfRange, `field "ts" is negative (-5): a numeric ts counts milliseconds since 1970`},
		// The time is checked first, whatever else is wrong.
		{Decoder{}, `{"op":"+","src":1,"ts":"2024-06-01"}`, ReasonBadTime, `field "ts": "2024-06-01" is not an RFC 3339 time`},
		{Decoder{}, `{"op":"+","src":1.5,"dst":2}`, ReasonBadValue, `field "src" must be a string or an integer, got 1.5`},
		{Decoder{}, `{"op":"+","src":1,"dst":[2]}`, ReasonBadValue, `field "dst" must be a string or an integer, got [2]`},
		{Decoder{}, `{"op":"+","src":1,"dst":2,"dst_label":true}`, ReasonBadValue, `field "dst_label" must be a string or an integer, got true`},
		{Decoder{}, `x 1 2`, ReasonCSM, `unknown line type "x"`},
		{Decoder{}, `e 1`, ReasonCSM, `edge line needs 2 or 3 fields after "e", got 1`},
		{Decoder{}, `e a 2`, ReasonCSM, `vertex id "a" is not a non-negative integer`},
		{Decoder{}, "e 1 2 \xff", ReasonInvalidUTF8, `edge label is not valid UTF-8 at byte 0: "\xff"`},
		{Decoder{Format: FormatCSM}, `{"op":"+","src":1,"dst":2}`, ReasonCSM, `unknown line type "{\"op\":\"+\",\"src\":1,\"dst\":2}"`},
		{Decoder{Format: FormatSNAP}, `1 2`, ReasonFormat, `a Decoder decodes JSON and CSM, not snap`},
		{Decoder{TSUnit: -1}, `e 1 2`, ReasonFormat, `a Decoder reads times in s, ms, us or ns, not TimeUnit(-1)`},
		{Decoder{MaxIDBytes: 4}, `{"op":"+","src":"acct-1","dst":2}`, ReasonIDTooLong, `field "src" is 6 bytes, over the limit of 4 for ids and labels`},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		rec, err := tt.dec.Decode([]byte(tt.in))
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Errorf("Decode(%.40q) = %+v, %v; want a *DecodeError", tt.in, rec, err)
			continue
		}
		if de.Reason != tt.reason || de.Detail != tt.detail || err.Error() != tt.detail {
			t.Errorf("Decode(%.40q):\n got %s: %s\nwant %s: %s", tt.in, de.Reason, de.Detail, tt.reason, tt.detail)
		}
		seen[de.Reason] = true
	}
	for _, r := range DecodeReasons() {
		if !seen[r] {
			t.Errorf("no test of reason %q", r)
		}
	}
}

// TestDecodeMatchesReader decodes each line of files that the Reader
// reads: the same code must give the same records.
func TestDecodeMatchesReader(t *testing.T) {
	for _, in := range []string{
		"e 1 2 7\n+e 3 4 0\n-e 1 2 7\nv 9 3\ne 007 0\n",
		`{"op":"+","src":1,"dst":"b","label":"x","src_label":"A","dst_label":2,"ts":1700000000123}` + "\n" +
			`{"op":"delete","src":"a\u00e9","dst":-3,"ts":"2024-06-01T12:00:00.5Z","extra":[1,{"x":2}]}` + "\n" +
			`{"op":"vertex","id":5,"label":"P"}` + "\n" +
			`{"op":"vertex","src":"v","label":7,"ts":null}` + "\n" +
			`{"op":"insert","src":18446744073709551615,"dst":"2","label":null}` + "\n" +
			designEvent + "\n",
	} {
		want, err := readAll(NewReader(strings.NewReader(in), Options{}))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(in, "\n"), "\n")
		if len(lines) != len(want) {
			t.Fatalf("%d lines but %d records", len(lines), len(want))
		}
		var d Decoder
		for i, line := range lines {
			got, err := d.Decode([]byte(line))
			want[i].Line = 0
			if err != nil || !reflect.DeepEqual(got, want[i]) {
				t.Errorf("Decode(%q) = %+v, %v; the Reader says %+v", line, got, err, want[i])
			}
		}
	}
}

func TestAppendEvent(t *testing.T) {
	tests := []struct {
		rec  Record
		want string
	}{
		{Record{Op: graph.Insert, Src: "acct:17", Dst: "acct:42", Label: "TRANSFER", SrcLabel: "Account", DstLabel: "Account", Time: 1795255200000},
			`{"op":"+","src":"acct:17","dst":"acct:42","label":"TRANSFER","src_label":"Account","dst_label":"Account","ts":1795255200000}`},
		{del(9, "1", "2", ""), `{"op":"-","src":"1","dst":"2"}`},
		{Record{Op: graph.Delete, Src: "1", Dst: "2", DstLabel: "B", Time: -5}, `{"op":"-","src":"1","dst":"2","dst_label":"B","ts":-5}`},
		{timed(vtx(0, "v", "L"), 7), `{"op":"vertex","id":"v","label":"L","ts":7}`},
		{ins(0, "q\"\\/\n\r\t\x00\x1f\x7f", "\xffé\u2028\u2029", "😀"),
			`{"op":"+","src":"q\"\\/\n\r\t\u0000\u001f` + "\x7f" + `","dst":"\ufffdé\u2028\u2029","label":"😀"}`},
		{Record{Op: 0, Src: "1", Dst: "2"}, `{"op":"Op(0)","src":"1","dst":"2"}`},
	}
	for _, tt := range tests {
		got := string(AppendEvent([]byte("x"), tt.rec))
		if got != "x"+tt.want {
			t.Errorf("AppendEvent(%+v)\n got %s\nwant x%s", tt.rec, got, tt.want)
		}
		// encoding/json must read the same strings back.
		var m map[string]any
		if err := json.Unmarshal([]byte(tt.want), &m); err != nil {
			t.Errorf("%s: %v", tt.want, err)
		} else if tt.rec.Op == graph.Insert && (m["src"] != strings.ToValidUTF8(tt.rec.Src, "\uFFFD") || m["dst"] != strings.ToValidUTF8(tt.rec.Dst, "\uFFFD")) {
			t.Errorf("%s: encoding/json reads %q and %q", tt.want, m["src"], m["dst"])
		}
	}
	var d Decoder
	if _, err := d.Decode(AppendEvent(nil, Record{Op: 0, Src: "1", Dst: "2"})); err == nil || err.(*DecodeError).Reason != ReasonUnknownOp {
		t.Errorf("a record without an op reads back as %v, want %s", err, ReasonUnknownOp)
	}
}

// TestDecodeAllocs holds Decode to one allocation, the string that the
// record's strings share.
func TestDecodeAllocs(t *testing.T) {
	for _, in := range []string{designEvent, `{"op":"-","src":17,"dst":42,"ts":1700000000123}`, "e 17 42 3"} {
		var d Decoder
		value := []byte(in)
		if n := testing.AllocsPerRun(100, func() { d.Decode(value) }); n > 1 {
			t.Errorf("Decode(%s): %v allocations, want 1", in, n)
		}
	}
}

func knownReason(r string) bool { return slices.Contains(DecodeReasons(), r) }

// fuzzDecoder is shared by every FuzzDecode input, so that state left by
// one value would show in the next.
var fuzzDecoder Decoder

// fuzzKeep is the PropFilter of the fuzz targets: short names, which the
// fuzzer finds.
var fuzzKeep = NewPropFilter([]string{"a", "b", "n", "amount"}, []string{"a", "c", "country"})

// filterProps returns rec with only the properties that f keeps.
func filterProps(rec Record, f *PropFilter) Record {
	keep := func(l []graph.Prop, vertex bool) []graph.Prop {
		var out []graph.Prop
		for _, p := range l {
			if vertex && f.KeepsVertex(p.Name) || !vertex && f.KeepsEdge(p.Name) {
				out = append(out, p)
			}
		}
		return out
	}
	rec.Props = keep(rec.Props, false)
	rec.SrcProps = keep(rec.SrcProps, true)
	rec.DstProps = keep(rec.DstProps, true)
	return rec
}

// FuzzDecode decodes arbitrary values. A failure is a *DecodeError with a
// known reason; a success is a record that AppendEvent writes as valid JSON
// and Decode reads back unchanged, and that a fresh Decoder decodes alike.
// For JSON, the scanner's reading must be encoding/json's. Which values are
// refused, and why, does not depend on the PropFilter, and a filter keeps
// exactly its names of what AllProps keeps.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		for _, line := range strings.Split(s.data, "\n") {
			f.Add([]byte(line), uint8(s.format))
		}
	}
	for _, s := range []string{designEvent, issueEvent, `{"OP":"+","src":1,"dst":2}`, `{"op":"vertex","id":"\ud800","label":"x"}`,
		`{"op":"-","src":1,"dst":2,"id":7,"props":{"a":1,"b":"x","a":null,"n":true,"z":-1.5e300}}`,
		`{"op":"vertex","id":"c","label":"A","props":{"c":"\u00e9","a":[1]}}`,
		`{"op":"+","src":1,"dst":2,"props":{"n":1e400},"Dst_Props":{"country":"DE","c":null}}`,
		`{"op":"+","src":1,"dst":2,"src_props":{"\u0061":"\ud83d\ude00","c":false},"dst_props":"x"}`,
		`{"op":"+","src":-0,"dst":"é","ts":"2024-06-01T12:00:00+02:00"}`, "e 1 2 \x00", "t 1 2", "# c",
		`{"op":"+","src":1,"dst":2,"x":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
		// Names over fuzzMaxID, and one at it, in each place and format.
		`{"op":"+","src":"acct-000000001","dst":"acct-2"}`, `{"op":"+","src":1,"dst":2,"id":"tx-0000000001"}`,
		`{"op":"vertex","id":"v","label":"\u00e9\u00e9\u00e9\u00e9\u00e9"}`, `{"op":"-","src":1,"dst":2,"src_label":"12345678"}`,
		"e 1234567890 2 3", "v 1 123456789",
		// Sets: of each kind, with nulls, and refused for each reason.
		vertexSetEvent, edgeSetEvent, `{"op":"set","edge":981,"ts":5,"props":{"a":null,"b":1,"a":2}}`,
		`{"op":"set","vertex":7,"props":{"c":null,"country":"DE","x":[1]}}`, `{"op":"set","vertex":"v","edge":"t","props":{}}`,
		`{"op":"set","vertex":"v","src":"a","props":{}}`, `{"op":"set","props":{}}`, `{"op":"set","edge":"t"}`,
		`{"op":"set","Edge":"tx-0000000001","props":{"amount":1}}`, `{"op":"set","vertex":"ééééé","props":{}}`} {
		f.Add([]byte(s), uint8(FormatAuto))
	}
	f.Fuzz(func(t *testing.T, value []byte, format uint8) {
		checkDecode(t, value, Format(format%uint8(FormatJSON+2)))
	})
}

// checkDecode is FuzzDecode of one value, and returns what the Decoder
// with AllProps made of it.
func checkDecode(t *testing.T, value []byte, format Format) (Record, error) {
	fuzzDecoder.Format = format
	fuzzDecoder.MaxBytes = 512
	fuzzDecoder.Keep = fuzzKeep
	rec, err := fuzzDecoder.Decode(value)
	fresh := Decoder{Format: fuzzDecoder.Format, MaxBytes: 512, Keep: fuzzKeep}
	rec2, err2 := fresh.Decode(value)
	if !reflect.DeepEqual(rec, rec2) || (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() {
		t.Fatalf("a used Decoder gives %+v, %v; a fresh one %+v, %v", rec, err, rec2, err2)
	}
	var all Record
	for _, keep := range []*PropFilter{nil, AllProps()} {
		other := Decoder{Format: fuzzDecoder.Format, MaxBytes: 512, Keep: keep}
		rec2, err2 := other.Decode(value)
		// The record of the smaller filter is the other's, filtered.
		got, want := rec2, filterProps(rec, nil)
		if keep != nil {
			got, want = filterProps(rec2, fuzzKeep), rec
		}
		if (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() || err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("Decode(%q) with filter %v: %+v, %v; with fuzzKeep %+v, %v", value, keep, rec2, err2, rec, err)
		}
		if keep != nil && err == nil {
			roundTrip(t, value, rec2, keep)
			all = rec2
		}
	}
	checkIDLimit(t, value, format, rec, err)
	checkScan(t, trimValue(value))
	if err != nil {
		var de *DecodeError
		if !errors.As(err, &de) || !knownReason(de.Reason) || de.Detail == "" {
			t.Fatalf("Decode(%q): %#v, want a *DecodeError with a known reason", value, err)
		}
		return Record{}, err
	}
	rec.Line = 1
	checkRecord(t, rec)
	rec.Line = 0
	roundTrip(t, value, rec, fuzzKeep)
	return all, nil
}

// fuzzMaxID is the limit on ids and labels that checkIDLimit sets: short
// enough for the fuzzer's names to cross it.
const fuzzMaxID = 8

// checkIDLimit decodes value again with MaxIDBytes fuzzMaxID: the limit
// refuses exactly the records that rec, decoded without it, has a longer id
// or label in, with ReasonIDTooLong, and changes nothing else.
func checkIDLimit(t *testing.T, value []byte, format Format, rec Record, err error) {
	t.Helper()
	d := Decoder{Format: format, MaxBytes: 512, MaxIDBytes: fuzzMaxID, Keep: fuzzKeep}
	got, gerr := d.Decode(value)
	longest := max(len(rec.Src), len(rec.Dst), len(rec.ID), len(rec.Label), len(rec.SrcLabel), len(rec.DstLabel))
	var de *DecodeError
	switch {
	case err != nil:
		if gerr == nil || gerr.Error() != err.Error() {
			t.Fatalf("Decode(%q) with MaxIDBytes %d: %v; without: %v", value, fuzzMaxID, gerr, err)
		}
	case longest > fuzzMaxID:
		if !errors.As(gerr, &de) || de.Reason != ReasonIDTooLong || !strings.Contains(de.Detail, fmt.Sprintf("bytes, over the limit of %d", fuzzMaxID)) {
			t.Fatalf("Decode(%q) with MaxIDBytes %d: %+v, %v; want %s for a name of %d bytes", value, fuzzMaxID, got, gerr, ReasonIDTooLong, longest)
		}
	case gerr != nil || !reflect.DeepEqual(got, rec):
		t.Fatalf("Decode(%q) with MaxIDBytes %d: %+v, %v; without: %+v", value, fuzzMaxID, got, gerr, rec)
	}
}

// FuzzDecodeProps decodes an edge event whose "props" are arbitrary: as
// FuzzDecode, and the properties kept must be those that encoding/json
// reads, the last value of each name.
func FuzzDecodeProps(f *testing.F) {
	for _, s := range []string{`{"amount":12000,"currency":"EUR","flagged":false}`, `{}`, `null`, `{"a":1,"a":null}`,
		`{"a":{"b":1}}`, `{"n":1e400}`, `{"\u0061":"\ud83d\ude00","b":-0.0,"c":9007199254740993}`, `{"a":"\ud800"}`, `[1]`, `{"A":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, props []byte) {
		value := append([]byte(`{"op":"+","src":1,"dst":2,"props":`), props...)
		value = append(value, '}')
		rec, err := checkDecode(t, value, FormatJSON)
		if err != nil {
			return
		}
		// props may close the object and give "props" again: the event as
		// a whole says what they are.
		var ev struct {
			Props map[string]any `json:"props"`
		}
		d := json.NewDecoder(bytes.NewReader(value))
		d.UseNumber()
		if err := d.Decode(&ev); err != nil {
			t.Fatalf("Decode(%s) keeps %+v, encoding/json: %v", value, rec.Props, err)
		}
		n := 0
		for name, v := range ev.Props {
			var want graph.Value
			switch v := v.(type) {
			case nil:
				continue
			case string:
				want = graph.StringValue(v)
			case bool:
				want = graph.BoolValue(v)
			case json.Number:
				f, err := v.Float64()
				if err != nil {
					t.Fatalf("Decode(%s) keeps %+v; encoding/json reads %s: %v", value, rec.Props, v, err)
				}
				want = graph.NumberValue(f)
			default:
				t.Fatalf("Decode(%s) keeps %+v; encoding/json reads %s = %v", value, rec.Props, name, v)
			}
			n++
			i := slices.IndexFunc(rec.Props, func(p graph.Prop) bool { return p.Name == name })
			if i < 0 || !rec.Props[i].Value.Equal(want) {
				t.Fatalf("Decode(%s) keeps %+v; encoding/json reads %s = %v", value, rec.Props, name, want)
			}
		}
		if n != len(rec.Props) {
			t.Fatalf("Decode(%s) keeps %+v; encoding/json reads %v", value, rec.Props, ev.Props)
		}
		// A catalog, kept or not, notes every name with the kind of its
		// last value, and of earlier ones (so its names are among
		// encoding/json's keys).
		seen := &graph.Catalog{DefaultEdgeLabel: "0"}
		dec := Decoder{Seen: seen}
		if _, err := dec.Decode(value); err != nil {
			t.Fatalf("Decode(%s) with a catalog: %v", value, err)
		}
		noted, _ := seen.Props(false, "0", false)
		for name, ks := range noted {
			if _, ok := ev.Props[name]; !ok || ks == 0 {
				t.Fatalf("Decode(%s) notes %s as %v; encoding/json reads %v", value, name, ks, ev.Props)
			}
		}
		for _, p := range rec.Props {
			if !noted[p.Name].Has(p.Value.Kind) {
				t.Fatalf("Decode(%s) keeps %+v but notes %v", value, rec.Props, noted)
			}
		}
	})
}

// roundTrip checks that rec, decoded from value with keep, is written by
// AppendEvent as valid JSON that decodes back to rec.
func roundTrip(t *testing.T, value []byte, rec Record, keep *PropFilter) {
	ev := AppendEvent(nil, rec)
	if !json.Valid(ev) {
		t.Fatalf("AppendEvent(%+v) = %s, not valid JSON", rec, ev)
	}
	d := Decoder{Keep: keep}
	back, err := d.Decode(ev)
	if err != nil || !reflect.DeepEqual(back, rec) {
		t.Fatalf("Decode(%q) = %+v\nAppendEvent: %s\nDecode: %+v, %v", value, rec, ev, back, err)
	}
}

// checkScan checks that where the scanner takes line, encoding/json takes
// it too and finds the same values.
func checkScan(t *testing.T, line []byte) {
	if len(line) == 0 || line[0] != '{' {
		return
	}
	var fast, slow jsonLine
	if !fast.scan(line) {
		return
	}
	if err := slow.unmarshal(line); err != nil {
		t.Fatalf("scan takes %q, encoding/json says %v", line, err)
	}
	for k := range numKeys {
		a, b := fast.value(k), slow.value(k)
		if string(a) != string(b) && !(absent(a) && absent(b)) {
			t.Fatalf("%q: scan finds %s = %q, encoding/json %q", line, jsonKeys[k], a, b)
		}
	}
}

// decodeBench are the values of BenchmarkDecode, and the properties kept:
// "props-unread" is a transfer whose properties no query reads.
var decodeBench = []struct {
	name, value string
	keep        *PropFilter
}{
	{"json", designEvent, nil},
	{"json-int-ids", `{"op":"+","src":1234567,"dst":7654321,"label":"7","ts":1795255200000}`, nil},
	{"json-bench", benchEvent, nil},
	{"csm", "e 1234567 7654321 7", nil},
	{"json-props", issueEvent, testKeep},
	{"json-props-unread", issueEvent, nil},
}

// BenchmarkDecode decodes the documented input event and kin; "fallback" is the
// design event through encoding/json, the path the scanner spares. Each
// scanned event takes one allocation, two with properties kept; the figures
// are in docs/experiments.md ("Figures the benchmarks' comments held").
func BenchmarkDecode(b *testing.B) {
	for _, bb := range decodeBench {
		b.Run(bb.name, func(b *testing.B) {
			d := Decoder{Keep: bb.keep}
			value := []byte(bb.value)
			b.SetBytes(int64(len(value)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.Decode(value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	// The same event with a property catalog (Decoder.Seen), as the
	// service decodes: it should be within noise of json-props-unread,
	// since each event has the shape of the one before and skips the
	// catalog.
	b.Run("json-props-unread-seen", func(b *testing.B) {
		d := Decoder{Seen: &graph.Catalog{}}
		value := []byte(issueEvent)
		b.SetBytes(int64(len(value)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := d.Decode(value); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fallback", func(b *testing.B) {
		var j jsonLine
		value := []byte(designEvent)
		b.SetBytes(int64(len(value)))
		b.ReportAllocs()
		for b.Loop() {
			if err := j.unmarshal(value); err != nil {
				b.Fatal(err)
			}
			var rec Record
			if err := j.record(nil, &rec); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAppendEvent writes the documented input event.
func BenchmarkAppendEvent(b *testing.B) {
	var d Decoder
	rec, err := d.Decode([]byte(designEvent))
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendEvent(buf[:0], rec)
	}
}

// TestDecodeTimeUnits reads one numeric ts in each unit: the record holds
// its milliseconds, and an RFC 3339 ts ignores the unit.
func TestDecodeTimeUnits(t *testing.T) {
	const ms = 1795255200000 // 2026-11-21T10:00:00Z
	for _, tt := range []struct {
		unit TimeUnit
		ts   string
		want int64
	}{
		{Milliseconds, "1795255200000", ms},
		{Seconds, "1795255200", ms},
		{Microseconds, "1795255200000123", ms},
		{Nanoseconds, "1795255200000999999", ms},
		{Seconds, `"2026-11-21T10:00:00Z"`, ms},
		{Nanoseconds, `"2026-11-21T10:00:00Z"`, ms},
		{Seconds, "0", 0},
	} {
		// The fast way takes the first event, the general way the second
		// (a vertex) and the third (keys out of order).
		for _, ev := range []string{`{"op":"+","src":"a","dst":"b","ts":%s}`, `{"op":"vertex","id":"a","label":"A","ts":%s}`,
			`{"ts":%s,"op":"-","src":"a","dst":"b"}`} {
			d := Decoder{TSUnit: tt.unit}
			in := fmt.Sprintf(ev, tt.ts)
			rec, err := d.Decode([]byte(in))
			if err != nil || rec.Time != tt.want {
				t.Errorf("%v: Decode(%s) = time %d, %v; want %d", tt.unit, in, rec.Time, err, tt.want)
			}
		}
	}
}

// TestDecodeOddTime checks that a Decoder keeps the first numeric ts that
// lands outside 1990-2100 in its unit, and words a warning that names
// the flag and the unit that fits.
func TestDecodeOddTime(t *testing.T) {
	d := Decoder{}
	for _, in := range []string{
		`{"op":"+","src":"a","dst":"b","ts":1795255200000}`,          // 2026 in ms: fine
		`{"op":"+","src":"a","dst":"b","ts":"1970-01-01T00:00:01Z"}`, // text: no unit to doubt
		`{"op":"+","src":"a","dst":"b"}`,
		`{"op":"+","src":"a","ts":1795255200}`, // refused: not noted
		`e 1 2`,
	} {
		d.Decode([]byte(in))
		if odd, ok := d.OddTime(); ok {
			t.Fatalf("after %s: odd time %+v", in, odd)
		}
	}
	for _, in := range []string{`{"op":"+","src":"a","dst":"b","ts":1795255200}`, `{"op":"+","src":"a","dst":"b","ts":5}`} {
		if _, err := d.Decode([]byte(in)); err != nil {
			t.Fatal(err)
		}
	}
	odd, ok := d.OddTime()
	if !ok || odd != (OddTime{TS: 1795255200, Unit: Milliseconds}) {
		t.Fatalf("OddTime() = %+v, %v; want the first, 1795255200 ms", odd, ok)
	}
	want := "numeric ts 1795255200 read as milliseconds is 1970-01-21T18:40:55.2Z, outside 1990-2100: if ts counts seconds, give --ts-unit s"
	if odd.String() != want {
		t.Errorf("warning\n got %s\nwant %s", odd, want)
	}
	for _, tt := range []struct {
		odd  OddTime
		want string
	}{
		{OddTime{TS: 1795255200000, Unit: Seconds}, "if ts counts milliseconds, give --ts-unit ms"},
		{OddTime{TS: 1795255200000000000, Unit: Microseconds}, "if ts counts nanoseconds, give --ts-unit ns"},
		{OddTime{TS: 7, Unit: Nanoseconds}, "if ts counts another unit, give --ts-unit s, ms, us or ns"},
		{OddTime{TS: 4102444800000, Unit: Milliseconds}, "is 2100-01-01T00:00:00Z, outside 1990-2100: if ts counts another unit"},
	} {
		if !strings.Contains(tt.odd.String(), tt.want) {
			t.Errorf("%+v: %s, want it to say %q", tt.odd, tt.odd, tt.want)
		}
	}
	// The bounds: 1990 is in, 2100 out.
	var o oddTimes
	o.note(1, Milliseconds, plausibleFrom, 1)
	o.note(2, Milliseconds, plausibleTo-1, 2)
	if o.seen {
		t.Errorf("noted %+v inside 1990-2100", o.first)
	}
	o.note(3, Milliseconds, plausibleFrom-1, 3)
	if !o.seen || o.first.Line != 3 {
		t.Errorf("did not note the time just before 1990: %+v", o)
	}
}

func TestParseTimeUnit(t *testing.T) {
	for _, s := range []string{"s", "ms", "us", "ns"} {
		u, err := ParseTimeUnit(s)
		if err != nil || u.String() != s {
			t.Errorf("ParseTimeUnit(%q) = %v, %v", s, u, err)
		}
	}
	for _, s := range []string{"", "sec", "MS", "µs", "seconds"} {
		if _, err := ParseTimeUnit(s); err == nil || !strings.Contains(err.Error(), strconv.Quote(s)) || !strings.Contains(err.Error(), "want s, ms, us or ns") {
			t.Errorf("ParseTimeUnit(%q): %v, want an error naming it and the units", s, err)
		}
	}
}
