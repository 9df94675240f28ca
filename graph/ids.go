package graph

import (
	"fmt"
	"hash/maphash"
	"math"
	"strconv"
	"sync/atomic"
	"unsafe"
)

// IDs maps external vertex ids onto dense internal ids. External ids that are
// non-negative decimal integers are kept as integers, everything else as
// strings; "7" and 7 are the same vertex.
//
// Small integers, the usual case in dataset files whose ids run 0..n-1, are
// looked up in a slice indexed by the integer. The slice grows only while it
// stays within a few times the number of vertices, so sparse ids such as
// account numbers cannot inflate it. The rest go to an open-addressing table
// of (hash tag, id) words, and the names' bytes to an arena of large chunks:
// with millions of accounts the dictionary is a few large pointer-free
// allocations that the garbage collector need not scan, and a lookup costs
// one hash and usually one probe instead of a Go map's string handling.
//
// One goroutine at a time may intern, look up, encode or load. Name and Len
// may be called from any goroutine concurrently with that one, for ids that
// were returned to it before (through a channel, say): a published id's
// entry and bytes never move or change. That lets a service intern the
// next batch while it still writes the names of the last one's matches.
type IDs struct {
	seed  maphash.Seed
	dense []VertexID // dense[n] is the internal id of integer n, plus one; 0 means absent
	slots []uint64   // hash table of the other ids: tag<<32 | id+1; 0 is empty
	n     atomic.Int64
	// entries[id>>entryBits][id&entryMask] describes id; arena holds the
	// string ids' bytes. Both are directories of fixed chunks, replaced
	// whole (copy on write) when a chunk is added, so that a reader's
	// directory is never written to.
	entries atomic.Pointer[[]*[entryChunk]idEntry]
	arena   atomic.Pointer[[][]byte]
	used    int // bytes used of the arena's last chunk
	inTable int // ids in slots
}

const (
	entryBits  = 14
	entryChunk = 1 << entryBits
	entryMask  = entryChunk - 1
	// Arena chunks start small, as most dictionaries in tests and files are,
	// and double up to arenaMax; a name longer than that gets its own.
	arenaMin = 4 << 10
	arenaMax = 1 << 20
)

// idEntry is one vertex's external id: the integer itself, or where its
// bytes lie in the arena (chunk<<32 | offset) and their length.
type idEntry struct {
	v   uint64
	len uint32
	str bool
}

// NewIDs returns an empty id map.
func NewIDs() *IDs {
	return &IDs{seed: maphash.MakeSeed()}
}

// Intern returns the internal id of the external id name, assigning the next
// dense id when new. isNew reports whether it was assigned now.
func (m *IDs) Intern(name string) (id VertexID, isNew bool, err error) {
	if n, ok := intID(name); ok {
		return m.InternInt(n)
	}
	h := maphash.String(m.seed, name)
	i, id, ok := m.findString(h, name)
	if ok {
		return id, false, nil
	}
	id, err = m.next()
	if err != nil {
		return 0, false, err
	}
	// The bytes are copied into the arena, so the caller's string, which
	// may share its memory with others (a decoded event's strings are one
	// allocation), is not kept alive by the dictionary.
	m.add(i, h, id, m.store(name))
	return id, true, nil
}

// InternInt is Intern for an integer external id.
func (m *IDs) InternInt(n uint64) (id VertexID, isNew bool, err error) {
	if n < uint64(len(m.dense)) && m.dense[n] != 0 {
		return m.dense[n] - 1, false, nil
	}
	h := hashInt(m.seed, n)
	i, id, ok := m.findInt(h, n)
	if ok {
		return id, false, nil
	}
	id, err = m.next()
	if err != nil {
		return 0, false, err
	}
	e := idEntry{v: n}
	if n < uint64(4*id+1024) {
		for uint64(len(m.dense)) <= n {
			m.dense = append(m.dense, 0)
		}
		m.dense[n] = id + 1
		m.publish(id, e)
		return id, true, nil
	}
	m.add(i, h, id, e)
	return id, true, nil
}

// Lookup returns the internal id of name without adding it.
func (m *IDs) Lookup(name string) (VertexID, bool) {
	if n, ok := intID(name); ok {
		if n < uint64(len(m.dense)) && m.dense[n] != 0 {
			return m.dense[n] - 1, true
		}
		_, id, ok := m.findInt(hashInt(m.seed, n), n)
		return id, ok
	}
	_, id, ok := m.findString(maphash.String(m.seed, name), name)
	return id, ok
}

// Name returns the external spelling of id.
func (m *IDs) Name(id VertexID) string {
	if int64(id) >= m.n.Load() {
		return fmt.Sprintf("?%d", id)
	}
	e := m.entry(id)
	if !e.str {
		return strconv.FormatUint(e.v, 10)
	}
	return m.bytes(e)
}

// Len is the number of known vertices.
func (m *IDs) Len() int { return int(m.n.Load()) }

