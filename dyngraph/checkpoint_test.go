package dyngraph

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/internal/hostmem"
)

// ckptOpts are the options of the test graphs: small slabs, so that even
// small graphs span several and hubs get slabs of their own.
func ckptOpts(directed bool, def graph.Label) Options {
	return Options{Directed: directed, Alloc: hostmem.Heap{}, SlabEntries: 1024, DefaultVertexLabel: def}
}

// entries reads a clean list as (neighbour, edge label) pairs, taking the
// graph's one label where there are no label arrays: a graph and its
// reloaded copy may differ in whether they keep label arrays (a graph that
// once had two edge labels keeps them), not in the edges.
//
// No t.Helper: it walks the stack, and this runs once per list.
func entries(t *testing.T, g *Graph, a Adj) []nb {
	if len(a.Appended) != 0 || a.Tombstones != 0 {
		t.Fatalf("list not clean: %d appended, %d tombstones", len(a.Appended), a.Tombstones)
	}
	single, _ := g.EdgeLabel()
	out := make([]nb, len(a.Sorted))
	for i, w := range a.Sorted {
		out[i] = nb{w, single}
		if a.SortedLabels != nil {
			out[i].l = a.SortedLabels[i]
		}
	}
	return out
}

// sameGraph requires b to hold exactly a's vertices, labels and edges, list
// by list and in the same order.
func sameGraph(t *testing.T, a, b *Graph) {
	t.Helper()
	if a.Directed() != b.Directed() || a.NumVertices() != b.NumVertices() || a.Born() != b.Born() {
		t.Fatalf("directed %v/%v, rows %d/%d, vertices %d/%d", a.Directed(), b.Directed(), a.NumVertices(), b.NumVertices(), a.Born(), b.Born())
	}
	if !slices.Equal(a.VertexLabels(), b.VertexLabels()) {
		t.Fatalf("vertex labels %v, want %v", b.VertexLabels(), a.VertexLabels())
	}
	if sa, sb := a.Stats(), b.Stats(); sa.Edges != sb.Edges || sa.Vertices != sb.Vertices || sa.Entries != sb.Entries {
		t.Fatalf("Stats: edges %d/%d, vertices %d/%d, entries %d/%d", sb.Edges, sa.Edges, sb.Vertices, sa.Vertices, sb.Entries, sa.Entries)
	}
	if a.NumEdges() != b.NumEdges() || a.Order().IDOnly() != b.Order().IDOnly() {
		t.Fatalf("NumEdges %d/%d, IDOnly %v/%v", b.NumEdges(), a.NumEdges(), b.Order().IDOnly(), a.Order().IDOnly())
	}
	for v := range graph.VertexID(a.NumVertices()) {
		if x, y := entries(t, a, a.Out(v)), entries(t, b, b.Out(v)); !slices.Equal(x, y) {
			t.Fatalf("vertex %d: out-list %v, want %v", v, y, x)
		}
		if x, y := entries(t, a, a.In(v)), entries(t, b, b.In(v)); !slices.Equal(x, y) {
			t.Fatalf("vertex %d: in-list %v, want %v", v, y, x)
		}
	}
}

// edgeSet reads the edges of a clean graph as model keys.
func edgeSet(t *testing.T, g *Graph) map[mkey]bool {
	t.Helper()
	s := map[mkey]bool{}
	for v := range graph.VertexID(g.NumVertices()) {
		for _, e := range entries(t, g, g.Out(v)) {
			if g.Directed() || v < e.id {
				s[mkey{v, e.id, e.l}] = true
			}
		}
	}
	return s
}

func checkpoint(t *testing.T, g *Graph) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := g.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo reported %d bytes, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

