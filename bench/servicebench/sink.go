package servicebench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/gcsm/gcsm/output"
	"github.com/gcsm/gcsm/service"
)

// timedSink is the service's output, noting when each write is
// acknowledged: an alert's latency runs from its source's last input record
// (Source.ToOffset, the newest record of the batch that caused it) entering
// the producer, which stamps the record with that time, to then.
type timedSink struct {
	output.Sink
	arr    *arrivals
	noting sync.WaitGroup // timedSender's goroutines, noting acknowledgements

	mu      sync.Mutex
	events  int64
	lat     []weighted // per write and source record: latency, events
	pending []pending  // alerts whose source's produce callback had not yet run
}

type weighted struct {
	d time.Duration
	n int64
}

// pending is n alerts acknowledged at ack (Unix nanoseconds) whose source
// record's timestamp is not known yet: the service read the record before
// the producer's callback, which notes it, ran.
type pending struct {
	p       int
	off, at int64
	n       int64
}

// Write writes evs and notes their acknowledgement.
func (t *timedSink) Write(ctx context.Context, evs []output.Event) error {
	var err error
	counts := countedDuring(evs, func() { err = t.Sink.Write(ctx, evs) })
	if err != nil {
		return err
	}
	t.acked(counts, len(evs))
	return nil
}

// timedSender is a timedSink whose sink is an output.Sender, which it
// stays: the service pipelines its delivery only through a Sender.
type timedSender struct {
	*timedSink
	sender output.Sender
}

// Transactional opens the wrapped sink's transactions, for exactly-once
// delivery, which writes through them and not through Send: an alert's
// latency then runs to the commit of its transaction, when a
// read_committed consumer can first read it.
func (t timedSender) Transactional(ctx context.Context, id string) (*output.Txn, error) {
	tr, ok := t.sender.(output.Transactor)
	if !ok {
		return nil, fmt.Errorf("bench service: the sink has no transactions")
	}
	tx, err := tr.Transactional(ctx, id)
	if err != nil {
		return nil, err
	}
	tx.Watch = func(evs []output.Event) func(bool) {
		// Counted beside the send, as countedDuring does; the events stay
		// the service's until their transaction has ended.
		var counts map[[2]int64]int64
		var counted sync.WaitGroup
		counted.Go(func() { counts = sourceCounts(evs) })
		n := len(evs)
		return func(committed bool) {
			counted.Wait()
			if committed {
				t.acked(counts, n)
			}
		}
	}
	return tx, nil
}

// Send notes the alerts' acknowledgement when the sender's Pending is done,
// on a goroutine of its own, so as not to hold up the next Send.
func (t timedSender) Send(ctx context.Context, letters []output.DeadLetter, evs []output.Event) output.Pending {
	var p output.Pending
	counts := countedDuring(evs, func() { p = t.sender.Send(ctx, letters, evs) })
	t.noting.Go(func() {
		<-p.Done()
		if p.Err() == nil {
			t.acked(counts, len(evs))
		}
	})
	return p
}

// countedDuring counts evs by source (sourceCounts) on a goroutine of its
// own while deliver runs. Delivery is the service's one serial step, so
// counting before it would add the benchmark's own cost (a tenth of the run
// on alert-heavy) to the service's time. The events are the caller's only
// until Write or Send returns (output.Sink), hence the wait.
func countedDuring(evs []output.Event, deliver func()) map[[2]int64]int64 {
	var counts map[[2]int64]int64
	var counted sync.WaitGroup
	counted.Go(func() { counts = sourceCounts(evs) })
	deliver()
	counted.Wait()
	return counts
}

// sourceCounts counts events by their source's newest input record.
func sourceCounts(evs []output.Event) map[[2]int64]int64 {
	counts := map[[2]int64]int64{}
	for _, ev := range evs {
		if ev.Source != nil {
			counts[[2]int64{int64(ev.Source.Partition), ev.Source.ToOffset}]++
		}
	}
	return counts
}

// acked notes n alerts, from the sources counted, acknowledged now.
func (t *timedSink) acked(counts map[[2]int64]int64, n int) {
	now := time.Now().UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events += int64(n)
	for k, n := range counts {
		t.pending = append(t.pending, pending{int(k[0]), k[1], now, n})
	}
	t.resolve()
}

// resolve turns the pending alerts whose source is now known into
// latencies.
func (t *timedSink) resolve() {
	t.arr.mu.Lock()
	defer t.arr.mu.Unlock()
	left := t.pending[:0]
	for _, p := range t.pending {
		if at, ok := t.arr.get(p.p, p.off); ok {
			t.lat = append(t.lat, weighted{time.Duration(p.at - at), p.n})
		} else {
			left = append(left, p)
		}
	}
	t.pending = left
}

func (t *timedSink) summarize(res *Result) {
	t.noting.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.resolve()
	res.Events = t.events
	res.AlertLatency = percentiles(t.lat)
	if res.Seconds > 0 {
		res.EventsPerSec = float64(t.events) / res.Seconds
	}
	if res.Updates > 0 {
		res.EventsPerUpdate = float64(t.events) / float64(res.Updates)
	}
}

// percentiles returns p50, p99 and the maximum of weighted samples, in ms.
func percentiles(ws []weighted) LatencySummary {
	slices.SortFunc(ws, func(a, b weighted) int { return int(a.d - b.d) })
	var total int64
	for _, w := range ws {
		total += w.n
	}
	var s LatencySummary
	if total == 0 {
		return s
	}
	at := func(q float64) float64 {
		rank := int64(math.Ceil(q * float64(total)))
		var seen int64
		for _, w := range ws {
			if seen += w.n; seen >= rank {
				return ms(w.d)
			}
		}
		return ms(ws[len(ws)-1].d)
	}
	s.P50, s.P99, s.Max, s.Count = at(0.5), at(0.99), ms(ws[len(ws)-1].d), total
	return s
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// batchLog collects what the service's OnBatch hook says.
type batchLog struct {
	mu          sync.Mutex
	first, last time.Time
	messages    int
	lat         []weighted
}

func (b *batchLog) add(bi service.BatchInfo) {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.first.IsZero() {
		b.first = now.Add(-bi.Latency)
	}
	b.last = now
	b.messages += bi.Messages
	b.lat = append(b.lat, weighted{bi.Latency, 1})
}

func (b *batchLog) summarize(res *Result) {
	b.mu.Lock()
	defer b.mu.Unlock()
	res.Batches = len(b.lat)
	res.BatchLatency = percentiles(b.lat)
	res.Seconds = b.last.Sub(b.first).Seconds()
	if res.Seconds > 0 {
		res.UpdatesPerSec = float64(b.messages) / res.Seconds
	}
}
