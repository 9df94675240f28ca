package sampler

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gcsm/gcsm/query"
)

// TestSums: the table adds like a map through its growths, drains every
// sum once, and is empty and reusable after.
func TestSums(t *testing.T) {
	var s sums
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 3 {
		want := map[uint32]u128{}
		for i := range 5000 * (round + 1) {
			// Clustered keys, key 0 and the largest key included.
			k := uint32(r.IntN(3000)) * 7
			switch i {
			case 0:
				k = 0
			case 1:
				k = ^uint32(0) - 1
			}
			x := u128{lo: uint64(r.IntN(1000) + 1)}
			s.add(k, x)
			want[k] = want[k].add(x)
		}
		if s.len() != len(want) {
			t.Fatalf("round %d: %d sums, want %d", round, s.len(), len(want))
		}
		got := map[uint32]u128{}
		s.drain(func(k uint32, x u128) {
			if _, dup := got[k]; dup {
				t.Fatalf("round %d: key %d drained twice", round, k)
			}
			got[k] = x
		})
		for k, x := range want {
			if got[k] != x {
				t.Fatalf("round %d: key %d sums to %v, want %v", round, k, got[k], x)
			}
		}
		if s.len() != 0 {
			t.Fatalf("round %d: %d sums left after drain", round, s.len())
		}
		for i, sl := range s.slots {
			if sl != (sumSlot{}) {
				t.Fatalf("round %d: slot %d not cleared", round, i)
			}
		}
	}
}

// TestWorkerMemory: a worker's table follows the lists its walks read, not
// the graph's size: the estimator holds one entry per list, its workers
// only what they touched.
func TestWorkerMemory(t *testing.T) {
	g, delta, d := powerLaw(t, 16, 1<<17, 32, 3)
	qs := compile(t, d, false, query.Embeddings, pattern("triangle", 3, shapeTriangle, nil, "", false))
	var e Estimator
	est, err := e.Estimate(g, delta, qs, Options{Workers: 4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(est.keys) == 0 {
		t.Fatal("the estimate read no list")
	}
	t.Logf("%d lists read of %d", len(est.keys), NumKeys(g))
	for i, w := range e.ws {
		if n := len(w.acc.slots); n > max(minSumsSlots, 4*len(est.keys)) {
			t.Errorf("worker %d holds %d slots for %d lists read (the graph has %d)", i, n, len(est.keys), NumKeys(g))
		}
	}
}

// TestManyLists: past parallelMin rated lists, reading out and ranking run
// split over the workers, and the estimate is the same as one worker's; an
// estimate that follows rates none of the lists the big one rated but it.
func TestManyLists(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 2^16-vertex graph")
	}
	g, delta, d := powerLaw(t, 16, 1<<19, 1<<15, 5)
	big := compile(t, d, false, query.Embeddings, pattern("triangle", 3, shapeTriangle, nil, "", false))
	small := compile(t, d, false, query.Embeddings, pattern("triangle-L", 3, shapeTriangle, []string{"L0", "L1", "L2"}, "", false))
	run := func(e *Estimator, qs []*query.Query, workers int) ([]float64, []uint32) {
		est, err := e.Estimate(g, delta, qs, Options{Seed: 7, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		return est.Counts(nil), est.Hottest(nil)
	}
	var one, four Estimator
	want, wantHot := run(&one, big, 1)
	if len(wantHot) < parallelMin {
		t.Fatalf("%d lists rated: too few to take the parallel paths", len(wantHot))
	}
	got, gotHot := run(&four, big, 4)
	if !slices.Equal(got, want) || !slices.Equal(gotHot, wantHot) {
		t.Fatal("4 workers estimate differently from one")
	}
	wantSmall, _ := run(&one, small, 1)
	gotSmall, _ := run(&four, small, 4)
	if !slices.Equal(gotSmall, wantSmall) {
		t.Fatal("after a big estimate, 4 workers' next estimate differs from one worker's")
	}
	var fresh Estimator
	if freshSmall, _ := run(&fresh, small, 4); !slices.Equal(gotSmall, freshSmall) {
		t.Fatal("an estimator reused after a big estimate differs from a fresh one")
	}
}

// TestU128: the accumulators add and multiply exactly and saturate instead
// of wrapping.
func TestU128(t *testing.T) {
	a := u128{lo: ^uint64(0)}.add(u128{lo: 1})
	if a != (u128{hi: 1}) {
		t.Errorf("carry: %+v", a)
	}
	if m := (u128{hi: 1, lo: 3}).mul(1 << 20); m != (u128{hi: 1 << 20, lo: 3 << 20}) {
		t.Errorf("mul: %+v", m)
	}
	if m := (u128{hi: 1 << 63}).mul(2); m != u128Max {
		t.Errorf("mul overflow: %+v", m)
	}
	if m := (u128{hi: ^uint64(0), lo: 1 << 63}).mul(2); m != u128Max {
		t.Errorf("mul carry overflow: %+v", m)
	}
	if s := u128Max.add(u128{lo: 1}); s != u128Max {
		t.Errorf("add overflow: %+v", s)
	}
	if f := (u128{hi: 1, lo: 1}).float(); f != 0x1p64+1 {
		t.Errorf("float: %v", f)
	}
}
