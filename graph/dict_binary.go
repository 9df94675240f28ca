package graph

// Binary encodings of the two dictionaries, so that a checkpoint can carry
// the names behind the graph's integers: without them a restored graph could
// not turn the next event's "acct:17" into the vertex it was before.
//
// Both formats are versioned and canonical: every value has exactly one
// encoding (minimal varints, no padding), so decoding and encoding again
// gives back the same bytes, which the fuzz targets check.
//
//	Dict: "GLBL" | version (1 byte, 1) | uvarint count | count × (uvarint len | name bytes)
//	      names in label order: name i is label i.
//	IDs:  "GIDS" | version (1 byte, 1) | uvarint count | count × entry, in internal id order:
//	      0x00 | uvarint zigzag(n - previous integer id)   an integer id n; the delta is taken
//	                                                       modulo 2^64 from the previous integer
//	                                                       entry (0 before the first), so the
//	                                                       ids 0..n-1 of a dataset file cost two
//	                                                       bytes each instead of up to six
//	      0x01 | uvarint len | bytes                       a string id
//
// Decoding replays Intern in id order on an empty dictionary. The original
// was built by the same calls in the same order, so the loaded one has the
// same internal layout, including which integers the IDs' dense slice holds,
// and the same rules decide what is an integer id: a string entry that
// Intern would have taken for an integer is refused rather than silently
// made unreachable.

import (
	"encoding/binary"
	"errors"
	"fmt"
)

const (
	dictMagic   = "GLBL"
	idsMagic    = "GIDS"
	dictVersion = 1
	// idsVersion 2 added released ids (idReleased) and the free list that
	// ends the encoding; version 1, without them, still loads.
	idsVersion = 2

	idInt      = 0
	idString   = 1
	idReleased = 2
)

