package bench_test

import (
	"crypto/sha256"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
)

// The fields a stream had before transfers had ids and amounts stay as they
// were for a seed: other tests and published figures rest on them. The
// digests are of the streams as generated before amounts were added.
func TestTransfersUnchangedBySeed(t *testing.T) {
	for _, c := range []struct {
		accounts, n int
		seed        uint64
		head        float64
		want        string
	}{
		{1000, 4000, 11, 100, "5de1f288e2fe27fba8635ac5f47cc81894660954a476df2ff93ce5ebe98e0f48"},
		{20000, 5000, 3, 2000, "f4fca4a25d4db34b12b94f1616e08b5ee2f8f835e8924d56670cc65cf5901a8c"},
	} {
		h := sha256.New()
		for _, e := range bench.TransfersHead(c.accounts, c.n, c.seed, c.head) {
			fmt.Fprintf(h, "%d %s %s %s %s %s %d\n", e.Op, e.Src, e.Dst, e.Label, e.SrcLabel, e.DstLabel, e.Time)
		}
		if got := fmt.Sprintf("%x", h.Sum(nil)); got != c.want {
			t.Errorf("TransfersHead(%d, %d, %d, %v) without ids and amounts has digest %s, want %s", c.accounts, c.n, c.seed, c.head, got, c.want)
		}
	}
}

// Every transfer has an id of its own and an amount in cents within the
// documented range; a reversal names an earlier transfer, still present,
// by its id and endpoints.
func TestTransferIDs(t *testing.T) {
	evs := bench.Transfers(1000, 20000, 5)
	byID := map[string]bench.TransferEvent{}
	gone := map[string]bool{}
	reversals := 0
	for i, e := range evs {
		switch e.Op {
		case graph.Insert:
			if _, dup := byID[e.ID]; dup || !strings.HasPrefix(e.ID, "tx-") {
				t.Fatalf("event %d: id %q is malformed or not unique", i, e.ID)
			}
			byID[e.ID] = e
			if e.Amount < 10 || e.Amount > 50_000 || math.Round(e.Amount*100)/100 != e.Amount {
				t.Errorf("event %d: amount %v is outside [10, 50000] or not in whole cents", i, e.Amount)
			}
		case graph.Delete:
			reversals++
			orig, ok := byID[e.ID]
			if !ok || gone[e.ID] {
				t.Fatalf("event %d reverses %q, which is not a present transfer", i, e.ID)
			}
			if orig.Src != e.Src || orig.Dst != e.Dst || orig.Label != e.Label || orig.Amount != e.Amount {
				t.Fatalf("event %d reverses %q as %+v, but the transfer was %+v", i, e.ID, e, orig)
			}
			gone[e.ID] = true
		}
	}
	if reversals == 0 {
		t.Error("no reversals")
	}
	var small, large int
	for _, e := range byID {
		if e.Amount < 1000 {
			small++
		}
		if e.Amount > 10_000 {
			large++
		}
	}
	// Log-normal around 150: most transfers are small, a few are large.
	if small < len(byID)*3/4 || large == 0 {
		t.Errorf("%d of %d transfers under 1000 and %d over 10000: want most under 1000 and some over 10000", small, len(byID), large)
	}
	other := bench.Transfers(1000, 20000, 6)
	same := 0
	for i := range min(len(evs), len(other)) {
		if evs[i].Amount == other[i].Amount {
			same++
		}
	}
	if same > len(evs)/100 {
		t.Errorf("seeds 5 and 6 give the same amount at %d of %d events", same, len(evs))
	}
}

// plantedRings returns the planted rings of size k: runs of k consecutive
// inserts that close a cycle of k distinct accounts.
func plantedRings(evs []bench.TransferEvent, k int) [][]bench.TransferEvent {
	var out [][]bench.TransferEvent
next:
	for i := 0; i+k <= len(evs); i++ {
		run := evs[i : i+k]
		seen := map[string]bool{}
		for j, e := range run {
			if e.Op != graph.Insert || e.SrcLabel != "Account" || e.DstLabel != "Account" || seen[e.Src] || e.Dst != run[(j+1)%k].Src {
				continue next
			}
			seen[e.Src] = true
		}
		out = append(out, run)
	}
	return out
}

