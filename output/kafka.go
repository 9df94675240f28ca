package output

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
)

// KafkaConfig configures a Kafka sink. Zero values of the tuning fields take the documented defaults.
type KafkaConfig struct {
	// Brokers are the bootstrap addresses, host:port.
	Brokers []string
	// Topic receives match events. The message key is Event.Key, so one match's events stay in order on
	// one partition, and the value is AppendJSON's object.
	Topic string
	// DeadTopic receives dead letters, keyed "topic/partition/offset". "" means dead letters are only
	// counted by the caller: WriteDead drops them and returns nil.
	DeadTopic string

	// BatchTimeout is how long a partial batch waits for more messages before it is sent. Default 10µs.
	// Write is synchronous, so the timeout is pure latency: each Write waits it out once for its last batch
	// on each partition, and kafka-go's own default of 1s would add a second to every gcsm batch. It cannot
	// split a Write's messages into more requests, because kafka-go appends one call's messages for a
	// partition under the lock that the flush timer also takes. It is far below 1ms because, once every
	// goroutine is parked, the runtime waits for a sub-millisecond timer in epoll with a 1ms timeout:
	// through kfake on 2 shared cores (BenchmarkKafkaWrite, medians of 3), a 1-event Write takes 0.14ms at
	// 10µs, 1.26ms at 100µs and 1.47ms at 1ms, and 1000-event Writes reach 257k, 147k and 119k events/s.
	BatchTimeout time.Duration
	// BatchSize is the most messages in one produce request to a partition. Default 1000. kafka-go
	// allocates a batch's message slice at this capacity (~150 bytes a message) on every Write, so 10000
	// cost 11 MB and 145k events/s for a 1000-event Write against 2.9 MB and 257k at 1000; and each
	// partition sends its requests one after another, so 100 would cost a broker round trip every 100
	// messages on a real network.
	BatchSize int
	// BatchBytes is the most bytes in one produce batch, and also the largest message. Default 1 MiB, the
	// broker's default message.max.bytes; larger batches are rejected by a broker left at its default.
	BatchBytes int64
	// WriteTimeout bounds one produce request. Default 10s.
	WriteTimeout time.Duration
	// MaxAttempts is how many times a batch is tried before Write fails. Default 10, with backoff from
	// 100ms to 1s between attempts: a leader election rides through, a lost cluster fails in ~10s.
	MaxAttempts int
	// Compression is "", "none", "gzip", "snappy", "lz4" or "zstd". Default none. JSON events compress
	// several times over; lz4 and zstd cost CPU on the output stage but save network and disk.
	Compression string

	// TLS, when not nil, encrypts the connections.
	TLS *tls.Config
	// SASL, when not nil, authenticates the connections (kafka-go's sasl/plain, sasl/scram).
	SASL sasl.Mechanism
}

// The defaults of KafkaConfig.
const (
	DefaultBatchTimeout = 10 * time.Microsecond
	DefaultBatchSize    = 1000
	DefaultBatchBytes   = 1 << 20
	DefaultWriteTimeout = 10 * time.Second
	DefaultMaxAttempts  = 10
)

func (c *KafkaConfig) validate() error {
	if len(c.Brokers) == 0 {
		return errors.New("no Kafka brokers")
	}
	for _, b := range c.Brokers {
		if b == "" || strings.Contains(b, ",") {
			return fmt.Errorf("bad Kafka broker address %q in %q", b, c.Brokers)
		}
	}
	if c.Topic == "" {
		return errors.New("no Kafka output topic")
	}
	if c.DeadTopic == c.Topic {
		return fmt.Errorf("dead letter topic %q is the output topic", c.DeadTopic)
	}
	if c.BatchTimeout < 0 || c.BatchSize < 0 || c.BatchBytes < 0 || c.WriteTimeout < 0 || c.MaxAttempts < 0 {
		return errors.New("negative Kafka batch or timeout setting")
	}
	if c.BatchTimeout == 0 {
		c.BatchTimeout = DefaultBatchTimeout
	}
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.BatchBytes == 0 {
		c.BatchBytes = DefaultBatchBytes
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	return nil
}

func compression(name string) (kafka.Compression, error) {
	switch name {
	case "", "none":
		return 0, nil
	case "gzip":
		return kafka.Gzip, nil
	case "snappy":
		return kafka.Snappy, nil
	case "lz4":
		return kafka.Lz4, nil
	case "zstd":
		return kafka.Zstd, nil
	}
	return 0, fmt.Errorf("unknown Kafka compression %q (want none, gzip, snappy, lz4 or zstd)", name)
}

// Kafka is a Sink that produces to Kafka with a synchronous kafka-go Writer.
type Kafka struct {
	w         *kafka.Writer
	transport *kafka.Transport
	topic     string
	deadTopic string

	// buf holds the keys and values of the messages of one call and msgs points into it; both are reused
	// so that a steady stream of batches allocates no encoding buffers. ends holds each message's key and
	// value end offsets in buf while buf may still move.
	buf  []byte
	msgs []kafka.Message
	ends []int
}

var _ Sink = (*Kafka)(nil)

// NewKafka returns a Kafka sink. It does not connect: the first Write does, creating the topics when the
// brokers allow automatic creation.
func NewKafka(cfg KafkaConfig) (*Kafka, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("cannot create Kafka output: %w", err)
	}
	codec, err := compression(cfg.Compression)
	if err != nil {
		return nil, fmt.Errorf("cannot create Kafka output: %w", err)
	}
	topics := []string{cfg.Topic}
	if cfg.DeadTopic != "" {
		topics = append(topics, cfg.DeadTopic)
	}
	// A transport of our own, rather than kafka.DefaultTransport, so that Close can drop its connections
	// and its metadata requests ask only for our topics instead of the whole cluster.
	transport := &kafka.Transport{
		ClientID:       "gcsm",
		TLS:            cfg.TLS,
		SASL:           cfg.SASL,
		MetadataTopics: topics,
	}
	w := &kafka.Writer{
		Addr: newBrokerAddr(cfg.Brokers),
		// Topic stays empty and each message names its topic, so that events and dead letters share one
		// writer and its connections.
		//
		// Murmur2 on the key is the Java client's default partitioner: a match's events land on the
		// partition that Kafka Streams or any Java producer would pick for the same key.
		Balancer:               kafka.Murmur2Balancer{Consistent: true},
		MaxAttempts:            cfg.MaxAttempts,
		BatchSize:              cfg.BatchSize,
		BatchBytes:             cfg.BatchBytes,
		BatchTimeout:           cfg.BatchTimeout,
		WriteTimeout:           cfg.WriteTimeout,
		RequiredAcks:           kafka.RequireAll,
		Async:                  false,
		Compression:            codec,
		Transport:              transport,
		AllowAutoTopicCreation: true,
	}
	return &Kafka{w: w, transport: transport, topic: cfg.Topic, deadTopic: cfg.DeadTopic}, nil
}