// AppendBinary appends the encoding of d to dst and returns the extended
// slice.
func (d *Dict) AppendBinary(dst []byte) []byte {
	dst = append(dst, dictMagic...)
	dst = append(dst, dictVersion)
	names := d.Names()
	dst = binary.AppendUvarint(dst, uint64(len(names)))
	for _, s := range names {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	return dst
}

// UnmarshalBinary replaces d's contents with the dictionary encoded in b,
// which must hold exactly one encoding. On error d is left as it was. d keeps
// no reference to b.
func (d *Dict) UnmarshalBinary(b []byte) error {
	r := decoder{b: b, what: "label dictionary"}
	n, err := r.header(dictMagic, dictVersion)
	if err != nil {
		return err
	}
	// Intern panics past NoLabel labels, a limit no real deployment reaches:
	// refuse the count instead.
	if n > uint64(NoLabel) {
		return r.errAt(r.off, fmt.Sprintf("%d labels, more than the %d a dictionary holds", n, NoLabel))
	}
	// Each name costs at least its one-byte length, so the rest of the input
	// bounds how many there can be; a forged count cannot make us allocate.
	hint := min(n, uint64(len(b)-r.off))
	nd := &Dict{ids: make(map[string]Label, hint), names: make([]string, 0, hint)}
	for i := range n {
		at := r.off
		s, err := r.string()
		if err != nil {
			return err
		}
		if nd.Intern(s) != Label(i) {
			return r.errAt(at, fmt.Sprintf("label %d repeats the name %q", i, s))
		}
	}
	if err := r.end(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ids, d.names = nd.ids, nd.names
	return nil
}

// AppendBinary appends the encoding of m to dst and returns the extended
// slice.
func (m *IDs) AppendBinary(dst []byte) []byte {
	dst = append(dst, idsMagic...)
	dst = append(dst, idsVersion)
	n := m.Len()
	dst = binary.AppendUvarint(dst, uint64(n))
	var prev uint64
	for id := range VertexID(n) {
		switch e := m.entry(id); e.kind {
		case idIsString:
			dst = append(dst, idString)
			dst = binary.AppendUvarint(dst, uint64(len(e.s)))
			dst = append(dst, e.s...)
		case idIsInt:
			dst = append(dst, idInt)
			dst = binary.AppendUvarint(dst, zigzag(int64(e.v-prev)))
			prev = e.v
		default:
			dst = append(dst, idReleased)
		}
	}
	// The free list in its order, so that a loaded map reuses ids as the
	// original would.
	dst = binary.AppendUvarint(dst, uint64(len(m.free)))
	for _, id := range m.free {
		dst = binary.AppendUvarint(dst, uint64(id))
	}
	return dst
}

// UnmarshalBinary replaces m's contents with the id map encoded in b, which
// must hold exactly one encoding. On error m is left as it was. m keeps no
// reference to b.
func (m *IDs) UnmarshalBinary(b []byte) error {
	r := decoder{b: b, what: "vertex id map"}
	n, version, err := r.headerUpTo(idsMagic, idsVersion)
	if err != nil {
		return err
	}
	if n > MaxVertices {
		return r.errAt(r.off, fmt.Sprintf("%d ids, more than the %d vertices a graph holds", n, MaxVertices))
	}
	nm := NewIDs()
	var prev uint64
	var released []VertexID
	for i := range n {
		at := r.off
		tag, err := r.byte()
		if err != nil {
			return err
		}
		var id VertexID
		var isNew bool
		switch {
		case tag == idInt:
			z, err := r.uvarint()
			if err != nil {
				return err
			}
			v := prev + uint64(unzigzag(z))
			prev = v
			id, isNew, err = nm.InternInt(v)
			if err != nil {
				return r.errAt(at, err.Error())
			}
			if !isNew {
				return r.errAt(at, fmt.Sprintf("id %d repeats the integer %d of id %d", i, v, id))
			}
		case tag == idString:
			s, err := r.string()
			if err != nil {
				return err
			}
			id, isNew, err = nm.Intern(s)
			if err != nil {
				return r.errAt(at, err.Error())
			}
			if !isNew {
				return r.errAt(at, fmt.Sprintf("id %d repeats the name %q of id %d", i, s, id))
			}
			if nm.entry(id).kind != idIsString {
				return r.errAt(at, fmt.Sprintf("id %d: the string %q spells an integer id", i, s))
			}
		case tag == idReleased && version >= 2:
			nm.publish(VertexID(i), idEntry{})
			released = append(released, VertexID(i))
		default:
			return r.errAt(at, fmt.Sprintf("id %d: unknown entry kind %#x", i, tag))
		}
	}
	if version >= 2 {
		if err := nm.loadFree(&r, released); err != nil {
			return err
		}
	}
	if err := r.end(); err != nil {
		return err
	}
	m.seed, m.dense, m.slots, m.inTable, m.free = nm.seed, nm.dense, nm.slots, nm.inTable, nm.free
	m.entries.Store(nm.entries.Load())
	m.n.Store(nm.n.Load())
	return nil
}

// loadFree reads the free list, which must name each released id once.
func (m *IDs) loadFree(r *decoder, released []VertexID) error {
	at := r.off
	k, err := r.uvarint()
	if err != nil {
		return err
	}
	if k != uint64(len(released)) {
		return r.errAt(at, fmt.Sprintf("a free list of %d ids for %d released ones", k, len(released)))
	}
	isReleased := make(map[VertexID]bool, len(released))
	for _, id := range released {
		isReleased[id] = true
	}
	order := make([]VertexID, 0, len(released))
	for range k {
		at := r.off
		v, err := r.uvarint()
		if err != nil {
			return err
		}
		if v >= uint64(m.Len()) || !isReleased[VertexID(v)] {
			return r.errAt(at, fmt.Sprintf("free id %d is not a released id, or repeats", v))
		}
		delete(isReleased, VertexID(v))
		order = append(order, VertexID(v))
	}
	m.free = order
	return nil
}

// zigzag maps small signed deltas, forwards or backwards, to small unsigned
// values, as protobuf's sint64 does.
func zigzag(d int64) uint64 { return uint64(d<<1) ^ uint64(d>>63) }

func unzigzag(z uint64) int64 { return int64(z>>1) ^ -int64(z&1) }

// decoder reads one encoding from a byte slice; its errors name what was
// being decoded and the byte offset where the offending value starts.
type decoder struct {
	b    []byte
	off  int
	what string
}

// ErrFormat is wrapped by every decoding error of a dictionary, so that a
// caller can tell bad input from other failures.
var ErrFormat = errors.New("malformed encoding")

func (r *decoder) errAt(off int, msg string) error {
	return fmt.Errorf("%s at byte %d: %s: %w", r.what, off, msg, ErrFormat)
}

func (r *decoder) header(magic string, version byte) (count uint64, err error) {
	count, _, err = r.headerUpTo(magic, version)
	return count, err
}

// headerUpTo is header for a format whose versions 1 to version all load;
// it returns the one found.
func (r *decoder) headerUpTo(magic string, version byte) (count uint64, found byte, err error) {
	if len(r.b) < len(magic) || string(r.b[:len(magic)]) != magic {
		return 0, 0, r.errAt(0, fmt.Sprintf("missing magic %q", magic))
	}
	r.off = len(magic)
	v, err := r.byte()
	if err != nil {
		return 0, 0, err
	}
	if v < 1 || v > version {
		return 0, 0, r.errAt(r.off-1, fmt.Sprintf("unsupported version %d (this build reads 1 to %d)", v, version))
	}
	count, err = r.uvarint()
	return count, v, err
}

func (r *decoder) byte() (byte, error) {
	if r.off >= len(r.b) {
		return 0, r.errAt(r.off, "truncated")
	}
	r.off++
	return r.b[r.off-1], nil
}

// uvarint reads a minimally encoded varint: a longer spelling of the same
// value would decode fine but break the one-encoding-per-value rule.
func (r *decoder) uvarint() (uint64, error) {
	x, n := binary.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		return 0, r.errAt(r.off, "truncated varint")
	case n < 0:
		return 0, r.errAt(r.off, "varint overflows 64 bits")
	case n > 1 && r.b[r.off+n-1] == 0:
		return 0, r.errAt(r.off, "varint not minimally encoded")
	}
	r.off += n
	return x, nil
}

func (r *decoder) string() (string, error) {
	at := r.off
	n, err := r.uvarint()
	if err != nil {
		return "", err
	}
	if n > uint64(len(r.b)-r.off) {
		return "", r.errAt(at, fmt.Sprintf("name of %d bytes, only %d left", n, len(r.b)-r.off))
	}
	s := string(r.b[r.off : r.off+int(n)])
	r.off += int(n)
	return s, nil
}

func (r *decoder) end() error {
	if r.off != len(r.b) {
		return r.errAt(r.off, fmt.Sprintf("%d trailing bytes", len(r.b)-r.off))
	}
	return nil
}
