package output

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The values of KafkaConfig.Client.
const (
	// ClientFranz produces with franz-go's kgo client, the default: it writes 1,000-event batches about
	// twice as fast as kafka-go's Writer and allocates a fraction per event (BenchmarkKafkaWrite;
	// docs/benchmarks.md has the table).
	ClientFranz = "franz-go"
	// ClientKafkaGo produces with segmentio/kafka-go's Writer.
	ClientKafkaGo = "kafka-go"
)

// KafkaConfig configures a Kafka sink. Zero values of the tuning fields take the documented defaults.
type KafkaConfig struct {
	// Client is ClientFranz ("" too) or ClientKafkaGo. Both clients read every field below the same way
	// unless a field says otherwise.
	Client string
	// Brokers are the bootstrap addresses, host:port.
	Brokers []string
	// Topic receives match events. The message key is Event.Key, so one match's events stay in order on
	// one partition, and the value is AppendJSON's object. Keys go to partitions by murmur2, as the Java
	// client's default partitioner puts them, so events spread over all the topic's partitions.
	Topic string
	// DeadTopic receives dead letters, keyed "topic/partition/offset". "" means dead letters are only
	// counted by the caller: WriteDead drops them and returns nil.
	DeadTopic string

	// BatchTimeout is how long a partial batch waits for more messages before it is sent. Default 10µs.
	// kafka-go only: the franz-go sink ends each Write with a flush, which sends partial batches at once.
	// Write is synchronous, so the timeout is pure latency, paid once per Write: kafka-go's default of 1s
	// would add a second to every gcsm batch, and even 1ms costs ten times 10µs on a 1-event Write,
	// because a parked runtime waits out sub-millisecond timers in 1ms epoll ticks.
	BatchTimeout time.Duration
	// BatchSize is the most messages in one produce request to a partition. Default 1000. kafka-go only:
	// franz-go bounds a batch by BatchBytes alone. kafka-go allocates every Write's batch at this capacity
	// (~150 bytes a message), so a larger size costs memory and speed; a much smaller one costs a broker
	// round trip every few messages.
	BatchSize int
	// BatchBytes is the most bytes in one produce batch, and also the largest message. Default 1 MiB, the
	// broker's default message.max.bytes; larger batches are rejected by a broker left at its default.
	BatchBytes int64
	// WriteTimeout bounds one produce request. Default 10s.
	WriteTimeout time.Duration
	// MaxAttempts is how many times a batch is tried before Write fails. Default 10, with backoff between
	// attempts (kafka-go: 100ms to 1s; franz-go: 250ms to 2.5s): a leader election rides through, a lost
	// cluster fails in seconds.
	MaxAttempts int
	// Compression is "", "none", "gzip", "snappy", "lz4" or "zstd". Default none. JSON events compress
	// several times over; lz4 and zstd cost CPU on the output stage but save network and disk.
	Compression string

	// TLS, when not nil, encrypts the connections.
	TLS *tls.Config
	// SASL, when not nil, authenticates the connections.
	SASL *SASL
}

// SASL is a SASL login. Both clients map it onto their own sasl/plain and sasl/scram packages.
type SASL struct {
	Mechanism string // "PLAIN", "SCRAM-SHA-256" or "SCRAM-SHA-512"
	User      string
	Password  string
}

// The values of SASL.Mechanism.
const (
	SASLPlain       = "PLAIN"
	SASLScramSHA256 = "SCRAM-SHA-256"
	SASLScramSHA512 = "SCRAM-SHA-512"
)

// The defaults of KafkaConfig.
const (
	DefaultBatchTimeout = 10 * time.Microsecond
	DefaultBatchSize    = 1000
	DefaultBatchBytes   = 1 << 20
	DefaultWriteTimeout = 10 * time.Second
	DefaultMaxAttempts  = 10
)

func (c *KafkaConfig) validate() error {
	switch c.Client {
	case "":
		c.Client = ClientFranz
	case ClientFranz, ClientKafkaGo:
	default:
		return fmt.Errorf("unknown Kafka client %q (want %s or %s)", c.Client, ClientFranz, ClientKafkaGo)
	}
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
	// franz-go refuses batches under 512 bytes, and a record batch's header alone takes 61.
	if c.BatchBytes != 0 && (c.BatchBytes < 512 || c.BatchBytes > 1<<30) {
		return fmt.Errorf("batch bytes %d: want 512 to 1 GiB for a Kafka batch", c.BatchBytes)
	}
	switch c.Compression {
	case "", "none", "gzip", "snappy", "lz4", "zstd":
	default:
		return fmt.Errorf("unknown Kafka compression %q (want none, gzip, snappy, lz4 or zstd)", c.Compression)
	}
	if s := c.SASL; s != nil {
		switch s.Mechanism {
		case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		default:
			return fmt.Errorf("unknown SASL mechanism %q (want %s, %s or %s)", s.Mechanism, SASLPlain,
				SASLScramSHA256, SASLScramSHA512)
		}
		if s.User == "" {
			return fmt.Errorf("SASL %s without a user", s.Mechanism)
		}
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

// NewKafka returns a Sink that produces to Kafka with cfg.Client. It does not connect: the first Write
// does, creating the topics when the brokers allow automatic creation.
func NewKafka(cfg KafkaConfig) (Sink, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("cannot create Kafka output: %w", err)
	}
	if cfg.Client == ClientKafkaGo {
		return newKafkaGo(cfg)
	}
	return newFranz(cfg)
}

// appendEvents appends the keys and values of events to buf, and each one's key and value end offsets
// to ends.
func appendEvents(buf []byte, ends []int, events []Event) ([]byte, []int) {
	for i := range events {
		buf = append(buf, events[i].Key...)
		ends = append(ends, len(buf))
		buf = AppendJSON(buf, &events[i])
		ends = append(ends, len(buf))
	}
	return buf, ends
}

// appendDeadLetters is appendEvents for dead letters.
func appendDeadLetters(buf []byte, ends []int, letters []DeadLetter) ([]byte, []int) {
	for i := range letters {
		buf = appendDeadKey(buf, &letters[i])
		ends = append(ends, len(buf))
		buf = appendDeadLetter(buf, &letters[i])
		ends = append(ends, len(buf))
	}
	return buf, ends
}
