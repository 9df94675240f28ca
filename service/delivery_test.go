package service

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gcsm/gcsm/output"
)

// stubbornSink fails every Send that carries batch's events, the first
// times of them (all of them when times < 0), with err.
type stubbornSink struct {
	output.Sender
	batch uint64
	times int
	err   error

	mu    sync.Mutex
	tries int
}

func (f *stubbornSink) Send(ctx context.Context, letters []output.DeadLetter, events []output.Event) output.Pending {
	if len(events) > 0 && events[0].Batch == f.batch {
		f.mu.Lock()
		f.tries++
		fail := f.times < 0 || f.tries <= f.times
		f.mu.Unlock()
		if fail {
			p := &failedPending{done: make(chan struct{}), letters: len(letters), events: len(events), err: f.err}
			close(p.done)
			return p
		}
	}
	return f.Sender.Send(ctx, letters, events)
}

func (f *stubbornSink) attempts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tries
}

// failedPending is a Send whose records all failed with err.
type failedPending struct {
	done            chan struct{}
	letters, events int
	err             error
}

func (p *failedPending) Done() <-chan struct{}       { return p.done }
func (p *failedPending) Err() error                  { return p.err }
func (p *failedPending) Diverted() []output.TooLarge { return nil }
func (p *failedPending) Unsent() (letters, events []int) {
	return count(p.letters), count(p.events)
}

// TestDeliveryOutageAndRefusal: a batch whose output fails for the
// cluster's sake (here NOT_LEADER_FOR_PARTITION, past the bound on
// refused records) is sent again until it is acknowledged, losing
// nothing; one whose records the brokers refuse (INVALID_RECORD) is given
// up after the bound, counted in undelivered_total{reason="retries"}, and
// the batches after it are delivered all the same.
func TestDeliveryOutageAndRefusal(t *testing.T) {
	const failing = 5
	for _, tc := range []struct {
		name  string
		times int
		err   error
	}{
		{"outage", maxResends + 3, fmt.Errorf("produce: %w", kerr.NotLeaderForPartition)},
		{"refused", -1, fmt.Errorf("produce: %w", kerr.InvalidRecord)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addrs, cfg, recs, vals := fullBatches(t, 12, 11)
			out := consume(t, addrs, "matches", true)
			sink := &stubbornSink{Sender: newGatedSink(t, addrs, cfg).Sender, batch: failing, times: tc.times, err: tc.err}
			r := startWith(t, cfg, sink)
			waitFor(t, "the stream", time.Minute, func() bool { return r.s.Progress().Position[0] == int64(len(vals)) })
			waitFor(t, "every event", time.Minute, func() bool { return int64(out.count()) == r.s.Progress().Events })
			if sink.attempts() == 0 {
				t.Fatalf("batch %d had no events: the test shows nothing", failing)
			}
			events, _ := out.snapshot(t)
			seen := map[string]bool{}
			newest := map[string]uint64{} // query and match: the newest batch in the topic
			after := 0
			for _, ev := range events {
				d := describe(ev)
				if seen[d] {
					t.Errorf("written twice: %s", d)
				}
				seen[d] = true
				f := strings.SplitN(d, " ", 4)
				newest[f[1]+" "+f[3]] = max(newest[f[1]+" "+f[3]], ev.Batch)
				if ev.Batch > failing {
					after++
				}
			}
			if after == 0 {
				t.Error("no event of a batch after the failing one was delivered")
			}
			missing := 0
			for _, d := range replayEvents(t, cfg, recs) {
				if seen[d] {
					continue
				}
				f := strings.SplitN(d, " ", 4)
				b, _ := strconv.ParseUint(f[0], 10, 64)
				if b != failing && newest[f[1]+" "+f[3]] <= b {
					t.Errorf("missing, and neither superseded nor of the failing batch: %s", d)
				}
				if newest[f[1]+" "+f[3]] <= b {
					missing++ // not superseded: lost
				}
			}
			given := counterVec(t, r.s.reg, "gcsm_undelivered_total", reasonRetries)
			switch tc.name {
			case "outage":
				if sink.attempts() <= 1+maxResends {
					t.Errorf("%d attempts: the outage ended within the bound, so the test shows nothing", sink.attempts())
				}
				if missing != 0 || given != 0 {
					t.Errorf("an outage lost %d events (undelivered_total{retries} %v)", missing, given)
				}
			case "refused":
				if sink.attempts() != 1+maxResends {
					t.Errorf("%d attempts, want %d", sink.attempts(), 1+maxResends)
				}
				// The count holds the batch's dead letters too.
				if missing == 0 || given < float64(missing) {
					t.Errorf("%d events of the refused batch missing, undelivered_total{retries} %v: want some, all counted", missing, given)
				}
			}
		})
	}
}
