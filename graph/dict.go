package graph

import (
	"fmt"
	"strconv"
	"strings"
)

// Dict interns label names as small integers: the first name seen gets 0.
// It is not safe for concurrent use; the owner of a graph serialises access.
type Dict struct {
	ids   map[string]Label
	names []string
}

// NewDict returns an empty dictionary.
func NewDict() *Dict { return &Dict{ids: make(map[string]Label)} }

// Intern returns the label of name, adding it when new.
func (d *Dict) Intern(name string) Label {
	if l, ok := d.ids[name]; ok {
		return l
	}
	l := Label(len(d.names))
	if l >= NoLabel {
		panic("BUG: label dictionary overflow")
	}
	name = strings.Clone(name) // as in IDs.Intern
	d.ids[name] = l
	d.names = append(d.names, name)
	return l
}

// Lookup returns the label of name and whether it is known.
func (d *Dict) Lookup(name string) (Label, bool) {
	l, ok := d.ids[name]
	return l, ok
}

// Name returns the name of l; Wildcard prints as "*".
func (d *Dict) Name(l Label) string {
	switch {
	case l == Wildcard:
		return "*"
	case int(l) < len(d.names):
		return d.names[l]
	}
	return fmt.Sprintf("?%d", l)
}

// Len is the number of interned labels.
func (d *Dict) Len() int { return len(d.names) }

// Names returns the interned names in label order. The caller must not modify it.
func (d *Dict) Names() []string { return d.names }

// IDs maps external vertex ids onto dense internal ids. External ids that are
// non-negative decimal integers are kept as integers, everything else as
// strings; "7" and 7 are the same vertex.
//
// Small integers, the usual case in dataset files whose ids run 0..n-1, are
// looked up in a slice indexed by the integer; the rest go to maps. The slice
// grows only while it stays within a few times the number of vertices, so
// sparse ids such as account numbers cannot inflate it.
type IDs struct {
	dense []VertexID // dense[n] is the internal id of integer n, plus one; 0 means absent
	ints  map[uint64]VertexID
	strs  map[string]VertexID
	names []extID
}

type extID struct {
	s   string
	n   uint64
	str bool
}

// NewIDs returns an empty id map.
func NewIDs() *IDs {
	return &IDs{ints: make(map[uint64]VertexID), strs: make(map[string]VertexID)}
}

// Intern returns the internal id of the external id name, assigning the next
// dense id when new. isNew reports whether it was assigned now.
func (m *IDs) Intern(name string) (id VertexID, isNew bool, err error) {
	if n, err := strconv.ParseUint(name, 10, 64); err == nil && (len(name) == 1 || name[0] != '0') {
		return m.InternInt(n)
	}
	if id, ok := m.strs[name]; ok {
		return id, false, nil
	}
	id, err = m.next()
	if err != nil {
		return 0, false, err
	}
	// A copy, as the caller's string may share its memory with others (a
	// decoded event's strings are one allocation), which the map would keep
	// alive for as long as the vertex is known: 50-100 bytes per vertex.
	name = strings.Clone(name)
	m.strs[name] = id
	m.names = append(m.names, extID{s: name, str: true})
	return id, true, nil
}

// InternInt is Intern for an integer external id.
func (m *IDs) InternInt(n uint64) (id VertexID, isNew bool, err error) {
	if id, ok := m.lookupInt(n); ok {
		return id, false, nil
	}
	id, err = m.next()
	if err != nil {
		return 0, false, err
	}
	if n < uint64(4*len(m.names)+1024) {
		for uint64(len(m.dense)) <= n {
			m.dense = append(m.dense, 0)
		}
		m.dense[n] = id + 1
	} else {
		m.ints[n] = id
	}
	m.names = append(m.names, extID{n: n})
	return id, true, nil
}

func (m *IDs) lookupInt(n uint64) (VertexID, bool) {
	if n < uint64(len(m.dense)) && m.dense[n] != 0 {
		return m.dense[n] - 1, true
	}
	id, ok := m.ints[n]
	return id, ok
}

func (m *IDs) next() (VertexID, error) {
	if len(m.names) >= MaxVertices {
		return 0, fmt.Errorf("too many vertices: the limit is %d", MaxVertices)
	}
	return VertexID(len(m.names)), nil
}

// Lookup returns the internal id of name without adding it.
func (m *IDs) Lookup(name string) (VertexID, bool) {
	if n, err := strconv.ParseUint(name, 10, 64); err == nil && (len(name) == 1 || name[0] != '0') {
		return m.lookupInt(n)
	}
	id, ok := m.strs[name]
	return id, ok
}

// Name returns the external spelling of id.
func (m *IDs) Name(id VertexID) string {
	if int(id) >= len(m.names) {
		return fmt.Sprintf("?%d", id)
	}
	e := m.names[id]
	if e.str {
		return e.s
	}
	return strconv.FormatUint(e.n, 10)
}

// Len is the number of known vertices.
func (m *IDs) Len() int { return len(m.names) }
