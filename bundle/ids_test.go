package bundle

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestIDIndexModel runs random puts and deletes against a Go map, with few
// distinct ids so that probe runs collide, wrap around the table's end and
// lose entries from their middle.
func TestIDIndexModel(t *testing.T) {
	// Few distinct ids keep the table at 16 or 32 slots, where runs wrap.
	for _, distinct := range []int{5, 7, 12, 40, 300} {
		for seed := range uint64(4) {
			t.Run(fmt.Sprintf("ids=%d/seed=%d", distinct, seed), func(t *testing.T) { idIndexModel(t, distinct, seed, false) })
			t.Run(fmt.Sprintf("ids=%d/seed=%d/crowded", distinct, seed), func(t *testing.T) { idIndexModel(t, distinct, seed, true) })
		}
	}
}

func idIndexModel(t *testing.T, distinct int, seed uint64, crowded bool) {
	rng := rand.New(rand.NewPCG(seed, 2))
	x := newIDIndex()
	if crowded {
		// Three homes at the table's last slots (any size is a power of
		// two), so that runs wrap past its end.
		x.hash = func(id string) uint64 {
			var n uint64
			fmt.Sscanf(id, "tx-%d", &n)
			return ^uint64(0) - n%3
		}
	}
	var ids []string // slot -> id, as the store's column
	model := map[string]Tx{}
	for step := range 20000 {
		id := fmt.Sprintf("tx-%d", rng.IntN(distinct))
		switch rng.IntN(3) {
		case 0, 1: // a new slot for id
			ids = append(ids, id)
			x.put(ids, Tx(len(ids)-1))
			model[id] = Tx(len(ids) - 1)
		default:
			if s, ok := model[id]; ok {
				x.del(ids, s)
				delete(model, id)
			}
		}
		if step%97 == 0 {
			for i := range distinct {
				id := fmt.Sprintf("tx-%d", i)
				got, ok := x.get(ids, id)
				want, wok := model[id]
				if ok != wok || got != want {
					t.Fatalf("step %d: %s -> %d %v, want %d %v", step, id, got, ok, want, wok)
				}
			}
			if x.n != len(model) {
				t.Fatalf("step %d: %d entries, want %d", step, x.n, len(model))
			}
		}
	}
}
