package ingest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testCluster starts a kfake cluster with a topic of the given partitions,
// each holding n records valued "p<partition>-<i>".
func testCluster(t *testing.T, partitions, n int) (*kfake.Cluster, *kgo.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(partitions), "edges"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	var recs []*kgo.Record
	for p := range partitions {
		for i := range n {
			recs = append(recs, &kgo.Record{Topic: "edges", Partition: int32(p), Value: fmt.Appendf(nil, "p%d-%d", p, i)})
		}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return c, cl
}

// activeGeneration joins group alone and returns its generation, which
// holds every partition.
func activeGeneration(t *testing.T, c *kfake.Cluster, group string, skipped func(int, int64, int64)) *Generation {
	t.Helper()
	cons, err := NewConsumer(ConsumerConfig{Brokers: c.ListenAddrs(), Topic: "edges", Group: group,
		SessionTimeout: 6 * time.Second, MaxBytes: 1 << 10, Skipped: skipped})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cons.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gen, err := cons.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return gen
}

// TestGenerationRead reads three partitions from given offsets, one of them
// absent (its first record on), with 1 KiB fetches so that each partition
// takes several, and checks every record once, in offset order, with its
// value and the partition's high watermark.
func TestGenerationRead(t *testing.T) {
	const n = 300
	c, _ := testCluster(t, 3, n)
	gen := activeGeneration(t, c, "read", nil)
	if len(gen.Partitions) != 3 {
		t.Fatalf("assigned %v, want 3 partitions", gen.Partitions)
	}
	from := map[int]int64{0: 0, 1: 123}
	out := make(chan Message, 7)
	ctx, cancel := context.WithCancel(context.Background())
	rd := gen.Read(ctx, from, out)
	next := map[int]int64{0: 0, 1: 123, 2: 0}
	deadline := time.After(30 * time.Second)
	for got := 0; got < 3*n-123; got++ {
		var m Message
		select {
		case m = <-out:
		case <-deadline:
			t.Fatalf("read %d records, want %d; next offsets %v", got, 3*n-123, next)
		}
		if m.Offset != next[m.Partition] {
			t.Fatalf("partition %d: offset %d, want %d", m.Partition, m.Offset, next[m.Partition])
		}
		next[m.Partition]++
		if want := fmt.Sprintf("p%d-%d", m.Partition, m.Offset); string(m.Value) != want {
			t.Fatalf("partition %d offset %d: value %q, want %q", m.Partition, m.Offset, m.Value, want)
		}
		if m.HighWaterMark != n {
			t.Fatalf("partition %d offset %d: high watermark %d, want %d", m.Partition, m.Offset, m.HighWaterMark, n)
		}
	}
	cancel()
	if err := rd.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	for m := range out {
		t.Fatalf("a record past the end: %+v", m)
	}
	rd.Release()
}

// TestGenerationReadStops: a reader that takes nothing holds the read
// back (the client polls no more than fits), and cancelling ctx stops it
// with out closed and no error, although records are still waiting.
func TestGenerationReadStops(t *testing.T) {
	c, _ := testCluster(t, 1, 1000)
	gen := activeGeneration(t, c, "stops", nil)
	out := make(chan Message)
	ctx, cancel := context.WithCancel(context.Background())
	rd := gen.Read(ctx, nil, out)
	if m := <-out; m.Offset != 0 {
		t.Fatalf("first offset %d, want 0", m.Offset)
	}
	time.Sleep(100 * time.Millisecond)
	cancel()
	done := make(chan error, 1)
	go func() { done <- rd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the read did not stop on cancel")
	}
	// out is closed: a receive gives nothing, perhaps after one record the
	// read had already handed over.
	for range out {
	}
	rd.Release()
}

// TestGenerationReadGap: a start offset below the records the broker still
// holds resumes at the first one held, and Skipped names the gap.
func TestGenerationReadGap(t *testing.T) {
	c, cl := testCluster(t, 1, 50)
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = "edges"
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Offset = 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("DeleteRecords: error code %d", code)
	}
	type gap struct {
		p        int
		from, to int64
	}
	gaps := make(chan gap, 4)
	gen := activeGeneration(t, c, "gap", func(p int, from, to int64) { gaps <- gap{p, from, to} })
	out := make(chan Message, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rd := gen.Read(ctx, map[int]int64{0: 5}, out)
	select {
	case m := <-out:
		if m.Offset != 20 {
			t.Fatalf("first offset %d, want 20", m.Offset)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no record read")
	}
	select {
	case g := <-gaps:
		if g != (gap{0, 5, 20}) {
			t.Errorf("Skipped%v, want {0 5 20}", g)
		}
	default:
		t.Error("Skipped was not told of the gap")
	}
	cancel()
	if err := rd.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	rd.Release()
}
