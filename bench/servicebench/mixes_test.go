package servicebench

import (
	"testing"

	"github.com/gcsm/gcsm/bench"
)

// The mixes taken before transfers had ids stream bare pairs: no id, no
// amount, so their figures stay comparable.
func TestBenchServiceBareStream(t *testing.T) {
	for name, m := range Mixes {
		if m.Transfers != (name == "rings-where") {
			t.Errorf("mix %s streams transfers: %v", name, m.Transfers)
		}
	}
	for _, ev := range bench.Transfers(100, 500, 1) {
		if r := TransferRecord(ev, false); r.ID != "" || r.Props != nil || r.Src != ev.Src || r.Time != ev.Time {
			t.Fatalf("%+v as a bare record: %+v", ev, r)
		}
		if r := TransferRecord(ev, true); r.ID != ev.ID || r.ID == "" {
			t.Fatalf("%+v as a transfer: %+v", ev, r)
		}
	}
}
