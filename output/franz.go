package output

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Franz is a Sink that produces to Kafka with franz-go's kgo client: each Write buffers its records and
// flushes them, so a gcsm batch goes out in as few produce requests as its partitions and BatchBytes
// allow, with idempotent, acks=all produce.
type Franz struct {
	cl        *kgo.Client
	topic     string
	deadTopic string

	// buf holds the keys and values of one call's records and recs points into it; both are reused so
	// that a steady stream of batches allocates no encoding buffers and no records. ends holds each
	// record's key and value end offsets in buf while buf may still move.
	buf  []byte
	ends []int
	recs []kgo.Record
}

var _ Sink = (*Franz)(nil)

// franzCodec returns kgo's codec of a KafkaConfig.Compression that validate accepted.
func franzCodec(name string) kgo.CompressionCodec {
	switch name {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// franzSASL returns kgo's mechanism for a validated, non-nil s.
func franzSASL(s *SASL) sasl.Mechanism {
	switch s.Mechanism {
	case SASLPlain:
		return plain.Auth{User: s.User, Pass: s.Password}.AsMechanism()
	case SASLScramSHA256:
		return scram.Auth{User: s.User, Pass: s.Password}.AsSha256Mechanism()
	default:
		return scram.Auth{User: s.User, Pass: s.Password}.AsSha512Mechanism()
	}
}

// newFranz returns a Franz sink for a validated cfg.
func newFranz(cfg KafkaConfig) (*Franz, error) {
	opts := []kgo.ProducerOpt{
		// Murmur2 on the key is the Java client's default partitioner: a match's events land on the
		// partition that Kafka Streams or any Java producer would pick for the same key.
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(franzCodec(cfg.Compression)),
		kgo.ProducerBatchMaxBytes(int32(cfg.BatchBytes)),
		kgo.ProduceRequestTimeout(cfg.WriteTimeout),
		kgo.RecordRetries(cfg.MaxAttempts),
		// A record that cannot be delivered, because the cluster is gone or refuses the login, fails
		// after as long as kafka-go's attempts would take, rather than waiting for ever.
		kgo.RecordDeliveryTimeout(max(time.Second, time.Duration(cfg.MaxAttempts)*cfg.WriteTimeout)), // kgo refuses less than 1s
		// Write waits for its records, so the buffer never holds more than one call's: the caller's batch
		// bounds it, and a smaller bound would only make Produce wait in the middle of a Write.
		kgo.MaxBufferedRecords(math.MaxInt32),
	}
	copts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID("gcsm"),
		kgo.AllowAutoTopicCreation(),
	}
	for _, o := range opts {
		copts = append(copts, o)
	}
	if cfg.TLS != nil {
		copts = append(copts, kgo.DialTLSConfig(cfg.TLS))
	}
	if cfg.SASL != nil {
		copts = append(copts, kgo.SASL(franzSASL(cfg.SASL)))
	}
	cl, err := kgo.NewClient(copts...)
	if err != nil {
		return nil, fmt.Errorf("cannot create Kafka output: %w", err)
	}
	return &Franz{cl: cl, topic: cfg.Topic, deadTopic: cfg.DeadTopic}, nil
}

// Write produces events to the output topic, keyed by Event.Key, and returns when all in-sync replicas
// have acknowledged every one, or the error of the first that failed.
func (k *Franz) Write(ctx context.Context, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	buf, ends := appendEvents(k.buf[:0], k.ends[:0], events)
	return k.produce(ctx, k.topic, buf, ends, "events")
}

// WriteDead produces dead letters to the dead letter topic, keyed "topic/partition/offset", with the
// durability of Write. Without a dead letter topic it drops them.
func (k *Franz) WriteDead(ctx context.Context, letters []DeadLetter) error {
	if len(letters) == 0 || k.deadTopic == "" {
		return nil
	}
	buf, ends := appendDeadLetters(k.buf[:0], k.ends[:0], letters)
	return k.produce(ctx, k.deadTopic, buf, ends, "dead letters")
}

// produced collects the outcome of one produce call's records. Each call has its own, because the
// promises of a call abandoned by its context still run after the call returned.
type produced struct {
	mu     sync.Mutex
	failed int
	err    error // the first failure
}

func (p *produced) promise(_ *kgo.Record, err error) {
	if err == nil {
		return
	}
	p.mu.Lock()
	if p.failed == 0 {
		p.err = err
	}
	p.failed++
	p.mu.Unlock()
}

// produce sends the records whose keys and values lie in buf, delimited by ends, and waits for them.
func (k *Franz) produce(ctx context.Context, topic string, buf []byte, ends []int, what string) error {
	n := len(ends) / 2
	recs := k.recs[:0]
	if cap(recs) < n {
		recs = make([]kgo.Record, 0, n)
	}
	start := 0
	for i := 0; i < n; i++ {
		keyEnd, valueEnd := ends[2*i], ends[2*i+1]
		// A whole new Record: kgo fills in Partition, Offset, Timestamp and more, which the previous call
		// left set.
		recs = append(recs, kgo.Record{
			Topic: topic,
			Key:   buf[start:keyEnd:keyEnd],
			Value: buf[keyEnd:valueEnd:valueEnd],
		})
		start = valueEnd
	}
	k.buf, k.ends, k.recs = buf, ends, recs

	p := new(produced)
	promise := p.promise
	for i := range recs {
		k.cl.Produce(ctx, &recs[i], promise)
	}
	// Flush sends lingering batches at once and returns after the last record's promise has run.
	if err := k.cl.Flush(ctx); err != nil {
		// The client still holds the records and may still send their bytes: give them up instead of
		// overwriting them on the next call.
		k.buf, k.recs = nil, nil
		return fmt.Errorf("cannot write %d %s to Kafka topic %q: %w", n, what, topic, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed > 0 {
		return fmt.Errorf("cannot write %d of %d %s to Kafka topic %q: %w", p.failed, n, what, topic, p.err)
	}
	return nil
}

// Close fails records still buffered and closes the connections. Writes after Close fail.
func (k *Franz) Close() error {
	k.cl.Close()
	return nil
}
