package cache

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/sampler"
)

// checkBlock verifies every key of g against b: a packed key's lists are
// exactly the graph's (tombstone bits and labels included), any other key is
// not found.
func checkBlock(t *testing.T, where string, b *Block, g *dyngraph.Graph, packed []uint32, keep keeper) {
	t.Helper()
	in := map[uint32]bool{}
	for _, k := range packed {
		in[k] = true
	}
	rows := b.RowIdx()
	if len(rows) != len(packed) || !slices.IsSorted(rows) {
		t.Fatalf("%s: rowidx %v for %d packed keys", where, rows, len(packed))
	}
	for i := 1; i < len(rows); i++ {
		if rows[i] == rows[i-1] {
			t.Fatalf("%s: key %d twice in rowidx", where, rows[i])
		}
	}
	for k := range sampler.NumKeys(g) + 3 {
		key := uint32(k)
		s, a, ok := b.Find(key)
		if ok != in[key] {
			t.Fatalf("%s: Find(%d) = %v, packed %v", where, key, ok, in[key])
		}
		if !ok {
			continue
		}
		ws, wa, wls, wla := expected(g, key, keep)
		if !slices.Equal(s, ws) || !slices.Equal(a, wa) || (a == nil) != (len(wa) == 0) {
			t.Fatalf("%s: list %d: block %v + %v, want %v + %v", where, key, s, a, ws, wa)
		}
		ls, la, lok := b.Labels(key)
		if lok != g.MultiLabel() {
			t.Fatalf("%s: Labels(%d) ok = %v on a multi-label=%v graph", where, key, lok, g.MultiLabel())
		}
		if lok && (!slices.Equal(ls, wls) || !slices.Equal(la, wla)) {
			t.Fatalf("%s: labels of %d: block %v + %v, want %v + %v", where, key, ls, la, wls, wla)
		}
	}
}

// checkPack packs keys into b within budget, trimmed to reads, and checks
// the lists it took against greedy under keep, the block's size against
// the budget and BlockBytes, and every list (checkBlock). It returns the
// lists taken.
func checkPack(t *testing.T, where string, b *Block, g *dyngraph.Graph, keys []uint32, budget int64, reads *Reads, keep keeper) []uint32 {
	t.Helper()
	n, err := Pack(b, g, keys, budget, reads)
	if err != nil {
		t.Fatal(err)
	}
	want := greedy(g, keys, budget, keep)
	if n != len(want) || !slices.Equal(b.RowIdx(), want) {
		t.Fatalf("%s budget %d: packed %d lists %v, want %v", where, budget, n, b.RowIdx(), want)
	}
	if got := BlockBytes(g, want, reads); got != b.Bytes() || got > budget {
		t.Fatalf("%s: BlockBytes of the packed lists = %d, the block has %d, budget %d", where, got, b.Bytes(), budget)
	}
	checkBlock(t, where, b, g, want, keep)
	return want
}