// TestCheckpointRoundTrip drives random graphs through rounds of Apply and
// Reorganize (the generator of TestModel: insertions, deletions, refreshes,
// vertices without edges, table rows that are not vertices, one or several
// edge and vertex labels), checkpoints them after each round and requires the
// reloaded graph to equal the original and the model, to write the same
// bytes, and to go on like the original under the next batch.
func TestCheckpointRoundTrip(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	var multi, gaps, bare, dropped int
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 0xc4e))
		directed := seed%2 == 0
		def := graph.Label(r.IntN(2))
		opts := ckptOpts(directed, def)
		g, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		m := newModel(directed, def)
		gn := &gen{r: r, m: m, vmax: 5 + r.IntN(150), pDel: 0.3}
		gn.labels = [][]graph.Label{{0}, {4}, {0, 1, 2}, {1, 6}}[seed/2%4]
		gn.vlabels = [][]graph.Label{{def}, {0, 1, 2}}[seed/8%2]
		// apply runs one batch on g and, when h is not nil, on h too, and
		// requires the same outcome of both. The model has seen the batch.
		apply := func(where string, b []graph.Update, h *Graph) {
			dg, rg, sg, err := g.Apply(b)
			if err != nil {
				t.Fatal(err)
			}
			if h != nil {
				dg, rg = slices.Clone(dg), slices.Clone(rg)
				dh, rh, sh, err := h.Apply(b)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(dg, dh) || sg != sh || len(rg) != len(rh) {
					t.Fatalf("%s: next batch: ΔE %v, stats %+v on the reloaded graph; %v, %+v on the original", where, dh, sh, dg, sg)
				}
				h.Reorganize()
			}
			g.Reorganize()
		}
		for round := range 6 {
			where := fmt.Sprintf("seed %d round %d (directed %v)", seed, round, directed)
			if seed%16 == 15 && round == 3 {
				// Delete every edge of all labels but one: the graph keeps
				// its label arrays, which the checkpoint drops.
				var del []graph.Update
				for _, k := range sortedKeys(m.edges) {
					if k.l != gn.labels[0] {
						del = append(del, graph.Update{Op: graph.Delete, Src: k.a, Dst: k.b, Label: k.l, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
					}
				}
				m.begin()
				for i, u := range del {
					m.step(i, u)
				}
				m.end()
				apply(where, del, nil)
				gn.labels = gn.labels[:1]
			}
			gn.purge = round >= 3 && r.IntN(3) == 0
			m.begin() // gn.batch feeds the model as it draws
			b := gn.batch(r.IntN(300))
			m.end()
			apply(where, b, nil)

			data := checkpoint(t, g)
			h, err := Read(bytes.NewReader(data), opts)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			sameGraph(t, g, h)
			if got := edgeSet(t, h); !equalKeys(got, m.edges) {
				t.Fatalf("%s: edges %v, model %v", where, sortedKeys(got), sortedKeys(m.edges))
			}
			checkArena(t, h)
			if st := h.Stats(); st.CapacityEntries > 2*st.Entries {
				t.Fatalf("%s: reloaded graph holds capacity %d for %d entries: not a bulk load", where, st.CapacityEntries, st.Entries)
			}
			if again := checkpoint(t, h); !bytes.Equal(again, data) {
				t.Fatalf("%s: the reloaded graph writes %d different bytes (%d before)", where, len(again), len(data))
			}
			switch ml, _ := g.storedLabels(); {
			case ml:
				multi++
			case g.MultiLabel() && g.NumEdges() > 0:
				dropped++
			}
			if g.NumVertices() > g.Born() {
				gaps++
			}
			for v := range graph.VertexID(g.NumVertices()) {
				if g.exists(v) && g.Degree(v) == 0 {
					bare++
					break
				}
			}

			// The next batch must do the same to both.
			m.begin()
			next := gn.batch(r.IntN(100))
			m.end()
			apply(where, next, h)
			sameGraph(t, g, h)
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("checkpoints with per-edge labels %d, label arrays dropped %d, rows that are not vertices %d, vertices without edges %d",
		multi, dropped, gaps, bare)
	if multi == 0 || gaps == 0 || bare == 0 || dropped == 0 {
		t.Fatal("the scenarios no longer cover every case")
	}
}

func equalKeys(a, b map[mkey]bool) bool {
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return len(a) == len(b)
}

// smallGraph is a fixed graph for the format tests: vertices 0..4 with a
// row (3) that is not a vertex and a vertex (4) without edges.
func smallGraph(t testing.TB, directed bool, labels ...graph.Label) *Graph {
	t.Helper()
	g, err := New(ckptOpts(directed, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(labels) == 0 {
		labels = []graph.Label{0}
	}
	b := []graph.Update{
		{Op: graph.AddVertex, Src: 0, SrcLabel: 1},
		{Op: graph.AddVertex, Src: 4, SrcLabel: 2},
	}
	for i, e := range [][2]uint32{{0, 1}, {1, 2}, {2, 0}, {1, 0}, {5, 2}} {
		b = append(b, graph.Update{Op: graph.Insert, Src: e[0], Dst: e[1], Label: labels[i%len(labels)], SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
	}
	if _, _, err := g.Build(b); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestCheckpointBytes pins the format on a small graph, byte by byte, so that
// a change to it cannot go unnoticed (and needs a new version).
func TestCheckpointBytes(t *testing.T) {
	g := smallGraph(t, true)
	defer g.Close()
	want := []byte{
		'G', 'C', 'S', 'G', 1, ckptDirected, // 0: magic, version, flags
		6, 5, 0, // 6: 6 rows, 5 edges, all with edge label 0
		2, 1, 1, 0, 3, 1, // 9: vertex labels + 1; row 3 is not a vertex
		1, 2, // 15: vertex 0: one edge, to 0+1
		2, 2, 3, // 17: vertex 1: to 1+1 = 2, then 2-2 = 0 (list order: vertex label 0 before 1)
		1, 3, // 20: vertex 2: to 2-2 = 0
		0, 0, // 22: vertices 3 and 4: none
		1, 5, // 24: vertex 5: to 5-3 = 2
	}
	if got := checkpoint(t, g); !bytes.Equal(got, want) {
		t.Fatalf("checkpoint\n%v\nwant\n%v", got, want)
	}
}

// TestCheckpointLabels covers the per-edge label encoding and the choice
// between the two encodings.
func TestCheckpointLabels(t *testing.T) {
	for _, directed := range []bool{false, true} {
		g := smallGraph(t, directed, 7, 2, 9)
		data := checkpoint(t, g)
		if data[5]&ckptEdgeLabels == 0 {
			t.Fatal("three edge labels written without per-edge labels")
		}
		h, err := Read(bytes.NewReader(data), ckptOpts(directed, 0))
		if err != nil {
			t.Fatal(err)
		}
		sameGraph(t, g, h)
		if !h.MultiLabel() {
			t.Fatal("reloaded graph lost its label arrays")
		}
		g.Close()
		h.Close()
	}
}

func TestCheckpointDirectedMismatch(t *testing.T) {
	for _, directed := range []bool{false, true} {
		g := smallGraph(t, directed)
		data := checkpoint(t, g)
		g.Close()
		_, err := Read(bytes.NewReader(data), ckptOpts(!directed, 0))
		if err == nil || !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), "Options.Directed is") {
			t.Fatalf("directed=%v read as %v: error %v", directed, !directed, err)
		}
		if want := map[bool]string{true: "a directed graph", false: "an undirected graph"}[directed]; !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	}
}

func TestCheckpointPendingPanics(t *testing.T) {
	g := smallGraph(t, false)
	defer g.Close()
	if _, _, _, err := g.Apply(inserts([][2]uint32{{1, 4}}, 0)); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "BUG:") {
			t.Fatalf("WriteTo on a pending graph: panic %v", r)
		}
	}()
	g.WriteTo(io.Discard)
}

// TestCheckpointErrors feeds damaged checkpoints: each must fail with an
// error that wraps ErrCheckpoint and points at the right byte.
func TestCheckpointErrors(t *testing.T) {
	g := smallGraph(t, true)
	good := checkpoint(t, g)
	g.Close()
	g = smallGraph(t, false, 1, 2)
	goodMulti := checkpoint(t, g)
	g.Close()
	edit := func(b []byte, at int, v ...byte) []byte {
		b = slices.Clone(b)
		return slices.Concat(b[:at], v, b[at+len(v):])
	}
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, "at byte 0: truncated: magic missing"},
		{"magic", edit(good, 0, 'X'), `at byte 0: not a graph checkpoint`},
		{"version", edit(good, 4, 2), "at byte 4: unsupported version 2"},
		{"flags", edit(good, 5, 0x81), "at byte 5: unknown flags 0x80"},
		{"too many rows", slices.Concat(good[:6], []byte{0x81, 0x80, 0x80, 0x80, 0x08}), "at byte 6: 2147483649 vertex rows"},
		{"non-minimal", slices.Concat(good[:6], []byte{0x86, 0x00}), "at byte 6: vertex count: varint not minimally encoded"},
		{"overflow", slices.Concat(good[:6], bytes.Repeat([]byte{0xff}, 10)), "at byte 6: vertex count: varint overflows"},
		{"label", edit(good, 8, 0xfe, 0xff, 0xff, 0xff, 0x0f), "at byte 8: edge label 4294967294 is not a concrete label"},
		{"vertex label", edit(good, 9, 0xff, 0xff, 0xff, 0xff, 0x0f), "at byte 9: vertex 0: label 4294967294 is not a concrete label"},
		{"last row", edit(good, 14, 0), "at byte 14: the last table row, 5, is not a vertex"},
		{"count beyond header", edit(good, 15, 6), "at byte 15: vertex 0 lists 6 edges, beyond the 5"},
		{"edges on a non-vertex", edit(good, 22, 1), "at byte 22: table row 3 has edges but is not a vertex"},
		{"out of range", edit(good, 16, 12), "at byte 16: vertex 0: neighbour 0+6 out of range"},
		{"self-loop", edit(good, 16, 0), "at byte 16: vertex 0: self-loop"},
		{"not a vertex", edit(good, 16, 6), "at byte 16: vertex 0: neighbour 3 is not a vertex"},
		{"order", edit(good, 18, 1, 4), "at byte 19: vertex 1: neighbour 2 (label 0) out of list order"},
		{"duplicate", edit(good, 18, 2, 0), "at byte 19: vertex 1: neighbour 2 (label 0) out of list order"},
		{"fewer edges", edit(good, 24, 0), "at byte 25: the header announces 5 edges, the lists hold 4"},
		{"truncated", good[:len(good)-1], "at byte 25: truncated: neighbour missing"},
		{"larger end", edit(goodMulti, 22, 1), "at byte 22: undirected edge 1-0 stored at its larger end"},
		{"one label per edge", []byte("GCSG\x01\x02\x02\x01\x01\x01\x01\x02\x05\x00"), "at byte 14: per-edge labels, but the edges carry fewer than two labels"},
	} {
		h, err := Read(bytes.NewReader(c.b), ckptOpts(len(c.b) > 5 && c.b[5]&ckptDirected != 0, 0))
		if err == nil {
			h.Close()
		}
		if err == nil || !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// Every proper prefix is truncated.
	for n := range len(goodMulti) {
		if h, err := Read(bytes.NewReader(goodMulti[:n]), ckptOpts(false, 0)); err == nil {
			h.Close()
			t.Fatalf("a prefix of %d of %d bytes reads", n, len(goodMulti))
		}
	}
}

// TestCheckpointForgedCounts gives Read a header that claims 2^31 rows and
// 2^62 edges, backed by a few bytes: it must fail on the missing bytes having
// allocated memory for what it read, not for what the header claimed.
func TestCheckpointForgedCounts(t *testing.T) {
	b := []byte("GCSG\x01\x00")
	b = binary.AppendUvarint(b, graph.MaxVertices)
	b = binary.AppendUvarint(b, 1<<62)
	b = append(b, 0)                                // edge label
	b = append(b, bytes.Repeat([]byte{1}, 3000)...) // 3000 vertices of label 0
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Read(bytes.NewReader(b), ckptOpts(false, 0))
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "at byte 3021: truncated: vertex label missing") {
		t.Fatalf("error %v", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("Read allocated %d bytes for %d bytes of input", n, len(b))
	}
}

// TestCheckpointStream checks that Read takes exactly the checkpoint's bytes
// from an io.ByteReader, so that a caller can keep more after it, and that a
// plain io.Reader works too.
func TestCheckpointStream(t *testing.T) {
	g := smallGraph(t, false, 1, 2)
	defer g.Close()
	data := checkpoint(t, g)
	br := bufio.NewReader(io.MultiReader(bytes.NewReader(data), strings.NewReader("rest")))
	h, err := Read(br, ckptOpts(false, 0))
	if err != nil {
		t.Fatal(err)
	}
	sameGraph(t, g, h)
	h.Close()
	if rest, _ := io.ReadAll(br); string(rest) != "rest" {
		t.Fatalf("after Read the stream holds %q", rest)
	}
	h, err = Read(io.LimitReader(bytes.NewReader(data), int64(len(data))), ckptOpts(false, 0))
	if err != nil {
		t.Fatal(err)
	}
	sameGraph(t, g, h)
	h.Close()
}

type failWriter struct{ left int }

var errDisk = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		n := w.left
		w.left = 0
		return n, errDisk
	}
	w.left -= len(p)
	return len(p), nil
}

