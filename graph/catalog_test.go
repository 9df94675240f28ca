package graph

import (
	"encoding/json"
	"fmt"
	"maps"
	"sync"
	"testing"
)

func TestCatalog(t *testing.T) {
	c := &Catalog{DefaultEdgeLabel: "0"}
	if !c.Empty() {
		t.Fatal("a new catalog is not empty")
	}
	c.Note(false, "TRANSFER", []byte("amount"), Number)
	c.Note(false, "TRANSFER", []byte("amount"), String)
	c.Note(false, "TRANSFER", []byte("gone"), Null) // a null says nothing
	c.Note(false, "", []byte("w"), Number)          // under the default edge label
	c.Note(true, "Account", []byte("country"), String)
	c.Note(true, "", []byte("risk"), Number) // any vertex label's
	if c.Empty() {
		t.Fatal("empty after notes")
	}
	check := func(vertex bool, label string, wildcard bool, want map[string]Kinds) {
		t.Helper()
		got, complete := c.Props(vertex, label, wildcard)
		if !maps.Equal(got, want) || !complete {
			t.Errorf("Props(%v, %q, %v) = %v %v, want %v complete", vertex, label, wildcard, got, complete, want)
		}
	}
	check(false, "TRANSFER", false, map[string]Kinds{"amount": KindsOf(Number) | KindsOf(String)})
	check(false, "0", false, map[string]Kinds{"w": KindsOf(Number)})
	check(false, "", false, map[string]Kinds{}) // no edge is unlabelled
	check(false, "", true, map[string]Kinds{"amount": KindsOf(Number) | KindsOf(String), "w": KindsOf(Number)})
	check(true, "Account", false, map[string]Kinds{"country": KindsOf(String), "risk": KindsOf(Number)})
	check(true, "Merchant", false, map[string]Kinds{"risk": KindsOf(Number)})
	check(true, "", true, map[string]Kinds{"country": KindsOf(String), "risk": KindsOf(Number)})
	if s := (KindsOf(Number) | KindsOf(Bool)).Plural(); s != "numbers or booleans" {
		t.Errorf("Plural: %q", s)
	}

	// A checkpoint's round trip keeps everything; equal catalogs write
	// equal bytes.
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	d := &Catalog{DefaultEdgeLabel: "0"}
	if err := json.Unmarshal(b, d); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(d)
	if string(b) != string(b2) {
		t.Errorf("round trip:\n%s\n%s", b, b2)
	}
	want := `{"edge":[{"label":"0","props":{"w":["number"]}},{"label":"TRANSFER","props":{"amount":["number","string"]}}],` +
		`"vertex":[{"label":"","props":{"risk":["number"]}},{"label":"Account","props":{"country":["string"]}}]}`
	if string(b) != want {
		t.Errorf("JSON:\n got %s\nwant %s", b, want)
	}
	for _, bad := range []string{`{"edge":[{"label":"x","props":{"a":["pounds"]}}]}`, `{"edge":5}`} {
		if err := json.Unmarshal([]byte(bad), d); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	c.Reset()
	if !c.Empty() {
		t.Error("not empty after Reset")
	}
}

// TestCatalogBounds: past MaxCatalogNames names a label is partial, past
// MaxCatalogLabels labels the side is, and neither grows further.
func TestCatalogBounds(t *testing.T) {
	c := &Catalog{}
	for i := range MaxCatalogNames + 10 {
		c.Note(false, "L", fmt.Appendf(nil, "p%d", i), Number)
	}
	props, complete := c.Props(false, "L", false)
	if len(props) != MaxCatalogNames || complete {
		t.Errorf("names past the bound: %d, complete %v", len(props), complete)
	}
	// A known name still records a new kind.
	c.Note(false, "L", []byte("p0"), Bool)
	if props, _ := c.Props(false, "L", false); !props["p0"].Has(Bool) {
		t.Error("a known name's new kind was dropped past the bound")
	}
	for i := range MaxCatalogLabels + 10 {
		c.Note(true, fmt.Sprint("V", i), []byte("x"), Number)
	}
	if _, complete := c.Props(true, "V1", false); complete {
		t.Error("labels past the bound: complete")
	}
	if props, _ := c.Props(true, "V2000", true); len(props) != 1 {
		t.Errorf("wildcard past the bound: %v", props)
	}
	b, _ := json.Marshal(c)
	d := &Catalog{}
	if err := json.Unmarshal(b, d); err != nil {
		t.Fatal(err)
	}
	if _, complete := d.Props(false, "L", false); complete {
		t.Error("partial lost in a round trip")
	}
}

// TestCatalogNoteAllocs: noting what is known allocates nothing, as it
// runs per property of every event.
func TestCatalogNoteAllocs(t *testing.T) {
	c := &Catalog{}
	name := []byte("amount")
	c.Note(false, "TRANSFER", name, Number)
	if n := testing.AllocsPerRun(100, func() { c.Note(false, "TRANSFER", name, Number) }); n != 0 {
		t.Errorf("Note of a known name: %v allocations", n)
	}
}

// TestCatalogConcurrent: decoders note at once; every note lands (run it
// under -race).
func TestCatalogConcurrent(t *testing.T) {
	c := &Catalog{}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				c.Note(g%2 == 0, "L", fmt.Appendf(nil, "p%d", i), Kind(1+(i+g)%3))
				c.Props(false, "L", false)
			}
		})
	}
	wg.Wait()
	for _, vertex := range []bool{false, true} {
		props, _ := c.Props(vertex, "L", false)
		for i := range 50 {
			for g := range 4 {
				if g%2 == 0 == vertex && !props[fmt.Sprint("p", i)].Has(Kind(1+(i+g)%3)) {
					t.Fatalf("note %d of goroutine %d lost", i, g)
				}
			}
		}
	}
}

