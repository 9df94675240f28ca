package service

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/output"
)

// gatedSink is the Kafka output behind a gate: while the gate is shut,
// writes and sends wait before they reach Kafka, so a test decides when a
// batch's output is acknowledged. delay slows every write down.
type gatedSink struct {
	output.Sender
	delay time.Duration

	mu   sync.Mutex
	open chan struct{} // closed while the gate is open
}

func newGatedSink(t testing.TB, brokers []string, cfg Config) *gatedSink {
	t.Helper()
	k, err := output.NewKafka(output.KafkaConfig{Conn: kafkaconn.Plaintext(brokers...), Topic: cfg.Output.Topic, DeadTopic: cfg.Output.DeadLetterTopic})
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedSink{Sender: k.(output.Sender), open: make(chan struct{})}
	close(g.open)
	return g
}

func (g *gatedSink) shut() {
	g.mu.Lock()
	g.open = make(chan struct{})
	g.mu.Unlock()
}

func (g *gatedSink) release() {
	g.mu.Lock()
	close(g.open)
	g.mu.Unlock()
}

func (g *gatedSink) wait(ctx context.Context) error {
	g.mu.Lock()
	open := g.open
	g.mu.Unlock()
	select {
	case <-open:
	case <-ctx.Done():
		return ctx.Err()
	}
	time.Sleep(g.delay)
	return nil
}

func (g *gatedSink) Write(ctx context.Context, events []output.Event) error {
	if err := g.wait(ctx); err != nil {
		return err
	}
	return g.Sender.Write(ctx, events)
}

func (g *gatedSink) WriteDead(ctx context.Context, letters []output.DeadLetter) error {
	if err := g.wait(ctx); err != nil {
		return err
	}
	return g.Sender.WriteDead(ctx, letters)
}

// Send holds the batch at the gate, as Write does, and then sends it.
func (g *gatedSink) Send(ctx context.Context, letters []output.DeadLetter, events []output.Event) output.Pending {
	if err := g.wait(ctx); err != nil {
		return failed{err, len(letters), len(events)}
	}
	return g.Sender.Send(ctx, letters, events)
}

// failed is a Pending of letters and events that failed at once.
type failed struct {
	err             error
	letters, events int
}

func (f failed) Done() <-chan struct{}       { return closed }
func (f failed) Err() error                  { return f.err }
func (f failed) Diverted() []output.TooLarge { return nil }
func (f failed) Unsent() (letters, events []int) {
	return count(f.letters), count(f.events)
}

