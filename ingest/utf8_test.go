package ingest

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gcsm/gcsm/graph"
)

// utf8Cases are lines with a name that is not valid UTF-8, each between
// two good lines of its format, and the error that names the field.
var utf8Cases = []struct {
	format Format
	bad    string
	detail string
}{
	// The two events: each on its own would have become "a\ufffd".
	{FormatJSON, `{"op":"+","src":"a` + "\xff" + `","dst":"b","label":"T"}`, `field "src" is not valid UTF-8 at byte 1: "a\xff"`},
	{FormatJSON, `{"op":"+","src":"a` + "\xfe" + `","dst":"c","label":"T"}`, `field "src" is not valid UTF-8 at byte 1: "a\xfe"`},
	{FormatJSON, `{"op":"+","src":"a","dst":"` + "\xc3" + `"}`, `field "dst" is not valid UTF-8 at byte 0: "\xc3"`},
	{FormatJSON, `{"op":"+","src":"a","dst":"b","label":"T` + "\xed\xa0\x80" + `"}`, `field "label" is not valid UTF-8 at byte 1: "T\xed\xa0\x80"`},
	{FormatJSON, `{"op":"+","src":"a","dst":"b","src_label":"` + "\xc0\xaf" + `"}`, `field "src_label" is not valid UTF-8 at byte 0: "\xc0\xaf"`},
	{FormatJSON, `{"op":"+","src":"a","dst":"b","dst_label":"\u00e9` + "\xff" + `"}`, `field "dst_label" is not valid UTF-8 at byte 6: "\\u00e9\xff"`},
	{FormatJSON, `{"op":"vertex","id":"` + "\xf4\x90\x80\x80" + `","label":"A"}`, `field "id" is not valid UTF-8 at byte 0: "\xf4\x90\x80\x80"`},
	{FormatJSON, `{"op":"` + "\xff" + `","src":"a","dst":"b"}`, `field "op" is not valid UTF-8 at byte 0: "\xff"`},
	{FormatJSON, `{"op":"+","src":"a","dst":"b","ts":"2024` + "\xff" + `"}`, `field "ts" is not valid UTF-8 at byte 4: "2024\xff"`},
	// A key that only matches after unescaping takes encoding/json's path.
	{FormatJSON, `{"\u0073rc":"a` + "\xff" + `","op":"+","dst":"b"}`, `field "src" is not valid UTF-8 at byte 1: "a\xff"`},
	// Escapes of lone surrogates, which encoding/json decodes to U+FFFD.
	{FormatJSON, `{"op":"+","src":"a\ud800","dst":"b"}`, `field "src" is not valid UTF-8: \ud800 is half of a surrogate pair`},
	{FormatJSON, `{"op":"+","src":"a","dst":"\udfffb"}`, `field "dst" is not valid UTF-8: \udfff is half of a surrogate pair`},
	{FormatJSON, `{"op":"+","src":"a","dst":"b","label":"\uDBFF\u0041"}`, `field "label" is not valid UTF-8: \udbff is half of a surrogate pair`},
	{FormatJSON, `{"op":"+","src":"a","dst":"b","label":"\ud800\ud800"}`, `field "label" is not valid UTF-8: \ud800 is half of a surrogate pair`},
	{FormatJSON, `{"op":"vertex","id":"\ud83d\ude00\ude00","label":"A"}`, `field "id" is not valid UTF-8: \ude00 is half of a surrogate pair`},
	{FormatJSON, `{"\u0073rc":"\ud800","op":"+","dst":"b"}`, `field "src" is not valid UTF-8: \ud800 is half of a surrogate pair`},
	{FormatCSM, "v 1 \xff", `vertex label is not valid UTF-8 at byte 0: "\xff"`},
	{FormatCSM, "v 1 A 3\xff", `vertex degree is not valid UTF-8 at byte 1: "3\xff"`},
	{FormatCSM, "e 1 2 L\xff", `edge label is not valid UTF-8 at byte 1: "L\xff"`},
	{FormatCSM, "-e 1\xff 2", `source vertex id is not valid UTF-8 at byte 1: "1\xff"`},
	{FormatCSM, "+e 1 \xe2\x82", `target vertex id is not valid UTF-8 at byte 0: "\xe2\x82"`},
	{FormatCSM, "\xff 1 2", `line type is not valid UTF-8 at byte 0: "\xff"`},
	{FormatSNAP, "a\xff b", `source vertex id is not valid UTF-8 at byte 1: "a\xff"`},
	{FormatSNAP, "a b\xfe 1082040961", `target vertex id is not valid UTF-8 at byte 1: "b\xfe"`},
	{FormatSNAP, "a,b,\xff,5", `edge label is not valid UTF-8 at byte 0: "\xff"`},
}

// goodLine is a valid line of f, to go around bad; a comma in a SNAP line
// makes the file CSV, here the four columns of SNAP's signed networks.
func goodLine(f Format, bad string, i int) string {
	switch {
	case f == FormatJSON:
		return fmt.Sprintf(`{"op":"+","src":"x%d","dst":"y"}`, i)
	case f == FormatCSM:
		return fmt.Sprintf("e %d 9", i)
	case strings.Contains(bad, ","):
		return fmt.Sprintf("x%d,y,1,2", i)
	}
	return fmt.Sprintf("x%d y", i)
}

