package ingest

import (
	"errors"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/graph"
)

// TestCSVHeader reads CSV files whose header names the columns in any
// order, with properties beside the record's fields.
func TestCSVHeader(t *testing.T) {
	const ms = 1795255200000 // 2026-11-21T10:00:00Z
	full := Record{Op: graph.Insert, Src: "a", Dst: "b", Label: "TRANSFER", SrcLabel: "Account", DstLabel: "Account", ID: "tx-1", Time: ms, Line: 2}
	tests := []struct {
		name string
		opts Options
		in   string
		want []Record
	}{
		{"every field, reordered, with properties", Options{Keep: AllProps()},
			"op,ts,id,amount,dst_label,dst,src,src_label,label,currency,code\n" +
				"+,1795255200000,tx-1,12000.5,Account,b,a,Account,TRANSFER,EUR,007\n" +
				"delete,2026-11-21T10:00:00Z,,,,b,a,,,,\n" +
				"insert, 1795255200000 ,,-3, , c ,a,,,+5,1e3\n",
			[]Record{
				edge(props(num("amount", 12000.5), str("currency", "EUR"), str("code", "007")), full),
				timed(del(3, "a", "b", ""), ms),
				edge(props(num("amount", -3), str("currency", "+5"), num("code", 1000)), timed(ins(4, "a", "c", ""), ms)),
			}},
		{"the filter keeps what queries read", Options{Keep: NewPropFilter([]string{"amount"}, []string{"currency"})},
			"src,dst,amount,currency\na,b,5,EUR\na,b,,EUR\n",
			[]Record{edge(props(num("amount", 5)), ins(2, "a", "b", "")), ins(3, "a", "b", "")}},
		{"names in any case, and SNAP's", Options{},
			"SRC,Target,Label,TIMESTAMP\na,b,x,1795255200000\n",
			[]Record{timed(ins(2, "a", "b", "x"), ms)}},
		{"times in seconds", Options{TSUnit: Seconds},
			"src,dst,ts\na,b,1795255200\na,b,\n",
			[]Record{timed(ins(2, "a", "b", ""), ms), ins(3, "a", "b", "")}},
		{"times in nanoseconds", Options{TSUnit: Nanoseconds},
			"ts,dst,src\n1795255200000000000,b,a\n",
			[]Record{timed(ins(2, "a", "b", ""), ms)}},
		{"headerless, by position, in the unit", Options{TSUnit: Seconds},
			"1,2,1795255200\n3,4,x,1795255200\n",
			[]Record{timed(ins(1, "1", "2", ""), ms), timed(ins(2, "3", "4", "x"), ms)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Format = FormatSNAP
			got, err := readAll(NewReader(strings.NewReader(tt.in), tt.opts))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestCSVHeaderErrors checks the refusals of headers and of the lines
// under them, each naming its file and line.
func TestCSVHeaderErrors(t *testing.T) {
	tests := []struct {
		opts Options
		in   string
		want []string // the errors of the calls of Next, up to io.EOF
	}{
		// The case: read by position, this made a -> TRANSFER.
		{Options{}, "src,label,ts\na,TRANSFER,5\na,TRANSFER,6\n", []string{
			`in:1: CSV header "src,label,ts": no column is named "dst"`,
			`in:2: not read: the CSV header on line 1 was refused`,
			`in:3: not read: the CSV header on line 1 was refused`}},
		{Options{}, "# x\ndst,label\n", []string{`in:2: CSV header "dst,label": no column is named "src"`}},
		{Options{}, "alice,bob\ncarol,dave\n", []string{
			`in:1: CSV header "alice,bob": no column is named "src" or "dst"; a CSV file's first line without a number is its header, which names its columns (src, dst, label, src_label, dst_label, ts, id, op; any other is a property)`,
			`in:2: not read: the CSV header on line 1 was refused`}},
		{Options{}, "src,dst,SRC\n", []string{`in:1: CSV header "src,dst,SRC": columns 1 and 3 both name "src"`}},
		{Options{}, "source,dst,src\n", []string{`in:1: CSV header "source,dst,src": columns 1 and 3 both name "src"`}},
		{Options{}, "src,dst,amount,amount\n", []string{`in:1: CSV header "src,dst,amount,amount": columns 3 and 4 both name "amount"`}},
		{Options{}, "src,dst,,x\n", []string{`in:1: CSV header "src,dst,,x": column 3 has no name`}},
		{Options{}, "src,dst,\xff\n", []string{`in:1: CSV header "src,dst,\xff": the name of column 3 is not valid UTF-8 at byte 0: "\xff"`}},
		{Options{}, "src,dst,op\na,b,upsert\na,b,\na,b,-\n", []string{`in:2: unknown op "upsert": want +, -, insert or delete`, `in:3: empty field "op"`, ""}},
		{Options{}, "src,dst\n,b\na,\n", []string{`in:2: empty field "src"`, `in:3: empty field "dst"`}},
		{Options{}, "src,dst,label\na,b,\xfe\n", []string{`in:2: field "label" is not valid UTF-8 at byte 0: "\xfe"`}},
		{Options{}, "src,dst,x\na,b,\xfe\n", []string{`in:2: property "x" is not valid UTF-8 at byte 0: "\xfe"`}},
		// Every property is checked, kept or not.
		{Options{}, "src,dst,x\na,b,1e999\n", []string{`in:2: property "x" is out of the range of a number (a float64): 1e999`}},
		{Options{}, "src,dst,ts\na,b,-1\n", []string{`in:2: field "ts" is negative (-1): a numeric ts counts milliseconds since 1970`}},
		{Options{TSUnit: Seconds}, "src,dst,ts\na,b,9223372036854776\n", []string{
			`in:2: field "ts" 9223372036854776 in seconds is past the largest time gcsm holds (year 292278994)`}},
		{Options{}, "src,dst,ts\na,b,1969-07-20T20:17:40Z\n", []string{`in:2: field "ts": "1969-07-20T20:17:40Z" is before 1970`}},
		{Options{}, "src,dst,ts\na,b,2026-11-21\n", []string{
			`in:2: field "ts" "2026-11-21" is neither an integer (unix milliseconds) nor an RFC 3339 time`}},
		{Options{}, "src,dst,x\na,b\n", []string{`in:2: CSV line has 2 fields, the header 3`}},
	}
	for _, tt := range tests {
		tt.opts.Format, tt.opts.File = FormatSNAP, "in"
		r := NewReader(strings.NewReader(tt.in), tt.opts)
		var got []string
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			var le *LineError
			if err != nil && !errors.As(err, &le) {
				t.Fatalf("%q: %v is not a *LineError", tt.in, err)
			}
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			got = append(got, msg)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q:\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
	// Skipping bad lines skips the refused header's lines too, rather than
	// read them by position.
	r := NewReader(strings.NewReader("src,label,ts\na,TRANSFER,5\na,TRANSFER,6\n"), Options{SkipBad: true})
	if recs, err := readAll(r); err != nil || len(recs) != 0 || r.Skipped() != 3 {
		t.Errorf("with SkipBad: %+v, %v, %d skipped; want none read and 3 skipped", recs, err, r.Skipped())
	}
}

// TestReaderOddTime checks that a Reader keeps the first odd numeric time
// of each format, with its line, and none of RFC 3339 times.
func TestReaderOddTime(t *testing.T) {
	for _, tt := range []struct {
		in   string
		unit TimeUnit
		want OddTime
		odd  bool
	}{
		{`{"op":"+","src":1,"dst":2,"ts":1795255200000}` + "\n" + `{"op":"+","src":1,"dst":2,"ts":1795255200}`, Milliseconds,
			OddTime{TS: 1795255200, Unit: Milliseconds, Line: 2}, true},
		{`{"op":"+","src":1,"dst":2,"ts":1795255200}`, Seconds, OddTime{}, false},
		{`{"op":"+","src":1,"dst":2,"ts":"1970-01-01T00:00:00Z"}`, Milliseconds, OddTime{}, false},
		{"src,dst,ts\na,b,1795255200000\na,b,1795255200000000\n", Milliseconds, OddTime{TS: 1795255200000000, Line: 3}, true},
		{"src,dst,ts\na,b,2026-11-21T10:00:00Z\n", Nanoseconds, OddTime{}, false},
		{"1 2 1795255200\n", Milliseconds, OddTime{TS: 1795255200, Line: 1}, true},
		{"1 2 1795255200\n", Seconds, OddTime{}, false},
		{"1,2,x,1795255200000\n", Seconds, OddTime{TS: 1795255200000, Unit: Seconds, Line: 1}, true},
		{"e 1 2 5\n", Milliseconds, OddTime{}, false},
	} {
		r := NewReader(strings.NewReader(tt.in), Options{TSUnit: tt.unit})
		if _, err := readAll(r); err != nil {
			t.Fatal(err)
		}
		if got, ok := r.OddTime(); ok != tt.odd || got != tt.want {
			t.Errorf("%q in %v: OddTime() = %+v, %v; want %+v, %v", tt.in, tt.unit, got, ok, tt.want, tt.odd)
		}
	}
}

// FuzzCSVHeader reads a CSV file of an arbitrary header and body. A
// refused header refuses every line after it; an accepted one makes
// records whose properties are the header's other columns, and the same
// file with every line's columns in reverse order makes the same records:
// columns are read by name, not by position.
func FuzzCSVHeader(f *testing.F) {
	for _, s := range [][2]string{
		{"src,dst", "a,b\n"},
		{"op,ts,id,amount,dst_label,dst,src,src_label,label,currency", "+,1795255200000,tx,1.5,A,b,a,A,T,EUR\n-,,,,,b,a,,,\n"},
		{"Source,Target,Rating,Time", "7188,1,10,1407470400\n"},
		{"src,label,ts", "a,TRANSFER,5\n"},
		{"src,dst,src", "a,b,c\n"},
		{"src,dst,x,,y", "a,b,1,2,3\n"},
		{"src,dst,ts,x", "a,b,-1,1e999\na,b,2026-11-21T10:00:00Z,007\na,b\n"},
		{"SRC,DST,OP", "a,b,upsert\n,b,+\na,b,delete\n"},
		{"dst,src,n", "b,a,-0.5e-3\nb,a,+5\nb,a,NaN\n"},
	} {
		f.Add(s[0], s[1], uint8(0))
	}
	f.Fuzz(func(t *testing.T, header, body string, unit uint8) {
		if strings.ContainsAny(header+body, "#%\r") || strings.IndexByte(header+body, 0xef) >= 0 {
			// Comments and byte order marks would move when the columns
			// are reversed.
			t.Skip()
		}
		data := header + "\n" + body
		opts := Options{Format: FormatSNAP, File: "f", Keep: AllProps(), TSUnit: TimeUnit(unit % 4)}
		got, r := readResults(t, data, opts, bufSize)
		l := r.csvLayout
		if !r.csv || l.width == 0 && l.refused == 0 {
			return // no CSV, or no header: read by position
		}
		for n, res := range got {
			if l.refused > 0 {
				if res.err == "" || n == 0 && !strings.Contains(res.err, "CSV header") || n > 0 && !strings.Contains(res.err, "not read: the CSV header on line") {
					t.Fatalf("after a refused header, result %d is %+v", n, res)
				}
				continue
			}
			if res.err != "" {
				continue
			}
			rec := res.rec
			if rec.Src == "" || rec.Dst == "" || rec.Op != graph.Insert && rec.Op != graph.Delete || rec.Time < 0 {
				t.Fatalf("bad record %+v", rec)
			}
			names := map[string]bool{}
			for _, p := range rec.Props {
				_, alias := csvAliases[strings.ToLower(p.Name)]
				if names[p.Name] || alias || slices.ContainsFunc(csvFields[:], func(f string) bool { return strings.EqualFold(f, p.Name) }) {
					t.Fatalf("record %+v: property %q named twice or a field's name", rec, p.Name)
				}
				names[p.Name] = true
				if p.Value.Kind == graph.String && p.Value.Str == "" || p.Value.Kind == graph.Number && math.IsNaN(p.Value.Num) ||
					p.Value.Kind != graph.String && p.Value.Kind != graph.Number {
					t.Fatalf("record %+v: property %q has value %+v", rec, p.Name, p.Value)
				}
			}
		}
		if l.refused > 0 {
			return
		}
		lines := strings.Split(data, "\n")
		for i, line := range lines {
			fields := strings.Split(line, ",")
			slices.Reverse(fields)
			lines[i] = strings.Join(fields, ",")
		}
		rev, _ := readResults(t, strings.Join(lines, "\n"), opts, bufSize)
		if len(rev) != len(got) {
			t.Fatalf("reversed columns: %d results, want %d", len(rev), len(got))
		}
		for n := range got {
			a, b := got[n], rev[n]
			slices.Reverse(b.rec.Props)
			if (a.err == "") != (b.err == "") || !reflect.DeepEqual(a.rec, b.rec) {
				t.Fatalf("reversed columns, result %d:\n got %+v\nwant %+v", n, b, a)
			}
		}
	})
}

// TestReaderBadTimeUnit: a unit outside the four is the caller's mistake,
// refused before any line is read.
func TestReaderBadTimeUnit(t *testing.T) {
	_, err := NewReader(strings.NewReader("1 2 3\n"), Options{TSUnit: 9}).Next()
	if err == nil || err.Error() != "ingest: unknown TimeUnit(9)" {
		t.Errorf("Next: %v, want the unit refused", err)
	}
}
