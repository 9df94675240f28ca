package output

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/internal/testtls"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const testPartitions = 6

// newCluster starts an in-process three-broker Kafka that creates topics of testPartitions partitions on
// first use, as a broker with auto.create.topics.enable does.
func newCluster(tb testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	tb.Helper()
	opts = append([]kfake.Opt{kfake.NumBrokers(3), kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(testPartitions)}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}

func newKafka(tb testing.TB, cfg KafkaConfig) Sink {
	tb.Helper()
	k, err := NewKafka(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { k.Close() })
	return k
}

// consume reads at least n records from topic with franz-go, a client independent of the one under test.
func consume(t *testing.T, c *kfake.Cluster, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records from %s: %v", len(recs), n, topic, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
	}
	return recs
}

// matchEvents returns the events of batch for matches 0..n-1 of a triangle query: each match appears in
// odd batches and disappears in even ones, so that the order of one key's events is visible in its values.
func matchEvents(batch uint64, n int) []Event {
	change := Appeared
	if batch%2 == 0 {
		change = Disappeared
	}
	events := make([]Event, n)
	for i := range events {
		a, b, c := fmt.Sprintf("acct:%d", i), fmt.Sprintf("acct:%d", i+1), fmt.Sprintf("acct:%d", i+2)
		m := []Binding{{"a", a}, {"b", b}, {"c", c}}
		events[i] = Event{
			Query: "tri", Change: change, Match: m,
			Edges:     [][3]string{{a, b, "T"}, {b, c, "T"}, {c, a, "T"}},
			Batch:     batch,
			EventTime: "2026-11-21T10:00:00.000Z",
			Source: &Source{Topic: "edges", Partition: int(batch % 2),
				FromOffset: int64(batch * 100), ToOffset: int64(batch*100 + 99)},
			Key: Key("tri", "", m),
		}
	}
	return events
}

