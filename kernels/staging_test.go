package kernels

import (
	"testing"

	"github.com/gcsm/gcsm/internal/hostmem"
)

// countingAlloc is heap memory that counts its slabs and frees, as pinned
// memory's would be counted.
type countingAlloc struct {
	hostmem.Heap
	allocs, frees int
}

func (a *countingAlloc) Alloc(n int) ([]byte, error) {
	a.allocs++
	return a.Heap.Alloc(n)
}

func (a *countingAlloc) Free(b []byte) error {
	a.frees++
	return a.Heap.Free(b)
}

// TestStagingKeepsCopies checks what deferred copies rely on: a taken
// buffer keeps its address and contents while later ones are taken, large
// ones included, and reset reuses the chunks.
func TestStagingKeepsCopies(t *testing.T) {
	var s staging
	var chunks [2]int
	sizes := []int{10, stagingChunk - 20, 30, 3 * stagingChunk, 5, stagingChunk}
	for round := range 2 {
		var bufs [][]byte
		for i, n := range sizes {
			b := s.take(n)
			if len(b) != n || cap(b) != n {
				t.Fatalf("round %d: take(%d) gave len %d cap %d", round, n, len(b), cap(b))
			}
			for j := range b {
				b[j] = byte(i + 1)
			}
			bufs = append(bufs, b)
		}
		for i, b := range bufs {
			for j := range b {
				if b[j] != byte(i+1) {
					t.Fatalf("round %d: buffer %d was overwritten at %d", round, i, j)
				}
			}
		}
		chunks[round] = len(s.chunks)
		s.reset()
	}
	if chunks[1] != chunks[0] {
		t.Fatalf("%d chunks after one round, %d after a second of the same sizes: reset does not reuse them", chunks[0], chunks[1])
	}
}

// TestPinnedWordsGrow checks the changed lists' staging: it is reused while
// it is large enough, replaced (the old one freed) when it is not, and
// freed once.
func TestPinnedWordsGrow(t *testing.T) {
	a := &countingAlloc{}
	var p pinnedWords
	for i, tc := range []struct{ n, allocs, frees int }{
		{10, 1, 0}, {1 << 14, 1, 0}, {1 << 15, 2, 1}, {100, 2, 1}, {1 << 17, 3, 2},
	} {
		w, err := p.sized(a, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		if len(w) != tc.n {
			t.Fatalf("step %d: sized(%d) gave %d words", i, tc.n, len(w))
		}
		w[tc.n-1] = 1 // in range
		if a.allocs != tc.allocs || a.frees != tc.frees {
			t.Fatalf("step %d: sized(%d): %d allocations and %d frees, want %d and %d", i, tc.n, a.allocs, a.frees, tc.allocs, tc.frees)
		}
	}
	if err := p.free(a); err != nil || a.frees != 3 {
		t.Fatalf("free: %v, %d frees", err, a.frees)
	}
	if err := p.free(a); err != nil || a.frees != 3 {
		t.Fatalf("second free: %v, %d frees", err, a.frees)
	}
}
