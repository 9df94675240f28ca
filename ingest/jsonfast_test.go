package ingest

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/graph"
)

// benchEvent is an event of gcsm bench service's alert-sparse stream, as
// AppendEvent writes it.
const benchEvent = `{"op":"+","src":"acct-123456","dst":"acct-654321","label":"TRANSFER","src_label":"Account","dst_label":"Account","ts":1700000123456}`

// fastCases are values that fast must take (true) or leave to the general
// way (false).
var fastCases = []struct {
	value string
	takes bool
}{
	{benchEvent, true},
	{`{"op":"-","src":"a","dst":"b"}`, true},
	{`{"op":"insert","src":1,"dst":0,"label":"","id":"tx-1","ts":-0}`, true},
	{"{\"op\":\"delete\",\"src\":\"é\",\"dst\":\"\x80\"}", false}, // not UTF-8: the general way words the error
	{`{"op":"delete","src":"é","dst":"ü","ts":9223372036854775807}`, true},
	{`{"op":"delete","src":"é","dst":"ü","ts":-1}`, false}, // negative: the general way refuses it
	{` { "op" : "+" , "src" : "a" , "x" : [1,{"y":null}] , "dst" : "b" , "ts" : 5 } `, true},
	{`{"op":"+","src":"a","dst":"b","id":"t","ts":1,"more":"\u0041"}`, true},
	{`{"op":"+","src":"a","dst":"b","label":"L","src_label":"A","dst_label":"B","id":"i","ts":9223372036854775807}`, true},
	{`{"op":"+","src":"acct-1234567","dst":"abcdefgh","label":"abcdefg"}`, true},
	// Left to the general way: errors, and what fast does not read.
	{`{"op":"+","src":"a","dst":"b","ts":9223372036854775808}`, false},
	{`{"op":"+","src":"a","dst":"b","ts":-9223372036854775809}`, false},
	{`{"op":"+","src":"a","dst":"b","ts":-}`, false},
	{`{"op":"+","src":"a","dst":"b","ts":1.5}`, false},
	{`{"op":"+","src":"a","dst":"b","ts":1e3}`, false},
	{`{"op":"+","src":"a","dst":"b","ts":"2026-11-21T10:00:00Z"}`, true},
	{`{"op":"+","src":"a","dst":"b","ts":"2026-11-21T10:00:00+01:00","x":1}`, true},
	{`{"op":"+","src":"a","dst":"b","ts":"2026-11-21 10:00:00"}`, false},
	{`{"op":"+","src":"a","dst":"b","ts":"2026-11-21T10:00:00\u005a"}`, false},
	{`{"op":"+","src":"a","dst":"b","ts":""}`, false},
	{`{"op":"+","src":"a","dst":"b","ts":true}`, false},
	{designEvent, true},
	{`{"op":"+","src":"a","dst":"b","ts":01}`, false},
	{`{"op":"+","src":-1,"dst":"b"}`, false},
	{`{"op":"+","src":18446744073709551615,"dst":"b"}`, false},
	{`{"op":"+","src":"a","dst":""}`, false},
	{`{"op":"+","src":"a"}`, false},
	{`{"op":"+","src":"a","dst":null}`, false},
	{`{"op":"+","dst":"b","src":"a"}`, false},
	{`{"op":"+","src":"a","src":"b","dst":"c"}`, false},
	{`{"op":"+","src":"a","dst":"b","SRC":"c"}`, false},
	{`{"op":"+","src":"a","dst":"b","op":"-"}`, false},
	{`{"op":"+","src":"a","dst":"b","props":{}}`, true},
	{issueEvent, true},
	{`{"op":"-","src":1,"dst":2,"id":7,"props":{"a":1,"b":"x","a":null,"n":true,"z":-1.5e300},"src_props":null,"dst_props":{"c":"\u00e9"}}`, true},
	{`{"op":"+","src":"a","dst":"b","props":{"a":[1]}}`, false},
	{`{"op":"+","src":"a","dst":"b","props":{"n":1e400}}`, false},
	{`{"op":"+","src":"a","dst":"b","props":"x"}`, false},
	{`{"op":"+","src":"a","dst":"b","props":{"a":"\ud800"}}`, false},
	{`{"op":"+","src":"a","dst":"b","dst_props":{},"src_props":{}}`, false},
	{`{"op":"+","src":"a","dst":"b","props":{},"props":{"a":1}}`, false},
	{`{"op":"+","src":"a","dst":"b","props":{"a":1}`, false},
	{`{"op":"+","src":"a\"b","dst":"c"}`, false},
	{`{"op":"+","src":"a","dst":"b","\u0078":1}`, false},
	{`{"op":"vertex","id":"a","label":"A"}`, false},
	{`{"src":"a","dst":"b","op":"+"}`, false},
	{`{"op":"x","src":"a","dst":"b"}`, false},
	{`{"op":"+","src":"a","dst":"b"} x`, false},
	{`{"op":"+","src":"a","dst":"b",}`, false},
	{`{"op":"+","src":"a","dst":"b"`, false},
	{`{"op":"+","src":"a","dst":"b","x":tru}`, false},
	{"{\"op\":\"+\",\"src\":\"a\tb\",\"dst\":\"c\"}", false},
}