func TestKafka(t *testing.T) {
	c := newCluster(t)
	k := newKafka(t, KafkaConfig{Conn: kafkaconn.Plaintext(c.ListenAddrs()...), Topic: "matches", DeadTopic: "dead"})
	ctx := context.Background()

	const matches, batches = 50, 4
	var written []Event
	for batch := uint64(1); batch <= batches; batch++ {
		events := matchEvents(batch, matches)
		if err := k.Write(ctx, events); err != nil {
			t.Fatal(err)
		}
		written = append(written, events...)
	}
	if err := k.Write(ctx, nil); err != nil {
		t.Fatal(err)
	}
	letters := []DeadLetter{
		NewDeadLetter("missing field dst", "edges", 0, 91830, []byte(`{"op":"+","src":"acct:17"}`)),
		NewDeadLetter("not UTF-8", "edges", 1, 12, []byte{0xff, 0x00}),
	}
	if err := k.WriteDead(ctx, letters); err != nil {
		t.Fatal(err)
	}

	recs := consume(t, c, "matches", len(written))
	if len(recs) != len(written) {
		t.Fatalf("read %d events, wrote %d", len(recs), len(written))
	}
	byKey := map[string][]Event{}
	for _, e := range written {
		byKey[e.Key] = append(byKey[e.Key], e)
	}
	partitionOf := map[string]int32{}
	javaPartitioner := kgo.StickyKeyPartitioner(nil).ForTopic("matches")
	used := map[int32]bool{}
	for _, r := range recs {
		key := string(r.Key)
		got, err := decodeEvent(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if got.Key != key {
			t.Fatalf("record key %q carries event key %q", key, got.Key)
		}
		if p, ok := partitionOf[key]; ok && p != r.Partition {
			t.Fatalf("key %s on partitions %d and %d", key, p, r.Partition)
		}
		partitionOf[key] = r.Partition
		used[r.Partition] = true
		if want := javaPartitioner.Partition(r, testPartitions); int32(want) != r.Partition {
			t.Errorf("key %s on partition %d, the Java partitioner picks %d", key, r.Partition, want)
		}
		// Records of one partition arrive in offset order, so a key's events must come in batch order.
		queue := byKey[key]
		if len(queue) == 0 {
			t.Fatalf("unexpected record %s: %s", key, r.Value)
		}
		if want := wantWire(&queue[0]); !reflect.DeepEqual(got, want) {
			t.Fatalf("record %s:\ngot  %+v\nwant %+v", key, got, want)
		}
		byKey[key] = queue[1:]
	}
	if len(used) < 2 {
		t.Errorf("%d keys all went to partitions %v", len(partitionOf), used)
	}

	deadRecs := consume(t, c, "dead", len(letters))
	if len(deadRecs) != len(letters) {
		t.Fatalf("read %d dead letters, wrote %d", len(deadRecs), len(letters))
	}
	for i, r := range deadRecs {
		// Both letters share no key, so they may come back in either partition order: find by key.
		var want *DeadLetter
		for j := range letters {
			if string(r.Key) == fmt.Sprintf("%s/%d/%d", letters[j].Topic, letters[j].Partition, letters[j].Offset) {
				want = &letters[j]
			}
		}
		if want == nil {
			t.Fatalf("dead letter %d has unexpected key %q", i, r.Key)
		}
		var got DeadLetter
		if err := json.Unmarshal(r.Value, &got); err != nil || got != *want {
			t.Fatalf("dead letter %s = %+v, %v; want %+v", r.Value, got, err, *want)
		}
	}

	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if err := k.Write(ctx, written[:1]); err == nil {
		t.Fatal("Write after Close succeeded")
	}
}

func TestKafkaNoDeadTopic(t *testing.T) {
	c := newCluster(t)
	k := newKafka(t, KafkaConfig{Conn: kafkaconn.Plaintext(c.ListenAddrs()...), Topic: "matches"})
	letters := []DeadLetter{NewDeadLetter("bad", "edges", 0, 1, []byte("x"))}
	if err := k.WriteDead(context.Background(), letters); err != nil {
		t.Fatal(err)
	}
}

func TestKafkaConfig(t *testing.T) {
	ok := KafkaConfig{Conn: kafkaconn.Plaintext("localhost:9092"), Topic: "matches"}
	for _, tc := range []struct {
		name   string
		modify func(*KafkaConfig)
		errSub string
	}{
		{"no brokers", func(c *KafkaConfig) { c.Conn.Brokers = nil }, "brokers"},
		{"empty broker", func(c *KafkaConfig) { c.Conn.Brokers = []string{"a:1", ""} }, "broker address"},
		{"no topic", func(c *KafkaConfig) { c.Topic = "" }, "topic"},
		{"dead is output", func(c *KafkaConfig) { c.DeadTopic = c.Topic }, "dead letter topic"},
		{"negative", func(c *KafkaConfig) { c.WriteTimeout = -1 }, "negative"},
		{"batch bytes", func(c *KafkaConfig) { c.BatchBytes = 100 }, "batch bytes 100"},
		{"compression", func(c *KafkaConfig) { c.Compression = "brotli" }, "compression"},
	} {
		cfg := ok
		tc.modify(&cfg)
		_, err := NewKafka(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.errSub) {
			t.Errorf("%s: NewKafka error %v, want one about %q", tc.name, err, tc.errSub)
		}
	}
	for _, codec := range []string{"", "none", "gzip", "snappy", "lz4", "zstd"} {
		cfg := ok
		cfg.Compression = codec
		k, err := NewKafka(cfg)
		if err != nil {
			t.Fatalf("compression %q: %v", codec, err)
		}
		k.Close()
	}
}

// TestKafkaCompressed checks that each codec reaches the broker as the batch's compression and that the
// events come back intact.
func TestKafkaCompressed(t *testing.T) {
	codes := map[string]uint8{"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
	for codec, code := range codes {
		t.Run(codec, func(t *testing.T) {
			c := newCluster(t)
			k := newKafka(t, KafkaConfig{Conn: kafkaconn.Plaintext(c.ListenAddrs()...), Topic: "matches",
				Compression: codec})
			events := matchEvents(1, 50)
			if err := k.Write(context.Background(), events); err != nil {
				t.Fatal(err)
			}
			byKey := map[string]*Event{}
			for i := range events {
				byKey[events[i].Key] = &events[i]
			}
			for _, r := range consume(t, c, "matches", len(events)) {
				if got := r.Attrs.CompressionType(); got != code {
					t.Fatalf("record batch compression %d, want %d (%s)", got, code, codec)
				}
				got, err := decodeEvent(r.Value)
				if err != nil {
					t.Fatal(err)
				}
				if want := wantWire(byKey[string(r.Key)]); !reflect.DeepEqual(got, want) {
					t.Fatalf("record %s:\ngot  %+v\nwant %+v", r.Key, got, want)
				}
			}
		})
	}
}

// TestKafkaRejected checks that a produce error from the brokers reaches the caller, so that it does not
// commit input offsets for events that were not written.
func TestKafkaRejected(t *testing.T) {
	c := newCluster(t)
	c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	k := newKafka(t, KafkaConfig{Conn: kafkaconn.Plaintext(c.ListenAddrs()...), Topic: "matches", DeadTopic: "dead"})
	err := k.Write(context.Background(), matchEvents(1, 10))
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("Write error %v, want topic authorization failed", err)
	}
	t.Log(err)
	err = k.WriteDead(context.Background(), []DeadLetter{NewDeadLetter("bad", "edges", 0, 1, []byte("x"))})
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("WriteDead error %v, want topic authorization failed", err)
	}
}

