package bundle

import "hash/maphash"

// idIndex finds a transfer's slot by its id: an open-addressing table of
// slot+1 words, linear probing, with the ids themselves in the store's ids
// column. A Go map of string to slot cost about 53 bytes per transfer, a
// third of the store's; this costs 8 to 16.
type idIndex struct {
	seed  maphash.Seed
	slots []uint32 // slot+1 of a transfer with an id; 0: empty
	n     int
	// hash, when set, replaces maphash: tests crowd ids onto few homes
	// near the table's end, so that probe runs wrap.
	hash func(string) uint64
}

func newIDIndex() idIndex { return idIndex{seed: maphash.MakeSeed(), slots: make([]uint32, 16)} }

func (x *idIndex) home(id string) int {
	if x.hash != nil {
		return int(x.hash(id) & uint64(len(x.slots)-1))
	}
	return int(maphash.String(x.seed, id) & uint64(len(x.slots)-1))
}

// get returns the slot of id.
func (x *idIndex) get(ids []string, id string) (Tx, bool) {
	for i := x.home(id); ; i = (i + 1) & (len(x.slots) - 1) {
		e := x.slots[i]
		if e == 0 {
			return 0, false
		}
		if ids[e-1] == id {
			return e - 1, true
		}
	}
}

// put makes id's entry slot t, whose id ids[t] must be.
func (x *idIndex) put(ids []string, t Tx) {
	if 2*(x.n+1) > len(x.slots) {
		x.grow(ids)
	}
	id := ids[t]
	for i := x.home(id); ; i = (i + 1) & (len(x.slots) - 1) {
		e := x.slots[i]
		if e == 0 {
			x.slots[i] = t + 1
			x.n++
			return
		}
		if ids[e-1] == id {
			x.slots[i] = t + 1
			return
		}
	}
}

// del removes id's entry if it is slot t, shifting later entries of its
// probe run back so that no search stops short at the hole.
func (x *idIndex) del(ids []string, t Tx) {
	mask := len(x.slots) - 1
	id := ids[t]
	i := x.home(id)
	for ; ; i = (i + 1) & mask {
		e := x.slots[i]
		if e == 0 {
			return
		}
		if ids[e-1] == id {
			if e-1 != t {
				return
			}
			break
		}
	}
	x.n--
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		e := x.slots[j]
		if e == 0 {
			break
		}
		// An entry may move back to the hole at i unless its home lies
		// cyclically in (i, j].
		if h := x.home(ids[e-1]); (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			x.slots[i] = e
			i = j
		}
	}
	x.slots[i] = 0
}

func (x *idIndex) grow(ids []string) {
	old := x.slots
	x.slots = make([]uint32, 2*len(old))
	x.n = 0
	for _, e := range old {
		if e != 0 {
			x.put(ids, e-1)
		}
	}
}
