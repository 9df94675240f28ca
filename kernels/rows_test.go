package kernels

import (
	"slices"
	"sync"
	"testing"

	"github.com/gcsm/gcsm/dyngraph"
)

// Rows staged into their slots by several goroutines (rowWrites.set, as
// pointRows and syncTable do) are, in slot order, each row's header (in-
// table on a directed graph's in-list, word offset, length, offset in the
// data) and its words, for the scatter kernel to write.
func TestRowWritesSlots(t *testing.T) {
	const n = 1000
	refs := make([]dyngraph.ListRef, n)
	rows := make([][dyngraph.TableWords]uint32, n)
	for i := range refs {
		refs[i] = dyngraph.ListRef{V: uint32(7*i + 3), In: i%3 == 0}
		for w := range rows[i] {
			rows[i][w] = uint32(i*dyngraph.TableWords + w)
		}
	}
	for _, directed := range []bool{false, true} {
		var seq, par rowWrites
		for i, r := range refs {
			seq.hdr = append(seq.hdr, b2u(r.In && directed), dyngraph.TableWords*r.V, dyngraph.TableWords, uint32(dyngraph.TableWords*i))
			seq.data = append(seq.data, rows[i][:]...)
		}
		par.hdr = append(par.hdr, 9, 9, 9) // what an earlier batch left
		par.size(n)
		var wg sync.WaitGroup
		for p := range 4 {
			wg.Go(func() {
				for i := n * p / 4; i < n*(p+1)/4; i++ {
					par.set(i, refs[i], directed, rows[i])
				}
			})
		}
		wg.Wait()
		if !slices.Equal(seq.hdr, par.hdr) || !slices.Equal(seq.data, par.data) {
			t.Fatalf("directed=%v: slots staged\n%v\n%v\nin sequence\n%v\n%v", directed, par.hdr[:8], par.data[:10], seq.hdr[:8], seq.data[:10])
		}
	}
}