// greedy is Pack's selection rule, written out independently: in order,
// skipping repeats, empty lists and lists that do not fit, lists being
// trimmed by keep.
func greedy(g *dyngraph.Graph, keys []uint32, budget int64, keep keeper) []uint32 {
	per := int64(1)
	if g.MultiLabel() {
		per = 2
	}
	var out []uint32
	used := int64(0)
	for _, k := range keys {
		n := int64(keptLen(g, k, keep))
		if n == 0 || slices.Contains(out, k) {
			continue
		}
		c := 3 + per*n
		if used == 0 {
			c++
		}
		if 4*(used+c) <= budget {
			used += c
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// TestPackRoundTrip packs random priority orders of random graphs under
// random budgets into one reused block.
func TestPackRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	// Dense and sparse graphs, so that small budgets on the sparse one
	// take Pack's sorting path and the rest its bitset scan.
	for _, size := range [][2]int{{200, 1500}, {4000, 3000}} {
		for _, directed := range []bool{false, true} {
			for _, multi := range []bool{false, true} {
				where := describe(directed, multi)
				g, _ := randomGraph(t, r, directed, multi, size[0], size[1])
				all := nonEmpty(g)
				whole := 4 * blockWords(g, all)
				var b Block
				for i := range 40 {
					keys := make([]uint32, 0, 2*sampler.NumKeys(g))
					for k := range sampler.NumKeys(g) {
						keys = append(keys, uint32(k))
					}
					r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
					keys = append(keys, keys[:r.IntN(len(keys))]...) // repeats
					budget := r.Int64N(whole + 100)
					if i%2 == 0 {
						budget = r.Int64N(whole/100 + 100)
					}
					want := checkPack(t, where, &b, g, keys, budget, nil, nil)
					if b.Bytes() != 4*blockWords(g, want) {
						t.Fatalf("%s: %d bytes, want %d", where, b.Bytes(), 4*blockWords(g, want))
					}
				}
			}
		}
	}
}

// TestPackParallel: a block with enough entries is copied by several
// cores, each from the row where its share starts, and holds every list
// exactly, whole or trimmed to one or two ranges of labels, under budgets
// that cut the lists anywhere.
func TestPackParallel(t *testing.T) {
	if testing.Short() {
		t.Skip("builds graphs of 300k edges")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(5))
	r := rand.New(rand.NewPCG(5, 6))
	d := graph.NewDict()
	for _, l := range []string{"0", "1", "2"} {
		d.Intern(l)
	}
	sets := [][]*query.Query{nil} // whole lists
	for _, cypher := range []string{"(a:0)-[]-(b:1)", "(a:0)-[]-(b:0)-[]-(c:2)"} {
		sets = append(sets, []*query.Query{compile(t, d, cypher, false)})
	}
	for _, multi := range []bool{false, true} {
		g, _ := labeledGraph(t, r, false, multi, 20000, 300000, 3)
		all := nonEmpty(g)
		var b Block
		for i, qs := range sets {
			where := fmt.Sprintf("%s query set %d", describe(false, multi), i)
			var keep keeper
			var reads *Reads
			if qs != nil {
				reads, keep = NewReads(g, qs), naiveKeep(g, qs)
			}
			full := BlockBytes(g, all, reads)
			for _, budget := range []int64{full, full / 2, full/3 + 7} {
				keys := slices.Clone(all)
				r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
				if _, err := Pack(&b, g, keys, budget, reads); err != nil {
					t.Fatal(err)
				}
				if lay := b.Layout(); budget == full && max(lay.Entries/parallelEntries, lay.Keys/parallelLists) < 2 {
					t.Fatalf("%s: %d lists of %d entries are too few to copy in parallel", where, lay.Keys, lay.Entries)
				}
				checkBlock(t, where, &b, g, greedy(g, keys, budget, keep), keep)
			}
		}
	}
}

// TestPackBudget: nothing fits in 0 bytes, everything in the whole graph's
// size, and not everything in one word less.
func TestPackBudget(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, directed := range []bool{false, true} {
		for _, multi := range []bool{false, true} {
			where := describe(directed, multi)
			g, _ := randomGraph(t, r, directed, multi, 100, 600)
			all := nonEmpty(g)
			whole := 4 * blockWords(g, all)
			var b Block
			for _, c := range []struct {
				budget int64
				want   int
			}{{0, 0}, {15, 0}, {whole, len(all)}, {whole + 3, len(all)}, {1 << 40, len(all)}} {
				n, err := Pack(&b, g, all, c.budget, nil)
				if err != nil || n != c.want || b.Keys() != c.want {
					t.Errorf("%s: budget %d packed %d (Keys %d, %v), want %d", where, c.budget, n, b.Keys(), err, c.want)
				}
				if b.Bytes() > c.budget {
					t.Errorf("%s: %d bytes over a budget of %d", where, b.Bytes(), c.budget)
				}
			}
			if n, _ := Pack(&b, g, all, whole-4, nil); n != len(all)-1 {
				// The last list in key order is skipped; smaller ones fit
				// no better, as each needs at least 4 words.
				t.Errorf("%s: a word short of the whole graph packed %d of %d", where, n, len(all))
			}
			if n, _ := Pack(&b, g, all, 0, nil); n != 0 || b.Bytes() != 0 || len(b.Words()) != 0 {
				t.Errorf("%s: an empty block has %d bytes", where, b.Bytes())
			}
			if _, _, ok := b.Find(all[0]); ok {
				t.Errorf("%s: an empty block finds a key", where)
			}
		}
	}
}

func TestPackErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	g, _ := randomGraph(t, r, true, false, 50, 200)
	var b Block
	if _, err := Pack(&b, g, nil, -1, nil); err == nil {
		t.Error("negative budget accepted")
	}
	if _, err := Pack(&b, g, []uint32{1, uint32(sampler.NumKeys(g))}, 1<<20, nil); !errors.Is(err, ErrKey) {
		t.Errorf("key out of range: %v", err)
	}
	if b.Keys() != 0 {
		t.Error("a failed Pack left lists in the block")
	}
	// The bitset of taken keys is clean after a failure.
	if n, err := Pack(&b, g, []uint32{1}, 1<<20, nil); err != nil || n != 1 {
		t.Errorf("after a failure: %d, %v", n, err)
	}
}

// packGraph is a random undirected multi-label graph of 300 vertices and
// 3,000 edges from seed, its lists that are not empty, and the bytes of a
// block of them all.
func packGraph(t *testing.T, seed uint64) (*dyngraph.Graph, []uint32, int64) {
	g, _ := randomGraph(t, rand.New(rand.NewPCG(seed, seed+1)), false, true, 300, 3000)
	all := nonEmpty(g)
	return g, all, 4 * blockWords(g, all)
}

// countingAlloc counts what the block takes from its allocator.
type countingAlloc struct {
	hostmem.Heap
	allocs, frees int
	live          int64
}

func (c *countingAlloc) Alloc(n int) ([]byte, error) {
	c.allocs++
	c.live += int64(n)
	return c.Heap.Alloc(n)
}

func (c *countingAlloc) Free(b []byte) error {
	c.frees++
	c.live -= int64(len(b))
	return nil
}

// TestPackAllocs: a reused block allocates nothing once grown, whether its
// buffer is on the heap or from an allocator, which it asks for a larger
// buffer only when the block outgrows the one it has.
func TestPackAllocs(t *testing.T) {
	g, all, whole := packGraph(t, 7)
	ca := &countingAlloc{}
	for _, b := range []*Block{{}, {Alloc: ca}} {
		budget := whole / 2
		pack := func() {
			if _, err := Pack(b, g, all, budget, nil); err != nil {
				t.Fatal(err)
			}
		}
		pack()
		if a := testing.AllocsPerRun(10, pack); a != 0 {
			t.Errorf("Alloc %v: %v allocations per Pack", b.Alloc != nil, a)
		}
		budget = whole
		pack()
		checkBlock(t, "grown", b, g, all, nil)
		if err := b.Free(); err != nil {
			t.Fatal(err)
		}
	}
	if ca.allocs != 2 || ca.frees != 2 || ca.live != 0 {
		t.Errorf("allocator: %d allocations, %d frees, %d bytes live; want 2, 2, 0", ca.allocs, ca.frees, ca.live)
	}
}

// A block's buffer grows with room to spare, up to its budget: a block a
// little larger than the last, within the same budget, pins no new memory.
func TestPackGrowsWithinBudget(t *testing.T) {
	g, all, whole := packGraph(t, 9)
	budget := whole / 2
	n := 0 // the first n lists take about 85% of the budget
	for n < len(all) && 20*BlockBytes(g, all[:n+1], nil) <= 17*budget {
		n++
	}
	ca := &countingAlloc{}
	b := &Block{Alloc: ca}
	for i, c := range []struct {
		keys            []uint32
		budget          int64
		allocs          int
		atLeast, atMost int64 // the buffer's bytes
	}{
		{all[:n], budget, 1, min(5*BlockBytes(g, all[:n], nil)/4, budget) - 4, budget},
		{all, budget, 1, 0, budget}, // cut: more lists than the first
		{all, whole, 2, 0, whole},
	} {
		if _, err := Pack(b, g, c.keys, c.budget, nil); err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			if !b.Cut() || b.Keys() <= n || b.Bytes() > budget {
				t.Errorf("pack 1: %d lists, %d bytes, cut %v; want more than %d lists within %d bytes, cut", b.Keys(), b.Bytes(), b.Cut(), n, budget)
			}
		} else {
			checkBlock(t, fmt.Sprint("pack ", i), b, g, c.keys, nil)
		}
		if ca.allocs != c.allocs || ca.live < c.atLeast || ca.live > c.atMost {
			t.Errorf("pack %d: %d allocations, a buffer of %d bytes; want %d, %d to %d", i, ca.allocs, ca.live, c.allocs, c.atLeast, c.atMost)
		}
	}
	if err := b.Free(); err != nil {
		t.Fatal(err)
	}
}

