package kernels

import (
	"math/bits"
	"testing"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// TestKeepIntersections checks which levels of a static plan read an
// earlier level's kept list: in a clique each level reads the one above,
// whose constraints are all its own; a cycle's levels share at most one
// constraint, which is not worth keeping; a level of another label can't
// read a labelled level's list.
func TestKeepIntersections(t *testing.T) {
	d := graph.NewDict()
	for _, c := range []struct {
		name, pattern string
		src           []int // per level: the level it reads, or -1
	}{
		{"4-clique", "(a)-[]-(b)-[]-(c)-[]-(a), (d)-[]-(a), (d)-[]-(b), (d)-[]-(c)", []int{-1, -1, -1, 2}},
		{"5-clique", "(a)-[]-(b)-[]-(c)-[]-(a), (d)-[]-(a), (d)-[]-(b), (d)-[]-(c), (e)-[]-(a), (e)-[]-(b), (e)-[]-(c), (e)-[]-(d)", []int{-1, -1, -1, 2, 3}},
		{"4-cycle", "(a)-[]-(b)-[]-(c)-[]-(d)-[]-(a)", []int{-1, -1, -1, -1}},
		{"labels", "(a:A)-[]-(b:A)-[]-(c:A)-[]-(a), (d:B)-[]-(a), (d)-[]-(b), (d)-[]-(c)", []int{-1, -1, -1, -1}},
	} {
		p, err := query.ParseCypher(c.name, c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		q, err := query.Compile(p, d, false, query.Instances)
		if err != nil {
			t.Fatal(err)
		}
		start := 0
		if c.name == "labels" {
			start = 1 // a vertex labelled A, so that d (B) comes last
		}
		plan := q.StaticPlan(start, nil, false)
		for _, keep := range []bool{false, true} {
			prog, err := encodeStatic(q, &plan, nil, keep, false)
			if err != nil {
				t.Fatal(err)
			}
			slots := 0
			for i := range plan.Levels {
				rec := prog.words[tLevels+i*lWords:]
				want := c.src[i]
				if !keep {
					want = -1
				}
				if want < 0 {
					if rec[lSrc] != noSrc {
						t.Errorf("%s keep %v: level %d reads level %d", c.name, keep, i, rec[lSrc])
					}
					continue
				}
				if rec[lSrc] != uint32(want) {
					t.Errorf("%s: level %d reads %d, want %d", c.name, i, rec[lSrc], want)
					continue
				}
				src := prog.words[tLevels+want*lWords:]
				if bits.OnesCount32(rec[lCover]) != int(src[lNCons]) {
					t.Errorf("%s: level %d covers %b, level %d has %d constraints", c.name, i, rec[lCover], want, src[lNCons])
				}
				for k := range int(rec[lNCons]) {
					if rec[lCover]&(1<<k) == 0 {
						continue
					}
					from := prog.words[int(rec[lCons])+k*cWords+0]
					found := false
					for m := range int(src[lNCons]) {
						found = found || prog.words[int(src[lCons])+m*cWords] == from
					}
					if !found {
						t.Errorf("%s: level %d's covered constraint %d (from %d) is not level %d's", c.name, i, k, from, want)
					}
				}
				if src[lKeep] == 0 {
					t.Errorf("%s: level %d reads level %d, which keeps nothing", c.name, i, want)
				}
			}
			for i := range plan.Levels {
				if prog.words[tLevels+i*lWords+lKeep] != 0 {
					slots++
				}
			}
			if slots != prog.keepSlots {
				t.Errorf("%s keep %v: %d levels keep, keepSlots %d", c.name, keep, slots, prog.keepSlots)
			}
		}
	}
}

// TestReadsKept: a walk from a seed reads only the kept lists that levels at
// or below the seed's depth make.
func TestReadsKept(t *testing.T) {
	d := graph.NewDict()
	p, err := query.ParseCypher("5-clique", "(a)-[]-(b)-[]-(c)-[]-(a), (d)-[]-(a), (d)-[]-(b), (d)-[]-(c), (e)-[]-(a), (e)-[]-(b), (e)-[]-(c), (e)-[]-(d)")
	if err != nil {
		t.Fatal(err)
	}
	q, err := query.Compile(p, d, false, query.Instances)
	if err != nil {
		t.Fatal(err)
	}
	plan := q.StaticPlan(0, nil, false)
	prog, err := encodeStatic(q, &plan, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	// Level 3 reads level 2's list, level 4 level 3's.
	for start, want := range map[int]bool{2: true, 3: true, 4: false} {
		if got := prog.readsKept(start); got != want {
			t.Errorf("readsKept(%d) = %v, want %v", start, got, want)
		}
	}
	if prog, err = encodeStatic(q, &plan, nil, false, false); err != nil {
		t.Fatal(err)
	}
	if prog.readsKept(2) {
		t.Error("a program without kept lists reads one")
	}
}