// TestKafkaTooLarge: an event over BatchBytes, which kgo would refuse, is dropped before it is produced
// when there is no dead letter topic, and the others are written.
func TestKafkaTooLarge(t *testing.T) {
	c := newCluster(t)
	k := newKafka(t, KafkaConfig{Conn: kafkaconn.Plaintext(c.ListenAddrs()...), Topic: "matches", BatchBytes: 1024})
	events := matchEvents(1, 3)
	events[1].Match[0].ID = strings.Repeat("x", 600)
	p := k.(Sender).Send(context.Background(), nil, events)
	<-p.Done()
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	if d := p.Diverted(); len(d) != 1 || d[0].Index != 1 || d[0].Limit != 1024 {
		t.Fatalf("diverted %+v, want event 1 over 1024 bytes", d)
	}
	if recs := consume(t, c, "matches", 2); len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
}

// TestKafkaCanceled checks that a Write abandoned by its context leaves its buffers to the client, which
// may still be sending them, and that the next Write works and is not corrupted by the first.
func TestKafkaCanceled(t *testing.T) {
	c := newCluster(t)
	k := newKafka(t, KafkaConfig{Conn: kafkaconn.Plaintext(c.ListenAddrs()...), Topic: "matches"})
	ctx := context.Background()
	first := matchEvents(1, 10)
	if err := k.Write(ctx, first); err != nil { // creates the topic
		t.Fatal(err)
	}

	release := make(chan struct{})
	slept := false
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		if !slept {
			slept = true
			c.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	stuck := matchEvents(2, 10)
	if err := k.Write(short, stuck); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Write error %v, want deadline exceeded", err)
	}
	f := k.(*Franz)
	f.mu.Lock()
	kept := len(f.free) > 0
	f.mu.Unlock()
	if kept {
		t.Fatal("canceled Write kept its buffer for reuse while the client may still read it")
	}
	close(release)
	third := matchEvents(3, 10)
	if err := k.Write(ctx, third); err != nil {
		t.Fatal(err)
	}
	// At least once: the abandoned batch may still have been written; every record must be intact.
	recs := consume(t, c, "matches", len(first)+len(third))
	for _, r := range recs {
		got, err := decodeEvent(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if got.Key != string(r.Key) {
			t.Fatalf("record key %q carries event key %q", r.Key, got.Key)
		}
	}
}

// BenchmarkKafkaWrite measures synchronous writes of gcsm batches (events= per Write) through an
// in-process three-broker cluster with acks=all, for each codec at the default settings. events/s is the
// figure to compare;
// wire-B/event is the record batch bytes the brokers received (and store) per event. The cluster shares
// the benchmark's cores and allocations, and a real cluster's network round trip adds to ns/op; with
// broker=blackhole the cluster acknowledges without storing, which leaves mostly the client's own cost.
// cpu-ns/event counts every core's work, client and cluster, which on a loaded machine says more than
// ns/event.
func BenchmarkKafkaWrite(b *testing.B) {
	type benchCase struct {
		blackhole   bool
		events      int
		compression string
	}
	var cases []benchCase
	for _, n := range []int{1, 1000, 10000, 100000} {
		for _, codec := range []string{"none", "lz4", "zstd"} {
			for _, blackhole := range []bool{false, true} {
				cases = append(cases, benchCase{blackhole: blackhole, events: n, compression: codec})
			}
		}
	}
	for _, bc := range cases {
		broker := "kfake"
		var opts []kfake.Opt
		if bc.blackhole {
			broker, opts = "blackhole", []kfake.Opt{kfake.BlackholeProduce()}
		}
		name := fmt.Sprintf("broker=%s/events=%d/compression=%s", broker, bc.events, bc.compression)
		b.Run(name, func(b *testing.B) {
			c := newCluster(b, opts...)
			k := newKafka(b, KafkaConfig{Conn: kafkaconn.Plaintext(c.ListenAddrs()...), Topic: "matches",
				Compression: bc.compression})
			events := matchEvents(1, bc.events)
			ctx := context.Background()
			if err := k.Write(ctx, events); err != nil { // creates the topic and connects
				b.Fatal(err)
			}
			var wire atomic.Int64
			c.ControlKey(int16(kmsg.Produce), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				for _, t := range kreq.(*kmsg.ProduceRequest).Topics {
					for _, p := range t.Partitions {
						wire.Add(int64(len(p.Records)))
					}
				}
				return nil, nil, false
			})
			b.ReportAllocs()
			b.ResetTimer()
			cpu, start := cpuTime(b), time.Now()
			for b.Loop() {
				if err := k.Write(ctx, events); err != nil {
					b.Fatal(err)
				}
			}
			elapsed, cpu := time.Since(start), cpuTime(b)-cpu
			b.ReportMetric(float64(b.N*bc.events)/elapsed.Seconds(), "events/s")
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*bc.events), "ns/event")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*bc.events), "cpu-ns/event")
			b.ReportMetric(float64(wire.Load())/float64(b.N*bc.events), "wire-B/event")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestKafkaKeyOrder checks that events spread over the output topic's partitions by key, that each key's