// count is 0 to n-1.
func count(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// startWith is start with a sink of the test's.
func startWith(t testing.TB, cfg Config, sink output.Sink) *running {
	t.Helper()
	return startOpts(t, Options{Config: cfg, Log: zerolog.New(io.Discard), Sink: sink})
}

// counter reads a counter without labels from the service's registry.
func counter(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no counter %s", name)
	return 0
}

// TestPipelineOverlap holds one batch's output unacknowledged and requires
// that the graph stages go on with the next batches, as far as the
// delivery queue allows and no further, while the positions, progress and
// committed offsets stay at the last acknowledged batch; an HTTP operation
// then waits for the acknowledgements and sees them all.
func TestPipelineOverlap(t *testing.T) {
	addrs := cluster(t, 1, 1)
	recs, vals := transferStream(1280, 23)
	cfg := testConfig(t, addrs)
	cfg.Batch = BatchConfig{Size: 64, Linger: 5 * time.Millisecond}
	// Only the first batch's checkpoint is due: a due checkpoint waits for
	// all acknowledgements, which this test holds back.
	cfg.State.CheckpointEvery = time.Hour
	out := consume(t, addrs, "matches", true)
	sink := newGatedSink(t, addrs, cfg)
	r := startWith(t, cfg, sink)
	s := r.s

	half := len(vals) / 2
	produce(t, addrs, "edges", vals[:half])
	waitFor(t, "the first half", time.Minute, func() bool { return s.Progress().Position[0] == int64(half) })
	waitFor(t, "the first checkpoint's commit", time.Minute, func() bool { return committed(t, addrs, cfg.Input.Group, 1) > 0 })
	commit := committed(t, addrs, cfg.Input.Group, 1)
	before := s.Progress()
	matched := counter(t, s.Registry(), "gcsm_batches_total")

	sink.shut()
	produce(t, addrs, "edges", vals[half:])
	// maxInflight batches are handed on (one waits for its
	// acknowledgement, the others for delivery), and the graph stages have
	// matched one more, which they cannot hand on.
	want := matched + maxInflight + 1
	waitFor(t, "the graph stages to run ahead of delivery", time.Minute, func() bool {
		return counter(t, s.Registry(), "gcsm_batches_total") >= want
	})
	time.Sleep(200 * time.Millisecond)
	if got := counter(t, s.Registry(), "gcsm_batches_total"); got != want {
		t.Fatalf("%v batches matched with one unacknowledged, want %v: the queue to delivery is not bounded", got-matched, want-matched)
	}
	if p := s.Progress(); p.Position[0] != int64(half) || p.Batches != before.Batches || p.Events != before.Events {
		t.Fatalf("progress moved past unacknowledged output: %+v, was %+v", p, before)
	}
	if c := committed(t, addrs, cfg.Input.Group, 1); c != commit {
		t.Fatalf("committed offset %d with output unacknowledged, want %d", c, commit)
	}

	// An operation runs only once every matched batch is acknowledged.
	type seen struct{ batch, acked uint64 }
	opDone := make(chan seen, 1)
	go func() {
		v, err := s.do(context.Background(), func(context.Context) (any, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			return seen{s.batch, s.progress.Batches}, nil
		})
		if err != nil {
			t.Error(err)
		}
		opDone <- v.(seen)
	}()
	select {
	case v := <-opDone:
		t.Fatalf("an operation ran with output unacknowledged: %+v", v)
	case <-time.After(200 * time.Millisecond):
	}
	sink.release()
	if v := <-opDone; v.batch != v.acked {
		t.Fatalf("the operation saw batch %d matched but only %d acknowledged", v.batch, v.acked)
	}
	waitFor(t, "the stream", time.Minute, func() bool { return s.Progress().Position[0] == int64(len(vals)) })
	waitFor(t, "the events", time.Minute, func() bool { return int64(out.count()) == s.Progress().Events })
	events, _ := out.snapshot(t)
	checkOrder(t, cfg, events)
	checkNet(t, events, finalMatches(t, cfg, recs))
}

// TestPipelineOrder slows delivery down, so that every queue fills, and
// requires the events of a replay in batch order, each batch's in the
// service's order.
func TestPipelineOrder(t *testing.T) {
	addrs, cfg, recs, vals := fullBatches(t, 12, 5)
	out := consume(t, addrs, "matches", true)
	sink := newGatedSink(t, addrs, cfg)
	sink.delay = 20 * time.Millisecond
	r := startWith(t, cfg, sink)
	waitFor(t, "the stream", time.Minute, func() bool { return r.s.Progress().Position[0] == int64(len(vals)) })
	waitFor(t, "the events", time.Minute, func() bool { return int64(out.count()) == r.s.Progress().Events })
	events, _ := out.snapshot(t)
	checkOrder(t, cfg, events)
	got := make([]string, len(events))
	for i, ev := range events {
		got[i] = describe(ev)
	}
	slices.Sort(got)
	if want := replayEvents(t, cfg, recs); !slices.Equal(got, want) {
		t.Fatalf("events differ from the replay's: got %d, want %d\nfirst got  %v\nfirst want %v", len(got), len(want), head(got), head(want))
	}
}

// fullBatches starts a broker holding a transfer stream of n batches of
// the test configuration's size, which every batch fills, as in a replay.
func fullBatches(t *testing.T, n int, seed uint64) ([]string, Config, []ingest.Record, [][]byte) {
	t.Helper()
	addrs := cluster(t, 1, 1)
	cfg := testConfig(t, addrs)
	recs, vals := transferStream(n*cfg.Batch.Size, seed)
	produce(t, addrs, "edges", vals)
	cfg.Batch.Linger = 10 * time.Second
	return addrs, cfg, recs, vals
}

// checkOrder requires events in batch order and, within a batch, by query
// (in configuration order) and change, disappeared first.
func checkOrder(t *testing.T, cfg Config, events []outEvent) {
	t.Helper()
	if len(events) == 0 {
		t.Fatal("no events")
	}
	rank := func(ev outEvent) [3]int {
		q := slices.IndexFunc(cfg.Queries, func(c QueryConfig) bool { return c.Name == ev.Query })
		c := 0
		if ev.Change == output.Appeared {
			c = 1
		}
		return [3]int{int(ev.Batch), q, c}
	}
	for i := 1; i < len(events); i++ {
		if a, b := rank(events[i-1]), rank(events[i]); slices.Compare(a[:], b[:]) > 0 {
			t.Fatalf("event %d (batch, query, change %v) follows %v", i, b, a)
		}
	}
}

// failingSink fails the output of its fail-th Send without sending it, and
// reports the failure only once the next batch has been sent, so that
// later batches' events reach the topic ahead of the failed batch's retry.
type failingSink struct {
	output.Sender
	fail int

	mu    sync.Mutex
	sends int
	next  chan struct{} // closed by the Send after the failed one
}

func (f *failingSink) Send(ctx context.Context, letters []output.DeadLetter, events []output.Event) output.Pending {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sends++
	if f.next != nil {
		close(f.next)
		f.next = nil
	}
	if f.sends != f.fail {
		return f.Sender.Send(ctx, letters, events)
	}
	f.next = make(chan struct{})
	p := &latePending{done: make(chan struct{}), letters: len(letters), events: len(events)}
	go func(next chan struct{}) {
		select {
		case <-next:
		case <-time.After(time.Second): // no batch after it
		}
		close(p.done)
	}(f.next)
	return p
}

// latePending is a Send of letters and events that all fail once done is
// closed.
type latePending struct {
	done            chan struct{}
	letters, events int
}

func (p *latePending) Done() <-chan struct{}       { return p.done }
func (p *latePending) Err() error                  { return errors.New("the broker refused the batch") }
func (p *latePending) Diverted() []output.TooLarge { return nil }
func (p *latePending) Unsent() (letters, events []int) {
	return count(p.letters), count(p.events)
}

// TestOutputResent fails one batch's output after the next batch was sent,
// and requires that only the failed batch's events are sent again, after
// the later batches' were acknowledged: no event is in the topic twice,
// every key's last event is its newest, and a failed event whose key a
// later batch's event already carries is not sent again (superseded), so
// a consumer keeping matches by key ends with the final graph's. Before
// issue 42 the later batches were written again too.
func TestOutputResent(t *testing.T) {
	addrs, cfg, recs, vals := fullBatches(t, 12, 7)
	out := consume(t, addrs, "matches", true)
	sink := &failingSink{Sender: newGatedSink(t, addrs, cfg).Sender, fail: 4}
	r := startWith(t, cfg, sink)
	waitFor(t, "the stream", time.Minute, func() bool { return r.s.Progress().Position[0] == int64(len(vals)) })
	// Progress counts the events delivered, superseded ones left out.
	waitFor(t, "every event", time.Minute, func() bool { return int64(out.count()) == r.s.Progress().Events })
	events, _ := out.snapshot(t)
	want := replayEvents(t, cfg, recs)

	seen := map[string]bool{}
	newest, last := map[string]uint64{}, map[string]uint64{}
	for _, ev := range events {
		d := describe(ev)
		if seen[d] {
			t.Errorf("written twice: %s", d)
		}
		seen[d] = true
		newest[ev.Key] = max(newest[ev.Key], ev.Batch)
		last[ev.Key] = ev.Batch
	}
	for k, b := range last {
		if b != newest[k] {
			t.Fatalf("key %s: the last event is batch %d's, but batch %d's came before it", k, b, newest[k])
		}
	}
	// A replay event missing from the topic was superseded: its match has
	// an event of a later batch there.
	laterOf := map[string]uint64{} // query and match: the newest batch in the topic
	for _, ev := range events {
		f := strings.SplitN(describe(ev), " ", 4)
		laterOf[f[1]+" "+f[3]] = max(laterOf[f[1]+" "+f[3]], ev.Batch)
	}
	superseded := 0
	for _, d := range want {
		if seen[d] {
			continue
		}
		f := strings.SplitN(d, " ", 4)
		b, _ := strconv.ParseUint(f[0], 10, 64)
		if laterOf[f[1]+" "+f[3]] <= b {
			t.Errorf("missing, and not superseded: %s", d)
		}
		superseded++
	}
	if len(seen)+superseded != len(want) {
		t.Errorf("%d events in the topic and %d superseded, want %d in all", len(seen), superseded, len(want))
	}
	if got := counterVec(t, r.s.reg, "gcsm_undelivered_total", "superseded"); got != float64(superseded) {
		t.Errorf("undelivered_total{reason=superseded} %v, want %d", got, superseded)
	}
	checkNet(t, events, finalMatches(t, cfg, recs))
}

// counterVec reads one label value's series of a counter vector with one
// label from reg.
func counterVec(t testing.TB, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == label {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no series %s{%s}", name, label)
	return 0
}

// TestEventSlabsRecycled: a batch taken back hands its events' memory to
// the next batch built (one of at most maxInflight+1 kept), which grows it
// when it needs more.
func TestEventSlabsRecycled(t *testing.T) {
	s := &Service{slabs: make(chan *eventSlab, maxInflight+1)}
	a := s.slab(100, 300)
	b := &batchState{slab: a, events: a.events[:100]}
	s.recycleSlab(b)
	if b.slab != nil || b.events != nil {
		t.Fatal("the batch still holds its slab after handing it on")
	}
	if c := s.slab(90, 250); c != a || &c.events[0] != &a.events[0] {
		t.Fatal("the next batch did not get the recycled slab")
	}
	if d := s.slab(1000, 10); cap(d.events) < 1000 || cap(d.bindings) < 10 {
		t.Fatalf("a slab for 1,000 events has room for %d", cap(d.events))
	}
	for range maxInflight + 3 {
		s.recycleSlab(&batchState{slab: &eventSlab{}})
	}
	if n := len(s.slabs); n != maxInflight+1 {
		t.Fatalf("%d slabs kept, want %d", n, maxInflight+1)
	}
}