// Planted rings are layering: legs in time order within a second of each
// other, the first over 10,000 and each later one 90 to 99% of the one
// before, which is what the bench's predicated rings look for.
func TestTransferRingsLayer(t *testing.T) {
	const n = 8000
	evs := bench.Transfers(1000, n, 9)
	for _, c := range []struct{ k, want int }{{3, n/200 + 1}, {4, n/400 + 1}} {
		rings := plantedRings(evs, c.k)
		if len(rings) != c.want {
			t.Errorf("%d rings of %d, want %d", len(rings), c.k, c.want)
		}
		for _, r := range rings {
			if r[0].Amount <= 10_000 {
				t.Errorf("ring %s: first leg of %v, want over 10000", r[0].ID, r[0].Amount)
			}
			for j := 1; j < len(r); j++ {
				if gap := r[j].Time - r[j-1].Time; gap <= 0 || gap > 1000 {
					t.Errorf("ring %s: leg %d is %d ms after the one before, want 1 to 1000", r[0].ID, j, gap)
				}
				if ratio := r[j].Amount / r[j-1].Amount; ratio < 0.9 || ratio > 0.99 {
					t.Errorf("ring %s: leg %d is %.4f of the one before, want 0.90 to 0.99", r[0].ID, j, ratio)
				}
			}
		}
	}
}

// Record passes a transfer's id and amount on, and a reversal's id alone,
// through gcsm's input event format.
func TestTransferRecord(t *testing.T) {
	evs := bench.Transfers(100, 2000, 1)
	var seen [2]bool
	dec := ingest.Decoder{Format: ingest.FormatJSON, Keep: ingest.AllProps()}
	for _, e := range evs {
		want := ingest.Record{Op: e.Op, Src: e.Src, Dst: e.Dst, Label: e.Label, SrcLabel: e.SrcLabel, DstLabel: e.DstLabel, ID: e.ID, Time: e.Time}
		if e.Op == graph.Insert {
			want.Props = []graph.Prop{{Name: "amount", Value: graph.NumberValue(e.Amount)}}
		}
		seen[e.Op-graph.Insert] = true
		got, err := dec.Decode(ingest.AppendEvent(nil, e.Record()))
		if err != nil {
			t.Fatalf("%+v: %v", e, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%+v reads back as %+v, want %+v", e, got, want)
		}
	}
	if !seen[0] || !seen[1] {
		t.Error("the stream lacks inserts or reversals")
	}
}

// TestWithSets: the sets are the asked fraction of the stream, name
// transfers and accounts the stream has sent before them, and leave the
// transfers in their order.
func TestWithSets(t *testing.T) {
	evs := bench.Transfers(2000, 20000, 3)
	out := bench.WithSets(evs, 0.1, 3)
	sets, vertex := 0, 0
	ids, senders := map[string]bool{}, map[string]bool{}
	var kept []bench.TransferEvent
	for _, ev := range out {
		switch ev.Op {
		case graph.SetEdge:
			sets++
			if !ids[ev.ID] {
				t.Fatalf("a set of transfer %s before it was sent", ev.ID)
			}
		case graph.SetVertex:
			sets++
			vertex++
			if !senders[ev.Src] || (ev.Status != "flagged" && ev.Status != "cleared") {
				t.Fatalf("set of %s (status %q) before it sent anything", ev.Src, ev.Status)
			}
		default:
			ids[ev.ID], senders[ev.Src] = true, true
			kept = append(kept, ev)
		}
	}
	if !slices.Equal(kept, evs) {
		t.Fatal("the transfers changed")
	}
	if f := float64(sets) / float64(len(out)); f < 0.09 || f > 0.11 {
		t.Fatalf("sets are %.3f of the stream, want 0.1", f)
	}
	if vertex < sets/3 || vertex > 2*sets/3 {
		t.Fatalf("%d of %d sets are of vertices, want about half", vertex, sets)
	}
}