// intID reports whether name spells a non-negative decimal integer in its
// one canonical form (no sign, no leading zero): only then is it an integer
// id, so "07" and "7" stay two vertices.
// It does not call strconv.ParseUint, whose error for every string id
// allocates.
func intID(name string) (uint64, bool) {
	if name == "" || len(name) > 20 || (name[0] == '0' && len(name) > 1) {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(name); i++ {
		d := name[i] - '0'
		if d > 9 {
			return 0, false
		}
		if n > (math.MaxUint64-uint64(d))/10 {
			return 0, false // overflows: a string id
		}
		n = n*10 + uint64(d)
	}
	return n, true
}

// hashInt hashes an integer id with the map's seed.
func hashInt(seed maphash.Seed, n uint64) uint64 {
	return maphash.Comparable(seed, n)
}

func (m *IDs) next() (VertexID, error) {
	n := m.n.Load()
	if n >= MaxVertices {
		return 0, fmt.Errorf("too many vertices: the limit is %d", MaxVertices)
	}
	return VertexID(n), nil
}

// findString probes for the string id name of hash h. It returns the id
// when found, else the empty slot where name belongs.
func (m *IDs) findString(h uint64, name string) (slot int, id VertexID, ok bool) {
	return m.probe(h, func(e idEntry) bool { return e.str && int(e.len) == len(name) && m.bytes(e) == name })
}

// findInt is findString for an integer id outside the dense slice.
func (m *IDs) findInt(h, n uint64) (slot int, id VertexID, ok bool) {
	return m.probe(h, func(e idEntry) bool { return !e.str && e.v == n })
}

func (m *IDs) probe(h uint64, same func(idEntry) bool) (slot int, id VertexID, ok bool) {
	if len(m.slots) == 0 {
		return -1, 0, false
	}
	mask := len(m.slots) - 1
	tag := h >> 32
	for i := int(h) & mask; ; i = (i + 1) & mask {
		s := m.slots[i]
		if s == 0 {
			return i, 0, false
		}
		if s>>32 == tag {
			if id := VertexID(uint32(s) - 1); same(m.entry(id)) {
				return i, id, true
			}
		}
	}
}

// add records id, of hash h, in the table at slot (from a failed probe) and
// publishes its entry. The table is kept at most three quarters full, so
// probes stay short.
func (m *IDs) add(slot int, h uint64, id VertexID, e idEntry) {
	if 4*(m.inTable+1) > 3*len(m.slots) {
		m.grow()
		slot, _, _ = m.probe(h, func(idEntry) bool { return false })
	}
	m.slots[slot] = h>>32<<32 | uint64(id+1)
	m.inTable++
	m.publish(id, e)
}

// grow doubles the table, rehashing every id in it from its entry.
func (m *IDs) grow() {
	old := m.slots
	m.slots = make([]uint64, max(64, 2*len(old)))
	mask := len(m.slots) - 1
	for _, s := range old {
		if s == 0 {
			continue
		}
		e := m.entry(VertexID(uint32(s) - 1))
		h := hashInt(m.seed, e.v)
		if e.str {
			h = maphash.String(m.seed, m.bytes(e))
		}
		i := int(h) & mask
		for m.slots[i] != 0 {
			i = (i + 1) & mask
		}
		m.slots[i] = h>>32<<32 | uint64(uint32(s))
	}
}

// store copies name into the arena and returns its entry.
func (m *IDs) store(name string) idEntry {
	var dir [][]byte
	if p := m.arena.Load(); p != nil {
		dir = *p
	}
	last := len(dir) - 1
	if last < 0 || m.used+len(name) > len(dir[last]) {
		size := arenaMin
		if last >= 0 {
			size = min(2*len(dir[last]), arenaMax)
		}
		grown := append(dir[:len(dir):len(dir)], make([]byte, max(size, len(name))))
		m.arena.Store(&grown)
		dir, last, m.used = grown, len(grown)-1, 0
	}
	copy(dir[last][m.used:], name)
	e := idEntry{v: uint64(last)<<32 | uint64(m.used), len: uint32(len(name)), str: true}
	m.used += len(name)
	return e
}

// bytes returns a string id's spelling. It aliases the arena, whose
// published bytes are never written again.
func (m *IDs) bytes(e idEntry) string {
	if e.len == 0 {
		return ""
	}
	b := (*m.arena.Load())[e.v>>32]
	return unsafe.String(&b[uint32(e.v)], e.len)
}

// publish writes id's entry, then counts it: a reader that sees the count
// (or got id from the writer) sees the entry.
func (m *IDs) publish(id VertexID, e idEntry) {
	var dir []*[entryChunk]idEntry
	if p := m.entries.Load(); p != nil {
		dir = *p
	}
	if c := int(id >> entryBits); c == len(dir) {
		grown := append(dir[:len(dir):len(dir)], new([entryChunk]idEntry))
		m.entries.Store(&grown)
		dir = grown
	}
	dir[id>>entryBits][id&entryMask] = e
	m.n.Store(int64(id) + 1)
}

func (m *IDs) entry(id VertexID) idEntry {
	return (*m.entries.Load())[id>>entryBits][id&entryMask]
}
