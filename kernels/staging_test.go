package kernels

import "testing"

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
