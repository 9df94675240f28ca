package bench

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"testing"
)

// generateOneByOne is Generate as it was before the shards: one set, each
// draw looked up as it is drawn.
func (r RMAT) generateOneByOne(emit func(src, dst uint32, label uint32) error) error {
	if err := r.Validate(); err != nil {
		return err
	}
	d := r.newDrawer()
	seen := newEdgeSet(r.Edges)
	edgeLabels := uint64(max(r.EdgeLabels, 1))
	labelKey := mix64(r.Seed ^ saltEdgeLabel)
	var found int64
	one := make([]uint64, 0, 1)
	for draws := int64(0); found < r.Edges; draws++ {
		if draws == rmatMaxDraws*r.Edges+64 {
			return fmt.Errorf("bench: R-MAT found only %d distinct edges of the %d requested in %d draws: too dense for its skew", found, r.Edges, draws)
		}
		one, _ = d.drawInto(one[:0], 1, 1)
		if len(one) == 0 || !seen.add(one[0]) {
			continue // a self-loop or a duplicate
		}
		key := one[0]
		found++
		label, _ := bits.Mul64(mix64(key^labelKey), edgeLabels)
		if err := emit(uint32(key>>32), uint32(key), uint32(label)); err != nil {
			return err
		}
	}
	return nil
}

// The sharded Generate emits what drawing and looking up one edge at a
// time emits, in the same order, for any number of shards: over several
// blocks of draws, with edge labels, stopped by emit, and too dense.
func TestGenerateShardsAgree(t *testing.T) {
	stop := errors.New("stop")
	for _, c := range []struct {
		r      RMAT
		stopAt int // emit fails at this edge, 0 never
	}{
		{RMAT{Scale: 14, Edges: 5 * drawBlock / 2, Seed: 1}, 0},
		{RMAT{Scale: 12, Edges: 20000, EdgeLabels: 5, Seed: 2}, 0},
		{RMAT{Scale: 16, Edges: 3 * drawBlock, Seed: 3}, drawBlock + 17},
		{RMAT{Scale: 6, Edges: 1500, Seed: 4}, 0}, // too dense
	} {
		collect := func(gen func(func(s, d, l uint32) error) error) ([][3]uint32, error) {
			var out [][3]uint32
			err := gen(func(s, d, l uint32) error {
				if len(out) == c.stopAt-1 {
					return stop
				}
				out = append(out, [3]uint32{s, d, l})
				return nil
			})
			return out, err
		}
		want, werr := collect(c.r.generateOneByOne)
		if len(want) == 0 || (c.stopAt > 0) != errors.Is(werr, stop) || (werr == nil) != (len(want) == int(c.r.Edges)) {
			t.Fatalf("%+v: one by one gave %d edges, error %v", c.r, len(want), werr)
		}
		for _, shards := range []int{1, 2, 3, 8} {
			got, err := collect(func(emit func(s, d, l uint32) error) error { return c.r.generate(emit, shards) })
			if !slices.Equal(got, want) || fmt.Sprint(err) != fmt.Sprint(werr) {
				t.Errorf("%+v, %d shards: %d edges, error %v; one by one %d edges, error %v", c.r, shards, len(got), err, len(want), werr)
			}
		}
	}
}

// A set grows past a load of 3/4 and keeps every key.
func TestEdgeSetGrows(t *testing.T) {
	s := newEdgeSet(10)
	size := len(s.slots)
	for k := uint64(1); k <= 1000; k++ {
		if !s.add(k * 7919) {
			t.Fatalf("key %d was there before its add", k)
		}
	}
	if len(s.slots) <= size || 4*s.n > 3*len(s.slots) {
		t.Fatalf("%d keys in %d slots (from %d)", s.n, len(s.slots), size)
	}
	for k := uint64(1); k <= 1000; k++ {
		if s.add(k * 7919) {
			t.Fatalf("key %d was lost in growing", k)
		}
	}
}
