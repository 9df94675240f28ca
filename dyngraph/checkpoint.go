package dyngraph

// Checkpoint encoding: the graph's content, not its layout. A checkpoint
// holds the directedness, the vertex labels and every edge once; Read loads
// it through Build, so a restored graph is laid out like a bulk load (each
// list allocated once at its size) whatever churn the original had been
// through. Arena offsets, capacity slack and free lists are not stored: they
// would tie the format to the allocator, and Build lays them out anew faster
// than reading them back would take.
//
// Layout, version 1 (uvarints as encoding/binary, always minimal):
//
//	magic "GCSG" | version byte (1) | flags byte (bit 0 directed, bit 1 per-edge labels)
//	uvarint n: vertex table rows (NumVertices)
//	uvarint m: edges
//	uvarint edge label, only when bit 1 is clear and m > 0: the label of every edge
//	n × uvarint (vertex label + 1), 0 for a table row that is not a vertex
//	n × vertex list, for v = 0 .. n-1:
//	    uvarint count
//	    count × (uvarint zigzag(w - previous w, starting at v) [| uvarint edge label, bit 1 only])
//
// A directed graph stores each vertex's out-list; the in-lists are their
// transpose. An undirected graph stores each edge at its smaller end, the
// neighbours w > v of v. Entries keep the graph's list order (by neighbour
// vertex label, id, edge label), so ids rise within a label range and the
// zigzag deltas are small: the R-MAT graph of BenchmarkCheckpoint (1.0M
// edges on 2^18 vertices) costs 2.45 bytes per edge, 3.4 with four edge
// labels, against 8 for two raw 32-bit ids.
//
// The encoding is canonical: per-edge labels are used exactly when the edges
// carry two labels or more, a row without a vertex is never the last one (the
// graph cannot produce it), and Read refuses anything else, so a checkpoint
// that reads back writes out to the very same bytes.
//
// The format carries no checksum: internal/statedir frames checkpoints with a
// CRC-32C, and Read validates every value it takes, so corrupt input gives an
// error, never a wrong graph that breaks an invariant later.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/gcsm/gcsm/graph"
)

const (
	ckptMagic       = "GCSG"
	ckptVersion     = 1
	ckptDirected    = 1 << 0
	ckptEdgeLabels  = 1 << 1
	ckptKnownFlags  = ckptDirected | ckptEdgeLabels
	ckptWriteBuffer = 64 << 10
)

// WriteTo writes the graph in the checkpoint format above: directedness,
// vertex labels and every edge with its label. It streams through a
// bufio.Writer and allocates only that buffer, so checkpointing a graph of
// any size costs 64 KiB of memory (none when w is a *bufio.Writer at least
// that large: bufio then reuses it, and WriteTo flushes it). It must not run
// while a batch is pending (it panics); it only reads the graph, so
// concurrent readers are fine.
func (g *Graph) WriteTo(w io.Writer) (int64, error) {
	if g.pending {
		panic("BUG: dyngraph.Graph.WriteTo called while a batch is pending; Reorganize first")
	}
	e := encoder{w: bufio.NewWriterSize(w, ckptWriteBuffer)}
	multi, label := g.storedLabels()
	flags := byte(0)
	if g.opts.Directed {
		flags |= ckptDirected
	}
	if multi {
		flags |= ckptEdgeLabels
	}
	e.room(len(ckptMagic) + 2 + 3*binary.MaxVarintLen64)
	e.b = append(e.b, ckptMagic...)
	e.b = append(e.b, ckptVersion, flags)
	// Rows up to the last vertex that exists: past it, forgotten vertices
	// (Forget) leave rows with no vertex and no edges.
	rows := len(g.vlabel)
	for rows > 0 && !g.exists(graph.VertexID(rows-1)) {
		rows--
	}
	e.b = binary.AppendUvarint(e.b, uint64(rows))
	e.b = binary.AppendUvarint(e.b, uint64(g.edges))
	if !multi && g.edges > 0 {
		e.b = binary.AppendUvarint(e.b, uint64(label))
	}
	for v := range rows {
		e.room(binary.MaxVarintLen32)
		x := uint64(0)
		if g.exists(graph.VertexID(v)) {
			x = uint64(g.vlabel[v]) + 1
		}
		e.b = binary.AppendUvarint(e.b, x)
	}
	const entryMax = 2 * binary.MaxVarintLen32
	for v := range rows {
		l := &g.out[v]
		if l.n == 0 {
			e.room(1)
			e.b = append(e.b, 0)
			continue
		}
		s := &g.slabs[l.slab]
		ids := s.ids[l.off : l.off+l.n]
		var lbls []uint32
		if multi {
			lbls = s.lbls[l.off : l.off+l.n]
		}
		// Undirected: only the neighbours above v. They are not contiguous
		// when the list is ordered by vertex label first, so count them.
		count := len(ids)
		if !g.opts.Directed {
			count = 0
			for _, w := range ids {
				if w > uint32(v) {
					count++
				}
			}
		}
		e.room(binary.MaxVarintLen32)
		e.b = binary.AppendUvarint(e.b, uint64(count))
		prev := int64(v)
		for i, w := range ids {
			if !g.opts.Directed && w <= uint32(v) {
				continue
			}
			e.room(entryMax)
			e.b = binary.AppendUvarint(e.b, zigzag(int64(w)-prev))
			prev = int64(w)
			if multi {
				e.b = binary.AppendUvarint(e.b, uint64(lbls[i]))
			}
		}
	}
	e.commit()
	if err := e.w.Flush(); err != nil {
		return e.n, fmt.Errorf("dyngraph: writing checkpoint: %w", err)
	}
	return e.n, nil
}