// TestCatalogMarkPartial: a catalog marked partial keeps what it knew,
// says no name is absent for sure, and stays so through a checkpoint.
func TestCatalogMarkPartial(t *testing.T) {
	c := &Catalog{}
	c.Note(false, "T", []byte("amount"), Number)
	c.MarkPartial()
	c.Note(false, "T", []byte("fee"), Number)
	c.Note(false, "U", []byte("x"), String)
	props, complete := c.Props(false, "T", false)
	if complete || !maps.Equal(props, map[string]Kinds{"amount": KindsOf(Number), "fee": KindsOf(Number)}) {
		t.Errorf("partial: %v complete %v", props, complete)
	}
	if props, complete := c.Props(false, "U", false); complete || props["x"] != KindsOf(String) {
		t.Errorf("a label noted after MarkPartial: %v complete %v", props, complete)
	}
	b, _ := json.Marshal(c)
	d := &Catalog{}
	if err := json.Unmarshal(b, d); err != nil {
		t.Fatal(err)
	}
	if _, complete := d.Props(true, "V", false); complete {
		t.Errorf("partial lost in a round trip: %s", b)
	}
}

// FuzzCatalogUnmarshal reads arbitrary bytes as a checkpoint's catalog:
// an error or a catalog that writes itself back as it reads.
func FuzzCatalogUnmarshal(f *testing.F) {
	c := &Catalog{}
	c.Note(false, "TRANSFER", []byte("amount"), Number)
	c.Note(true, "", []byte("country"), String)
	c.MarkPartial()
	b, _ := json.Marshal(c)
	for _, s := range []string{string(b), `{}`, `null`, `{"edge":[{"label":"x","props":{"a":["time","boolean"]},"partial":true}]}`,
		`{"edge":[{"label":"x","props":{"a":["pounds"]}}]}`, `{"vertex":[{"label":"x"},{"label":"x"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c := &Catalog{}
		if err := c.UnmarshalJSON(b); err != nil {
			return
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		d := &Catalog{}
		if err := d.UnmarshalJSON(out); err != nil {
			t.Fatalf("%s reads, but its writing %s does not: %v", b, out, err)
		}
		if again, _ := json.Marshal(d); string(again) != string(out) {
			t.Fatalf("%s writes %s, then %s", b, out, again)
		}
	})
}

// BenchmarkCatalogNote notes a known name: the cost per property of an
// event whose shape differs from the last one's.
func BenchmarkCatalogNote(b *testing.B) {
	c := &Catalog{}
	name := []byte("amount")
	c.Note(false, "TRANSFER", name, Number)
	b.ReportAllocs()
	for b.Loop() {
		c.Note(false, "TRANSFER", name, Number)
	}
}