// TestInvalidUTF8Refused: a name that is not UTF-8 makes its line
// malformed, in files and in messages, with the field named; the lines
// around it are read, and SkipBad counts it.
func TestInvalidUTF8Refused(t *testing.T) {
	for _, tt := range utf8Cases {
		in := goodLine(tt.format, tt.bad, 1) + "\n" + tt.bad + "\n" + goodLine(tt.format, tt.bad, 3) + "\n"
		formats := []Format{tt.format}
		if tt.format == FormatJSON {
			formats = append(formats, FormatAuto)
		}
		for _, format := range formats {
			r := NewReader(strings.NewReader(in), Options{Format: format, File: "in"})
			var got []string
			for {
				rec, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					got = append(got, err.Error())
					continue
				}
				got = append(got, rec.Src)
			}
			want := fmt.Sprint([]string{src(tt.format, 1), "in:2: " + tt.detail, src(tt.format, 3)})
			if fmt.Sprint(got) != want {
				t.Errorf("%v %q:\n got %q\nwant %q", format, tt.bad, got, want)
			}

			r = NewReader(strings.NewReader(in), Options{Format: format, File: "in", SkipBad: true})
			n := 0
			for _, err := r.Next(); err != io.EOF; _, err = r.Next() {
				if err != nil {
					t.Fatalf("%q: SkipBad: %v", tt.bad, err)
				}
				n++
			}
			if n != 2 || r.Skipped() != 1 {
				t.Errorf("%q: SkipBad read %d records and skipped %d, want 2 and 1", tt.bad, n, r.Skipped())
			}
		}
		if tt.format == FormatSNAP {
			continue // not a message format
		}
		_, err := (&Decoder{Format: tt.format}).Decode([]byte(tt.bad))
		var de *DecodeError
		if !errors.As(err, &de) || de.Reason != ReasonInvalidUTF8 || de.Detail != tt.detail {
			t.Errorf("Decode(%q) = %v, want %s: %s", tt.bad, err, ReasonInvalidUTF8, tt.detail)
		}
	}
}

// src is the source id of goodLine(f, i).
func src(f Format, i int) string {
	if f == FormatCSM {
		return fmt.Sprint(i)
	}
	return fmt.Sprintf("x%d", i)
}

// TestValidUTF8Kept: what is valid stays as it is, the replacement
// character and surrogate pairs included.
func TestValidUTF8Kept(t *testing.T) {
	for _, tt := range []struct{ in, src string }{
		{`{"op":"+","src":"a\ud83d\ude00","dst":"b"}`, "a😀"},
		{`{"op":"+","src":"a\uD83D\uDE00\u00e9","dst":"b"}`, "a😀é"},
		{`{"op":"+","src":"a\ufffd","dst":"b"}`, "a\ufffd"},
		{`{"op":"+","src":"a` + "\xef\xbf\xbd" + `","dst":"b"}`, "a\ufffd"},
		{`{"op":"+","src":"\\ud800","dst":"b"}`, `\ud800`},
		{`{"op":"+","src":"` + "\xf4\x8f\xbf\xbf" + `\n","dst":"b"}`, "\U0010ffff\n"},
		{`{"\u0073rc":"\ud800\udc00","op":"+","dst":"b"}`, "\U00010000"},
	} {
		rec, err := (&Decoder{}).Decode([]byte(tt.in))
		if err != nil || rec.Src != tt.src {
			t.Errorf("Decode(%s) = %q, %v; want %q", tt.in, rec.Src, err, tt.src)
		}
	}
}

// jsonID writes id as the body of a JSON string. Bytes that JSON does not
// allow raw are escaped; with escape set, so is every other rune outside
// ASCII, a surrogate that CESU-8 spells as three bytes included, so that a
// lone one becomes a \u escape of it. Bytes that are not UTF-8 are written
// raw otherwise. The JSON string decodes to id exactly when id is UTF-8.
func jsonID(id []byte, escape bool) []byte {
	var b []byte
	lastHigh := false // whether the last thing written is a high surrogate's escape
	for i := 0; i < len(id); {
		r, n := utf8.DecodeRune(id[i:])
		high := false
		switch {
		case r == '"' || r == '\\' || r < 0x20:
			b = fmt.Appendf(b, `\u%04x`, r)
		case r < utf8.RuneSelf:
			b = append(b, byte(r))
		case n == 1 && escape && i+2 < len(id) && id[i] == 0xed && id[i+1]&0xe0 == 0xa0 && id[i+2]&0xc0 == 0x80:
			s := 0xd000 | rune(id[i+1]&0x3f)<<6 | rune(id[i+2]&0x3f)
			if s >= 0xdc00 && lastHigh {
				// Escaped, this would complete a pair and decode to a valid
				// rune that id does not hold: keep its bytes.
				b = append(b, id[i:i+3]...)
			} else {
				b = fmt.Appendf(b, `\u%04x`, s)
				high = s < 0xdc00
			}
			n = 3
		case n == 1 || !escape:
			b = append(b, id[i:i+n]...)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			b = fmt.Appendf(b, `\u%04x\u%04X`, hi, lo)
		default:
			b = fmt.Appendf(b, `\u%04X`, r)
		}
		lastHigh = high
		i += n
	}
	return b
}