// storedLabels decides between one label for the whole checkpoint and a
// label per edge. A graph that once had two labels keeps its label arrays
// after the last edge of the second label is gone; the checkpoint then goes
// back to one label, so that a graph and its reloaded copy write the same
// bytes. The scan reads the label arrays once, a few percent of WriteTo.
func (g *Graph) storedLabels() (multi bool, label graph.Label) {
	if !g.multiLabel {
		return false, g.edgeLabel
	}
	first := true
	for v := range g.out {
		l := &g.out[v]
		if l.n == 0 {
			continue
		}
		for _, x := range g.slabs[l.slab].lbls[l.off : l.off+l.n] {
			switch {
			case first:
				label, first = x, false
			case x != label:
				return true, 0
			}
		}
	}
	return false, label
}

// encoder appends straight into the bufio.Writer's free space
// (AvailableBuffer) and hands the filled part back with one Write, so that
// the varints are not copied through a second buffer.
type encoder struct {
	w *bufio.Writer
	b []byte // pending bytes, aliasing w's free space
	n int64
}

// room makes sure k more bytes fit in b without reallocating it.
func (e *encoder) room(k int) {
	if cap(e.b)-len(e.b) >= k {
		return
	}
	e.commit()
	if e.w.Available() < k {
		// A failed flush leaves the error in w, where Flush reports it at
		// the end; the bytes written meanwhile go nowhere.
		_ = e.w.Flush()
	}
	e.b = e.w.AvailableBuffer()
	if cap(e.b) < k {
		e.b = make([]byte, 0, k) // only after a write error: w has no room
	}
}

func (e *encoder) commit() {
	if len(e.b) > 0 {
		n, _ := e.w.Write(e.b)
		e.n += int64(n)
	}
	e.b = nil
}

func zigzag(d int64) uint64 { return uint64(d<<1) ^ uint64(d>>63) }

func unzigzag(z uint64) int64 { return int64(z>>1) ^ -int64(z&1) }

// ErrCheckpoint is wrapped by every error that Read returns for bad input,
// as opposed to a failure of the reader or of memory.
var ErrCheckpoint = errors.New("malformed graph checkpoint")

