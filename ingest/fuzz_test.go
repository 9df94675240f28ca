package ingest

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/graph"
)

// fuzzSeeds are FuzzReader inputs beside the corpus in testdata: one of
// each format and the awkward corners of each.
var fuzzSeeds = []struct {
	data   string
	format Format
}{
	{"t 2 1\nv 0 1 2\nv 1 1\ne 0 1 0\n", FormatAuto},
	{"e 1 2 0\n-e 1 2 0\n+e 2 3\nv 4 5\n", FormatCSM},
	{"e 1\nx 1 2\nv a b\n", FormatCSM},
	{"# c\r\n1\t2\r\n3 4 1082040961\r\n5 6 0.5", FormatSNAP},
	{"Source,Target,Rating,Time\n7188,1,10,1407470400\n1,2\n", FormatAuto},
	{"1,2,-1,5\n,\n", FormatSNAP},
	{`{"op":"+","src":1,"dst":"b","ts":"2024-06-01T12:00:00Z"}` + "\n" + `{"op":"vertex","id":2,"label":3}`, FormatJSON},
	{`{"op":"-","src":"\u00e9","dst":2,"ts":5}` + "\n[]\n{\n", FormatAuto},
	{`{"op":"+","src":1,"dst":2,"id":"t","props":{"a":1,"a":null}}` + "\n" + `{"op":"+","src":1,"dst":2,"src_props":{"c":true}}` +
		"\n" + `{"op":"vertex","id":3,"label":"A","props":{"a":"DE"}}` + "\n" + `{"op":"+","src":1,"dst":2,"props":{"n":[1]}}`, FormatJSON},
	{"\xef\xbb\xbf% x\n\n1 1\n", FormatAuto},
	// Names over fuzzMaxID, between good lines.
	{"e 1 2\ne 123456789 2\nv 3 123456789\ne 3 4\n", FormatCSM},
	{"1,2\n1,123456789\n3,4\n", FormatSNAP},
	{"op,ts,amount,dst,src,label\n-,5,1.5,b,a,x\n+,,x,c,a,\n", FormatAuto},
	{"src,label,ts\na,TRANSFER,5\n", FormatSNAP},
	{`{"op":"+","src":1,"dst":2,"id":"tx-000001"}` + "\n" + `{"op":"+","src":1,"dst":2,"label":"123456789"}`, FormatJSON},
	{`{"op":"+","src":1,"dst":2,"id":"t"}` + "\n" + `{"op":"set","vertex":1,"props":{"a":null,"c":"x"}}` + "\n" +
		`{"op":"set","edge":"t","ts":5,"props":{"amount":1,"amount":null}}` + "\n" + `{"op":"set","vertex":9,"props":{}}` + "\n" +
		`{"op":"set","vertex":1,"edge":"t","props":{}}` + "\n" + `{"op":"set","edge":"t","dst":2,"props":{}}`, FormatJSON},
	{"src,dst,op\na,b,set\na,b,+\n", FormatAuto},
}

// result is what one call of Next gave, in a form to compare.
type result struct {
	rec Record
	err string
}

// readResults reads data to its end, going on after line errors.
func readResults(t *testing.T, data string, opts Options, size int) ([]result, *Reader) {
	r := newReader(strings.NewReader(data), opts, size)
	var out []result
	// Each call consumes a line, so there are at most len(data)+1 of them.
	for range len(data) + 2 {
		rec, err := r.Next()
		if err == io.EOF {
			return out, r
		}
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("Next: %v, not a *LineError", err)
			}
			if le.Line < 1 || le.File != opts.File {
				t.Fatalf("error %v names the wrong place", err)
			}
			out = append(out, result{err: err.Error()})
			continue
		}
		checkRecord(t, rec)
		out = append(out, result{rec: rec})
	}
	t.Fatalf("no io.EOF after %d calls of Next", len(data)+2)
	return nil, nil
}