// TestCheckpointWriteErrors checks that a failing writer's error comes back,
// and that WriteTo's memory does not grow with the graph: it allocates its
// buffer and nothing per list or per edge.
func TestCheckpointWriteErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	g, err := New(Options{Alloc: hostmem.Heap{}, SlabEntries: 1 << 16})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	load(t, g, rmatEdges(r, 14, 100_000), 1<<14)
	var buf bytes.Buffer
	if _, err := g.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	for _, left := range []int{0, 10, ckptWriteBuffer + 5, buf.Len() - 1} {
		if _, err := g.WriteTo(&failWriter{left: left}); !errors.Is(err, errDisk) {
			t.Fatalf("writer failing after %d bytes: error %v", left, err)
		}
	}
	if a := testing.AllocsPerRun(5, func() { g.WriteTo(io.Discard) }); a > 2 {
		t.Fatalf("WriteTo allocates %v times", a)
	}
}

// FuzzRead feeds arbitrary bytes to Read: it must not panic, must not
// allocate beyond what the input can justify (a header claiming 2^31 rows or
// 2^63 edges has to be backed by bytes), and what it accepts must write back
// to the same bytes.
func FuzzRead(f *testing.F) {
	for _, directed := range []bool{false, true} {
		for _, labels := range [][]graph.Label{{0}, {3}, {1, 2}} {
			g := smallGraph(f, directed, labels...)
			var buf bytes.Buffer
			if _, err := g.WriteTo(&buf); err != nil {
				f.Fatal(err)
			}
			f.Add(buf.Bytes())
			g.Close()
		}
	}
	f.Add([]byte("GCSG\x01\x00\x00\x00"))
	f.Add([]byte("GCSG\x01\x00\xff\xff\xff\xff\x07\xff\xff\xff\xff\xff\xff\xff\xff\x7f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		directed := len(b) > 5 && b[5]&ckptDirected != 0
		r := bytes.NewReader(b)
		g, err := Read(r, ckptOpts(directed, 0))
		if err != nil {
			return
		}
		defer g.Close()
		used := b[:len(b)-r.Len()]
		var buf bytes.Buffer
		if _, err := g.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), used) {
			t.Fatalf("read %x, writes back %x", used, buf.Bytes())
		}
	})
}

