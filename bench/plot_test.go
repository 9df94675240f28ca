package bench_test

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/gcsm/gcsm/bench"
)

// TestPlotSVG: the plot is well-formed SVG with a line per shape and engine
// through every batch size that engine ran.
func TestPlotSVG(t *testing.T) {
	var rows []bench.EngineRow
	for _, shape := range []string{"triangle", "house"} {
		for ei, e := range []string{"gpu-gcsm", "gpu-degree", "gpu-zero-copy"} {
			for bi, batch := range []int{64, 1024, 8192} {
				rows = append(rows, bench.EngineRow{Shape: shape, Engine: e, Batch: batch, PerBatch: time.Duration(ei+1) * time.Duration(bi+1) * time.Millisecond})
			}
		}
	}
	var b strings.Builder
	if err := bench.PlotSVG(&b, rows, "R-MAT <test> & machine"); err != nil {
		t.Fatal(err)
	}
	type polyline struct {
		Points string `xml:"points,attr"`
		Title  string `xml:"title"`
	}
	var doc struct {
		XMLName   xml.Name   `xml:"svg"`
		Polylines []polyline `xml:"polyline"`
	}
	if err := xml.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b.String())
	}
	if len(doc.Polylines) != 6 {
		t.Fatalf("%d lines, want 6 (2 shapes × 3 engines)", len(doc.Polylines))
	}
	for _, p := range doc.Polylines {
		if n := len(strings.Fields(p.Points)); n != 3 {
			t.Errorf("line %q has %d points, want 3", p.Title, n)
		}
	}
	if err := bench.PlotSVG(&b, nil, "x"); err == nil {
		t.Error("plotting nothing did not fail")
	}
}
