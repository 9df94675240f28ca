package ingest

import (
	"context"
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/internal/testtls"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testCluster starts a kfake cluster with a topic of the given partitions,
// each holding n records valued "p<partition>-<i>" in batches of ten; tc, if set, is the
// cluster's TLS config and the client's.
func testCluster(t *testing.T, partitions, n int, tc ...*tls.Config) (*kfake.Cluster, *kgo.Client) {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.SeedTopics(int32(partitions), "edges")}
	copts := []kgo.Opt{kgo.RecordPartitioner(kgo.ManualPartitioner())}
	if len(tc) == 2 {
		opts = append(opts, kfake.TLS(tc[0]))
		copts = append(copts, kgo.DialTLSConfig(tc[1]))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(append(copts, kgo.SeedBrokers(c.ListenAddrs()...))...)
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
	// Batches of ten, so that a 1 KiB fetch holds a few of them: a broker
	// returns a record batch whole.
	for len(recs) > 0 {
		k := min(10, len(recs))
		if err := cl.ProduceSync(context.Background(), recs[:k]...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		recs = recs[k:]
	}
	return c, cl
}

// activeGeneration joins group alone and returns its generation, which
// holds every partition.
func activeGeneration(t *testing.T, c *kfake.Cluster, group string, skipped func(int, int64, int64), tc ...*tls.Config) *Generation {
	t.Helper()
	cfg := ConsumerConfig{Conn: kafkaconn.Plaintext(c.ListenAddrs()...), Topic: "edges", Group: group,
		SessionTimeout: 6 * time.Second, MaxBytes: 1 << 10, Skipped: skipped}
	if len(tc) > 0 {
		cfg.Conn.TLS = tc[0]
	}
	cons, err := NewConsumer(cfg)
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
	chunks := make(chan []Message, 7)
	ctx, cancel := context.WithCancel(context.Background())
	rd := gen.Read(ctx, from, chunks)
	out := flatten(chunks)
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
	chunks := make(chan []Message)
	ctx, cancel := context.WithCancel(context.Background())
	rd := gen.Read(ctx, nil, chunks)
	out := flatten(chunks)
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

// deleteRecords drops partition 0's records below offset.
func deleteRecords(t *testing.T, cl *kgo.Client, offset int64) {
	t.Helper()
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = "edges"
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Offset = offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("DeleteRecords: error code %d", code)
	}
}

type gap struct {
	p        int
	from, to int64
}

// TestGenerationReadGap: a start offset below the records the broker still
// holds resumes at the first one held, and Skipped names the gap.
func TestGenerationReadGap(t *testing.T) {
	c, cl := testCluster(t, 1, 50)
	deleteRecords(t, cl, 20)
	gaps := make(chan gap, 4)
	gen := activeGeneration(t, c, "gap", func(p int, from, to int64) { gaps <- gap{p, from, to} })
	chunks := make(chan []Message, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rd := gen.Read(ctx, map[int]int64{0: 5}, chunks)
	out := flatten(chunks)
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
	stopReading(t, cancel, rd)
}

// TestGenerationReadGapWhileReading: records dropped after reading began,
// ahead of what was fetched, are skipped and named as well.
func TestGenerationReadGapWhileReading(t *testing.T) {
	const n, cut = 3000, 2500
	c, cl := testCluster(t, 1, n)
	gaps := make(chan gap, 4)
	gen := activeGeneration(t, c, "gap-reading", func(p int, from, to int64) { gaps <- gap{p, from, to} })
	chunks := make(chan []Message)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rd := gen.Read(ctx, nil, chunks)
	out := flatten(chunks)
	// 1 KiB fetches hold a few dozen records: the client holds back its
	// next fetch, well below the cut, while this reader waits.
	if m := <-out; m.Offset != 0 {
		t.Fatalf("first offset %d, want 0", m.Offset)
	}
	time.Sleep(100 * time.Millisecond)
	deleteRecords(t, cl, cut)
	next, jumped := int64(1), false
	for next < n {
		var m Message
		select {
		case m = <-out:
		case <-time.After(30 * time.Second):
			t.Fatalf("nothing read after offset %d", next-1)
		}
		if m.Offset != next {
			jumped = true
			if m.Offset != cut {
				t.Fatalf("offset %d after %d, want %d or the cut, %d", m.Offset, next-1, next, cut)
			}
			select {
			case g := <-gaps:
				if g != (gap{0, next, cut}) {
					t.Errorf("Skipped%v, want {0 %d %d}", g, next, cut)
				}
			default:
				t.Errorf("Skipped was not told of the gap [%d, %d)", next, cut)
			}
		}
		next = m.Offset + 1
	}
	if !jumped {
		t.Fatal("every record was read: the deletion came too late to test the gap")
	}
	stopReading(t, cancel, rd)
}

// TestGenerationReadTLS: ConsumerConfig.TLS reaches a TLS-only cluster,
// for the group and the reading client both.
func TestGenerationReadTLS(t *testing.T) {
	server, client := testtls.Configs(t)
	c, _ := testCluster(t, 1, 10, server, client)
	gen := activeGeneration(t, c, "tls", nil, client)
	chunks := make(chan []Message, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rd := gen.Read(ctx, nil, chunks)
	out := flatten(chunks)
	for i := range int64(10) {
		select {
		case m := <-out:
			if m.Offset != i {
				t.Fatalf("offset %d, want %d", m.Offset, i)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("read %d records over TLS, want 10", i)
		}
	}
	stopReading(t, cancel, rd)
}

// TestGenerationReadBacklog reads a 6 MB backlog of 16 KiB records with 16
// MiB fetches, whole and in order.
func TestGenerationReadBacklog(t *testing.T) {
	const n, size = 400, 16 << 10
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "edges"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "edges", Value: make([]byte, size)}
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cons, err := NewConsumer(ConsumerConfig{Conn: kafkaconn.Plaintext(c.ListenAddrs()...), Topic: "edges", Group: "backlog",
		SessionTimeout: 6 * time.Second, MaxBytes: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gen, err := cons.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	chunks := make(chan []Message, 64)
	rd := gen.Read(ctx, nil, chunks)
	out := flatten(chunks)
	for i := range int64(n) {
		select {
		case m := <-out:
			if m.Offset != i || len(m.Value) != size {
				t.Fatalf("offset %d with %d bytes, want %d with %d", m.Offset, len(m.Value), i, size)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("read %d of %d records, then nothing for 30s", i, n)
		}
	}
	stopReading(t, cancel, rd)
}

// flatten forwards the chunks Read sends one message at a time, on an
// unbuffered channel, and closes it after the last.
func flatten(chunks <-chan []Message) <-chan Message {
	out := make(chan Message)
	go func() {
		defer close(out)
		for c := range chunks {
			for _, m := range c {
				out <- m
			}
		}
	}()
	return out
}

// TestGenerationReadChunks: a fetch of many records comes in chunks of
// one partition, none over MaxChunk, in offset order with none lost.
func TestGenerationReadChunks(t *testing.T) {
	const n = 1000
	c, _ := testCluster(t, 2, n)
	cons, err := NewConsumer(ConsumerConfig{Conn: kafkaconn.Plaintext(c.ListenAddrs()...), Topic: "edges", Group: "chunks", SessionTimeout: 6 * time.Second})
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
	chunks := make(chan []Message, 4)
	rd := gen.Read(ctx, nil, chunks)
	next, largest := map[int]int64{}, 0
	for next[0]+next[1] < 2*n {
		var chunk []Message
		select {
		case chunk = <-chunks:
		case <-ctx.Done():
			t.Fatalf("read up to offsets %v of %d", next, n)
		}
		if len(chunk) == 0 || len(chunk) > MaxChunk {
			t.Fatalf("a chunk of %d messages, want 1 to %d", len(chunk), MaxChunk)
		}
		largest = max(largest, len(chunk))
		for _, m := range chunk {
			if m.Partition != chunk[0].Partition || m.Offset != next[m.Partition] {
				t.Fatalf("partition %d offset %d in a chunk of partition %d, want offset %d",
					m.Partition, m.Offset, chunk[0].Partition, next[m.Partition])
			}
			next[m.Partition]++
		}
	}
	if largest < 2 {
		t.Errorf("every chunk held one message")
	}
	stopReading(t, cancel, rd)
}

// TestRecordPool: a slice lent for n records holds n, and one given back
// is lent again for any batch of its size class, emptied.
func TestRecordPool(t *testing.T) {
	var p recordPool
	for _, n := range []int{0, 1, 2, 3, 100, 4096, 4097} {
		if s := p.GetRecords(n); len(s) != 0 || cap(s) < n {
			t.Fatalf("GetRecords(%d): len %d cap %d", n, len(s), cap(s))
		}
	}
	s := p.GetRecords(100)[:1] // class 7: 65-128 records
	s[0] = kgo.Record{Offset: 7}
	p.PutRecords(s)
	if r := p.GetRecords(65); cap(r) != cap(s) || len(r) != 0 || &r[:1][0] != &s[0] {
		t.Fatalf("GetRecords(65) after a put of cap %d: len %d cap %d, want the slice put back", cap(s), len(r), cap(r))
	}
	if r := p.GetRecords(65); cap(r) == cap(s) && &r[:1][0] == &s[0] {
		t.Fatal("a slice was lent twice")
	}
}

// stopReading cancels a generation's read and checks that it ends cleanly.
func stopReading(t *testing.T, cancel context.CancelFunc, rd *Reading) {
	t.Helper()
	cancel()
	if err := rd.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	rd.Release()
}
