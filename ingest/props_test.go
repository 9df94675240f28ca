package ingest

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/graph"
)

// issueEvent is the input event of a transfer that issue 24 shows.
const issueEvent = `{"op":"+","src":"acct:1","dst":"acct:2","label":"TRANSFER","id":"tx-981","ts":"2026-11-20T10:00:00Z","props":{"amount":12000,"currency":"EUR","flagged":false},"src_props":{"country":"DE"}}`

// testKeep is the filter of the property tests: what the queries of a
// fraud team might read, and a few names for the corners.
var testKeep = NewPropFilter(
	[]string{"amount", "currency", "flagged", "n", "s", "b", "é", "a\"b", "😀"},
	[]string{"country", "since", "n"},
)

func num(name string, f float64) graph.Prop {
	return graph.Prop{Name: name, Value: graph.NumberValue(f)}
}
func str(name, s string) graph.Prop { return graph.Prop{Name: name, Value: graph.StringValue(s)} }
func boolean(name string, b bool) graph.Prop {
	return graph.Prop{Name: name, Value: graph.BoolValue(b)}
}
func props(p ...graph.Prop) []graph.Prop       { return p }
func edge(props []graph.Prop, r Record) Record { r.Props = props; return r }

func TestDecodeProps(t *testing.T) {
	// ev is an insertion of 1->2 with the fields given after dst.
	ev := func(fields string) string { return `{"op":"+","src":1,"dst":2` + fields + `}` }
	tests := []struct {
		name string
		keep *PropFilter
		in   string
		want Record
	}{
		{"the issue's transfer", testKeep, issueEvent, Record{Op: graph.Insert, Src: "acct:1", Dst: "acct:2", Label: "TRANSFER",
			ID: "tx-981", Time: 1795168800000, Props: props(num("amount", 12000), str("currency", "EUR"), boolean("flagged", false)),
			SrcProps: props(str("country", "DE"))}},
		{"nil keeps none", nil, issueEvent, Record{Op: graph.Insert, Src: "acct:1", Dst: "acct:2", Label: "TRANSFER",
			ID: "tx-981", Time: 1795168800000}},
		{"an empty filter keeps none", NewPropFilter(nil, nil), issueEvent, Record{Op: graph.Insert, Src: "acct:1", Dst: "acct:2",
			Label: "TRANSFER", ID: "tx-981", Time: 1795168800000}},
		{"every kind", testKeep, ev(`,"props":{"n":-1.5e-3,"s":"x","b":true,"flagged":false}`),
			edge(props(num("n", -0.0015), str("s", "x"), boolean("b", true), boolean("flagged", false)), ins(0, "1", "2", ""))},
		{"unnamed are skipped", testKeep, ev(`,"props":{"x":"z","amount":3,"y":-1e300,"z":null}`),
			edge(props(num("amount", 3)), ins(0, "1", "2", ""))},
		{"null is absent", testKeep, ev(`,"props":{"amount":null,"s":"v"},"src_props":null,"dst_props":{"country":null}`),
			edge(props(str("s", "v")), ins(0, "1", "2", ""))},
		{"empty objects", testKeep, ev(`,"props":{},"src_props":{ },"dst_props":{}`), ins(0, "1", "2", "")},
		{"a name given twice keeps its last value", testKeep, ev(`,"props":{"n":1,"s":"a","n":2}`),
			edge(props(num("n", 2), str("s", "a")), ins(0, "1", "2", ""))},
		{"a last null removes", testKeep, ev(`,"props":{"n":1,"s":"a","n":null}`), edge(props(str("s", "a")), ins(0, "1", "2", ""))},
		{"a null then a value", testKeep, ev(`,"props":{"n":1,"n":null,"n":3}`), edge(props(num("n", 3)), ins(0, "1", "2", ""))},
		{"edge and vertex names apart", testKeep, ev(`,"props":{"n":1,"country":"x"},"src_props":{"n":2,"amount":5},"dst_props":{"since":2019}`),
			Record{Op: graph.Insert, Src: "1", Dst: "2", Props: props(num("n", 1)), SrcProps: props(num("n", 2)), DstProps: props(num("since", 2019))}},
		{"vertex props", testKeep, `{"op":"vertex","id":"acct:3","label":"Account","props":{"country":"FR","amount":1},"src_props":{"since":1}}`,
			Record{Op: graph.AddVertex, Src: "acct:3", SrcLabel: "Account", SrcProps: props(str("country", "FR"))}},
		{"a delete names its edge", testKeep, `{"op":"-","src":"acct:1","dst":"acct:2","label":"TRANSFER","id":"tx-981"}`,
			Record{Op: graph.Delete, Src: "acct:1", Dst: "acct:2", Label: "TRANSFER", ID: "tx-981"}},
		{"integer ids", nil, ev(`,"id":18446744073709551615`), Record{Op: graph.Insert, Src: "1", Dst: "2", ID: "18446744073709551615"}},
		{"negative and zero ids", nil, `{"op":"+","src":1,"dst":2,"id":-0}`, Record{Op: graph.Insert, Src: "1", Dst: "2", ID: "0"}},
		{"an empty id is none", nil, ev(`,"id":""`), ins(0, "1", "2", "")},
		{"huge numbers", testKeep, ev(`,"props":{"n":1.7976931348623157e308,"amount":123456789012345678901234567890}`),
			edge(props(num("n", math.MaxFloat64), num("amount", 1.2345678901234568e29)), ins(0, "1", "2", ""))},
		{"integers past 2^53 round", testKeep, ev(`,"props":{"n":9007199254740993,"amount":-9223372036854775808}`),
			edge(props(num("n", 9007199254740992), num("amount", math.MinInt64)), ins(0, "1", "2", ""))},
		{"tiny numbers", testKeep, ev(`,"props":{"n":1e-400,"amount":5e-324}`),
			edge(props(num("n", 0), num("amount", 5e-324)), ins(0, "1", "2", ""))},
		{"unicode", testKeep, ev(`,"props":{"é":"Zürich 😀","\u00e9":"\u00e9\ud83d\ude00","a\"b":"\n","😀":"\u2028"}`),
			edge(props(str("é", "é😀"), str("a\"b", "\n"), str("😀", "\u2028")), ins(0, "1", "2", ""))},
		{"unicode names not kept", testKeep, ev(`,"props":{"É":"x","é ":"y","\u00c9":1}`), ins(0, "1", "2", "")},
		{"white space", testKeep, ev(`,"props" : { "n" : 1 , "s" : "x" } `), edge(props(num("n", 1), str("s", "x")), ins(0, "1", "2", ""))},
		// encoding/json's path: a folded key, and nesting past the scanner.
		{"folded keys", testKeep, `{"OP":"+","Src":1,"dst":2,"PROPS":{"n":1},"Src_Props":{"country":"DE"},"ID":"t"}`,
			Record{Op: graph.Insert, Src: "1", Dst: "2", ID: "t", Props: props(num("n", 1)), SrcProps: props(str("country", "DE"))}},
		{"deep elsewhere", testKeep, ev(`,"x":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `,"props":{"n":1,"n":2}`),
			edge(props(num("n", 2)), ins(0, "1", "2", ""))},
		{"all", AllProps(), ev(`,"props":{"x":1,"":"e","\u00e9":true,"x":2},"dst_props":{"y":null,"z":"w"}`),
			Record{Op: graph.Insert, Src: "1", Dst: "2", Props: props(num("x", 2), str("", "e"), boolean("é", true)), DstProps: props(str("z", "w"))}},
	}
	for _, tt := range tests {
		d := Decoder{Keep: tt.keep}
		got, err := d.Decode([]byte(tt.in))
		if err != nil {
			t.Errorf("%s: Decode(%s): %v", tt.name, tt.in, err)
			continue
		}
		if !sameRecord(got, tt.want) {
			t.Errorf("%s: Decode(%s)\n got %+v\nwant %+v", tt.name, tt.in, got, tt.want)
		}
		// The lists must not share spare capacity: appending to one would
		// overwrite the next.
		for _, l := range [][]graph.Prop{got.Props, got.SrcProps, got.DstProps} {
			if len(l) != cap(l) {
				t.Errorf("%s: a list of %d properties has capacity %d", tt.name, len(l), cap(l))
			}
		}
		// The file Reader reads the same line alike.
		r := NewReader(strings.NewReader(tt.in+"\n"), Options{Keep: tt.keep})
		rec, err := r.Next()
		rec.Line = 0
		if err != nil || !sameRecord(rec, tt.want) {
			t.Errorf("%s: the Reader reads %+v, %v", tt.name, rec, err)
		}
	}
}

// TestDecodePropsErrors: bad properties are refused with the field and the
// property named, whatever the filter keeps.
func TestDecodePropsErrors(t *testing.T) {
	ev := func(fields string) string { return `{"op":"+","src":1,"dst":2` + fields + `}` }
	tests := []struct {
		in     string
		reason string
		detail string
	}{
		{ev(`,"props":{"n":{"a":1}}`), ReasonBadValue, `field "props" key "n" must be a number, a string, a boolean or null, got {"a":1}`},
		{ev(`,"props":{"x":1,"y":[1,2]}`), ReasonBadValue, `field "props" key "y" must be a number, a string, a boolean or null, got [1,2]`},
		{ev(`,"src_props":{"country":[]}`), ReasonBadValue, `field "src_props" key "country" must be a number, a string, a boolean or null, got []`},
		{`{"op":"vertex","id":1,"label":"A","props":{"n":{}}}`, ReasonBadValue, `field "props" key "n" must be a number, a string, a boolean or null, got {}`},
		{ev(`,"dst_props":{"a\u00e9":[` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `]}`), ReasonBadValue,
			`field "dst_props" key "aé" must be a number, a string, a boolean or null, got [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[...`},
		{ev(`,"props":"amount"`), ReasonBadValue, `field "props" must be an object of properties, got "amount"`},
		{ev(`,"props":[{"amount":1}]`), ReasonBadValue, `field "props" must be an object of properties, got [{"amount":1}]`},
		{ev(`,"dst_props":5`), ReasonBadValue, `field "dst_props" must be an object of properties, got 5`},
		{ev(`,"src_props":false`), ReasonBadValue, `field "src_props" must be an object of properties, got false`},
		{ev(`,"props":{"n":1e400}`), ReasonBadValue, `field "props" key "n" is out of the range of a number (a float64): 1e400`},
		{ev(`,"props":{"amount":-1` + strings.Repeat("0", 400) + `}`), ReasonBadValue,
			`field "props" key "amount" is out of the range of a number (a float64): -100000000000000000000000000000000000000...`},
		{ev(`,"props":{"s":"a` + "\xff" + `"}`), ReasonInvalidUTF8, `field "props" key "s" is not valid UTF-8 at byte 1: "a\xff"`},
		{ev(`,"props":{"x":"\ud800"}`), ReasonInvalidUTF8, `field "props" key "x" is not valid UTF-8: \ud800 is half of a surrogate pair`},
		{ev(`,"props":{"\udc00":1}`), ReasonInvalidUTF8, `a property name in field "props" is not valid UTF-8: \udc00 is half of a surrogate pair`},
		{ev(`,"src_props":{"` + "\xc3" + `":1}`), ReasonInvalidUTF8, `a property name in field "src_props" is not valid UTF-8 at byte 0: "\xc3"`},
		{ev(`,"id":1.5`), ReasonBadValue, `field "id" must be a string or an integer, got 1.5`},
		{ev(`,"id":true`), ReasonBadValue, `field "id" must be a string or an integer, got true`},
		{ev(`,"id":{"tx":1}`), ReasonBadValue, `field "id" must be a string or an integer, got {"tx":1}`},
		{ev(`,"id":"` + "\xff" + `"`), ReasonInvalidUTF8, `field "id" is not valid UTF-8 at byte 0: "\xff"`},
		// The time is still checked first; then the names, then the properties.
		{ev(`,"props":{"n":[]},"ts":"noon"`), ReasonBadTime, `field "ts": "noon" is not an RFC 3339 time`},
		{ev(`,"props":{"n":[]},"label":1.5`), ReasonBadValue, `field "label" must be a string or an integer, got 1.5`},
		{`{"op":"+","src":1,"props":{"n":[]}}`, ReasonMissingField, `missing field "dst"`},
	}
	for _, tt := range tests {
		for _, keep := range []*PropFilter{nil, testKeep, AllProps()} {
			d := Decoder{Keep: keep}
			rec, err := d.Decode([]byte(tt.in))
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Errorf("Decode(%.60q) = %+v, %v; want a *DecodeError", tt.in, rec, err)
				continue
			}
			if de.Reason != tt.reason || de.Detail != tt.detail {
				t.Errorf("Decode(%.60q):\n got %s: %s\nwant %s: %s", tt.in, de.Reason, de.Detail, tt.reason, tt.detail)
			}
		}
	}
}

// TestDecodePropsAllocs holds Decode to its one allocation of strings when
// it keeps no property, however many the event gives, and to a second, for
// the lists, when it keeps some.
func TestDecodePropsAllocs(t *testing.T) {
	for _, tt := range []struct {
		keep   *PropFilter
		in     string
		allocs float64
	}{
		{testKeep, designEvent, 1},
		{nil, issueEvent, 1},
		{NewPropFilter([]string{"other"}, []string{"other"}), issueEvent, 1},
		{nil, `{"op":"+","src":1,"dst":2,"props":{"city":"Zürich","x":"\u00e9","n":1.25,"m":1e300,"b":true}}`, 1},
		{testKeep, issueEvent, 2},
		{testKeep, `{"op":"+","src":1,"dst":2,"props":{"n":12000.75,"s":"Zürich","b":true},"src_props":{"n":1},"dst_props":{"country":"DE"}}`, 2},
	} {
		d := Decoder{Keep: tt.keep}
		value := []byte(tt.in)
		if _, err := d.Decode(value); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { d.Decode(value) }); n != tt.allocs {
			t.Errorf("Decode(%s): %v allocations, want %v", tt.in, n, tt.allocs)
		}
	}
}

func TestPropFilter(t *testing.T) {
	f := NewPropFilter([]string{"amount", ""}, []string{"country"})
	for _, tt := range []struct {
		f            *PropFilter
		name         string
		edge, vertex bool
	}{
		{f, "amount", true, false},
		{f, "country", false, true},
		{f, "Amount", false, false},
		{f, "", false, false},
		{nil, "amount", false, false},
		{AllProps(), "anything", true, true},
	} {
		if e, v := tt.f.KeepsEdge(tt.name), tt.f.KeepsVertex(tt.name); e != tt.edge || v != tt.vertex {
			t.Errorf("%v keeps %q: edge %v, vertex %v; want %v, %v", tt.f, tt.name, e, v, tt.edge, tt.vertex)
		}
	}
}

func TestAppendEventProps(t *testing.T) {
	tests := []struct {
		rec  Record
		want string
	}{
		{Record{Op: graph.Insert, Src: "acct:1", Dst: "acct:2", Label: "TRANSFER", ID: "tx-981", Time: 1795168800000,
			Props: props(num("amount", 12000), str("currency", "EUR"), boolean("flagged", false)), SrcProps: props(str("country", "DE"))},
			`{"op":"+","src":"acct:1","dst":"acct:2","label":"TRANSFER","id":"tx-981","ts":1795168800000,"props":{"amount":12000,"currency":"EUR","flagged":false},"src_props":{"country":"DE"}}`},
		{Record{Op: graph.Delete, Src: "1", Dst: "2", ID: "7", DstProps: props(num("n", 1e21), num("m", -0.000001), num("k", 1234567.25), num("e", 1.5e-7))},
			`{"op":"-","src":"1","dst":"2","id":"7","dst_props":{"n":1e+21,"m":-0.000001,"k":1234567.25,"e":1.5e-7}}`},
		{Record{Op: graph.AddVertex, Src: "v", SrcLabel: "A", Time: 5, SrcProps: props(str("q\"", "é\x00"), boolean("b", true))},
			`{"op":"vertex","id":"v","label":"A","ts":5,"props":{"q\"":"é\u0000","b":true}}`},
		// What JSON cannot spell is written as null; a Time as its unix milliseconds.
		{Record{Op: graph.Insert, Src: "1", Dst: "2", Props: props(num("nan", math.NaN()), num("inf", math.Inf(-1)),
			graph.Prop{Name: "null"}, graph.Prop{Name: "t", Value: graph.TimeValue(1700000000123)})},
			`{"op":"+","src":"1","dst":"2","props":{"nan":null,"inf":null,"null":null,"t":1700000000123}}`},
		{Record{Op: graph.Insert, Src: "1", Dst: "2", Props: []graph.Prop{}, SrcProps: []graph.Prop{}}, `{"op":"+","src":"1","dst":"2"}`},
	}
	for _, tt := range tests {
		if got := string(AppendEvent(nil, tt.rec)); got != tt.want {
			t.Errorf("AppendEvent(%+v)\n got %s\nwant %s", tt.rec, got, tt.want)
		}
	}
	// The first three read back as they were.
	for _, tt := range tests[:3] {
		d := Decoder{Keep: AllProps()}
		back, err := d.Decode([]byte(tt.want))
		if err != nil || !sameRecord(back, tt.rec) {
			t.Errorf("Decode(%s) = %+v, %v; want %+v", tt.want, back, err, tt.rec)
		}
	}
}

func TestResolveTx(t *testing.T) {
	p := props(num("amount", 12000))
	sp := props(str("country", "DE"))
	tests := []struct {
		name     string
		keepTime bool
		rec      Record
		want     *graph.Transfer
	}{
		{"bare", false, timed(ins(1, "a", "b", "T"), 5), nil},
		{"bare delete", false, del(1, "a", "b", "T"), nil},
		{"id", false, Record{Op: graph.Insert, Src: "a", Dst: "b", ID: "tx", Time: 5}, &graph.Transfer{ID: "tx", Time: 5}},
		{"delete by id", false, Record{Op: graph.Delete, Src: "a", Dst: "b", ID: "tx"}, &graph.Transfer{ID: "tx"}},
		{"props", false, Record{Op: graph.Insert, Src: "a", Dst: "b", Time: 7, Props: p}, &graph.Transfer{Time: 7, Props: p}},
		{"endpoint props", false, Record{Op: graph.Insert, Src: "a", Dst: "b", SrcProps: sp, DstProps: p},
			&graph.Transfer{SrcProps: sp, DstProps: p}},
		{"KeepTime", true, timed(ins(1, "a", "b", "T"), 5), &graph.Transfer{Time: 5}},
		{"KeepTime without a time", true, del(1, "a", "b", "T"), &graph.Transfer{}},
		{"KeepTime and all", true, Record{Op: graph.Insert, Src: "a", Dst: "b", ID: "tx", Time: 9, Props: p, SrcProps: sp},
			&graph.Transfer{ID: "tx", Time: 9, Props: p, SrcProps: sp}},
		{"vertex", true, timed(vtx(1, "a", "A"), 5), nil},
		{"vertex props", false, Record{Op: graph.AddVertex, Src: "a", SrcLabel: "A", Time: 3, SrcProps: sp},
			&graph.Transfer{Time: 3, SrcProps: sp}},
	}
	for _, tt := range tests {
		r := &Resolver{IDs: graph.NewIDs(), Labels: graph.NewDict(), KeepTime: tt.keepTime}
		u, err := r.Resolve(tt.rec)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !reflect.DeepEqual(u.Tx, tt.want) {
			t.Errorf("%s: Tx %+v, want %+v", tt.name, u.Tx, tt.want)
		}
		// ResolveKnown gives the same, and a fresh Transfer each time.
		var k Known
		k.ID[0], k.OK[0] = r.IDs.Lookup(tt.rec.Src)
		k.ID[1], k.OK[1] = r.IDs.Lookup(tt.rec.Dst)
		u2, err := r.ResolveKnown(tt.rec, k)
		if err != nil || !reflect.DeepEqual(u2, u) || u.Tx != nil && u2.Tx == u.Tx {
			t.Errorf("%s: ResolveKnown %+v, %v; Resolve %+v", tt.name, u2, err, u)
		}
	}
}

// TestResolveTxAllocs holds Resolve to one allocation, the Transfer, for an
// update that needs one, and to none for one that does not.
func TestResolveTxAllocs(t *testing.T) {
	for _, tt := range []struct {
		keepTime bool
		rec      Record
		allocs   float64
	}{
		{false, timed(ins(1, "a", "b", "T"), 5), 0},
		{true, timed(ins(1, "a", "b", "T"), 5), 1},
		{false, Record{Op: graph.Insert, Src: "a", Dst: "b", Label: "T", ID: "tx", Props: props(num("amount", 1))}, 1},
		{false, Record{Op: graph.AddVertex, Src: "a", SrcLabel: "A", SrcProps: props(num("n", 1))}, 1},
	} {
		r := &Resolver{IDs: graph.NewIDs(), Labels: graph.NewDict(), KeepTime: tt.keepTime}
		if _, err := r.Resolve(tt.rec); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { r.Resolve(tt.rec) }); n != tt.allocs {
			t.Errorf("Resolve(%+v) with KeepTime %v: %v allocations, want %v", tt.rec, tt.keepTime, n, tt.allocs)
		}
	}
}
