package output

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gcsm/gcsm/internal/kafkaconn"
)

// KafkaConfig configures a Kafka sink. Zero values of the tuning fields take the documented defaults.
type KafkaConfig struct {
	// Conn reaches the brokers: their addresses, TLS and SASL.
	Conn kafkaconn.Conn
	// Topic receives match events. The message key is Event.Key, so one match's events stay in order on
	// one partition, and the value is AppendJSON's object. Keys go to partitions by murmur2, as the Java
	// client's default partitioner puts them, so events spread over all the topic's partitions.
	Topic string
	// DeadTopic receives dead letters, keyed "topic/partition/offset". "" means dead letters are only
	// counted by the caller: WriteDead drops them and returns nil.
	DeadTopic string

	// BatchBytes is the most bytes in one produce batch, and also the largest message. Default 1 MiB, the
	// broker's default message.max.bytes; larger batches are rejected by a broker left at its default.
	BatchBytes int64
	// WriteTimeout bounds one produce request. Default 10s.
	WriteTimeout time.Duration
	// MaxAttempts is how many times a batch is tried before Write fails. Default 10, with backoff between
	// attempts (250ms to 2.5s): a leader election rides through, a lost
	// cluster fails in seconds.
	MaxAttempts int
	// Compression is "", "none", "gzip", "snappy", "lz4" or "zstd". Default none. JSON events compress
	// several times over; lz4 and zstd cost CPU on the output stage but save network and disk.
	Compression string
}

// The defaults of KafkaConfig.
const (
	DefaultBatchBytes   = 1 << 20
	DefaultWriteTimeout = 10 * time.Second
	DefaultMaxAttempts  = 10
)

func (c *KafkaConfig) validate() error {
	if len(c.Conn.Brokers) == 0 {
		return errors.New("no Kafka brokers")
	}
	for _, b := range c.Conn.Brokers {
		if b == "" || strings.Contains(b, ",") {
			return fmt.Errorf("bad Kafka broker address %q in %q", b, c.Conn.Brokers)
		}
	}
	if c.Topic == "" {
		return errors.New("no Kafka output topic")
	}
	if c.DeadTopic == c.Topic {
		return fmt.Errorf("dead letter topic %q is the output topic", c.DeadTopic)
	}
	if c.BatchBytes < 0 || c.WriteTimeout < 0 || c.MaxAttempts < 0 {
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

// NewKafka returns a Sink that produces to Kafka with franz-go's kgo client. It does not connect: the
// first Write does, creating the topics when the brokers allow automatic creation.
func NewKafka(cfg KafkaConfig) (Sink, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("cannot create Kafka output: %w", err)
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