// FuzzDistinctIDs: two different ids never resolve to the same vertex, and
// an id or label that is not UTF-8 is always refused, naming its field.
// Each event goes through both JSON paths (the scanner, and encoding/json
// for escaped keys), with its source escaped or raw, and through SNAP.
func FuzzDistinctIDs(f *testing.F) {
	f.Add([]byte("a\xff"), []byte("a\xfe"), []byte("T"), uint8(0))
	f.Add([]byte("a\xed\xa0\x80"), []byte("a\xed\xb0\x80"), []byte(""), uint8(1))
	f.Add([]byte("a\xed\xa0\xbd\xed\xb8\x80"), []byte("a😀"), []byte("L"), uint8(1))
	f.Add([]byte("a😀é"), []byte("a😀é"), []byte("x\x00"), uint8(3))
	f.Add([]byte("a\ufffd"), []byte("a\xef\xbf"), []byte("\xc0\xaf"), uint8(2))
	f.Add([]byte("1"), []byte("01"), []byte("0"), uint8(0))
	f.Fuzz(func(t *testing.T, a, b, label []byte, mode uint8) {
		// Longer ids are refused by length before identity matters;
		// FuzzDecode and idlimit_test.go hold that rule.
		if max(len(a), len(b), len(label)) > DefaultMaxIDBytes {
			return
		}
		escape, fallback := mode&1 != 0, mode&2 != 0
		srcKey := `"src"`
		if fallback {
			srcKey = `"\u0073rc"`
		}
		ev := fmt.Appendf(nil, `{"op":"+",%s:"%s","dst":"%s"`, srcKey, jsonID(a, escape), jsonID(b, false))
		if len(label) > 0 {
			ev = fmt.Appendf(ev, `,"label":"%s"`, jsonID(label, escape))
		}
		ev = append(ev, '}')

		// The first field refused decides, in the order they are read.
		var want, field string
		for _, fl := range []struct {
			key string
			v   []byte
		}{{"src", a}, {"dst", b}, {"label", label}} {
			switch {
			case len(fl.v) == 0 && fl.key != "label":
				want = ReasonMissingField
			case !utf8.Valid(fl.v):
				want, field = ReasonInvalidUTF8, fmt.Sprintf("field %q", fl.key)
			default:
				continue
			}
			break
		}

		res := &Resolver{IDs: graph.NewIDs(), Labels: graph.NewDict(), DefaultEdgeLabel: "def"}
		check := func(how string, rec Record) {
			u, err := res.Resolve(rec)
			if string(a) == string(b) {
				if !errors.Is(err, ErrSelfLoop) {
					t.Fatalf("%s: Resolve(%+v) = %v, want a self-loop", how, rec, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: Resolve(%+v): %v", how, rec, err)
			}
			if u.Src == u.Dst || res.IDs.Name(u.Src) != string(a) || res.IDs.Name(u.Dst) != string(b) {
				t.Fatalf("%s: %q and %q resolved to vertices %d %q and %d %q", how, a, b,
					u.Src, res.IDs.Name(u.Src), u.Dst, res.IDs.Name(u.Dst))
			}
		}

		rec, err := (&Decoder{Format: FormatJSON}).Decode(ev)
		var de *DecodeError
		switch {
		case want == "" && err != nil:
			t.Fatalf("Decode(%q): %v", ev, err)
		case want == "":
			if rec.Label != string(label) {
				t.Fatalf("Decode(%q): label %q, want %q", ev, rec.Label, label)
			}
			check("json", rec)
		case !errors.As(err, &de) || de.Reason != want || !strings.HasPrefix(de.Detail, field):
			t.Fatalf("Decode(%q) = %+v, %v; want %s of %s", ev, rec, err, want, field)
		}

		// SNAP, where the ids can be written as fields of a line.
		for _, id := range [][]byte{a, b} {
			if len(id) == 0 || strings.ContainsAny(string(id), " \t\r\v\f\n,#%") {
				return
			}
		}
		if string(a[:min(3, len(a))]) == string(bom) {
			return // dropped as the file's byte order mark
		}
		line := fmt.Sprintf("%s %s\n", a, b)
		r := NewReader(strings.NewReader(line), Options{Format: FormatSNAP})
		rec, err = r.Next()
		switch {
		case utf8.Valid(a) && utf8.Valid(b) && err == nil:
			check("snap", rec)
		case utf8.Valid(a) && utf8.Valid(b):
			t.Fatalf("SNAP %q: %v", line, err)
		case err == nil || !strings.Contains(err.Error(), "is not valid UTF-8"):
			t.Fatalf("SNAP %q: %+v, %v; want it refused as not UTF-8", line, rec, err)
		}
	})
}
