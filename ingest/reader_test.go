package ingest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/gcsm/gcsm/graph"
)

// readAll reads r to its end or its first error.
func readAll(r *Reader) ([]Record, error) {
	var recs []Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return recs, nil
		}
		if err != nil {
			return recs, err
		}
		recs = append(recs, rec)
	}
}

func ins(line int, src, dst, label string) Record {
	return Record{Op: graph.Insert, Src: src, Dst: dst, Label: label, Line: line}
}

func del(line int, src, dst, label string) Record {
	return Record{Op: graph.Delete, Src: src, Dst: dst, Label: label, Line: line}
}

func vtx(line int, id, label string) Record {
	return Record{Op: graph.AddVertex, Src: id, SrcLabel: label, Line: line}
}

// sameRecord compares Records, which hold property lists and so are not
// comparable with ==.
func sameRecord(a, b Record) bool { return reflect.DeepEqual(a, b) }

func timed(r Record, ms int64) Record {
	r.Time = ms
	return r
}

func TestRead(t *testing.T) {
	tests := []struct {
		name   string
		format Format
		in     string
		want   []Record
	}{
		{"csm graph", FormatCSM,
			"t 3 2\nv 0 1 1\nv 1 2 2\nv 2 1\ne 0 1 0\ne 1 2\n",
			[]Record{vtx(2, "0", "1"), vtx(3, "1", "2"), vtx(4, "2", "1"), ins(5, "0", "1", "0"), ins(6, "1", "2", "")}},
		{"csm stream", FormatCSM,
			"e 1 2 7\n+e 3 4 0\n-e 1 2 7\nv 9 3\n",
			[]Record{ins(1, "1", "2", "7"), ins(2, "3", "4", "0"), del(3, "1", "2", "7"), vtx(4, "9", "3")}},
		{"csm comments, blanks, tabs, trailing blanks, CRLF", FormatCSM,
			"# a comment\r\n\r\n  \t\r\ne\t1\t2\t0 \t\r\n  v 3 4  \r\n% another\n",
			[]Record{ins(4, "1", "2", "0"), vtx(5, "3", "4")}},
		{"csm leading zeros", FormatCSM,
			"e 007 0 0\nv 00 x\n",
			[]Record{ins(1, "7", "0", "0"), vtx(2, "0", "x")}},
		{"csm no final newline", FormatCSM,
			"e 1 2\ne 2 3",
			[]Record{ins(1, "1", "2", ""), ins(2, "2", "3", "")}},
		{"snap", FormatSNAP,
			"# Directed graph\n% konect\n1\t2\n3 4\r\n5  6  \n",
			[]Record{ins(3, "1", "2", ""), ins(4, "3", "4", ""), ins(5, "5", "6", "")}},
		{"snap string ids", FormatSNAP,
			"alice bob\n",
			[]Record{ins(1, "alice", "bob", "")}},
		{"snap timestamps, a negative third column is a sign", FormatSNAP,
			"1 2 1082040961000\n3 4 -5\n",
			[]Record{timed(ins(1, "1", "2", ""), 1082040961000), ins(2, "3", "4", "")}},
		{"snap weight ignored", FormatSNAP,
			"1 2 0.5\n",
			[]Record{ins(1, "1", "2", "")}},
		{"csv with SNAP's header", FormatSNAP,
			"\xef\xbb\xbfSource,Target,Rating,Time\r\n7188,1,10,1407470400000\r\n7604, 7603 ,-10,1364270400000",
			[]Record{timed(ins(2, "7188", "1", ""), 1407470400000), timed(ins(3, "7604", "7603", ""), 1364270400000)}},
		{"csv header picks columns by name", FormatSNAP,
			"# exported\nts,weight,LABEL,dst,src\n60,0.5,x,b,a\n",
			[]Record{timed(ins(3, "a", "b", "x"), 60)}},
		{"csv without header", FormatSNAP,
			"1,2\n3,4,100\n5,6,1,200\n7,8,w\n",
			[]Record{ins(1, "1", "2", ""), timed(ins(2, "3", "4", ""), 100),
				timed(ins(3, "5", "6", "1"), 200), ins(4, "7", "8", "")}},
		{"json", FormatJSON,
			`{"op":"+","src":1,"dst":"b","label":"x","src_label":"A","dst_label":2,"ts":1700000000123}` + "\n" +
				`{"op":"delete","src":"a\u00e9","dst":-3,"ts":"2024-06-01T12:00:00.5Z","extra":[1,{"x":2}]}` + "\r\n" +
				`{"op":"vertex","id":5,"label":"P"}` + "\n" +
				`{"op":"vertex","src":"v","label":7,"ts":null}` + "\n" +
				`{"op":"insert","src":18446744073709551615,"dst":"2","label":null}` + "\n" +
				`{"op":"-","src":"1","dst":"2"}`,
			[]Record{
				{Op: graph.Insert, Src: "1", Dst: "b", Label: "x", SrcLabel: "A", DstLabel: "2", Time: 1700000000123, Line: 1},
				timed(del(2, "aé", "-3", ""), 1717243200500),
				vtx(3, "5", "P"),
				vtx(4, "v", "7"),
				ins(5, "18446744073709551615", "2", ""),
				del(6, "1", "2", ""),
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, format := range []Format{tt.format, FormatAuto} {
				r := NewReader(strings.NewReader(tt.in), Options{Format: format})
				got, err := readAll(r)
				if err != nil {
					t.Fatalf("%v: %v", format, err)
				}
				if !slices.EqualFunc(got, tt.want, sameRecord) {
					t.Errorf("%v:\n got %+v\nwant %+v", format, got, tt.want)
				}
				if r.Format() != tt.format {
					t.Errorf("Format() = %v after reading, want %v", r.Format(), tt.format)
				}
			}
		})
	}
}

