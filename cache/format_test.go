package cache

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/sampler"
)

var update = flag.Bool("update", false, "rewrite the byte dumps in FORMAT.md")

// dump renders a block word by word: offset, bytes as they lie in memory
// (little-endian), the field, and what it means. names labels the edge
// labels.
func dump(b *Block, directed bool, names map[graph.Label]string) string {
	var sb strings.Builder
	lay := b.Layout()
	w := b.Words()
	fmt.Fprintf(&sb, "%d lists, %d entries, %d words, %d bytes; rowidx at word %d, rowptr at %d, colidx at %d",
		lay.Keys, lay.Entries, lay.Words, b.Bytes(), lay.RowIdx, lay.RowPtr, lay.ColIdx)
	if lay.HasLabels {
		fmt.Fprintf(&sb, ", labels at %d", lay.Labels)
	}
	sb.WriteString("\n\noffset  bytes        field         meaning\n")
	key := func(k uint32) string {
		r := sampler.KeyList(k, directed)
		switch {
		case !directed:
			return fmt.Sprintf("%d", k)
		case r.In:
			return fmt.Sprintf("%d (in-list of %d)", k, r.V)
		}
		return fmt.Sprintf("%d (out-list of %d)", k, r.V)
	}
	list := func(k uint32) string { return "list " + key(k) }
	rowOf := func(entry int) (row int, app bool) {
		for i := range lay.Keys {
			s, a, e := b.parts(i)
			if entry >= s && entry < e {
				return i, entry >= a
			}
		}
		panic("entry outside every row")
	}
	for i, x := range w {
		var field, meaning string
		switch {
		case i < lay.RowPtr:
			field = fmt.Sprintf("rowidx[%d]", i)
			meaning = "key " + key(x)
		case i < lay.ColIdx:
			j := i - lay.RowPtr
			r := j / 2
			switch {
			case j == 2*lay.Keys:
				field, meaning = fmt.Sprintf("rowptr[%d]", j), fmt.Sprintf("end: %d entries", x)
			case j%2 == 0:
				field, meaning = fmt.Sprintf("rowptr[%d]", j), fmt.Sprintf("%s: sorted part at colidx[%d]", list(w[r]), x)
			case x == NoAppended:
				field, meaning = fmt.Sprintf("rowptr[%d]", j), fmt.Sprintf("%s: no appended part", list(w[r]))
			default:
				field, meaning = fmt.Sprintf("rowptr[%d]", j), fmt.Sprintf("%s: appended part at colidx[%d]", list(w[r]), x)
			}
		case i < lay.ColIdx+lay.Entries:
			j := i - lay.ColIdx
			r, app := rowOf(j)
			part := "sorted"
			if app {
				part = "appended"
			}
			field = fmt.Sprintf("colidx[%d]", j)
			meaning = fmt.Sprintf("%s %s: %d", list(w[r]), part, x&dyngraph.IDMask)
			if x&dyngraph.Tombstone != 0 {
				meaning += ", deleted (tombstone bit)"
			}
		default:
			j := i - lay.Labels
			r, _ := rowOf(j)
			field = fmt.Sprintf("labels[%d]", j)
			meaning = fmt.Sprintf("%s: edge label %d (%s) of colidx[%d]", list(w[r]), x, names[x], j)
		}
		fmt.Fprintf(&sb, "0x%04x  %02x %02x %02x %02x  %-12s  %s\n", 4*i, byte(x), byte(x>>8), byte(x>>16), byte(x>>24), field, meaning)
	}
	return sb.String()
}

