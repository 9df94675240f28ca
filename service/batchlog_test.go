package service

import (
	"context"
	"io"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/output"
)

// firstThenGate sends its first batch at once and holds the rest at the
// gate: a run killed after its first batch's events were written and
// before its second's.
type firstThenGate struct {
	*gatedSink
	sent atomic.Int32
}

func (f *firstThenGate) Send(ctx context.Context, letters []output.DeadLetter, events []output.Event) output.Pending {
	if f.sent.Add(1) == 1 {
		return f.Sender.Send(ctx, letters, events)
	}
	return f.gatedSink.Send(ctx, letters, events)
}

// TestRestartReformsBatches: a ring appears in a run's first batch and
// disappears in its second, and the run dies with only the first batch's
// events written. A restart whose batches are larger would take both in
// one batch, in which the ring nets to nothing, and leave "appeared" as
// its last event; re-forming the logged batches writes "disappeared". The
// dying run delivers at least once (its sink has no transactions); a
// restart exactly once must write the batches' output again all the same,
// since a record logged without a transaction does not say that its
// batch's output is in the topic (here the first batch's is: it comes
// twice), and logs them again in their transactions, so that a later
// restart does not write them a third time.
func TestRestartReformsBatches(t *testing.T) {
	for _, tt := range []struct {
		delivery string
		logged   [2]int // the batch log's records: without a transaction, in one
	}{{AtLeastOnce, [2]int{2, 0}}, {ExactlyOnce, [2]int{2, 2}}} {
		t.Run(tt.delivery, func(t *testing.T) { restartReformsBatches(t, tt.delivery, tt.logged) })
	}
}