// TestDecodeFast checks that fast takes the common events and leaves the
// rest, and that parse makes of each what the general way makes.
func TestDecodeFast(t *testing.T) {
	for _, c := range fastCases {
		var j jsonLine
		var rec Record
		if got := j.fast([]byte(strings.TrimSpace(c.value)), fuzzKeep, &rec); got != c.takes {
			t.Errorf("fast(%s) = %v, want %v", c.value, got, c.takes)
		}
		checkFast(t, &j, []byte(strings.TrimSpace(c.value)))
	}
}

// TestDecodeFastAppendEvent checks that fast reads what AppendEvent writes
// of edge records, names and properties of every kind included.
func TestDecodeFastAppendEvent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	plain := []string{"a", "7", "-", " ", "é", "😀", "acct-"}
	escaped := []string{"\"", "\\", "\n", "\x00", "\u2028"}
	name := func() string {
		var sb strings.Builder
		for range rng.IntN(12) {
			if rng.IntN(100) == 0 {
				sb.WriteString(escaped[rng.IntN(len(escaped))])
			} else {
				sb.WriteString(plain[rng.IntN(len(plain))])
			}
		}
		return sb.String()
	}
	var j jsonLine
	taken := 0
	for range 2000 {
		rec := Record{Op: graph.Insert, Src: "s" + name(), Dst: "d" + name(), Label: name(), SrcLabel: name(),
			DstLabel: name(), ID: name(), Time: rng.Int64N(1 << 50)}
		if rng.IntN(2) == 0 {
			rec.Op = graph.Delete
		}
		for _, l := range []*[]graph.Prop{&rec.Props, &rec.SrcProps, &rec.DstProps} {
			for n := range rng.IntN(3) {
				v := graph.StringValue(name())
				switch rng.IntN(3) {
				case 0:
					v = graph.NumberValue(rng.NormFloat64() * 1e6)
				case 1:
					v = graph.BoolValue(rng.IntN(2) == 0)
				}
				*l = append(*l, graph.Prop{Name: "p" + strconv.Itoa(n), Value: v})
			}
		}
		line := AppendEvent(nil, rec)
		var got Record
		if j.fast(line, AllProps(), &got) {
			taken++
			if !reflect.DeepEqual(got, rec) {
				t.Fatalf("fast(%s) = %+v, want %+v", line, got, rec)
			}
		}
		checkFast(t, &j, line)
	}
	// One letter in a hundred needs an escape: about seven records in ten
	// have none.
	if taken < 1000 {
		t.Fatalf("fast took %d of AppendEvent's 2000 events", taken)
	}
}

