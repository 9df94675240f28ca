package ingest

import (
	"fmt"
	"testing"

	"github.com/gcsm/gcsm/graph"
)

// TestResolveKnown: endpoints looked up beforehand are taken as they are,
// the others interned, and both ways give the same update; labels, more
// kinds than the resolver remembers, always resolve to the dictionary's.
func TestResolveKnown(t *testing.T) {
	r := &Resolver{IDs: graph.NewIDs(), Labels: graph.NewDict(), DefaultEdgeLabel: "T"}
	for i := range 50 {
		rec := Record{Op: graph.Insert, Src: fmt.Sprint("a", i%7), Dst: fmt.Sprint("b", i%5),
			Label: fmt.Sprint("L", i%6), SrcLabel: fmt.Sprint("V", i%3), DstLabel: fmt.Sprint("W", i%9)}
		var k Known
		k.ID[0], k.OK[0] = r.IDs.Lookup(rec.Src)
		k.ID[1], k.OK[1] = r.IDs.Lookup(rec.Dst)
		n := r.IDs.Len()
		u, err := r.ResolveKnown(rec, k)
		if err != nil {
			t.Fatal(err)
		}
		if k.OK[0] && k.OK[1] && r.IDs.Len() != n {
			t.Fatalf("record %d: known endpoints were interned again", i)
		}
		want, err := r.Resolve(rec)
		if err != nil || u != want {
			t.Fatalf("record %d: ResolveKnown %+v, Resolve %+v %v", i, u, want, err)
		}
		for name, l := range map[string]graph.Label{rec.Label: u.Label, rec.SrcLabel: u.SrcLabel, rec.DstLabel: u.DstLabel} {
			if got, ok := r.Labels.Lookup(name); !ok || got != l {
				t.Fatalf("record %d: label %q resolved to %d, the dictionary has %d %v", i, name, l, got, ok)
			}
		}
		if r.IDs.Name(u.Src) != rec.Src || r.IDs.Name(u.Dst) != rec.Dst {
			t.Fatalf("record %d: ids %d %d name %q %q", i, u.Src, u.Dst, r.IDs.Name(u.Src), r.IDs.Name(u.Dst))
		}
	}
	// A wrong hint is taken as given: the caller vouches for it.
	u, err := r.ResolveKnown(Record{Op: graph.Insert, Src: "a0", Dst: "zz"}, Known{ID: [2]graph.VertexID{42, 0}, OK: [2]bool{true, false}})
	if err != nil || u.Src != 42 {
		t.Fatalf("hinted source: %+v %v", u, err)
	}
}