// Write produces events to the output topic, keyed by Event.Key, and returns when all in-sync replicas
// have acknowledged every one, or the error of the first that failed.
func (k *Kafka) Write(ctx context.Context, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	buf, ends := k.buf[:0], k.ends[:0]
	for i := range events {
		buf = append(buf, events[i].Key...)
		ends = append(ends, len(buf))
		buf = AppendJSON(buf, &events[i])
		ends = append(ends, len(buf))
	}
	return k.produce(ctx, k.topic, buf, ends, "events")
}

// WriteDead produces dead letters to the dead letter topic, keyed "topic/partition/offset", with the
// durability of Write. Without a dead letter topic it drops them.
func (k *Kafka) WriteDead(ctx context.Context, letters []DeadLetter) error {
	if len(letters) == 0 || k.deadTopic == "" {
		return nil
	}
	buf, ends := k.buf[:0], k.ends[:0]
	for i := range letters {
		buf = appendDeadKey(buf, &letters[i])
		ends = append(ends, len(buf))
		buf = appendDeadLetter(buf, &letters[i])
		ends = append(ends, len(buf))
	}
	return k.produce(ctx, k.deadTopic, buf, ends, "dead letters")
}

// produce sends the messages whose keys and values lie in buf, delimited by ends.
func (k *Kafka) produce(ctx context.Context, topic string, buf []byte, ends []int, what string) error {
	n := len(ends) / 2
	msgs := k.msgs[:0]
	start := 0
	for i := 0; i < n; i++ {
		keyEnd, valueEnd := ends[2*i], ends[2*i+1]
		msgs = append(msgs, kafka.Message{
			Topic: topic,
			Key:   buf[start:keyEnd:keyEnd],
			Value: buf[keyEnd:valueEnd:valueEnd],
		})
		start = valueEnd
	}
	k.buf, k.ends, k.msgs = buf, ends, msgs

	err := k.w.WriteMessages(ctx, msgs...)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		// WriteMessages returned before its batches finished, and kafka-go may still read the keys and
		// values: give them up instead of overwriting them on the next call.
		k.buf, k.msgs = nil, nil
	}
	var werrs kafka.WriteErrors
	if errors.As(err, &werrs) {
		for _, e := range werrs {
			if e != nil {
				return fmt.Errorf("cannot write %d of %d %s to Kafka topic %q: %w", werrs.Count(), n, what, topic, e)
			}
		}
	}
	return fmt.Errorf("cannot write %d %s to Kafka topic %q: %w", n, what, topic, err)
}

// Close waits for messages in flight and closes the connections.
func (k *Kafka) Close() error {
	err := k.w.Close()
	k.transport.CloseIdleConnections()
	if err != nil {
		return fmt.Errorf("cannot close Kafka output: %w", err)
	}
	return nil
}

// brokerAddr is the bootstrap address list, as kafka.TCP makes it but with its strings built once. kafka-go
// asks the writer's address for its String on every message (a metadata lookup per message in
// WriteMessages), and kafka.TCP's list joins its addresses anew each time: 4 of the 8.5 allocations per
// event in BenchmarkKafkaWrite, which makes 4.5 with brokerAddr. kafka-go splits both strings on commas
// when it dials, so the two are equivalent; TestKafka, with three brokers, checks that this stays so.
type brokerAddr struct{ network, address string }

func newBrokerAddr(brokers []string) net.Addr {
	networks := make([]string, len(brokers))
	addrs := make([]string, len(brokers))
	for i, b := range brokers {
		networks[i] = "tcp"
		addrs[i] = kafka.TCP(b).String() // adds kafka-go's default port, 9092, where b has none
	}
	return &brokerAddr{network: strings.Join(networks, ","), address: strings.Join(addrs, ",")}
}

func (a *brokerAddr) Network() string { return a.network }
func (a *brokerAddr) String() string  { return a.address }