// TestDecodeFastAllocs checks that the bench's event costs one allocation,
// the string that its names share.
func TestDecodeFastAllocs(t *testing.T) {
	var d Decoder
	value := []byte(benchEvent)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := d.Decode(value); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Fatalf("Decode of the bench's event: %v allocations, want 1", n)
	}
}

// fuzzFast is FuzzDecodeFast's parser, reused from value to value as a
// Decoder's is.
var fuzzFast jsonLine

// FuzzDecodeFast is a differential test of parse, with its fast path,
// against parseGeneral, the way that takes every object: for any value
// both take the same values, make the same Records, and refuse the rest
// with the same errors. A value fast declines leaves the Record alone.
func FuzzDecodeFast(f *testing.F) {
	for _, c := range fastCases {
		f.Add([]byte(c.value))
	}
	for _, s := range fuzzSeeds {
		for _, line := range strings.Split(s.data, "\n") {
			f.Add([]byte(line))
		}
	}
	f.Add([]byte(designEvent))
	f.Add([]byte(issueEvent))
	f.Fuzz(func(t *testing.T, value []byte) {
		line := trimValue(value)
		if len(line) == 0 || line[0] != '{' {
			return
		}
		var rec Record
		if !fuzzFast.fast(line, fuzzKeep, &rec) && !reflect.DeepEqual(rec, Record{}) {
			t.Fatalf("fast(%q) declines, but sets %+v", line, rec)
		}
		checkFast(t, &fuzzFast, line)
	})
}

// checkFast checks that j.parse, fast path and all, makes of line what
// parseGeneral of a fresh jsonLine makes, under each filter of the fuzz
// targets.
func checkFast(t *testing.T, j *jsonLine, line []byte) {
	t.Helper()
	defer func() { j.unit = Milliseconds }()
	for _, keep := range []*PropFilter{nil, fuzzKeep, AllProps()} {
		for u := Milliseconds; u <= Nanoseconds; u++ {
			var got, want Record
			j.unit = u
			err := j.parse(line, keep, &got)
			general := jsonLine{unit: u}
			werr := general.parseGeneral(line, keep, &want)
			switch {
			case (err == nil) != (werr == nil):
				t.Fatalf("%q in %v: parse says %v, the general way %v", line, u, err, werr)
			case err != nil && *err != *werr:
				t.Fatalf("%q in %v: parse refuses with %+v, the general way with %+v", line, u, *err, *werr)
			case err == nil && !reflect.DeepEqual(got, want):
				t.Fatalf("%q in %v: parse makes %+v, the general way %+v", line, u, got, want)
			case err == nil && (j.numTS != general.numTS || j.numTS && j.rawTS != general.rawTS):
				t.Fatalf("%q in %v: parse reads ts %v %d, the general way %v %d", line, u, j.numTS, j.rawTS, general.numTS, general.rawTS)
			}
		}
	}
}

// TestFastDigits checks fastDigits against strconv on integers of every
// length, and the numbers it leaves to the general way.
func TestFastDigits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 2000 {
		v := rng.Uint64() >> rng.IntN(64)
		b := strconv.AppendUint(nil, v, 10)
		b = append(b, "}xxxxxxxx"[:n%9]...)
		end, got := fastDigits(b, 0)
		digits := len(strconv.FormatUint(v, 10))
		switch {
		case digits > 19 && end != -1:
			t.Fatalf("fastDigits(%s) = %d, %d; want -1 for 20 digits", b, end, got)
		case digits <= 19 && (end != digits || got != v):
			t.Fatalf("fastDigits(%s) = %d, %d; want %d, %d", b, end, got, digits, v)
		}
	}
	for _, s := range []string{"", "x", "01", "1.5", "12345678e1", "123456789.", "-1", "1234567:"} {
		want := -1
		if s == "1234567:" {
			want = 7
		}
		if end, _ := fastDigits([]byte(s), 0); end != want {
			t.Errorf("fastDigits(%q) ends at %d, want %d", s, end, want)
		}
	}
}