func TestLineErrors(t *testing.T) {
	tests := []struct {
		format Format
		in     string
		want   string
	}{
		{FormatCSM, "v 0 1\n\ne 1\n", `in:3: edge line needs 2 or 3 fields after "e", got 1`},
		{FormatCSM, "-e 1 2 3 4\n", `in:1: edge line needs 2 or 3 fields after "-e", got 4`},
		{FormatCSM, "v 1\n", `in:1: vertex line needs 2 or 3 fields after "v", got 1`},
		{FormatCSM, "v 1 2 3 4\n", `in:1: vertex line needs 2 or 3 fields after "v", got 4`},
		{FormatCSM, "v 1 2 three\n", `in:1: vertex degree "three" is not a non-negative integer`},
		{FormatCSM, "v x 2\n", `in:1: vertex id "x" is not a non-negative integer`},
		{FormatCSM, "e 1 -2\n", `in:1: vertex id "-2" is not a non-negative integer`},
		{FormatCSM, "e 1 18446744073709551616\n", `in:1: vertex id "18446744073709551616" is not a non-negative integer`},
		{FormatCSM, "e 1 2\nx 1 2\n", `in:2: unknown line type "x"`},
		{FormatCSM, "1 2\n", `in:1: unknown line type "1"`},
		{FormatCSM, "E" + strings.Repeat("x", 50) + " 1\n", `in:1: unknown line type "E` + strings.Repeat("x", 39) + `"...`},
		{FormatSNAP, "1 2\n1\n", `in:2: edge list line needs 2 or 3 fields, got 1`},
		{FormatSNAP, "1 2 3 4\n", `in:1: edge list line needs 2 or 3 fields, got 4`},
		{FormatSNAP, "1,2,x,-3\n", `in:1: field "ts" is negative (-3): a numeric ts counts milliseconds since 1970`},
		{FormatSNAP, "1,2\n3\n", `in:2: CSV line needs 2, 3 or 4 fields, got 1`},
		{FormatSNAP, "1,2,3,4,5\n", `in:1: CSV line needs 2, 3 or 4 fields, got 5`},
		{FormatSNAP, "1,2,x,y\n", `in:1: field "ts" "y" is neither an integer (unix milliseconds) nor an RFC 3339 time`},
		{FormatSNAP, "1,,5\n", `in:1: empty vertex id`},
		{FormatSNAP, "src,dst,time\n1,2\n", `in:2: CSV line has 2 fields, the header 3`},
		{FormatSNAP, "src,dst,time\n1,2,now\n", `in:2: field "ts" "now" is neither an integer (unix milliseconds) nor an RFC 3339 time`},
		{FormatSNAP, "src,dst,ts\n1,2,-1\n", `in:2: field "ts" is negative (-1): a numeric ts counts milliseconds since 1970`},
		{FormatJSON, `{"op":"+","src":1,"dst":2` + "\n", `in:1: invalid JSON: unexpected end of JSON input`},
		{FormatJSON, `{"op":"+"} x`, `in:1: invalid JSON: invalid character 'x' after top-level value`},
		{FormatJSON, `[1,2]`, `in:1: expected a JSON object, got "[1,2]"`},
		{FormatJSON, `{"src":1,"dst":2}`, `in:1: missing field "op"`},
		{FormatJSON, `{"op":null,"src":1,"dst":2}`, `in:1: missing field "op"`},
		{FormatJSON, `{"op":"upsert","src":1,"dst":2}`, `in:1: unknown op "upsert"`},
		{FormatJSON, `{"op":1,"src":1,"dst":2}`, `in:1: unknown op 1`},
		{FormatJSON, `{"op":"+","src":1}`, `in:1: missing field "dst"`},
		{FormatJSON, `{"op":"+","src":"","dst":2}`, `in:1: field "src" is empty`},
		{FormatJSON, `{"op":"+","src":1.5,"dst":2}`, `in:1: field "src" must be a string or an integer, got 1.5`},
		{FormatJSON, `{"op":"+","src":1,"dst":[2]}`, `in:1: field "dst" must be a string or an integer, got [2]`},
		{FormatJSON, `{"op":"+","src":1,"dst":2,"label":true}`, `in:1: field "label" must be a string or an integer, got true`},
		{FormatJSON, `{"op":"+","src":1,"dst":2,"src_label":{}}`, `in:1: field "src_label" must be a string or an integer, got {}`},
		{FormatJSON, `{"op":"+","src":1,"dst":2,"ts":"yesterday"}`, `in:1: field "ts": "yesterday" is not an RFC 3339 time`},
		{FormatJSON, `{"op":"+","src":1,"dst":2,"ts":1.5e12}`, `in:1: field "ts" must be an RFC 3339 string or an integer (unix milliseconds), got 1.5e12`},
		{FormatJSON, `{"op":"+","src":1,"dst":2,"ts":-1}`, `in:1: field "ts" is negative (-1): a numeric ts counts milliseconds since 1970`},
		{FormatJSON, `{"op":"vertex","id":1}`, `in:1: missing field "label"`},
		{FormatJSON, `{"op":"vertex","label":"A"}`, `in:1: missing field "id"`},
	}
	for _, tt := range tests {
		r := NewReader(strings.NewReader(tt.in), Options{Format: tt.format, File: "in"})
		_, err := readAll(r)
		var le *LineError
		if !errors.As(err, &le) {
			t.Errorf("%v %q: got %v, want a *LineError", tt.format, tt.in, err)
			continue
		}
		if err.Error() != tt.want {
			t.Errorf("%v %q:\n got %s\nwant %s", tt.format, tt.in, err, tt.want)
		}
	}
}