// BlockBytesUpTo sizes the keys in windows that double from firstWindow
// and stops after the window that passes the limit: it is BlockBytes of
// that many keys, more than the limit, or of all of them.
func TestBlockBytesUpTo(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	g, _ := labeledGraph(t, r, false, true, 20000, 100000, 3)
	keys := nonEmpty(g)
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	full := BlockBytes(g, keys, nil)
	if len(keys) < 4*firstWindow {
		t.Fatalf("%d lists are too few for several windows", len(keys))
	}
	for _, limit := range []int64{0, 1, full / 9, full / 3, full - 1, full, 2 * full} {
		got := BlockBytesUpTo(g, keys, nil, limit)
		want, n := int64(0), 0
		for n < len(keys) && want <= limit {
			n += min(len(keys)-n, max(firstWindow, n))
			want = BlockBytes(g, keys[:n], nil)
		}
		if got != want || (got <= limit && got != full) {
			t.Errorf("limit %d of %d: %d bytes, want %d (the first %d keys)", limit, full, got, want, n)
		}
	}
}

// Cut says whether Pack left out a list: with distinct, non-empty keys,
// exactly when it packed fewer than all of them.
func TestPackCut(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	g, _ := labeledGraph(t, r, false, true, 5000, 40000, 3)
	keys := nonEmpty(g)
	full := BlockBytes(g, keys, nil)
	var b Block
	for _, budget := range []int64{0, 100, full / 7, full / 2, full - 1, full, full + 100} {
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		n, err := Pack(&b, g, keys, budget, nil)
		if err != nil {
			t.Fatal(err)
		}
		if b.Cut() != (n < len(keys)) {
			t.Errorf("budget %d of %d: packed %d of %d lists, Cut() %v", budget, full, n, len(keys), b.Cut())
		}
	}
}