// Read builds a graph from a checkpoint that WriteTo wrote. opts.Directed must
// be what the checkpoint says; the rest of opts applies to the new graph. A
// table row without a vertex gets opts.DefaultVertexLabel, as it would in
// the graph that wrote it.
//
// When r is an io.ByteReader (a *bufio.Reader, a *bytes.Reader), Read takes
// exactly the checkpoint's bytes from it, so that other data may follow in
// the same stream; otherwise it reads through a buffer of its own and may
// read ahead.
//
// Errors for bad input wrap ErrCheckpoint and give the byte offset of the
// value at fault. Memory grows with the input actually read, never with the
// counts the input claims, so a corrupt count cannot make Read allocate more
// than its input can justify.
//
// The graph comes back as Build leaves it: not pending, Epoch 1, and
// MultiLabel only if its edges carry two labels or more.
func Read(r io.Reader, opts Options) (*Graph, error) {
	br, ok := r.(io.ByteReader)
	if !ok {
		br = bufio.NewReaderSize(r, ckptWriteBuffer)
	}
	d := decoder{r: br}
	g, err := d.read(opts)
	if err != nil {
		if g != nil {
			_ = g.Close() // a failed load leaves nothing behind; the read error says more
		}
		return nil, err
	}
	return g, nil
}

func (d *decoder) read(opts Options) (*Graph, error) {
	h, err := d.header(opts.Directed)
	if err != nil {
		return nil, err
	}
	g, err := New(opts)
	if err != nil {
		return nil, err
	}
	if err := d.vertices(g, h.n); err != nil {
		return g, err
	}
	batch, err := d.edges(g, h)
	if err != nil {
		return g, err
	}
	rejects, st, err := g.Build(batch)
	if err != nil {
		return g, fmt.Errorf("dyngraph: loading checkpoint: %w", err)
	}
	if len(rejects) > 0 || uint64(st.Inserted) != h.m {
		// The checks above admit only what Build accepts; this guards them.
		return g, fmt.Errorf("dyngraph: checkpoint: Build refused %d edges and inserted %d of %d: %w", len(rejects), st.Inserted, h.m, ErrCheckpoint)
	}
	return g, nil
}

// ckptHeader is what a checkpoint declares ahead of its tables.
type ckptHeader struct {
	n     uint32      // rows of the vertex table
	m     uint64      // edges in the lists
	multi bool        // each edge carries its own label
	label graph.Label // the one edge label, when !multi and m > 0
}

// header reads the magic, version, flags and counts, and checks that the
// checkpoint's direction is the one the caller asks for.
func (d *decoder) header(directed bool) (ckptHeader, error) {
	var h ckptHeader
	flags, err := d.preamble()
	if err != nil {
		return h, err
	}
	if dir := flags&ckptDirected != 0; dir != directed {
		what := "an undirected"
		if dir {
			what = "a directed"
		}
		return h, fmt.Errorf("dyngraph: checkpoint holds %s graph but Options.Directed is %v: %w", what, directed, ErrCheckpoint)
	}
	h.multi = flags&ckptEdgeLabels != 0
	at := d.off
	nv, err := d.uvarint("vertex count")
	if err != nil {
		return h, err
	}
	if nv > graph.MaxVertices {
		return h, d.errAt(at, fmt.Sprintf("%d vertex rows, more than the %d a graph holds", nv, uint64(graph.MaxVertices)))
	}
	h.n = uint32(nv)
	if h.m, err = d.uvarint("edge count"); err != nil {
		return h, err
	}
	if !h.multi && h.m > 0 {
		if h.label, err = d.edgeLabel(); err != nil {
			return h, err
		}
	}
	return h, nil
}

// preamble reads the magic and the version, which must be this build's, and
// returns the flags, which must all be known.
func (d *decoder) preamble() (byte, error) {
	for i := range len(ckptMagic) {
		c, err := d.byte("magic")
		if err != nil {
			return 0, err
		}
		if c != ckptMagic[i] {
			return 0, d.errAt(0, fmt.Sprintf("not a graph checkpoint: the magic is not %q", ckptMagic))
		}
	}
	version, err := d.byte("version")
	if err != nil {
		return 0, err
	}
	if version != ckptVersion {
		return 0, d.errAt(d.off-1, fmt.Sprintf("unsupported version %d (this build reads %d)", version, ckptVersion))
	}
	flags, err := d.byte("flags")
	if err != nil {
		return 0, err
	}
	if flags&^ckptKnownFlags != 0 {
		return 0, d.errAt(d.off-1, fmt.Sprintf("unknown flags %#x", flags&^ckptKnownFlags))
	}
	return flags, nil
}

