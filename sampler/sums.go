package sampler

import "math/bits"

// sums is one worker's Σ B·D^(d-1) per list during a pass, for the lists
// its walks read: an open-addressing table (linear probing) that grows with
// what the walks touch, not with the graph. Dense arrays of one entry per
// list cost a worker 16 bytes a list: 2 GB for 16 workers on 2^23 vertices,
// and their first touches page-faulted through the early batches. The
// Estimator keeps the one dense array, of the pass's totals.
type sums struct {
	slots []sumSlot
	used  []uint32 // the slots in use
	shift uint     // 64 - log2(len(slots))
}

// sumSlot is a list's sum, next to its key so that a probe reads one cache
// line.
type sumSlot struct {
	key uint32 // list key + 1; 0: free
	sum u128
}

// minSumsSlots is a table's first size.
const minSumsSlots = 1 << 10

// add adds x to list k's sum.
func (s *sums) add(k uint32, x u128) {
	if len(s.slots) == 0 {
		s.grow()
	}
	i := s.slot(k)
	if s.slots[i].key == 0 {
		if 2*(len(s.used)+1) > len(s.slots) {
			s.grow()
			i = s.slot(k)
		}
		s.slots[i].key = k + 1
		s.used = append(s.used, i)
	}
	s.slots[i].sum = s.slots[i].sum.add(x)
}

// slot is where key k is, or the free slot where it goes.
func (s *sums) slot(k uint32) uint32 {
	mask := uint32(len(s.slots) - 1)
	// Fibonacci hashing: list keys of one hub neighbourhood are often
	// close together, and the multiply spreads them over the table.
	i := uint32((uint64(k) * 0x9E3779B97F4A7C15) >> s.shift)
	for s.slots[i].key != 0 && s.slots[i].key != k+1 {
		i = (i + 1) & mask
	}
	return i
}

// grow doubles the table (or makes the first one) and re-inserts the sums.
func (s *sums) grow() {
	n := max(minSumsSlots, 2*len(s.slots))
	slots, used := s.slots, s.used
	s.slots = make([]sumSlot, n)
	s.used = make([]uint32, 0, n/2)
	s.shift = uint(64 - bits.TrailingZeros(uint(n)))
	for _, i := range used {
		j := s.slot(slots[i].key - 1)
		s.slots[j] = slots[i]
		s.used = append(s.used, j)
	}
}

// drain calls f with every list's sum and empties the table.
func (s *sums) drain(f func(k uint32, x u128)) {
	for _, i := range s.used {
		f(s.slots[i].key-1, s.slots[i].sum)
		s.slots[i] = sumSlot{}
	}
	s.used = s.used[:0]
}

// len is the number of lists with a sum.
func (s *sums) len() int { return len(s.used) }