// A reserved block packs up to its reservation without allocating, keeps
// its lists when a reservation needs no more, and is emptied by one that
// grows its buffer.
func TestReserve(t *testing.T) {
	g, all, whole := packGraph(t, 11)
	ca := &countingAlloc{}
	b := &Block{Alloc: ca}
	if err := b.Reserve(whole); err != nil || ca.allocs != 1 || b.Held() < whole {
		t.Fatalf("reserving %d bytes: %d allocations, %d held (%v)", whole, ca.allocs, b.Held(), err)
	}
	if _, err := Pack(b, g, all, whole, nil); err != nil {
		t.Fatal(err)
	}
	checkBlock(t, "reserved", b, g, all, nil)
	if err := b.Reserve(whole / 2); err != nil || ca.allocs != 1 || b.Keys() != len(all) {
		t.Fatalf("a smaller reservation: %d allocations, %d lists kept of %d (%v)", ca.allocs, b.Keys(), len(all), err)
	}
	if err := b.Reserve(2 * whole); err != nil || ca.allocs != 2 || ca.live != b.Held() || b.Keys() != 0 || b.Bytes() != 0 {
		t.Fatalf("a larger reservation: %d allocations, %d live bytes, %d held, %d lists left", ca.allocs, ca.live, b.Held(), b.Keys())
	}
	if err := b.Free(); err != nil || ca.live != 0 {
		t.Fatalf("free: %d bytes live (%v)", ca.live, err)
	}
}