// events stay on one partition, and that they come back in the order they were written, across many
// Writes and with compression on.
func TestKafkaKeyOrder(t *testing.T) {
	c := newCluster(t)
	k := newKafka(t, KafkaConfig{Conn: kafkaconn.Plaintext(c.ListenAddrs()...), Topic: "matches", Compression: "lz4"})
	const matches, batches = 600, 8
	for batch := uint64(1); batch <= batches; batch++ {
		if err := k.Write(context.Background(), matchEvents(batch, matches)); err != nil {
			t.Fatal(err)
		}
	}
	recs := consume(t, c, "matches", matches*batches)
	if len(recs) != matches*batches {
		t.Fatalf("read %d events, wrote %d", len(recs), matches*batches)
	}
	type seen struct {
		partition int32
		batch     uint64
		offset    int64
	}
	last := map[string]seen{}
	perPartition := make([]int, testPartitions)
	for _, r := range recs {
		ev, err := decodeEvent(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		key := string(r.Key)
		if prev, ok := last[key]; ok {
			if prev.partition != r.Partition {
				t.Fatalf("key %s on partitions %d and %d", key, prev.partition, r.Partition)
			}
			// consume returns one partition's records in offset order.
			if ev.Batch != prev.batch+1 || r.Offset <= prev.offset {
				t.Fatalf("key %s: batch %d at offset %d after batch %d at offset %d", key, ev.Batch, r.Offset,
					prev.batch, prev.offset)
			}
		} else if ev.Batch != 1 {
			t.Fatalf("key %s starts with batch %d", key, ev.Batch)
		}
		last[key] = seen{r.Partition, ev.Batch, r.Offset}
		perPartition[r.Partition]++
	}
	if len(last) != matches {
		t.Fatalf("%d keys, want %d", len(last), matches)
	}
	// murmur2 spreads 600 keys evenly: each partition should get about 100 of them.
	for p, n := range perPartition {
		if keys := n / batches; keys < matches/testPartitions/2 {
			t.Errorf("partition %d got %d of %d keys: %v", p, keys, matches, perPartition)
		}
	}
}

// TestKafkaSASL checks that the sink authenticates with each SASL mechanism, and is refused with a
// wrong password.
func TestKafkaSASL(t *testing.T) {
	for _, mech := range []string{kafkaconn.Plain, kafkaconn.ScramSHA256, kafkaconn.ScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			c := newCluster(t, kfake.EnableSASL(), kfake.Superuser(mech, "gcsm", "s3cret"))
			conn := kafkaconn.Plaintext(c.ListenAddrs()...)
			conn.SASL, _ = kafkaconn.Mechanism(mech, "gcsm", "s3cret")
			good := newKafka(t, KafkaConfig{Conn: conn, Topic: "matches"})
			if err := good.Write(context.Background(), matchEvents(1, 5)); err != nil {
				t.Fatal(err)
			}
			conn.SASL, _ = kafkaconn.Mechanism(mech, "gcsm", "guess")
			bad := newKafka(t, KafkaConfig{Conn: conn, Topic: "matches", MaxAttempts: 1, WriteTimeout: time.Second})
			// The Write must fail by itself, as the service's retry loop expects, not wait for its context.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := bad.Write(ctx, matchEvents(2, 5))
			if err == nil || ctx.Err() != nil {
				t.Fatalf("Write with a wrong password: %v, want a failure before the context's end", err)
			}
			t.Log(err)
		})
	}
}

