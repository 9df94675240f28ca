package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strings"
)

// PlotSVG draws per-batch time against batch size, one panel per shape and
// one line per engine, both axes logarithmic (the paper's Fig. 11 and 12).
// title heads the figure: the graph and the machine.
func PlotSVG(w io.Writer, rows []EngineRow, title string) error {
	var shapes, engines []string
	var batches []int
	for _, r := range rows {
		if !slices.Contains(shapes, r.Shape) {
			shapes = append(shapes, r.Shape)
		}
		if !slices.Contains(engines, r.Engine) {
			engines = append(engines, r.Engine)
		}
		if !slices.Contains(batches, r.Batch) {
			batches = append(batches, r.Batch)
		}
	}
	if len(rows) == 0 {
		return fmt.Errorf("bench: nothing to plot")
	}
	slices.Sort(batches)
	const (
		pw, ph       = 300, 220 // a panel
		ml, mr       = 56, 12   // margins inside a panel
		mt, mb       = 24, 36
		cols         = 3
		legendHeight = 24
	)
	rowsN := (len(shapes) + cols - 1) / cols
	width, height := cols*pw, rowsN*ph+legendHeight+28
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">`+"\n", width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="18" text-anchor="middle" font-size="13">%s</text>`+"\n", width/2, html.EscapeString(title))
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}
	for i, e := range engines {
		x := 10 + i*130
		y := height - 10
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`, x, y-4, x+20, y-4, colors[i%len(colors)])
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", x+24, y, html.EscapeString(e))
	}
	lx := func(v float64, lo, hi float64) float64 {
		return (math.Log10(v) - math.Log10(lo)) / (math.Log10(hi) - math.Log10(lo))
	}
	for si, shape := range shapes {
		ox, oy := (si%cols)*pw, 28+(si/cols)*ph
		lo, hi := math.Inf(1), 0.0
		for _, r := range rows {
			if r.Shape == shape && r.PerBatch > 0 {
				v := ms(r.PerBatch)
				lo, hi = min(lo, v), max(hi, v)
			}
		}
		if hi == 0 {
			continue
		}
		lo, hi = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
		if hi <= lo {
			hi = lo * 10
		}
		x0, x1 := float64(ox+ml), float64(ox+pw-mr)
		y0, y1 := float64(oy+ph-mb), float64(oy+mt)
		fmt.Fprintf(&b, `<text x="%g" y="%d" text-anchor="middle" font-weight="bold">%s</text>`+"\n", (x0+x1)/2, oy+14, html.EscapeString(shape))
		fmt.Fprintf(&b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#999"/>`+"\n", x0, y1, x1-x0, y0-y1)
		bx := func(batch int) float64 {
			if len(batches) == 1 {
				return (x0 + x1) / 2
			}
			return x0 + (x1-x0)*lx(float64(batch), float64(batches[0]), float64(batches[len(batches)-1]))
		}
		for _, batch := range batches {
			fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">%d</text>`, bx(batch), y0+14, batch)
		}
		for d := lo; d <= hi*1.0001; d *= 10 {
			y := y0 - (y0-y1)*lx(d, lo, hi)
			fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#ddd"/><text x="%g" y="%g" text-anchor="end">%g</text>`+"\n", x0, y, x1, y, x0-4, y+4, d)
		}
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">batch size</text>`+"\n", (x0+x1)/2, y0+28)
		fmt.Fprintf(&b, `<text x="%d" y="%g" text-anchor="middle" transform="rotate(-90 %d %g)">ms per batch</text>`+"\n", ox+14, (y0+y1)/2, ox+14, (y0+y1)/2)
		for ei, e := range engines {
			var pts []string
			for _, batch := range batches {
				for _, r := range rows {
					if r.Shape == shape && r.Engine == e && r.Batch == batch && r.PerBatch > 0 {
						y := y0 - (y0-y1)*lx(ms(r.PerBatch), lo, hi)
						pts = append(pts, fmt.Sprintf("%.1f,%.1f", bx(batch), y))
					}
				}
			}
			if len(pts) > 0 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"><title>%s</title></polyline>`+"\n",
					colors[ei%len(colors)], strings.Join(pts, " "), html.EscapeString(shape+" "+e))
			}
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}