func restartReformsBatches(t *testing.T, delivery string, want [2]int) {
	addrs := cluster(t, 1, 1)
	cfg := testConfig(t, addrs)
	cfg.Batch = BatchConfig{Size: 4, Linger: time.Hour}
	cfg.State.CheckpointEvery = time.Hour
	cfg.Queries = cfg.Queries[:1] // ring3
	ev := func(op graph.Op, src, dst string) []byte {
		return ingest.AppendEvent(nil, ingest.Record{Op: op, Src: src, Dst: dst})
	}
	vals := [][]byte{
		ev(graph.Insert, "x", "y"), ev(graph.Insert, "y", "z"), ev(graph.Insert, "z", "x"), ev(graph.Insert, "p", "q"),
		ev(graph.Delete, "z", "x"), ev(graph.Insert, "q", "r"), ev(graph.Insert, "r", "s"), ev(graph.Insert, "s", "t"),
	}
	out := consume(t, addrs, "matches", true)
	produce(t, addrs, "edges", vals)

	g := newGatedSink(t, addrs, cfg)
	g.shut()
	startWith(t, cfg, &firstThenGate{gatedSink: g})
	t.Cleanup(g.release) // before the run's shutdown: it delivers what it holds
	waitFor(t, "the first batch's events", 30*time.Second, func() bool { return out.count() > 0 })

	// The restart has its own (empty) state and group, so it starts from
	// the input's beginning, as from a checkpoint taken before the batches.
	cfg2 := cfg
	cfg2.State.Dir = t.TempDir()
	cfg2.Input.Group = "restart"
	cfg2.Batch = BatchConfig{Size: 8, Linger: 20 * time.Millisecond}
	cfg2.Output.Delivery = delivery
	r := start(t, cfg2)
	waitFor(t, "the restart to apply the stream", 30*time.Second, func() bool {
		return r.s.Progress().Position[0] == int64(len(vals))
	})
	end := topicEnd(t, addrs, "matches")
	waitFor(t, "the output", 30*time.Second, func() bool { return out.reached(end) })
	events, _ := out.snapshot(t)
	checkNet(t, events, map[string]bool{})
	if n := r.s.Progress().Batches; n != 2 {
		t.Errorf("the restart applied the stream in %d batches, want the logged 2", n)
	}
	log := consume(t, addrs, "matches.batches", false)
	end = topicEnd(t, addrs, "matches.batches")
	waitFor(t, "the batch log", 30*time.Second, func() bool { return log.reached(end) })
	_, recs := log.snapshot(t)
	var got [2]int
	for _, r := range recs {
		_, _, txn, err := ingest.ParseLoggedCut(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if txn {
			got[1]++
		} else {
			got[0]++
		}
	}
	if got != want {
		t.Errorf("the batch log holds %d records without a transaction and %d in one, want %d and %d", got[0], got[1], want[0], want[1])
	}
}

// TestReadBatchLog: the chain starts at the service's position, follows
// each batch's end to the next one's start, skips records that start
// elsewhere or cannot be read, and takes a later record over an earlier
// one from the same start, with what followed it.
func TestReadBatchLog(t *testing.T) {
	addrs := cluster(t, 1, 2)
	cfg := testConfig(t, addrs)
	s, err := New(Options{Config: cfg, Log: zerolog.New(io.Discard)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	ctx := context.Background()
	if err := s.openBatchLog(ctx); err != nil {
		t.Fatal(err)
	}
	p := func(a, b int64) map[int]int64 { return map[int]int64{0: a, 1: b} }
	write := func(from, ends map[int]int64) {
		t.Helper()
		if err := s.batchLog.Write(ctx, from, ends); err != nil {
			t.Fatal(err)
		}
	}
	write(p(0, 0), p(4, 0))  // 0: superseded by 4
	write(p(4, 0), p(4, 3))  // 1: superseded with 0
	write(p(9, 9), p(10, 9)) // 2: starts elsewhere
	write(nil, p(5, 5))      // 3: a member's cut, no start
	write(p(0, 0), p(2, 1))  // 4
	write(p(2, 1), p(6, 2))  // 5
	write(p(4, 0), p(8, 8))  // 6: starts where 0 ended, which no longer leads here
	write(p(6, 2), p(6, 5))  // 7

	s.position = p(0, 0)
	chain, err := s.readBatchLog(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []loggedCut{{p(0, 0), p(2, 1), 4, false}, {p(2, 1), p(6, 2), 5, false}, {p(6, 2), p(6, 5), 7, false}}
	if len(chain) != len(want) {
		t.Fatalf("chain %v, want %v", chain, want)
	}
	for i, c := range chain {
		if !maps.Equal(c.from, want[i].from) || !maps.Equal(c.ends, want[i].ends) || c.offset != want[i].offset {
			t.Fatalf("chain[%d] = %v, want %v", i, c, want[i])
		}
	}

	// From a checkpoint past the first two, the chain starts at the third.
	s.position, s.logNext = p(6, 2), 6
	if chain, err = s.readBatchLog(ctx); err != nil || len(chain) != 1 || chain[0].offset != 7 {
		t.Fatalf("from offset 6: %v, %v", chain, err)
	}
	// Past the log's end there is nothing to follow.
	s.logNext = 8
	if chain, err = s.readBatchLog(ctx); err != nil || len(chain) != 0 {
		t.Fatalf("past the end: %v, %v", chain, err)
	}
}

// TestBatchLogUnreadable: while the brokers refuse the batch log's offsets,
// a generation waits and reads it again instead of ending the service or
// cutting anew; once they answer, it runs.
func TestBatchLogUnreadable(t *testing.T) {
	c, err := kfake.NewCluster(kfake.AllowAutoTopicCreation(), kfake.SeedTopics(1, "edges", "matches", "edges.dlq"),
		kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var refused atomic.Int32
	c.ControlKey(int16(kmsg.ListOffsets), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		lo := req.(*kmsg.ListOffsetsRequest)
		if len(lo.Topics) != 1 || lo.Topics[0].Topic != "matches.batches" || refused.Load() >= 2 {
			return nil, nil, false
		}
		refused.Add(1)
		resp := lo.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range lo.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.UnknownServerError.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	addrs := c.ListenAddrs()
	_, vals := transferStream(300, 3)
	produce(t, addrs, "edges", vals)
	var logs syncBuilder
	r := startOpts(t, Options{Config: testConfig(t, addrs), Log: zerolog.New(&logs).Level(zerolog.WarnLevel)})
	waitFor(t, "the stream to be applied", 30*time.Second, func() bool { return r.s.Progress().Position[0] == int64(len(vals)) })
	if n := refused.Load(); n != 2 || !strings.Contains(logs.String(), "cannot read the batch log; retrying") {
		t.Fatalf("the batch log's offsets were refused %d times, want 2, with a retry logged:\n%s", n, logs.String())
	}
}