// TestKafkaTLS checks that the sink reaches a TLS-only cluster through its Conn's TLS, verifying the
// cluster's certificate.
func TestKafkaTLS(t *testing.T) {
	server, trust := testtls.Configs(t)
	c := newCluster(t, kfake.TLS(server))
	conn := kafkaconn.Plaintext(c.ListenAddrs()...)
	conn.TLS = trust
	k := newKafka(t, KafkaConfig{Conn: conn, Topic: "matches"})
	if err := k.Write(context.Background(), matchEvents(1, 5)); err != nil {
		t.Fatal(err)
	}
	plain := newKafka(t, KafkaConfig{Conn: kafkaconn.Plaintext(c.ListenAddrs()...), Topic: "matches",
		MaxAttempts: 1, WriteTimeout: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := plain.Write(ctx, matchEvents(2, 5)); err == nil {
		t.Fatal("Write without TLS to a TLS-only cluster succeeded")
	}
}

// TestKafkaWriteOrder checks that a Write of many encoding chunks, encoded on several cores while the
// first ones are produced, writes every event intact and keeps the Write's order on each partition, and
// that the buffers reused by the next Write do not corrupt the first's records.
func TestKafkaWriteOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	c := newCluster(t)
	k := newKafka(t, KafkaConfig{Conn: kafkaconn.Plaintext(c.ListenAddrs()...), Topic: "matches"})
	const n = 3*encodeChunk + 17
	var want []Event
	for batch := uint64(1); batch <= 2; batch++ {
		evs := matchEvents(batch, n)
		for i := range evs {
			// A distinct time per event, so that a record carrying another's value shows.
			evs[i].EventTime = fmt.Sprintf("2026-11-21T10:00:%02d.%03dZ", i/1000, i%1000)
		}
		if err := k.Write(context.Background(), evs); err != nil {
			t.Fatal(err)
		}
		want = append(want, evs...)
	}
	recs := consume(t, c, "matches", len(want))
	next := map[int32]int{} // per partition: the index in want after its last record
	index := map[string]int{}
	for i := range want {
		index[string(AppendJSON(nil, &want[i]))] = i
	}
	for _, r := range recs {
		i, ok := index[string(r.Value)]
		if !ok {
			t.Fatalf("partition %d offset %d: a value that no event has: %s", r.Partition, r.Offset, r.Value)
		}
		if string(r.Key) != want[i].Key {
			t.Fatalf("event %d written with key %q, want %q", i, r.Key, want[i].Key)
		}
		if i < next[r.Partition] {
			t.Fatalf("partition %d: event %d at offset %d after event %d", r.Partition, i, r.Offset, next[r.Partition]-1)
		}
		next[r.Partition] = i + 1
	}
	if len(recs) != len(want) {
		t.Fatalf("read %d records, wrote %d", len(recs), len(want))
	}
}

// TestFranzSend checks that Send returns while the brokers hold its records back, that several Sends can
// be in flight at once, and that each key's events reach its partition in the order they were sent.
func TestFranzSend(t *testing.T) {
	c := newCluster(t)
	k := newKafka(t, KafkaConfig{Conn: kafkaconn.Plaintext(c.ListenAddrs()...), Topic: "matches", DeadTopic: "dead"}).(*Franz)
	ctx := context.Background()
	if err := k.Write(ctx, matchEvents(1, 5)); err != nil { // creates the topic
		t.Fatal(err)
	}

	release := make(chan struct{})
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() { <-release })
		return nil, nil, false
	})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	const batches, n = 4, 300
	var sent []Pending
	all := make(chan struct{})
	go func() {
		defer close(all)
		for b := uint64(2); b < 2+batches; b++ {
			letters := []DeadLetter{NewDeadLetter("bad_json", "edges", 0, int64(b), []byte("{"))}
			sent = append(sent, k.Send(ctx, letters, matchEvents(b, n)))
		}
	}()
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		t.Fatal("Send waits for the brokers' acknowledgement")
	}
	select {
	case <-sent[0].Done():
		t.Fatal("a Send was acknowledged while the brokers held back every produce request")
	case <-time.After(100 * time.Millisecond):
	}
	unblock()
	for i, p := range sent {
		<-p.Done()
		if err := p.Err(); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}

	recs := consume(t, c, "matches", 5+batches*n)
	last := map[string]uint64{}
	for _, r := range recs {
		ev, err := decodeEvent(r.Value)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Batch < last[ev.Key] {
			t.Fatalf("key %s: batch %d's event after batch %d's", ev.Key, ev.Batch, last[ev.Key])
		}
		last[ev.Key] = ev.Batch
	}
	for i := range n {
		key := matchEvents(2, n)[i].Key
		if last[key] != 1+batches {
			t.Fatalf("key %s ends at batch %d, want %d", key, last[key], 1+batches)
		}
	}
	if dead := consume(t, c, "dead", batches); len(dead) != batches {
		t.Fatalf("%d dead letters, want %d", len(dead), batches)
	}
	k.mu.Lock()
	free := len(k.free)
	k.mu.Unlock()
	if free != batches {
		t.Fatalf("%d buffers back for reuse after %d acknowledged Sends, want %d", free, batches, batches)
	}
}