func TestLineErrorText(t *testing.T) {
	for _, tt := range []struct {
		err  LineError
		want string
	}{
		{LineError{File: "a.graph", Line: 12, Reason: "bad"}, "a.graph:12: bad"},
		{LineError{Line: 12, Reason: "bad"}, "line 12: bad"},
		{LineError{Reason: "bad"}, "bad"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%+v: got %q, want %q", tt.err, got, tt.want)
		}
	}
}

// TestGoesOnAfterError checks that a LineError does not end the reader.
func TestGoesOnAfterError(t *testing.T) {
	r := NewReader(strings.NewReader("e 1 2\ne x 3\ne 3 4\n"), Options{})
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
		got = append(got, rec.Src+"-"+rec.Dst)
	}
	want := []string{"1-2", `line 2: vertex id "x" is not a non-negative integer`, "3-4"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSkipBad(t *testing.T) {
	var in strings.Builder
	var want []Record
	for i := 1; i <= 250; i++ {
		if i%2 == 0 {
			fmt.Fprintf(&in, "e %d\n", i)
		} else {
			fmt.Fprintf(&in, "e %d %d\n", i, i+1)
			want = append(want, ins(i, fmt.Sprint(i), fmt.Sprint(i+1), ""))
		}
	}
	r := NewReader(strings.NewReader(in.String()), Options{File: "s.graph", SkipBad: true})
	got, err := readAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(got, want, sameRecord) {
		t.Errorf("got %d records, want %d", len(got), len(want))
	}
	if r.Skipped() != 125 {
		t.Errorf("Skipped() = %d, want 125", r.Skipped())
	}
	bad := r.Bad()
	if len(bad) != maxBad {
		t.Fatalf("len(Bad()) = %d, want %d", len(bad), maxBad)
	}
	for i, e := range bad {
		if e.File != "s.graph" || e.Line != 2*(i+1) {
			t.Errorf("Bad()[%d] = %v, want line %d of s.graph", i, e, 2*(i+1))
		}
	}
}

// TestIOError checks that read errors end the reader, even with SkipBad.
func TestIOError(t *testing.T) {
	boom := errors.New("boom")
	in := io.MultiReader(strings.NewReader("e 1 2\ne 3"), iotest.ErrReader(boom))
	r := NewReader(in, Options{SkipBad: true})
	if rec, err := r.Next(); err != nil || !reflect.DeepEqual(rec, ins(1, "1", "2", "")) {
		t.Fatalf("first Next = %+v, %v", rec, err)
	}
	for range 2 {
		if _, err := r.Next(); err != boom {
			t.Fatalf("Next = %v, want %v", err, boom)
		}
	}
}

func TestUnknownFormat(t *testing.T) {
	r := NewReader(strings.NewReader("e 1 2\n"), Options{Format: FormatJSON + 1})
	if _, err := r.Next(); err == nil || err == io.EOF {
		t.Fatalf("Next = %v, want an error", err)
	}
}

func TestLongLines(t *testing.T) {
	const max = 100
	id := func(n int) string { return strings.Repeat("x", n) }
	exact := id(max-2) + " 1" // max bytes
	over := id(max-1) + " 1"  // max+1 bytes
	in := exact + "\r\n" + over + "\n" + exact + "\n" + over + "\r\n" + "1 2\n" + over
	for _, size := range []int{16, 64, bufSize} {
		r := newReader(strings.NewReader(in), Options{Format: FormatSNAP, File: "f", MaxLineBytes: max}, size)
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
			got = append(got, fmt.Sprintf("%d:%d", rec.Line, len(rec.Src)))
		}
		tooLong := func(line int) string { return fmt.Sprintf("f:%d: line is longer than %d bytes", line, max) }
		want := []string{"1:98", tooLong(2), "3:98", tooLong(4), "5:1", tooLong(6)}
		if !slices.Equal(got, want) {
			t.Errorf("buffer %d:\n got %q\nwant %q", size, got, want)
		}
	}
}

