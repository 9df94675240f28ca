package servicebench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/output"
	"github.com/gcsm/gcsm/service"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// readAll reads the n records of topic from the start, with nothing
// done to them, and returns the records per second: what the broker and
// the client can do at most, which the service's rate is to be seen
// against.
func readAll(ctx context.Context, conn kafkaconn.Conn, topic string, n int64) (float64, error) {
	cl, err := conn.NewClient(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	t0 := time.Now()
	var got int64
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return 0, fmt.Errorf("read %s back: %w", topic, err)
		}
		got += int64(fs.NumRecords())
	}
	return float64(n) / time.Since(t0).Seconds(), nil
}

// eventCeiling measures what the broker takes of the service's output
// with nothing else running: n records, copies of the first alerts in the
// output topic (from), produced to a topic of their own (to) by a bare
// client with the service's producer settings (acks from all in-sync
// replicas, idempotent, the same compression, batch bytes and
// partitioner), as fast as it can.
type eventCeiling struct {
	conn        kafkaconn.Conn
	from, to    string
	partitions  int
	compression string
	have        int64 // records in from
	n           int64 // records to produce
}

// minCeilingRecords is the fewest records the events' ceiling produces: a
// sparse mix's few hundred alerts would time little but a round trip.
const minCeilingRecords = 200_000

// ceilingSample is how many alerts are read back to be copied: enough to
// give their sizes and keys' spread, few enough to hold in memory.
const ceilingSample = 1 << 16

// measure returns records per second and the records' mean size, key and
// value, in bytes.
func (c *eventCeiling) measure(ctx context.Context) (float64, float64, error) {
	sample, size, err := sampleAlerts(ctx, c.conn, c.from, c.have)
	if err != nil {
		return 0, 0, err
	}
	pr, err := newCopier(ctx, c.conn, c.to, c.partitions, c.compression)
	if err != nil {
		return 0, 0, err
	}
	defer pr.Close()
	t0 := time.Now()
	if err := produceCopies(ctx, pr, sample, 0, c.n); err != nil {
		return 0, 0, err
	}
	return float64(c.n) / time.Since(t0).Seconds(), size, nil
}

// sampleAlerts reads the first of topic's have alerts, up to
// ceilingSample, and returns them with their mean size, key and value, in
// bytes.
func sampleAlerts(ctx context.Context, conn kafkaconn.Conn, topic string, have int64) ([]*kgo.Record, float64, error) {
	cl, err := conn.NewClient(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, 0, err
	}
	defer cl.Close()
	var sample []*kgo.Record
	for int64(len(sample)) < min(have, ceilingSample) {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return nil, 0, fmt.Errorf("read %s back: %w", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) { sample = append(sample, r) })
	}
	var size int64
	for _, r := range sample {
		size += int64(len(r.Key) + len(r.Value))
	}
	return sample, float64(size) / float64(max(1, len(sample))), nil
}

// newCopier is a bare client that produces to topic, which it creates,
// with the service's producer settings (acks from all in-sync replicas,
// idempotent, the same compression, batch bytes and partitioner).
func newCopier(ctx context.Context, conn kafkaconn.Conn, topic string, partitions int, compression string) (*kgo.Client, error) {
	opts, err := output.FranzOptions(output.KafkaConfig{Conn: conn, Topic: topic, Compression: compression})
	if err != nil {
		return nil, err
	}
	// The sink buffers one Write's records; this client, all of them but
	// for this bound.
	pr, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic(topic), kgo.MaxBufferedRecords(1<<20))...)
	if err != nil {
		return nil, err
	}
	if err := createTopics(ctx, pr, partitions, topic); err != nil {
		pr.Close()
		return nil, err
	}
	return pr, nil
}

// produceCopies produces n copies of sample's records through pr, from
// the one at first on, as fast as the broker takes them, and returns once
// all are acknowledged.
func produceCopies(ctx context.Context, pr *kgo.Client, sample []*kgo.Record, first, n int64) error {
	var (
		mu     sync.Mutex
		failed error
	)
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			failed = cmp.Or(failed, err)
			mu.Unlock()
		}
	}
	for i := range n {
		r := sample[(first+i)%int64(len(sample))]
		pr.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value}, done)
	}
	if err := pr.Flush(ctx); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	if failed != nil {
		return fmt.Errorf("produce copies of alerts: %w", failed)
	}
	return nil
}

// applied is the number of input records the service has applied, all
// partitions together; the bench's topics start at offset 0.
func applied(p service.Progress) int64 {
	var n int64
	for _, o := range p.Position {
		n += o
	}
	return n
}

// createTopics creates the run's topics, so that neither the producer nor
// the service depends on the broker creating them on first use.
func createTopics(ctx context.Context, cl *kgo.Client, partitions int, names ...string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	for _, n := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = n, int32(partitions), 1
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("cannot create the bench topics: %w", err)
	}
	for _, t := range resp.Topics {
		// A topic that exists is fine: the in-process broker seeds them.
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("cannot create topic %s: %w", t.Topic, err)
		}
	}
	return nil
}

// dropRunTopics deletes the run's topics, those whose names start with
// prefix, from brokers the bench did not start: every run makes topics of
// its own, and a series of runs against one gcsm broker filled its disk
// with topics nobody reads again. A failure is reported, not returned: the
// run's figures stand.
func dropRunTopics(cl *kgo.Client, prefix string, w io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		fmt.Fprintf(w, "warning: cannot list the run's topics to delete them: %v\n", err)
		return
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 10000
	for _, t := range meta.Topics {
		if t.Topic == nil || !strings.HasPrefix(*t.Topic, prefix) {
			continue
		}
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = t.Topic
		req.Topics = append(req.Topics, rt)
		req.TopicNames = append(req.TopicNames, *t.Topic)
	}
	if len(req.TopicNames) == 0 {
		return
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		fmt.Fprintf(w, "warning: cannot delete the run's topics: %v\n", err)
		return
	}
	for i, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			name := fmt.Sprint("#", i)
			if t.Topic != nil {
				name = *t.Topic
			}
			fmt.Fprintf(w, "warning: cannot delete topic %s: %v\n", name, err)
		}
	}
}