func checkRecord(t *testing.T, rec Record) {
	switch {
	case rec.Line < 1:
		t.Fatalf("record %+v has no line", rec)
	case rec.Op == graph.SetEdge:
		if rec.ID == "" || rec.Src != "" || rec.Dst != "" || rec.Label != "" || len(rec.SrcProps)+len(rec.DstProps) > 0 {
			t.Fatalf("edge set %+v does not name just its transfer and its properties", rec)
		}
	case rec.Op == graph.SetVertex:
		if rec.Src == "" || rec.Dst != "" || rec.ID != "" || rec.SrcLabel != "" || len(rec.Props)+len(rec.DstProps) > 0 {
			t.Fatalf("vertex set %+v does not name just its vertex and its properties", rec)
		}
	case rec.Src == "":
		t.Fatalf("record %+v has no Src", rec)
	case rec.Op == graph.AddVertex && rec.SrcLabel == "":
		t.Fatalf("vertex record %+v has no label", rec)
	case rec.Op != graph.AddVertex && rec.Op != graph.Insert && rec.Op != graph.Delete:
		t.Fatalf("record %+v has a bad op", rec)
	case rec.Op != graph.AddVertex && rec.Dst == "":
		t.Fatalf("edge record %+v has no Dst", rec)
	}
}

// FuzzReader reads arbitrary input in every format. Beyond not panicking, a
// tiny bufio buffer must read exactly what a large one does, and SkipBad
// must return the good records of the same reading and count the bad lines.
func FuzzReader(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s.data, int(s.format))
	}
	f.Fuzz(func(t *testing.T, data string, format int) {
		opts := Options{Format: Format(uint(format) % uint(FormatJSON+1)), File: "fuzz", MaxLineBytes: 64, MaxIDBytes: fuzzMaxID, Keep: fuzzKeep}
		want, _ := readResults(t, data, opts, bufSize)
		got, _ := readResults(t, data, opts, 16)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("16-byte buffer:\n got %v\nwant %v", got, want)
		}

		opts.SkipBad = true
		skipping, r := readResults(t, data, opts, bufSize)
		var good []result
		bad := 0
		for _, res := range want {
			if res.err != "" {
				bad++
			} else {
				good = append(good, res)
			}
		}
		if fmt.Sprint(skipping) != fmt.Sprint(good) {
			t.Fatalf("SkipBad:\n got %v\nwant %v", skipping, good)
		}
		if r.Skipped() != bad || len(r.Bad()) != min(bad, maxBad) {
			t.Fatalf("Skipped() = %d with %d errors kept, want %d", r.Skipped(), len(r.Bad()), bad)
		}

		res := &Resolver{IDs: graph.NewIDs(), Labels: graph.NewDict()}
		for _, g := range good {
			_, err := res.Resolve(g.rec)
			if unknown := g.rec.Op == graph.SetVertex && errors.Is(err, graph.ErrUnknownVertex); err != nil && !errors.Is(err, ErrSelfLoop) && !unknown {
				t.Fatalf("Resolve(%+v): %v", g.rec, err)
			}
		}
	})
}