// TestDefaultMaxLine reads lines longer than the bufio buffer, up to the
// default limit of 1 MiB. Its lines are long ids, so it lifts the limit on
// ids to the line's.
func TestDefaultMaxLine(t *testing.T) {
	ok := "1 " + strings.Repeat("x", defaultMaxLineBytes-2)
	in := "1 " + strings.Repeat("y", 3*bufSize) + "\n" + ok + "\n" + ok + "x\n1 2\n"
	r := NewReader(strings.NewReader(in), Options{SkipBad: true, MaxIDBytes: defaultMaxLineBytes})
	got, err := readAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || len(got[0].Dst) != 3*bufSize || len(got[1].Dst) != defaultMaxLineBytes-2 || got[2].Line != 4 {
		t.Errorf("got %d records", len(got))
	}
	if r.Skipped() != 1 || r.Bad()[0].Line != 3 {
		t.Errorf("Skipped() = %d, Bad() = %v, want line 3 only", r.Skipped(), r.Bad())
	}
}

func TestDetectFormat(t *testing.T) {
	for _, tt := range []struct {
		lines []string
		want  Format
	}{
		{nil, FormatAuto},
		{[]string{"", "# only comments", "  % and blanks"}, FormatAuto},
		{[]string{"t 10 20"}, FormatCSM},
		{[]string{"# x", "v 0 1"}, FormatCSM},
		{[]string{"e\t1\t2"}, FormatCSM},
		{[]string{"+e 1 2 0"}, FormatCSM},
		{[]string{"-e 1 2 0"}, FormatCSM},
		{[]string{"\xef\xbb\xbfe 1 2"}, FormatCSM},
		{[]string{"  {\"op\":\"+\"}"}, FormatJSON},
		{[]string{"5242\t28980"}, FormatSNAP},
		{[]string{"Source,Target,Rating,Time"}, FormatSNAP},
		{[]string{"e,1,2"}, FormatSNAP},
		{[]string{"ee 1 2"}, FormatSNAP},
	} {
		if got := DetectFormat(tt.lines...); got != tt.want {
			t.Errorf("DetectFormat(%q) = %v, want %v", tt.lines, got, tt.want)
		}
	}
}

func TestOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(path, []byte(`{"op":"+","src":1,"dst":2}`+"\n{\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, c, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if rec, err := r.Next(); err != nil || !reflect.DeepEqual(rec, ins(1, "1", "2", "")) {
		t.Fatalf("Next = %+v, %v", rec, err)
	}
	if _, err := r.Next(); err == nil || !strings.HasPrefix(err.Error(), path+":2: invalid JSON") {
		t.Errorf("Next = %v, want an invalid JSON error at %s:2", err, path)
	}
	if _, _, err := Open(filepath.Join(t.TempDir(), "none"), Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing file: %v", err)
	}
}

// TestAllocs pins the cost of a text line to the one string its ids share.
func TestAllocs(t *testing.T) {
	for _, tt := range []struct {
		format Format
		line   string
	}{
		{FormatCSM, "e 123 456 0\n"},
		{FormatSNAP, "123\t456\n"},
		{FormatSNAP, "123,456,10,1407470400\n"},
	} {
		in := strings.NewReader("")
		r := NewReader(in, Options{Format: tt.format})
		allocs := testing.AllocsPerRun(100, func() {
			in.Reset(tt.line)
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		})
		if allocs > 1 {
			t.Errorf("%v %q: %v allocations per line, want 1", tt.format, tt.line, allocs)
		}
	}
}

func TestResolve(t *testing.T) {
	res := &Resolver{IDs: graph.NewIDs(), Labels: graph.NewDict(), DefaultEdgeLabel: "0"}
	steps := []struct {
		rec  Record
		want graph.Update
		err  string
	}{
		{vtx(1, "10", "A"), graph.Update{Op: graph.AddVertex, Src: 0, SrcLabel: 0, DstLabel: graph.NoLabel}, ""},
		{ins(2, "10", "x", ""), graph.Update{Op: graph.Insert, Src: 0, Dst: 1, Label: 1, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}, ""},
		{Record{Op: graph.Delete, Src: "x", Dst: "10", Label: "A", SrcLabel: "B", DstLabel: "A", Line: 3},
			graph.Update{Op: graph.Delete, Src: 1, Dst: 0, Label: 0, SrcLabel: 2, DstLabel: 0}, ""},
		{ins(4, "y", "y", ""), graph.Update{}, `line 4: self-loop on vertex "y"`},
		{ins(5, "z", "", ""), graph.Update{}, "line 5: edge record needs both endpoints"},
		{vtx(6, "z", ""), graph.Update{}, "line 6: vertex record needs an id and a label"},
		{Record{Src: "z", Dst: "w", Line: 7}, graph.Update{}, "line 7: unknown op Op(0)"},
	}
	for _, s := range steps {
		got, err := res.Resolve(s.rec)
		if s.err != "" {
			if err == nil || err.Error() != s.err {
				t.Errorf("Resolve(%+v) = %v, want error %q", s.rec, err, s.err)
			}
			continue
		}
		if err != nil || got != s.want {
			t.Errorf("Resolve(%+v) = %+v, %v, want %+v", s.rec, got, err, s.want)
		}
	}
	// Refused records add nothing.
	if res.IDs.Len() != 2 || res.Labels.Len() != 3 {
		t.Errorf("%d ids and %d labels, want 2 and 3", res.IDs.Len(), res.Labels.Len())
	}
	_, err := res.Resolve(ins(8, "5", "5", ""))
	var le *LineError
	if !errors.Is(err, ErrSelfLoop) || !errors.As(err, &le) || le.Line != 8 {
		t.Errorf("self-loop error %#v: want a *LineError of line 8 wrapping ErrSelfLoop", err)
	}
}

// The tests below read the real data sets of ../shared/datasets beside the
// checkout, when it is there.

