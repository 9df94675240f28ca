package ingest

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/graph"
)

// nextUpdateSeeds are inputs where NextUpdate's short cut must step aside
// for the general path: ids with leading zeros, ids beyond uint64 or over
// the length limit, self-loops, labels beyond ASCII, degrees that are no
// numbers, odd times, and edge lists that turn out to be CSV.
var nextUpdateSeeds = []struct {
	data   string
	format Format
}{
	{"v 0 0\nv 1 1 \nv 2 1 3\ne 0 1 0\ne 1 2 0\ne 2 2 0\n-e 0 1 0\n+e 0 2\n", FormatAuto},
	{"e 1 2\ne 007 7\ne 7 0007\nv 08 L\ne 18446744073709551615 1\ne 18446744073709551616 1\n", FormatCSM},
	{"e 1 2\nv 3 \xc3\xa9\nv 4 \xff\nv 5 A x\ne 1 2 \xe2\x82\xac\ne 1 2 123456789\ne 1234567890 2\n", FormatCSM},
	{"t 3 2\nv 1 A\n#\nv 1 B\nx 1 2\ne 1\ne 1 2 3 4\nv 2 A 1 1\n", FormatCSM},
	{"1 2\n07 8\n8 07\n3 3\n4 5 1082040961\n5 6 -1\n6 7 0.5\n1 2 3 4\n8\n", FormatSNAP},
	{"1 2\n3,4\n5 6 9999999999999999\n18446744073709551616 2\n1234567890 1\n", FormatAuto},
	{"1,2\n3,4\n3,3\n", FormatAuto},
	{"\xef\xbb\xbfe 1 2\ne 2 3\n", FormatCSM},
	{`{"op":"+","src":1,"dst":2}` + "\ne 1 2\n", FormatAuto},
}

// step is one answer of a reading, in a form to compare: an update with
// its line, or an error.
type step struct {
	u    graph.Update
	tx   graph.Transfer
	line int
	err  string
}

// readUpdates reads data to its end with NextUpdate, or with Next and
// Resolve as NextUpdate's doc says it is, going on after errors.
func readUpdates(t *testing.T, data string, opts Options, keepTime, fast bool) ([]step, *Reader, *Resolver) {
	r := NewReader(strings.NewReader(data), opts)
	res := &Resolver{IDs: graph.NewIDs(), Labels: graph.NewDict(), DefaultEdgeLabel: "0", KeepTime: keepTime}
	var out []step
	for range len(data) + 2 {
		var (
			s   step
			err error
		)
		if fast {
			s.u, s.line, err = r.NextUpdate(res)
		} else {
			var rec Record
			if rec, err = r.Next(); err == nil {
				s.line = rec.Line
				if s.u, err = res.Resolve(rec); err != nil {
					err.(*LineError).File = opts.File
				}
			}
		}
		if err == io.EOF {
			return out, r, res
		}
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("%v, not a *LineError", err)
			}
			s = step{err: err.Error()}
		}
		if s.u.Tx != nil {
			s.tx, s.u.Tx = *s.u.Tx, nil
		}
		out = append(out, s)
	}
	t.Fatalf("no io.EOF after %d reads", len(data)+2)
	return nil, nil, nil
}

// FuzzNextUpdate reads arbitrary input with NextUpdate and with Next and
// Resolve: the updates, lines and errors must be the same, and so must
// what the reader counted and the dictionaries hold after.
func FuzzNextUpdate(f *testing.F) {
	for _, s := range append(nextUpdateSeeds[:len(nextUpdateSeeds):len(nextUpdateSeeds)], fuzzSeeds...) {
		f.Add(s.data, int(s.format), false, false)
	}
	f.Add(nextUpdateSeeds[0].data, int(FormatAuto), true, true)
	f.Add(nextUpdateSeeds[4].data, int(FormatSNAP), true, true)
	f.Fuzz(func(t *testing.T, data string, format int, keepTime, skipBad bool) {
		opts := Options{Format: Format(uint(format) % uint(FormatJSON+1)), File: "fuzz", MaxLineBytes: 64, MaxIDBytes: fuzzMaxID,
			Keep: fuzzKeep, SkipBad: skipBad, TSUnit: Seconds}
		want, wr, wres := readUpdates(t, data, opts, keepTime, false)
		got, gr, gres := readUpdates(t, data, opts, keepTime, true)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("NextUpdate:\n got %v\nwant %v", got, want)
		}
		wo, wok := wr.OddTime()
		gotOdd, gok := gr.OddTime()
		if gr.Skipped() != wr.Skipped() || fmt.Sprint(gr.Bad()) != fmt.Sprint(wr.Bad()) || gotOdd != wo || gok != wok {
			t.Fatalf("NextUpdate's reader: skipped %d %v, odd time %v %v; want %d %v, %v %v",
				gr.Skipped(), gr.Bad(), gotOdd, gok, wr.Skipped(), wr.Bad(), wo, wok)
		}
		if gres.IDs.Len() != wres.IDs.Len() || fmt.Sprint(gres.Labels.Names()) != fmt.Sprint(wres.Labels.Names()) {
			t.Fatalf("NextUpdate interned %d ids, labels %q; want %d, %q",
				gres.IDs.Len(), gres.Labels.Names(), wres.IDs.Len(), wres.Labels.Names())
		}
		for id := range graph.VertexID(gres.IDs.Len()) {
			if gres.IDs.Name(id) != wres.IDs.Name(id) {
				t.Fatalf("NextUpdate named id %d %q, want %q", id, gres.IDs.Name(id), wres.IDs.Name(id))
			}
		}
	})
}

// TestNextUpdateAllocs: the lines of a CSM data graph and of an edge list
// read into updates with no allocation once their labels are known.
func TestNextUpdateAllocs(t *testing.T) {
	for _, c := range []struct{ head, line string }{
		{"v 0 A\n", "v 1 B 3\ne 0 1 0\n-e 1 0\n"},
		{"1 2\n", "3 4\n5 6 1700000000000\n"},
	} {
		const lines = 200
		data := c.head + strings.Repeat(c.line, lines)
		r := NewReader(strings.NewReader(data), Options{})
		res := &Resolver{IDs: graph.NewIDs(), Labels: graph.NewDict(), DefaultEdgeLabel: "0"}
		for range 2 * strings.Count(c.head+c.line, "\n") {
			if _, _, err := r.NextUpdate(res); err != nil {
				t.Fatal(err)
			}
		}
		allocs := testing.AllocsPerRun(lines/2, func() {
			if _, _, err := r.NextUpdate(res); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%q: %.1f allocations a line, want 0", c.line, allocs)
		}
	}
}
