package bundle

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/gcsm/gcsm/graph"
)

// The binary encoding of a Store, for checkpoints:
//
//	"GCSMBNDL" 1                 magic and version
//	flags                        byte: 1 directed, 2 keeps time
//	edge columns, vertex columns uvarint count, then each name
//	pairs                        uvarint count; per pair uvarint src, dst, label,
//	                             uvarint count of transfers; per transfer its id,
//	                             varint time, and a value per edge column
//	vertex values                per vertex column: uvarint count, then uvarint
//	                             vertex and value for each vertex that has one
//
// A name or id is uvarint length and bytes; a value is its kind byte, then
// 8 bytes of float64 (little endian) for numbers, booleans and times, or a
// string.
const bundleMagic = "GCSMBNDL\x01"

// AppendBinary appends the store's encoding to dst. The store must not be
// in a batch (Settle first).
func (s *Store) AppendBinary(dst []byte) ([]byte, error) {
	if len(s.touched) != 0 {
		return dst, errors.New("bundle: encoding a store in the middle of a batch")
	}
	dst = append(dst, bundleMagic...)
	var flags byte
	if s.directed {
		flags |= 1
	}
	if s.keepTime {
		flags |= 2
	}
	dst = append(dst, flags)
	for _, cs := range [2][]column{s.cols, s.vcols} {
		dst = binary.AppendUvarint(dst, uint64(len(cs)))
		for i := range cs {
			dst = appendString(dst, cs[i].name)
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(s.pairIdx)))
	for p := range s.pairs {
		pr := &s.pairs[p]
		if pr.head == noSlot {
			continue // a free record
		}
		dst = binary.AppendUvarint(dst, uint64(pr.key.a))
		dst = binary.AppendUvarint(dst, uint64(pr.key.b))
		dst = binary.AppendUvarint(dst, uint64(pr.key.l))
		n := 0
		for t := pr.head; t != noSlot; t = s.next[t] {
			n++
		}
		dst = binary.AppendUvarint(dst, uint64(n))
		for t := pr.head; t != noSlot; t = s.next[t] {
			dst = appendString(dst, s.ids[t])
			dst = binary.AppendVarint(dst, s.times[t])
			for i := range s.cols {
				dst = appendValue(dst, s.cols[i].get(int(t)))
			}
		}
	}
	for i := range s.vcols {
		c := &s.vcols[i]
		n := 0
		for _, k := range c.kinds {
			if k != graph.Null {
				n++
			}
		}
		dst = binary.AppendUvarint(dst, uint64(n))
		for v, k := range c.kinds {
			if k != graph.Null {
				dst = binary.AppendUvarint(dst, uint64(v))
				dst = appendValue(dst, c.get(v))
			}
		}
	}
	return dst, nil
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func appendValue(dst []byte, v graph.Value) []byte {
	dst = append(dst, byte(v.Kind))
	switch v.Kind {
	case graph.Number, graph.Bool, graph.Time:
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v.Num))
	case graph.String:
		dst = appendString(dst, v.Str)
	}
	return dst
}

// Decode reads a store that AppendBinary wrote, for a graph whose vertex ids
// are below vertices (the id dictionary's length): a larger one is an error,
// so that a corrupt id cannot make the decoder grow a vertex column to
// billions of rows. Errors name the byte offset and what was being read
// there.
func Decode(b []byte, vertices int) (*Store, error) {
	d := &decoder{b: b}
	if len(b) < len(bundleMagic) || string(b[:len(bundleMagic)]) != bundleMagic {
		return nil, errors.New("bundle: not a store encoding (bad magic or version)")
	}
	d.off = len(bundleMagic)
	flags, err := d.byte("flags")
	if err != nil {
		return nil, err
	}
	if flags > 3 {
		return nil, d.errf("unknown flags %#x", flags)
	}
	s := New(flags&1 != 0)
	s.keepTime = flags&2 != 0
	if err := d.columns(s); err != nil {
		return nil, err
	}
	np, err := d.count("pair count")
	if err != nil {
		return nil, err
	}
	for range np {
		if err := d.pair(s); err != nil {
			return nil, err
		}
	}
	for i := range s.vcols {
		if err := d.vertexValues(&s.vcols[i], vertices); err != nil {
			return nil, err
		}
	}
	if d.off != len(b) {
		return nil, d.errf("%d bytes after the end", len(b)-d.off)
	}
	return s, nil
}

// columns reads the names of the edge columns and then of the vertex
// columns into s.
func (d *decoder) columns(s *Store) error {
	for v := range 2 {
		n, err := d.count("column count")
		if err != nil {
			return err
		}
		for range n {
			name, err := d.string("column name")
			if err != nil {
				return err
			}
			if s.Kept(name, v == 1) {
				return d.errf("column %q twice", name)
			}
			if v == 0 {
				s.EdgeColumn(name)
			} else {
				s.VertexColumn(name)
			}
		}
	}
	return nil
}

