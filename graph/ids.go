package graph

import (
	"fmt"
	"hash/maphash"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
)

// IDs maps external vertex ids onto dense internal ids. External ids that are
// non-negative decimal integers are kept as integers, everything else as
// strings; "7" and 7 are the same vertex.
//
// Small integers, the usual case in dataset files whose ids run 0..n-1, are
// looked up in a slice indexed by the integer. The slice grows only while it
// stays within a few times the number of vertices, so sparse ids such as
// account numbers cannot inflate it. The rest go to an open-addressing table
// of (hash tag, id) words: with millions of accounts a lookup costs one hash
// and usually one probe, and the table is one pointer-free allocation.
//
// Release frees an id for reuse by the next new name, so that a stream whose
// ids come and go (accounts leaving an event-time window) keeps a dictionary
// the size of what is live, not of everything ever seen.
//
// One goroutine at a time may intern, release, look up, encode or load. Name
// and Len may be called from any goroutine concurrently with that one, for
// ids that were returned to it before (through a channel, say) and are not
// released meanwhile: a published entry never moves, and changes only when
// its id is released and reused. That lets a service intern the next batch
// while it still writes the names of the last one's matches.
type IDs struct {
	seed    maphash.Seed
	dense   []VertexID // dense[n] is the internal id of integer n, plus one; 0 means absent
	slots   []uint64   // hash table of the other ids: tag<<32 | id+1; 0 is empty
	inTable int        // ids in slots
	free    []VertexID // released ids, reused last first
	n       atomic.Int64
	// entries[id>>entryBits][id&entryMask] describes id. The directory of
	// fixed chunks is replaced whole (copy on write) when a chunk is added,
	// so that a reader's directory is never written to.
	entries atomic.Pointer[[]*[entryChunk]idEntry]
}

const (
	entryBits  = 12
	entryChunk = 1 << entryBits
	entryMask  = entryChunk - 1
)

// idEntry is one id's external spelling: an integer, a string, or nothing
// (released).
type idEntry struct {
	s    string
	v    uint64
	kind idKind
}

type idKind uint8

const (
	idFree idKind = iota
	idIsInt
	idIsString
)

// NewIDs returns an empty id map.
func NewIDs() *IDs {
	return &IDs{seed: maphash.MakeSeed()}
}

// Intern returns the internal id of the external id name, assigning one when
// new: a released id if there is one, else the next dense id. isNew reports
// whether it was assigned now.
func (m *IDs) Intern(name string) (id VertexID, isNew bool, err error) {
	if n, ok := intID(name); ok {
		return m.InternInt(n)
	}
	h := maphash.String(m.seed, name)
	slot, id, ok := m.findString(h, name)
	if ok {
		return id, false, nil
	}
	id, err = m.assign()
	if err != nil {
		return 0, false, err
	}
	// A copy, as the caller's string may share its memory with others (a
	// decoded event's strings are one allocation), which the dictionary
	// would keep alive for as long as the vertex is known.
	m.add(slot, h, id, idEntry{s: strings.Clone(name), kind: idIsString})
	return id, true, nil
}

// InternInt is Intern for an integer external id.
func (m *IDs) InternInt(n uint64) (id VertexID, isNew bool, err error) {
	if n < uint64(len(m.dense)) && m.dense[n] != 0 {
		return m.dense[n] - 1, false, nil
	}
	h := hashInt(m.seed, n)
	slot, id, ok := m.findInt(h, n)
	if ok {
		return id, false, nil
	}
	id, err = m.assign()
	if err != nil {
		return 0, false, err
	}
	e := idEntry{v: n, kind: idIsInt}
	if n < uint64(4*m.Len()+1024) {
		for uint64(len(m.dense)) <= n {
			m.dense = append(m.dense, 0)
		}
		m.dense[n] = id + 1
		m.publish(id, e)
		return id, true, nil
	}
	m.add(slot, h, id, e)
	return id, true, nil
}