func dataset(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join("..", "..", "shared", "datasets", rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no data set: %v", err)
	}
	return p
}

// scan counts the lines of a file whose blank-separated fields satisfy
// match, independently of Reader.
func scan(t *testing.T, path string, match func(f []string) bool) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	s := bufio.NewScanner(f)
	for s.Scan() {
		if match(strings.Fields(s.Text())) {
			n++
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// readFile reads a whole data set file, failing on any error.
func readFile(t *testing.T, path string, format Format) ([]Record, *Reader) {
	t.Helper()
	return readFileWith(t, path, Options{Format: format})
}

func readFileWith(t *testing.T, path string, opts Options) ([]Record, *Reader) {
	t.Helper()
	r, c, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	recs, err := readAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return recs, r
}

func count(recs []Record, op graph.Op) int {
	n := 0
	for _, rec := range recs {
		if rec.Op == op {
			n++
		}
	}
	return n
}

func firstField(want ...string) func([]string) bool {
	return func(f []string) bool { return len(f) > 0 && slices.Contains(want, f[0]) }
}

func dataLine(f []string) bool {
	return len(f) > 0 && !strings.HasPrefix(f[0], "#")
}

func TestEuCoreGraph(t *testing.T) {
	path := dataset(t, "csm_eucore_generated/data.graph")
	recs, r := readFile(t, path, FormatAuto)
	if r.Format() != FormatCSM {
		t.Errorf("detected %v, want csm", r.Format())
	}
	v, e := scan(t, path, firstField("v")), scan(t, path, firstField("e"))
	// The README: 1005 vertices; 16064 edges of which 1606 are withheld
	// for insertion.graph.
	if v != 1005 || e != 16064-1606 {
		t.Errorf("scan found %d v and %d e lines, want 1005 and %d", v, e, 16064-1606)
	}
	if got := count(recs, graph.AddVertex); got != v {
		t.Errorf("read %d vertices, want %d", got, v)
	}
	if got := count(recs, graph.Insert); got != e {
		t.Errorf("read %d edges, want %d", got, e)
	}
	if len(recs) != v+e {
		t.Errorf("read %d records, want %d", len(recs), v+e)
	}
}

func TestHumanDeletions(t *testing.T) {
	path := dataset(t, "csm_human_hybridflow/deletion.graph")
	recs, _ := readFile(t, path, FormatAuto)
	want := scan(t, path, firstField("-e"))
	if got := count(recs, graph.Delete); got != want || len(recs) != want || want != 4314 {
		t.Errorf("read %d deletions of %d records, scan found %d, README says 4314", got, len(recs), want)
	}
}

func TestWikiVote(t *testing.T) {
	path := dataset(t, "snap/Wiki-Vote.txt")
	recs, r := readFile(t, path, FormatAuto)
	if r.Format() != FormatSNAP {
		t.Errorf("detected %v, want snap", r.Format())
	}
	want := scan(t, path, dataLine)
	if len(recs) != want || want != 103689 {
		t.Errorf("read %d edges, scan found %d, README says 103689", len(recs), want)
	}
	for _, rec := range recs {
		if strings.ContainsAny(rec.Src+rec.Dst, "\r\t ") || rec.Time != 0 || rec.Label != "" {
			t.Fatalf("bad record %+v", rec)
		}
	}
	// The file ends without a line terminator.
	if last := recs[len(recs)-1]; last.Src != "8274" || last.Dst != "8275" {
		t.Errorf("last record %+v, want 8274 -> 8275", last)
	}
}

func TestCollegeMsg(t *testing.T) {
	path := dataset(t, "snap/CollegeMsg.txt")
	recs, r := readFileWith(t, path, Options{TSUnit: Seconds})
	if odd, ok := r.OddTime(); ok {
		t.Errorf("CollegeMsg's times in seconds, read as seconds, are odd: %v", odd)
	}
	// Read as milliseconds, they land in 1970, and the first says so.
	_, r = readFile(t, path, FormatAuto)
	if odd, ok := r.OddTime(); !ok || odd != (OddTime{TS: 1082040961, Unit: Milliseconds, Line: 1}) {
		t.Errorf("OddTime() = %+v, %v; want line 1's", odd, ok)
	}
	want := scan(t, path, dataLine)
	if len(recs) != want || want != 59835 {
		t.Fatalf("read %d messages, scan found %d, README says 59835", len(recs), want)
	}
	if !sameRecord(recs[0], timed(ins(1, "1", "2", ""), 1082040961000)) {
		t.Errorf("first record %+v", recs[0])
	}
	for i, rec := range recs {
		if rec.Time <= 0 || rec.Time%1000 != 0 || i > 0 && rec.Time < recs[i-1].Time {
			t.Fatalf("record %+v: times must be positive whole seconds in order", rec)
		}
	}
}

func TestBitcoinAlpha(t *testing.T) {
	path := dataset(t, "snap/soc-sign-bitcoinalpha.csv")
	// The header names its columns Source, Target, Rating and Time: the
	// rating is a property, and the times count seconds.
	recs, r := readFileWith(t, path, Options{TSUnit: Seconds, Keep: NewPropFilter([]string{"Rating"}, nil)})
	if r.Format() != FormatSNAP || r.Skipped() != 0 {
		t.Errorf("format %v, %d skipped", r.Format(), r.Skipped())
	}
	if odd, ok := r.OddTime(); ok {
		t.Errorf("odd time %v", odd)
	}
	want := scan(t, path, func(f []string) bool { return len(f) > 0 }) - 1 // the header
	if len(recs) != want || want != 24186 {
		t.Fatalf("read %d edges, scan found %d, README says 24186", len(recs), want)
	}
	first := timed(ins(2, "7188", "1", ""), 1407470400000)
	first.Props = []graph.Prop{{Name: "Rating", Value: graph.NumberValue(10)}}
	if !sameRecord(recs[0], first) {
		t.Errorf("first record %+v", recs[0])
	}
	ratings := map[float64]bool{}
	for _, rec := range recs {
		if rec.Time <= 0 {
			t.Fatalf("record %+v has no time", rec)
		}
		if len(rec.Props) != 1 || rec.Props[0].Value.Kind != graph.Number {
			t.Fatalf("record %+v has no numeric rating", rec)
		}
		ratings[rec.Props[0].Value.Num] = true
	}
	// Ratings run from -10 to 10, 0 excepted.
	if len(ratings) != 20 || !ratings[-10] || !ratings[10] || ratings[0] {
		t.Errorf("ratings %v", ratings)
	}
}

// TestEuCoreSelfLoops resolves email-Eu-core, whose self-loops Resolve
// must refuse and count, and nothing else.
func TestEuCoreSelfLoops(t *testing.T) {
	path := dataset(t, "snap/email-Eu-core.txt")
	recs, _ := readFile(t, path, FormatAuto)
	want := scan(t, path, func(f []string) bool { return len(f) == 2 && f[0] == f[1] })
	// 19 of the 1005 vertices have only self-loops.
	linked := map[string]bool{}
	scan(t, path, func(f []string) bool {
		if len(f) == 2 && f[0] != f[1] {
			linked[f[0]], linked[f[1]] = true, true
		}
		return false
	})
	res := &Resolver{IDs: graph.NewIDs(), Labels: graph.NewDict(), DefaultEdgeLabel: "0"}
	loops := 0
	for _, rec := range recs {
		if _, err := res.Resolve(rec); errors.Is(err, ErrSelfLoop) {
			loops++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if loops != want || loops == 0 {
		t.Errorf("%d self-loops, scan found %d", loops, want)
	}
	if res.IDs.Len() != len(linked) {
		t.Errorf("%d vertices, want %d", res.IDs.Len(), len(linked))
	}
}

// TestAllDatasets reads every graph, query and stream file of the data sets
// with format detection and checks that none has a bad line.
func TestAllDatasets(t *testing.T) {
	if testing.Short() {
		t.Skip("reads about 10 MB")
	}
	root := dataset(t, ".")
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		ext := filepath.Ext(path)
		switch {
		case ext == ".graph", ext == ".g", strings.HasPrefix(d.Name(), "Q_"),
			filepath.Dir(rel) == "snap" && (ext == ".txt" || ext == ".csv"):
		default:
			return nil
		}
		r, c, err := Open(path, Options{})
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := readAll(r); err != nil {
			t.Errorf("%v (read as %v)", err, r.Format())
		}
		files++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read %d files", files)
}
