package service

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHealthReason: each fault gives /readyz its one-line reason from the
// watch's samples, the broker's first; input waiting less than
// stall_after, a standby's and an idle service's are no stall. The times
// are values, not the clock: nothing here waits.
func TestHealthReason(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	const after = time.Minute
	for _, c := range []struct {
		name string
		h    health
		want string // a prefix; "" for ready
	}{
		{"idle", health{now: at(600), active: true, done: at(0)}, ""},
		{"working", health{now: at(600), active: true, lag: 5, waiting: at(0), done: at(599)}, ""},
		{"new input after a long idle", health{now: at(610), active: true, lag: 5, waiting: at(600), done: at(0)}, ""},
		{"stalled", health{now: at(673), active: true, lag: 5120, waiting: at(0), done: at(600)}, "stalled: no batch completed for 1m13s while 5120 records wait"},
		{"standby", health{now: at(673), lag: 5120, waiting: at(0), done: at(0)}, ""},
		{"output", health{now: at(100), active: true, oldestOut: at(25)}, "output undeliverable: the oldest matched batch has waited 1m15s for its acknowledgement"},
		{"output waits less", health{now: at(100), active: true, oldestOut: at(41)}, ""},
		{"refused records given up", health{now: at(100), active: true, gaveUp: at(90)}, "output refused: records the brokers refused were given up 10s ago"},
		{"given up long ago", health{now: at(100), active: true, gaveUp: at(30)}, ""},
		{"backwards", health{now: at(1), active: true, behind: []string{"partition 0 ends at 12, before the applied position 700000"}},
			"input went backwards (topic recreated or truncated?): partition 0 ends at 12, before the applied position 700000"},
		{"broker first", health{now: at(40), active: true, unreachable: at(0), err: errors.New("dial tcp: connection refused"), lag: 9, waiting: at(-100), oldestOut: at(-100)},
			"broker unreachable since 2025-01-02T03:04:05Z (40s): dial tcp: connection refused"},
	} {
		if got := c.h.reason(after); c.want == "" && got != "" || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestInputLag: the lag counts from the acknowledged position, or from the
// first offset where there is none or retention passed it, and a partition
// that ends before the position is reported, not counted.
func TestInputLag(t *testing.T) {
	first := map[int]int64{0: 0, 1: 50, 2: 0, 3: 0}
	end := map[int]int64{0: 100, 1: 80, 2: 12, 3: 7}
	pos := map[int]int64{0: 40, 1: 10, 2: 700_000}
	lag, behind := inputLag(pos, first, end)
	if lag != 60+30+7 || !slices.Equal(behind, []string{"partition 2 ends at 12, before the applied position 700000"}) {
		t.Fatalf("lag %d, behind %q", lag, behind)
	}
}
