package service

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
)

// churnStream is transfers among accounts that come and go: epoch k's 40
// accounts transfer among themselves for ten minutes of event time, and
// then never again, so a window of an hour holds about six epochs' worth.
// Reversals (deletes) leave some accounts without edges mid-epoch, just
// before they transfer again. Odd epochs' accounts are shops, which the
// queries do not name, so an id reused from a shop for an account, or back,
// must take its new label.
func churnStream(epochs int, seed uint64) [][]byte {
	r := rand.New(rand.NewPCG(seed, 7))
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC).UnixMilli()
	var vals [][]byte
	for k := range epochs {
		label := []string{"Account", "Shop"}[k%2]
		var live [][2]string
		for i := range 160 {
			ms := t0 + int64(k)*600_000 + int64(i)*3000
			if len(live) > 0 && r.IntN(4) == 0 {
				j := r.IntN(len(live))
				p := live[j]
				live = append(live[:j], live[j+1:]...)
				vals = append(vals, ingest.AppendEvent(nil, ingest.Record{Op: graph.Delete, Src: p[0], Dst: p[1], Time: ms}))
				continue
			}
			a, b := r.IntN(40), r.IntN(40)
			if a == b {
				continue
			}
			p := [2]string{fmt.Sprintf("e%d:%d", k, a), fmt.Sprintf("e%d:%d", k, b)}
			live = append(live, p)
			vals = append(vals, ingest.AppendEvent(nil, ingest.Record{Op: graph.Insert, Src: p[0], Dst: p[1],
				SrcLabel: label, DstLabel: label, Time: ms}))
		}
	}
	return vals
}

// changes is the set of a service's events as query, match key and change:
// events repeated after a restart (at least once) add nothing.
func changes(events []outEvent) map[string]bool {
	m := map[string]bool{}
	for _, e := range events {
		m[e.Query+" "+e.Key+" "+e.Change] = true
	}
	return m
}

// flush is an event hours after the stream, on accounts of its own: the
// batch after its batch expires every edge of the stream, whatever the
// batches were (a window expires what the batches before it passed).
func flush(i int) []byte {
	ms := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC).UnixMilli() + int64(i)
	return ingest.AppendEvent(nil, ingest.Record{Op: graph.Insert, Src: "flush:a", Dst: fmt.Sprintf("flush:%d", i), Time: ms})
}

// TestRecycleWindow streams accounts that leave a one-hour window for good:
// with recycling their vertices are forgotten and their ids reused, so the
// dictionary holds about the window's accounts, not all of them; and the
// matches, appeared and expired, are those of a service that keeps every
// vertex. The recycling service is also stopped mid-stream and restarted
// from its checkpoint, which must carry the recycled state over.
func TestRecycleWindow(t *testing.T) {
	const epochs = 30 // 1,200 accounts in all
	vals := churnStream(epochs, 1)
	// run streams vals, then the two flush events one batch each, through
	// a service, or two when restartAt > 0: the second resumes from the
	// first's checkpoint at message restartAt.
	run := func(keep bool, restartAt int) ([]outEvent, *Service) {
		addrs := cluster(t, 1, 1)
		cfg := testConfig(t, addrs)
		cfg.Window = WindowConfig{Size: time.Hour}
		cfg.Batch = BatchConfig{Size: 64, Linger: 5 * time.Millisecond}
		out := consume(t, addrs, "matches", true)
		steps := [][][]byte{vals, {flush(0)}, {flush(1)}}
		if restartAt > 0 {
			steps = append([][][]byte{vals[:restartAt], vals[restartAt:]}, steps[1:]...)
		}
		sent := 0
		var s *Service
		var r *running
		var events int64
		for i, step := range steps {
			if r == nil {
				var err error
				s, err = New(Options{Config: cfg, Log: zerolog.New(io.Discard), keepVertices: keep})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				r = &running{s: s, stop: cancel, done: make(chan error, 1)}
				go func() { r.done <- s.Run(ctx) }()
			}
			produce(t, addrs, "edges", step)
			sent += len(step)
			waitFor(t, "the stream", time.Minute, func() bool { return s.Progress().Position[0] == int64(sent) })
			if i == 0 && restartAt > 0 || i == len(steps)-1 {
				r.shutdown(t)
				events += s.Progress().Events
				r = nil
			}
		}
		waitFor(t, "the events", time.Minute, func() bool { return int64(out.count()) >= events })
		evs, _ := out.snapshot(t)
		return evs, s
	}
	kept, ks := run(true, 0)
	recycled, rs := run(false, len(vals)/2)
	if ks.core.IDs().Live() < 1100 {
		t.Fatalf("the service that keeps vertices knows %d accounts, want about 1,200", ks.core.IDs().Live())
	}
	if n := rs.core.IDs().Len(); n > 500 {
		t.Errorf("the recycling service's dictionary has %d ids for about 280 accounts in the window", n)
	}
	if n := rs.core.Graph().Born(); n > 500 {
		t.Errorf("the recycling service's graph has %d vertices for about 280 accounts in the window", n)
	}
	want, got := changes(kept), changes(recycled)
	if len(want) < 40 {
		t.Fatalf("only %d changes in the stream: the test needs more", len(want))
	}
	if !maps.Equal(got, want) {
		n := 0
		for k := range want {
			if !got[k] && n < 5 {
				t.Errorf("%s: only without recycling", k)
				n++
			}
		}
		for k := range got {
			if !want[k] && n < 10 {
				t.Errorf("%s: only with recycling", k)
				n++
			}
		}
		t.Fatalf("%d changes with recycling, %d without", len(got), len(want))
	}
}