// BenchmarkCheckpoint writes and reads the R-MAT graph of the other
// benchmarks (2^20 edge draws, 1.0M distinct undirected edges on 2^18
// vertices), in memory, so that the figures are the encoding's and Build's,
// not a disk's; labels=4 gives each edge one of four labels at random.
// Writing takes the same 2 allocations whatever the size; about half of a
// read is Build.
func BenchmarkCheckpoint(b *testing.B) {
	_, batches := benchLoad(rand.New(rand.NewPCG(1, 1)))
	for _, nl := range []int{1, 4} {
		if nl > 1 {
			r := rand.New(rand.NewPCG(4, 4))
			for _, batch := range batches {
				for i := range batch {
					batch[i].Label = graph.Label(r.IntN(nl))
				}
			}
		}
		g := benchGraph(b, batches)
		var buf bytes.Buffer
		if _, err := g.WriteTo(&buf); err != nil {
			b.Fatal(err)
		}
		data := slices.Clone(buf.Bytes())
		edges := g.NumEdges()
		b.Run(fmt.Sprintf("labels=%d/write", nl), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for range b.N {
				buf.Reset()
				if _, err := g.WriteTo(&buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data))/float64(edges), "B/edge")
			b.ReportMetric(float64(b.N)*float64(edges)/b.Elapsed().Seconds(), "edges/s")
		})
		b.Run(fmt.Sprintf("labels=%d/read", nl), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for range b.N {
				h, err := Read(bytes.NewReader(data), Options{Alloc: hostmem.Mmap{}})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if h.NumEdges() != edges {
					b.Fatalf("read %d edges, wrote %d", h.NumEdges(), edges)
				}
				if err := h.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N)*float64(edges)/b.Elapsed().Seconds(), "edges/s")
		})
		if err := g.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