// pair reads one pair, its key in canonical form and new to s, and its
// transfers, of which it has at least one.
func (d *decoder) pair(s *Store) error {
	var k [3]uint64
	var err error
	for i, what := range [3]string{"pair source", "pair target", "pair label"} {
		if k[i], err = d.uvarint(what); err != nil {
			return err
		}
		if k[i] > math.MaxUint32 {
			return d.errf("%s %d out of range", what, k[i])
		}
	}
	key := pairKey{uint32(k[0]), uint32(k[1]), uint32(k[2])}
	if !s.directed && key.a > key.b || key.a == key.b {
		return d.errf("pair %d-%d is not in canonical form", key.a, key.b)
	}
	if _, dup := s.pairIdx[key]; dup {
		return d.errf("pair %d-%d label %d twice", key.a, key.b, key.l)
	}
	n, err := d.count("transfer count")
	if err != nil {
		return err
	}
	if n == 0 {
		return d.errf("pair %d-%d has no transfers", key.a, key.b)
	}
	p := s.pairOf(key, false)
	for range n {
		if err := d.transfer(s, p); err != nil {
			return err
		}
	}
	return nil
}

// transfer reads one transfer of pair p: its id, unique unless empty, its
// time and a value for each edge column.
func (d *decoder) transfer(s *Store, p uint32) error {
	id, err := d.string("transfer id")
	if err != nil {
		return err
	}
	ts, err := d.varint("transfer time")
	if err != nil {
		return err
	}
	if id != "" {
		if _, dup := s.byID.get(s.ids, id); dup {
			return d.errf("transfer id %q twice", id)
		}
	}
	t := s.newSlot(p, id, ts)
	s.state[t] = alive
	for i := range s.cols {
		v, err := d.value()
		if err != nil {
			return err
		}
		s.cols[i].set(int(t), v)
	}
	return nil
}

// vertexValues reads vertex column c's values: each for a vertex below
// vertices, given once, and not null.
func (d *decoder) vertexValues(c *column, vertices int) error {
	n, err := d.count("vertex value count")
	if err != nil {
		return err
	}
	for range n {
		v, err := d.uvarint("vertex")
		if err != nil {
			return err
		}
		if v >= uint64(vertices) || (len(c.kinds) > int(v) && c.kinds[v] != graph.Null) {
			return d.errf("vertex %d out of range (the graph has %d ids) or given twice", v, vertices)
		}
		val, err := d.value()
		if err != nil {
			return err
		}
		if val.Kind == graph.Null {
			return d.errf("vertex %d: a null value is not stored", v)
		}
		c.grow(int(v) + 1)
		c.set(int(v), val)
	}
	return nil
}

type decoder struct {
	b   []byte
	off int
}

func (d *decoder) errf(format string, args ...any) error {
	return fmt.Errorf("bundle: at byte %d: %s", d.off, fmt.Sprintf(format, args...))
}

func (d *decoder) byte(what string) (byte, error) {
	if d.off >= len(d.b) {
		return 0, d.errf("%s: unexpected end", what)
	}
	d.off++
	return d.b[d.off-1], nil
}

func (d *decoder) uvarint(what string) (uint64, error) {
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		return 0, d.errf("%s: bad or truncated uvarint", what)
	}
	d.off += n
	return v, nil
}

func (d *decoder) varint(what string) (int64, error) {
	v, n := binary.Varint(d.b[d.off:])
	if n <= 0 {
		return 0, d.errf("%s: bad or truncated varint", what)
	}
	d.off += n
	return v, nil
}

// count reads a count and checks that the rest of the input could hold
// that many items of at least one byte, so that a corrupt count cannot make
// the decoder loop or allocate for long.
func (d *decoder) count(what string) (int, error) {
	n, err := d.uvarint(what)
	if err != nil {
		return 0, err
	}
	if n > uint64(len(d.b)-d.off) {
		return 0, d.errf("%s %d is more than the input holds", what, n)
	}
	return int(n), nil
}

func (d *decoder) string(what string) (string, error) {
	n, err := d.count(what + " length")
	if err != nil {
		return "", err
	}
	s := string(d.b[d.off : d.off+n])
	d.off += n
	return s, nil
}

func (d *decoder) value() (graph.Value, error) {
	k, err := d.byte("value kind")
	if err != nil {
		return graph.Value{}, err
	}
	v := graph.Value{Kind: graph.Kind(k)}
	switch v.Kind {
	case graph.Null:
	case graph.Number, graph.Bool, graph.Time:
		if len(d.b)-d.off < 8 {
			return v, d.errf("value: truncated number")
		}
		v.Num = math.Float64frombits(binary.LittleEndian.Uint64(d.b[d.off:]))
		d.off += 8
	case graph.String:
		if v.Str, err = d.string("string value"); err != nil {
			return v, err
		}
	default:
		return v, d.errf("unknown value kind %d", k)
	}
	return v, nil
}
