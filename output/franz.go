package output

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
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

	// chunks hold the keys and values of one call's records, encodeChunk events each, and recs points
	// into them; both are reused so that a steady stream of batches allocates no encoding buffers and no
	// records.
	chunks []encoded
	recs   []kgo.Record
}

// encoded is a run of records' keys and values in buf; ends holds each record's key and value end
// offsets in buf while buf may still move. ready is closed once the run is encoded.
type encoded struct {
	buf   []byte
	ends  []int
	ready chan struct{}
}

// encodeChunk is how many events one goroutine encodes at a time. A Write of several chunks encodes
// them on all cores while its own goroutine produces the chunks already encoded, in order: encoding a
// 400-byte event costs about as much as producing it, and both ran one after the other on one core.
const encodeChunk = 1024

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

// FranzOptions returns the kgo client options of the franz-go sink for cfg, so that a benchmark can
// produce as the sink does.
func FranzOptions(cfg KafkaConfig) ([]kgo.Opt, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return franzOptions(cfg), nil
}

// newFranz returns a Franz sink for a validated cfg.
func newFranz(cfg KafkaConfig) (*Franz, error) {
	cl, err := kgo.NewClient(franzOptions(cfg)...)
	if err != nil {
		return nil, fmt.Errorf("cannot create Kafka output: %w", err)
	}
	return &Franz{cl: cl, topic: cfg.Topic, deadTopic: cfg.DeadTopic}, nil
}

// franzOptions returns the client options of a validated cfg.
func franzOptions(cfg KafkaConfig) []kgo.Opt {
	opts := []kgo.ProducerOpt{
		// Murmur2 on the key is the Java client's default partitioner: a match's events land on the
		// partition that Kafka Streams or any Java producer would pick for the same key.
		kgo.RecordPartitioner(onePartitionFirst{kgo.StickyKeyPartitioner(nil)}),
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
	return copts
}

// onePartitionFirst is a partitioner that sends every record of a one-partition topic to it without
// hashing the key, and leaves the others to the Partitioner it wraps: murmur2 cost about 0.1 µs an event
// on the goroutine that produces them all, for a partition chosen in advance.
type onePartitionFirst struct{ kgo.Partitioner }

func (p onePartitionFirst) ForTopic(topic string) kgo.TopicPartitioner {
	return onePartitionFirstTopic{p.Partitioner.ForTopic(topic)}
}

type onePartitionFirstTopic struct{ kgo.TopicPartitioner }

func (p onePartitionFirstTopic) Partition(r *kgo.Record, n int) int {
	if n == 1 {
		return 0
	}
	return p.TopicPartitioner.Partition(r, n)
}

// OnNewBatch passes kgo's call on, for the wrapped partitioner's stickiness (records without a key).
func (p onePartitionFirstTopic) OnNewBatch() {
	if o, ok := p.TopicPartitioner.(kgo.TopicPartitionerOnNewBatch); ok {
		o.OnNewBatch()
	}
}

// Write produces events to the output topic, keyed by Event.Key, and returns when all in-sync replicas
// have acknowledged every one, or the error of the first that failed.
func (k *Franz) Write(ctx context.Context, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	n := (len(events) + encodeChunk - 1) / encodeChunk
	if cap(k.chunks) < n {
		k.chunks = append(k.chunks[:cap(k.chunks)], make([]encoded, n-cap(k.chunks))...)
	}
	chunks := k.chunks[:n]
	encode := func(i int) {
		c := &chunks[i]
		c.buf, c.ends = appendEvents(c.buf[:0], c.ends[:0], events[i*encodeChunk:min((i+1)*encodeChunk, len(events))])
		close(c.ready)
	}
	for i := range chunks {
		chunks[i].ready = make(chan struct{})
	}
	if workers := min(runtime.GOMAXPROCS(0), n) - 1; workers == 0 {
		for i := range chunks {
			encode(i)
		}
	} else {
		// Every chunk is encoded before Write returns: the producing loop below waits for each.
		var next atomic.Int64
		for range workers {
			go func() {
				for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
					encode(i)
				}
			}()
		}
	}
	recs := k.recs[:0]
	if cap(recs) < len(events) {
		recs = make([]kgo.Record, 0, len(events))
	}
	p := new(produced)
	for i := range chunks {
		<-chunks[i].ready
		at := len(recs)
		recs = appendRecords(recs, k.topic, chunks[i].buf, chunks[i].ends)
		for j := at; j < len(recs); j++ {
			k.cl.Produce(ctx, &recs[j], p.promise)
		}
	}
	k.recs = recs
	return k.await(ctx, p, len(recs), k.topic, "events")
}

// WriteDead produces dead letters to the dead letter topic, keyed "topic/partition/offset", with the
// durability of Write. Without a dead letter topic it drops them.
func (k *Franz) WriteDead(ctx context.Context, letters []DeadLetter) error {
	if len(letters) == 0 || k.deadTopic == "" {
		return nil
	}
	if len(k.chunks) == 0 {
		k.chunks = make([]encoded, 1)
	}
	c := &k.chunks[0]
	c.buf, c.ends = appendDeadLetters(c.buf[:0], c.ends[:0], letters)
	k.recs = appendRecords(k.recs[:0], k.deadTopic, c.buf, c.ends)
	p := new(produced)
	for i := range k.recs {
		k.cl.Produce(ctx, &k.recs[i], p.promise)
	}
	return k.await(ctx, p, len(k.recs), k.deadTopic, "dead letters")
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

// appendRecords appends to recs the records whose keys and values lie in buf, delimited by ends.
func appendRecords(recs []kgo.Record, topic string, buf []byte, ends []int) []kgo.Record {
	start := 0
	for i := 0; i < len(ends); i += 2 {
		keyEnd, valueEnd := ends[i], ends[i+1]
		// A whole new Record: kgo fills in Partition, Offset, Timestamp and more, which the previous call
		// left set.
		recs = append(recs, kgo.Record{
			Topic: topic,
			Key:   buf[start:keyEnd:keyEnd],
			Value: buf[keyEnd:valueEnd:valueEnd],
		})
		start = valueEnd
	}
	return recs
}

// await waits for the n records of one call, whose outcomes p collects.
func (k *Franz) await(ctx context.Context, p *produced, n int, topic, what string) error {
	// Flush sends lingering batches at once and returns after the last record's promise has run.
	if err := k.cl.Flush(ctx); err != nil {
		// The client still holds the records and may still send their bytes: give them up instead of
		// overwriting them on the next call.
		k.chunks, k.recs = nil, nil
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