// formatExamples builds the blocks FORMAT.md shows.
func formatExamples(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}

	// Undirected, one edge label: the path 0-1-2-3-4 with the triangle
	// 0-1-2; the batch inserts 1-3 and 4-5 and deletes 0-2.
	g := newGraph(t, false)
	d := graph.NewDict()
	e := d.Intern("e")
	var load []graph.Update
	for _, p := range [][2]uint32{{0, 1}, {0, 2}, {1, 2}, {2, 3}, {3, 4}} {
		load = append(load, edge(graph.Insert, p[0], p[1], e))
	}
	if _, _, _, err := g.Apply(load); err != nil {
		t.Fatal(err)
	}
	g.Reorganize()
	if _, _, _, err := g.Apply([]graph.Update{edge(graph.Insert, 1, 3, e), edge(graph.Insert, 4, 5, e), edge(graph.Delete, 0, 2, e)}); err != nil {
		t.Fatal(err)
	}
	var b Block
	if n, err := Pack(&b, g, []uint32{3, 2, 4}, 1<<10, nil); err != nil || n != 3 {
		t.Fatalf("packed %d: %v", n, err)
	}
	out["undirected"] = dump(&b, false, nil)

	// Directed, two edge labels: 0→1 twice (labels a and b), 1→2, 2→0;
	// the batch deletes 0→1 labelled b and inserts 2→1 labelled a. The
	// block holds the out-list of 0 (key 0) and the in-list of 1 (key 3).
	g = newGraph(t, true)
	d = graph.NewDict()
	a, bl := d.Intern("a"), d.Intern("b")
	if _, _, _, err := g.Apply([]graph.Update{edge(graph.Insert, 0, 1, a), edge(graph.Insert, 0, 1, bl), edge(graph.Insert, 1, 2, a), edge(graph.Insert, 2, 0, bl)}); err != nil {
		t.Fatal(err)
	}
	g.Reorganize()
	if _, _, _, err := g.Apply([]graph.Update{edge(graph.Delete, 0, 1, bl), edge(graph.Insert, 2, 1, a)}); err != nil {
		t.Fatal(err)
	}
	out0, in1 := sampler.ListKey(0, false, true), sampler.ListKey(1, true, true)
	if n, err := Pack(&b, g, []uint32{in1, out0}, 1<<10, nil); err != nil || n != 2 {
		t.Fatalf("packed %d: %v", n, err)
	}
	out["directed-labels"] = dump(&b, true, map[graph.Label]string{a: "a", bl: "b"})

	// Trimmed: vertices 0 and 1 of label X, 2 and 3 of label Y, the star
	// 0-1, 0-2, 0-3 and the edge 1-2; the query (x:X)-[]-(y:Y) reads an
	// X vertex's list at Y and a Y vertex's at X. The block holds lists 0
	// and 1: the Y neighbours 2 and 3 of vertex 0, not 1; and 2 of 1.
	g = newGraph(t, false)
	d = graph.NewDict()
	lx, ly := d.Intern("X"), d.Intern("Y")
	load = nil
	for v, l := range []graph.Label{lx, lx, ly, ly} {
		load = append(load, graph.Update{Op: graph.AddVertex, Src: uint32(v), SrcLabel: l})
	}
	for _, p := range [][2]uint32{{0, 1}, {0, 2}, {0, 3}, {1, 2}} {
		load = append(load, edge(graph.Insert, p[0], p[1], 0))
	}
	if _, _, _, err := g.Apply(load); err != nil {
		t.Fatal(err)
	}
	g.Reorganize()
	q := compile(t, d, "(x:X)-[]-(y:Y)", false)
	if n, err := Pack(&b, g, []uint32{0, 1}, 1<<10, NewReads(g, []*query.Query{q})); err != nil || n != 2 {
		t.Fatalf("packed %d: %v", n, err)
	}
	out["trimmed"] = dump(&b, false, nil)
	return out
}

// TestFormat compares the dumps in FORMAT.md with the blocks Pack builds
// today; go test ./cache -run TestFormat -update rewrites them.
func TestFormat(t *testing.T) {
	const file = "FORMAT.md"
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(text)
	for name, got := range formatExamples(t) {
		begin, end := "<!-- dump "+name+" -->\n```text\n", "```\n<!-- end dump -->"
		i := strings.Index(doc, begin)
		if i < 0 {
			t.Fatalf("%s has no %q section", file, begin)
		}
		i += len(begin)
		j := strings.Index(doc[i:], end)
		if j < 0 {
			t.Fatalf("%s: the %s section does not end", file, name)
		}
		if doc[i:i+j] == got {
			continue
		}
		if !*update {
			t.Errorf("%s: the %s dump is stale; run go test ./cache -run TestFormat -update\n\nwant:\n%s", file, name, got)
			continue
		}
		doc = doc[:i] + got + doc[i+j:]
	}
	if *update && doc != string(text) {
		if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