// edgeLabel reads an edge label, which must be concrete; the caller names
// the edge in an error, if it knows one.
func (d *decoder) edgeLabel() (graph.Label, error) {
	at := d.off
	x, err := d.uvarint("edge label")
	if err != nil {
		return 0, err
	}
	if x >= uint64(graph.NoLabel) {
		return 0, d.errAt(at, fmt.Sprintf("edge label %d is not a concrete label", x))
	}
	return graph.Label(x), nil
}

// vertices reads the vertex table's n rows into g. A row holds a label plus
// one, or 0 for a row that is not a vertex.
func (d *decoder) vertices(g *Graph, n uint32) error {
	for v := range n {
		if int(v) == cap(g.vlabel) {
			g.growRows(n)
		}
		at := d.off
		x, err := d.uvarint("vertex label")
		if err != nil {
			return err
		}
		switch {
		case x > uint64(graph.NoLabel):
			return d.errAt(at, fmt.Sprintf("vertex %d: label %d is not a concrete label", v, x-1))
		case x == 0 && v == n-1:
			// The graph makes rows only up to a vertex it was told about.
			return d.errAt(at, fmt.Sprintf("the last table row, %d, is not a vertex", v))
		case x == 0:
			continue // a row the next vertex's AddVertex creates
		}
		if err := g.AddVertex(v, graph.Label(x-1)); err != nil {
			return err // cannot happen: v is new and the label concrete
		}
	}
	return nil
}

// edgeLists gathers a checkpoint's edge lists into one batch for Build.
type edgeLists struct {
	h      ckptHeader
	batch  []graph.Update
	sawTwo bool // the edges carry two labels or more
}

// edges reads the edge list of each of g's table rows and returns them as
// one batch of inserts, checked against the header's counts.
func (d *decoder) edges(g *Graph, h ckptHeader) ([]graph.Update, error) {
	// The batch grows as edges are read rather than from m, so its memory
	// follows the input: an entry is at least one byte of it. It doubles,
	// where append would grow a large slice by a quarter and copy it about
	// ten times on the way to a million edges: that was a third of Read.
	el := edgeLists{h: h, batch: make([]graph.Update, 0, min(h.m, 1<<12))}
	var total uint64
	for v := range h.n {
		at := d.off
		count, err := d.uvarint("list length")
		if err != nil {
			return nil, err
		}
		if count > h.m-total {
			return nil, d.errAt(at, fmt.Sprintf("vertex %d lists %d edges, beyond the %d the header announces", v, count, h.m))
		}
		if count > 0 && !g.exists(v) {
			return nil, d.errAt(at, fmt.Sprintf("table row %d has edges but is not a vertex", v))
		}
		total += count
		if err := d.list(g, &el, v, count); err != nil {
			return nil, err
		}
	}
	if total != h.m {
		return nil, d.errAt(d.off, fmt.Sprintf("the header announces %d edges, the lists hold %d", h.m, total))
	}
	if h.multi && !el.sawTwo {
		return nil, d.errAt(d.off, "per-edge labels, but the edges carry fewer than two labels")
	}
	return el.batch, nil
}