// FuzzResolve resolves arbitrary records: the update must name what the
// record does, and a refused record must leave the dictionaries alone. An
// edge update has a Tx exactly when the record has an ID or KeepTime is
// set. A set interns nothing: a vertex set resolves exactly when the
// dictionary knows its vertex (known interns it first), an edge set when
// it names a transfer.
func FuzzResolve(f *testing.F) {
	f.Add(uint8(graph.Insert), "1", "2", "", "", "", "", false)
	f.Add(uint8(graph.Delete), "a", "07", "x", "A", "B", "tx-1", false)
	f.Add(uint8(graph.Insert), "5", "5", "0", "", "", "", true)
	f.Add(uint8(graph.AddVertex), "3", "", "", "L", "", "", true)
	f.Add(uint8(graph.AddVertex), "3", "", "", "", "", "", false)
	f.Add(uint8(0), "1", "2", "", "", "", "", false)
	f.Add(uint8(graph.SetVertex), "acct:9", "", "", "", "", "", false)
	f.Add(uint8(graph.SetVertex), "acct:9", "", "", "", "", "", true)
	f.Add(uint8(graph.SetEdge), "", "", "", "", "", "tx-981", false)
	f.Add(uint8(graph.SetEdge), "", "", "", "", "", "", true)
	f.Fuzz(func(t *testing.T, op uint8, src, dst, label, srcLabel, dstLabel, id string, keepTime bool) {
		rec := Record{Op: graph.Op(op), Src: src, Dst: dst, Label: label, SrcLabel: srcLabel, DstLabel: dstLabel, ID: id, Time: 9, Line: 1}
		if rec.Op == graph.SetVertex || rec.Op == graph.SetEdge {
			checkResolveSet(t, rec, keepTime)
			return
		}
		res := &Resolver{IDs: graph.NewIDs(), Labels: graph.NewDict(), DefaultEdgeLabel: "def", KeepTime: keepTime}
		u, err := res.Resolve(rec)
		edge := rec.Op == graph.Insert || rec.Op == graph.Delete
		if loop := edge && src != "" && src == dst; loop != errors.Is(err, ErrSelfLoop) {
			t.Fatalf("Resolve(%+v): %v", rec, err)
		}
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) || le.Line != 1 {
				t.Fatalf("Resolve(%+v): %v, want a *LineError of line 1", rec, err)
			}
			if res.IDs.Len() != 0 || res.Labels.Len() != 0 {
				t.Fatalf("refused %+v but interned names", rec)
			}
			return
		}
		name := func(l graph.Label) string {
			if l == graph.NoLabel {
				return ""
			}
			return res.Labels.Name(l)
		}
		if u.Op != rec.Op || res.IDs.Name(u.Src) != src || name(u.SrcLabel) != srcLabel {
			t.Fatalf("Resolve(%+v) = %+v", rec, u)
		}
		if !edge {
			if u.Tx != nil {
				t.Fatalf("Resolve(%+v): a Tx for a vertex without properties", rec)
			}
			return
		}
		if want := id != "" || keepTime; (u.Tx != nil) != want || want && (u.Tx.ID != id || u.Tx.Time != 9) {
			t.Fatalf("Resolve(%+v) with KeepTime %v: Tx %+v", rec, keepTime, u.Tx)
		}
		wantLabel := label
		if wantLabel == "" {
			wantLabel = res.DefaultEdgeLabel
		}
		if res.IDs.Name(u.Dst) != dst || name(u.Label) != wantLabel || name(u.DstLabel) != dstLabel {
			t.Fatalf("Resolve(%+v) = %+v", rec, u)
		}
	})
}

// checkResolveSet is FuzzResolve of a set record; known interns its Src
// beforehand.
func checkResolveSet(t *testing.T, rec Record, known bool) {
	res := &Resolver{IDs: graph.NewIDs(), Labels: graph.NewDict(), DefaultEdgeLabel: "def"}
	var id graph.VertexID
	if known && rec.Src != "" {
		var err error
		if id, _, err = res.IDs.Intern(rec.Src); err != nil {
			return // past the dictionary's limits
		}
	}
	ids := res.IDs.Len()
	u, err := res.Resolve(rec)
	if res.IDs.Len() != ids || res.Labels.Len() != 0 {
		t.Fatalf("Resolve(%+v) interned names", rec)
	}
	var le *LineError
	switch {
	case rec.Op == graph.SetVertex && (rec.Src == "" || !known):
		if !errors.As(err, &le) || le.Line != 1 || errors.Is(err, graph.ErrUnknownVertex) != (rec.Src != "") {
			t.Fatalf("Resolve(%+v): %v, want a *LineError of line 1, of an unknown vertex if named", rec, err)
		}
	case rec.Op == graph.SetEdge && rec.ID == "":
		if !errors.As(err, &le) || le.Line != 1 {
			t.Fatalf("Resolve(%+v): %v, want a *LineError of line 1", rec, err)
		}
	case err != nil:
		t.Fatalf("Resolve(%+v): %v", rec, err)
	case u.Op != rec.Op || u.Tx == nil || u.Tx.Time != 9 || u.Dst != 0 || u.Label != 0 || u.SrcLabel != graph.NoLabel || u.DstLabel != graph.NoLabel:
		t.Fatalf("Resolve(%+v) = %+v", rec, u)
	case rec.Op == graph.SetVertex && (u.Src != id || u.Tx.ID != ""):
		t.Fatalf("Resolve(%+v) = %+v, want vertex %d", rec, u, id)
	case rec.Op == graph.SetEdge && (u.Src != 0 || u.Tx.ID != rec.ID):
		t.Fatalf("Resolve(%+v) = %+v, want transfer %q", rec, u, rec.ID)
	}
}
