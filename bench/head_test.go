package bench_test

import (
	"slices"
	"testing"

	"github.com/gcsm/gcsm/bench"
)

// busiest is the largest share of a stream's transfers that one account
// sends.
func busiest(evs []bench.TransferEvent) float64 {
	n := map[string]int{}
	top := 0
	for _, e := range evs {
		n[e.Src]++
		top = max(top, n[e.Src])
	}
	return float64(top) / float64(len(evs))
}

// Transfers is TransfersHead with the head at 100, and a head at a tenth
// of the accounts takes the hubs' weight away.
func TestTransfersHead(t *testing.T) {
	const accounts, n = 20000, 50000
	if !slices.Equal(bench.Transfers(accounts, n, 3), bench.TransfersHead(accounts, n, 3, 100)) {
		t.Error("Transfers differs from TransfersHead with a head of 100")
	}
	hubs, flat := busiest(bench.Transfers(accounts, n, 3)), busiest(bench.TransfersHead(accounts, n, 3, accounts/10))
	if flat*4 > hubs {
		t.Errorf("busiest account's share: %.4f with a head of 100, %.4f with a head of %d; want the second under a quarter of the first", hubs, flat, accounts/10)
	}
}
