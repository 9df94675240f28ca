package bundle_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/graph"
)

// encoded fills a store through a graph and returns its encoding.
func encoded(t testing.TB) (*bundle.Store, []byte) {
	g, s := newGraph(t)
	s.VertexColumn("country")
	s.KeepTime()
	u := tx(graph.Insert, 1, 2, "a", 10)
	u.Tx.Time = 1700000000000
	u.Tx.SrcProps = []graph.Prop{{Name: "country", Value: graph.StringValue("DE")}}
	v := tx(graph.Insert, 1, 2, "", 0)
	v.Tx = &graph.Transfer{Props: []graph.Prop{{Name: "amount", Value: graph.StringValue("ten")}}}
	step(t, g, s, u, v, tx(graph.Insert, 3, 1, "b", 5), tx(graph.Insert, 2, 3, "c", 1))
	settle(g, s)
	step(t, g, s, tx(graph.Delete, 2, 3, "c", 0))
	settle(g, s)
	b, err := s.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, b
}

func TestEncodeRoundTrip(t *testing.T) {
	s, b := encoded(t)
	r, err := bundle.Decode(b, 1<<16)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []graph.Edge{{Src: 1, Dst: 2}, {Src: 3, Dst: 1}} {
		if w, g := view(s, e, bundle.After), view(r, e, bundle.After); !same(w, g) {
			t.Errorf("pair %v: decoded %v, want %v", e, g, w)
		}
	}
	if r.Len() != s.Len() || r.Pairs() != s.Pairs() || !r.KeepsTime() {
		t.Errorf("decoded %d transfers on %d pairs (time kept %v), want %d on %d", r.Len(), r.Pairs(), r.KeepsTime(), s.Len(), s.Pairs())
	}
	if got := r.VertexValue(1, 0); got.Str != "DE" {
		t.Errorf("vertex 1 country %v", got)
	}
	if _, err := bundle.Decode(b, 1); err == nil || !strings.Contains(err.Error(), "vertex 1 out of range") {
		t.Errorf("vertex 1 of a graph of 1 id: %v", err)
	}
	again, err := r.AppendBinary(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(b) {
		t.Errorf("re-encoding gives %d bytes, want %d", len(again), len(b))
	}
	// Every strict prefix is refused, not misread.
	for n := range len(b) {
		if _, err := bundle.Decode(b[:n], 1<<16); err == nil {
			t.Fatalf("a prefix of %d of %d bytes decoded", n, len(b))
		}
	}
}

func FuzzDecode(f *testing.F) {
	_, b := encoded(f)
	f.Add(b)
	f.Add(bytes.Clone(b[:20]))
	// A vertex id far beyond the graph's: refused, not a column grown to it.
	f.Add([]byte("GCSMBNDL\x01\x03\x01\x06000000\x01\x00\x00\x01\xcd\xcd\xcd\xcd\x00\x0100000000"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := bundle.Decode(b, 1<<16)
		if err != nil {
			return
		}
		again, err := s.AppendBinary(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bundle.Decode(again, 1<<16); err != nil {
			t.Fatalf("re-encoding of a decoded store does not decode: %v", err)
		}
	})
}