// list reads v's list of count edges onto el.batch. A neighbour is a
// zigzag delta from the one before (from v for the first), followed by its
// label when edges carry their own.
func (d *decoder) list(g *Graph, el *edgeLists, v graph.VertexID, count uint64) error {
	n, m := int64(el.h.n), el.h.m
	label := el.h.label
	prev := int64(v)
	var prevKey uint64
	var prevLabel graph.Label
	for i := range count {
		at := d.off
		z, err := d.uvarint("neighbour")
		if err != nil {
			return err
		}
		delta := unzigzag(z)
		if delta < -n || delta > n || prev+delta < 0 || prev+delta >= n {
			return d.errAt(at, fmt.Sprintf("vertex %d: neighbour %d+%d out of range", v, prev, delta))
		}
		w := graph.VertexID(prev + delta)
		prev = int64(w)
		switch {
		case !g.exists(w):
			return d.errAt(at, fmt.Sprintf("vertex %d: neighbour %d is not a vertex", v, w))
		case w == v:
			return d.errAt(at, fmt.Sprintf("vertex %d: self-loop", v))
		case !g.opts.Directed && w < v:
			return d.errAt(at, fmt.Sprintf("undirected edge %d-%d stored at its larger end", v, w))
		}
		if el.h.multi {
			if label, err = d.listLabel(v, w); err != nil {
				return err
			}
			el.sawTwo = el.sawTwo || (len(el.batch) > 0 && label != el.batch[0].Label)
		}
		// Strictly increasing in list order: no duplicates, and the
		// order WriteTo produces, so the encoding stays canonical.
		key := uint64(g.vlabel[w])<<32 | uint64(w)
		if i > 0 && (key < prevKey || key == prevKey && label <= prevLabel) {
			return d.errAt(at, fmt.Sprintf("vertex %d: neighbour %d (label %d) out of list order", v, w, label))
		}
		prevKey, prevLabel = key, label
		if len(el.batch) == cap(el.batch) {
			el.batch = slices.Grow(el.batch, int(min(m, 2*uint64(cap(el.batch))))-len(el.batch))
		}
		el.batch = append(el.batch, graph.Update{Op: graph.Insert, Src: v, Dst: w, Label: label, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
	}
	return nil
}

// listLabel reads the label of edge v-w, which must be concrete.
func (d *decoder) listLabel(v, w graph.VertexID) (graph.Label, error) {
	at := d.off
	x, err := d.uvarint("edge label")
	if err != nil {
		return 0, err
	}
	if x >= uint64(graph.NoLabel) {
		return 0, d.errAt(at, fmt.Sprintf("edge %d-%d: label %d is not a concrete label", v, w, x))
	}
	return graph.Label(x), nil
}

// growRows doubles the capacity of the vertex table, up to n rows, ahead of
// AddVertex, which appends one row at a time. Like the batch, the table grows
// with the rows read, never straight to a count the input claims.
func (g *Graph) growRows(n uint32) {
	c := int(min(n, max(1024, 2*uint32(cap(g.vlabel)))))
	g.vlabel = slices.Grow(g.vlabel, c-len(g.vlabel))
	g.out = slices.Grow(g.out, c-len(g.out))
	if g.opts.Directed {
		g.in = slices.Grow(g.in, c-len(g.in))
	}
	g.born = slices.Grow(g.born, (c+63)/64-len(g.born))
}

// decoder reads a checkpoint one byte at a time from an io.ByteReader, and
// keeps the offset for error messages. A method call per byte looks slow,
// but byte and uvarint were under a tenth of Read's profile; Build, which
// sorts every list, takes about half.
type decoder struct {
	r   io.ByteReader
	off int64
}

func (d *decoder) errAt(off int64, msg string) error {
	return fmt.Errorf("dyngraph: checkpoint at byte %d: %s: %w", off, msg, ErrCheckpoint)
}

func (d *decoder) byte(what string) (byte, error) {
	c, err := d.r.ReadByte()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return 0, d.errAt(d.off, "truncated: "+what+" missing")
		}
		return 0, fmt.Errorf("dyngraph: reading checkpoint at byte %d (%s): %w", d.off, what, err)
	}
	d.off++
	return c, nil
}

// uvarint reads a minimally encoded varint; a longer spelling of the same
// value would break the canonical encoding.
func (d *decoder) uvarint(what string) (uint64, error) {
	at := d.off
	var x uint64
	for shift := uint(0); ; shift += 7 {
		c, err := d.byte(what)
		if err != nil {
			return 0, err
		}
		if shift == 63 && c > 1 {
			return 0, d.errAt(at, what+": varint overflows 64 bits")
		}
		x |= uint64(c&0x7f) << shift
		if c < 0x80 {
			if c == 0 && shift > 0 {
				return 0, d.errAt(at, what+": varint not minimally encoded")
			}
			return x, nil
		}
	}
}
