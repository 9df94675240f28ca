package sampler

import (
	"unsafe"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
)

// cutCache remembers, for one worker and one estimate, where a label's
// neighbours lie in long list parts. A hub's list is cut to a level's
// vertex label at node after node, and each cut is two binary searches
// whose every probe looks up a neighbour's label at random in an array of
// one label per vertex: about half of a labeled house's estimate. The
// cache saves 15-25% of such an estimate. It is direct-mapped: a collision
// overwrites.
type cutCache struct {
	slots []cutSlot
	shift uint   // 64 - log2(len(slots))
	gen   uint32 // the estimate the slots of gen are from; never 0
}

type cutSlot struct {
	part   uintptr // the part's first entry; the graph does not move during an estimate
	n      uint32  // its length
	label  graph.Label
	gen    uint32
	lo, hi uint32
}

const (
	cutBits   = 12 // 4,096 slots, 128 KiB a worker
	cutMinLen = 16 // shorter parts are searched in a few probes
)

// init makes a table of 1<<bits slots.
func (c *cutCache) init(bits uint) {
	c.slots, c.shift = make([]cutSlot, 1<<bits), 64-bits
	c.reset()
}

// reset forgets every cut: the next estimate may see another graph.
func (c *cutCache) reset() {
	c.gen++
	if c.gen == 0 { // wrapped: slots of gen 0 could pass for current
		clear(c.slots)
		c.gen = 1
	}
}

// rangeOf is ord.Range(part, l), remembered for long parts.
func (c *cutCache) rangeOf(ord dyngraph.Order, part []uint32, l graph.Label) (int, int) {
	if len(part) < cutMinLen {
		return ord.Range(part, l)
	}
	if c.slots == nil {
		c.init(cutBits)
	}
	p := uintptr(unsafe.Pointer(&part[0]))
	h := (uint64(p)>>2 ^ uint64(len(part))<<40 ^ uint64(l)*0x9E3779B97F4A7C15) * 0x9E3779B97F4A7C15
	s := &c.slots[h>>c.shift]
	if s.gen == c.gen && s.part == p && s.n == uint32(len(part)) && s.label == l {
		return int(s.lo), int(s.hi)
	}
	lo, hi := ord.Range(part, l)
	*s = cutSlot{part: p, n: uint32(len(part)), label: l, gen: c.gen, lo: uint32(lo), hi: uint32(hi)}
	return lo, hi
}