// BenchmarkFranzSend sends batches of 10,000 events with up to window Sends awaiting their
// acknowledgement, as the service's delivery stage does; window=1 is Write's pace. The broker answers
// each produce request after delay, a stand-in for a network round trip and a broker's fsync.
func BenchmarkFranzSend(b *testing.B) {
	const events = 10000
	for _, delay := range []time.Duration{0, 2 * time.Millisecond} {
		for _, window := range []int{1, 2, 3} {
			b.Run(fmt.Sprintf("delay=%v/window=%d", delay, window), func(b *testing.B) {
				c := newCluster(b)
				k := newKafka(b, KafkaConfig{Conn: kafkaconn.Plaintext(c.ListenAddrs()...), Topic: "matches"}).(*Franz)
				ctx := context.Background()
				batch := matchEvents(1, events)
				if err := k.Write(ctx, batch); err != nil { // creates the topic and connects
					b.Fatal(err)
				}
				if delay > 0 {
					c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
						c.KeepControl()
						c.SleepControl(func() { time.Sleep(delay) })
						return nil, nil, false
					})
				}
				var sent []Pending
				wait := func() {
					<-sent[0].Done()
					if err := sent[0].Err(); err != nil {
						b.Fatal(err)
					}
					sent = sent[1:]
				}
				b.ReportAllocs()
				start := time.Now()
				for b.Loop() {
					if len(sent) == window {
						wait()
					}
					sent = append(sent, k.Send(ctx, nil, batch))
				}
				for len(sent) > 0 {
					wait()
				}
				b.ReportMetric(float64(b.N*events)/time.Since(start).Seconds(), "events/s")
			})
		}
	}
}
