package dyngraph

// normTable maps the edges of the batch being applied to their index in
// Graph.state. It replaces a Go map: open addressing over a power-of-two
// array, and a generation stamp per slot so that starting a batch is O(1)
// instead of clearing the table. Loading a graph through Apply spent a third
// of its time in map operations before.
type normTable struct {
	slots []normSlot
	// mask selects the batch's part of slots: probing all of a table once
	// sized for a large batch spread every later small batch over megabytes.
	mask uint64
	gen  uint32
}

type normSlot struct {
	key edgeKey
	gen uint32 // the slot is in use when gen equals the table's
	idx int32
}

// reset empties the table and makes room for n keys at load factor <= 1/2.
func (t *normTable) reset(n int) {
	size := 16
	for size < 2*n {
		size *= 2
	}
	t.gen++
	if size > len(t.slots) || t.gen == 0 {
		t.slots = make([]normSlot, size)
		t.gen = 1
	}
	t.mask = uint64(size - 1)
}

func (k edgeKey) hash() uint64 {
	h := uint64(k.a)*0x9e3779b97f4a7c15 ^ uint64(k.b)*0xc2b2ae3d27d4eb4f ^ uint64(k.l)*0x165667b19e3779f9
	return h ^ h>>29
}

// find returns the index stored for k, or inserts next and returns it with
// found false.
func (t *normTable) find(k edgeKey, next int) (idx int, found bool) {
	for i := k.hash() & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		if s.gen != t.gen {
			*s = normSlot{key: k, gen: t.gen, idx: int32(next)}
			return next, false
		}
		if s.key == k {
			return int(s.idx), true
		}
	}
}

// grow doubles the table and inserts again the keys of states, the batch's
// edges so far, each at its index.
func (t *normTable) grow(states []normState) {
	size := 2 * int(t.mask+1)
	t.slots = make([]normSlot, size)
	t.gen = 1
	t.mask = uint64(size - 1)
	for i := range states {
		t.find(states[i].key, i)
	}
}