// Release forgets id's name and frees id for the next new name. The caller
// must know that nothing will read id's name any more, nor use id for its
// old vertex. Releasing an id that is not in use is a no-op.
func (m *IDs) Release(id VertexID) {
	if int64(id) >= m.n.Load() {
		return
	}
	e := m.entry(id)
	switch {
	case e.kind == idFree:
		return
	case e.kind == idIsInt && e.v < uint64(len(m.dense)) && m.dense[e.v] == id+1:
		m.dense[e.v] = 0
	default:
		m.remove(id, e)
	}
	m.publish(id, idEntry{})
	m.free = append(m.free, id)
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

// LookupMany is Lookup of each names[i] into ids[i] and found[i] (both at
// least len(names) long). On a dictionary larger than the caches a lookup
// waits on three cache misses in turn, its slot, its entry and its bytes;
// LookupMany takes the names lookupGroup at a time, one step for all of them
// before the next, so that their misses overlap.
func (m *IDs) LookupMany(names []string, ids []VertexID, found []bool) {
	ids, found = ids[:len(names)], found[:len(names)]
	if len(m.slots) == 0 {
		for i, name := range names {
			ids[i], found[i] = m.Lookup(name)
		}
		return
	}
	var (
		hash [lookupGroup]uint64
		at   [lookupGroup]int // the slot whose tag matches; -1: none, -2: an integer, looked up
		ent  [lookupGroup]idEntry
	)
	mask := len(m.slots) - 1
	for lo := 0; lo < len(names); lo += lookupGroup {
		g := names[lo:min(lo+lookupGroup, len(names))]
		for k, name := range g {
			at[k] = -1
			if _, ok := intID(name); ok {
				ids[lo+k], found[lo+k] = m.Lookup(name)
				at[k] = -2
				continue
			}
			ids[lo+k], found[lo+k] = 0, false
			hash[k] = maphash.String(m.seed, name)
		}
		for k := range g {
			if at[k] == -2 {
				continue
			}
			tag := hash[k] >> 32
			for i := home(tag, mask); m.slots[i] != 0; i = (i + 1) & mask {
				if m.slots[i]>>32 == tag {
					at[k] = i
					break
				}
			}
		}
		for k := range g {
			if at[k] >= 0 {
				ent[k] = m.entry(VertexID(uint32(m.slots[at[k]]) - 1))
			}
		}
		for k, name := range g {
			if at[k] < 0 {
				continue
			}
			if e := ent[k]; e.kind == idIsString && e.s == name {
				ids[lo+k], found[lo+k] = VertexID(uint32(m.slots[at[k]])-1), true
				continue
			}
			// Another name with the same tag: probe on as Lookup does.
			ids[lo+k], found[lo+k] = m.Lookup(name)
		}
	}
}

// lookupGroup is how many names LookupMany takes a step at a time: enough
// misses to keep a core's memory requests busy.
const lookupGroup = 16

// Name returns the external spelling of id.
func (m *IDs) Name(id VertexID) string {
	if int64(id) >= m.n.Load() {
		return fmt.Sprintf("?%d", id)
	}
	switch e := m.entry(id); e.kind {
	case idIsInt:
		return strconv.FormatUint(e.v, 10)
	case idIsString:
		return e.s
	}
	return fmt.Sprintf("?%d", id)
}

// Len is one more than the largest id ever assigned: ids run below it.
func (m *IDs) Len() int { return int(m.n.Load()) }

// Live is the number of ids in use: Len less the released ones not reused.
func (m *IDs) Live() int { return m.Len() - len(m.free) }

// intID reports whether name spells a non-negative decimal integer in its
// one canonical form (no sign, no leading zero): only then is it an integer
// id, so "07" and "7" stay two vertices. It does not call strconv.ParseUint,
// whose error for every string id allocates.
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

// hashOf is the table hash of an entry in use.
func (m *IDs) hashOf(e idEntry) uint64 {
	if e.kind == idIsString {
		return maphash.String(m.seed, e.s)
	}
	return hashInt(m.seed, e.v)
}

// assign picks the id of a new name.
func (m *IDs) assign() (VertexID, error) {
	if k := len(m.free); k > 0 {
		id := m.free[k-1]
		m.free = m.free[:k-1]
		return id, nil
	}
	n := m.n.Load()
	if n >= MaxVertices {
		return 0, fmt.Errorf("too many vertices: the limit is %d", MaxVertices)
	}
	return VertexID(n), nil
}

// findString probes for the string id name of hash h. It returns the id
// when found, else the empty slot where name belongs (-1 when the table
// has no slots yet).
func (m *IDs) findString(h uint64, name string) (slot int, id VertexID, ok bool) {
	return m.probe(h, func(e idEntry) bool { return e.kind == idIsString && e.s == name })
}

// findInt is findString for an integer id outside the dense slice.
func (m *IDs) findInt(h, n uint64) (slot int, id VertexID, ok bool) {
	return m.probe(h, func(e idEntry) bool { return e.kind == idIsInt && e.v == n })
}

func (m *IDs) probe(h uint64, same func(idEntry) bool) (slot int, id VertexID, ok bool) {
	if len(m.slots) == 0 {
		return -1, 0, false
	}
	mask := len(m.slots) - 1
	tag := h >> 32
	for i := home(tag, mask); ; i = (i + 1) & mask {
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

// home is the first slot probed for a name whose hash has tag (its upper
// half) in a table of mask+1 slots. It is taken from the tag, which each
// slot keeps, so that grow and remove place entries without rehashing
// their names: a string's hash costs two cache misses (its entry and its
// bytes), and grow rehashed every name, 13% of interning a million accounts.
// The tag's bits above the mask still tell names apart on a probe.
func home(tag uint64, mask int) int { return int(tag) & mask }

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

// remove takes id, whose entry is e, out of the table. Linear probing
// needs no tombstones: the entries after the hole that could sit in it
// move back (backward-shift deletion).
func (m *IDs) remove(id VertexID, e idEntry) {
	mask := len(m.slots) - 1
	i := home(m.hashOf(e)>>32, mask)
	for uint32(m.slots[i]) != uint32(id+1) {
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; m.slots[j] != 0; j = (j + 1) & mask {
		h := home(m.slots[j]>>32, mask)
		// The entry at j stays unless its home lies cyclically outside
		// (i, j]: then the hole at i is on its probe path, and it moves.
		if i < j && i < h && h <= j || i > j && (i < h || h <= j) {
			continue
		}
		m.slots[i] = m.slots[j]
		i = j
	}
	m.slots[i] = 0
	m.inTable--
}

// grow doubles the table, placing every slot again by its tag.
func (m *IDs) grow() {
	old := m.slots
	m.slots = make([]uint64, max(64, 2*len(old)))
	mask := len(m.slots) - 1
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := home(s>>32, mask)
		for m.slots[i] != 0 {
			i = (i + 1) & mask
		}
		m.slots[i] = s
	}
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
	if int64(id) >= m.n.Load() {
		m.n.Store(int64(id) + 1)
	}
}

func (m *IDs) entry(id VertexID) idEntry {
	return (*m.entries.Load())[id>>entryBits][id&entryMask]
}
