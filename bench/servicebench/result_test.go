package servicebench

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// percentiles weighs each sample by its count: p50 and p99 are the
// samples below which half and 99% of the events lie, not of the samples.
func TestPercentiles(t *testing.T) {
	ws := []weighted{{3 * time.Millisecond, 1}, {time.Millisecond, 98}, {2 * time.Millisecond, 1}}
	got := percentiles(ws)
	want := LatencySummary{P50: 1, P99: 2, Max: 3, Count: 100}
	if got != want {
		t.Errorf("percentiles: %+v, want %+v", got, want)
	}
	if (percentiles(nil) != LatencySummary{}) {
		t.Error("no samples: want the zero summary")
	}
}

// A soak's arrivals reuse their slots: an offset whose slot a later one
// took is no longer known, so its latency is never made up.
func TestArrivalsRing(t *testing.T) {
	a := newArrivals(1, 0, true)
	n := int64(len(a.offs[0]))
	at := time.Unix(0, 42)
	a.set(0, 5, at)
	if got, ok := a.get(0, 5); !ok || got != 42 {
		t.Fatalf("get(0, 5) = %d, %v; want 42, true", got, ok)
	}
	a.set(0, 5+n, at.Add(1))
	if _, ok := a.get(0, 5); ok {
		t.Error("offset 5 is still known after offset 5+n took its slot")
	}
	if _, ok := a.get(1, 5); ok {
		t.Error("a partition the run does not have is known")
	}
	grown := newArrivals(2, 0, false)
	grown.set(1, 1000, at)
	if got, ok := grown.get(1, 1000); !ok || got != 42 {
		t.Errorf("outside a soak the arrivals grow: get(1, 1000) = %d, %v", got, ok)
	}
}

// Selected keeps the mix's order and refuses a name the mix lacks.
func TestMixSelected(t *testing.T) {
	m := Mixes["rings-where"]
	got, err := m.Selected("rings-where", "ring4w, ring3")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, q := range got {
		name, _, _ := strings.Cut(q, "=")
		names = append(names, name)
	}
	if !slices.Equal(names, []string{"ring3", "ring4w"}) {
		t.Errorf("selected %v, want ring3, ring4w", names)
	}
	if _, err := m.Selected("rings-where", "ring5"); err == nil || !strings.Contains(err.Error(), "has no query \"ring5\"") {
		t.Errorf("an unknown query: %v", err)
	}
}

// A soak compares the means of its first window after the warm-up with
// those of its last, and reports no drift from a zero start.
func TestSoakResult(t *testing.T) {
	k := &soaker{}
	for i := range 40 {
		k.samples = append(k.samples, SoakSample{T: float64(i + 1), RSS: 100 + int64(i), Heap: 10})
	}
	r := k.result(40*time.Second, 0)
	if r.Window != 10 || r.Warmup != 10 {
		t.Fatalf("window %v, warm-up %v; want 10 and 10", r.Window, r.Warmup)
	}
	if r.First.RSS != 113 || r.Last.RSS != 134 {
		t.Errorf("RSS means %d then %d, want 113 then 134", r.First.RSS, r.Last.RSS)
	}
	if d, ok := r.Drift["heap"].(float64); !ok || d != 0 {
		t.Errorf("heap drift %v, want 0", r.Drift["heap"])
	}
	if r.Drift["lag"] != nil {
		t.Errorf("lag drift from a zero start: %v, want none", r.Drift["lag"])
	}
}
