package output

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// kafkaGoCodec returns kafka-go's codec of a KafkaConfig.Compression that validate accepted.
func kafkaGoCodec(name string) kafka.Compression {
	switch name {
	case "gzip":
		return kafka.Gzip
	case "snappy":
		return kafka.Snappy
	case "lz4":
		return kafka.Lz4
	case "zstd":
		return kafka.Zstd
	}
	return 0
}

// kafkaGoSASL returns kafka-go's mechanism for s, nil for nil.
func kafkaGoSASL(s *SASL) (sasl.Mechanism, error) {
	switch {
	case s == nil:
		return nil, nil
	case s.Mechanism == SASLPlain:
		return plain.Mechanism{Username: s.User, Password: s.Password}, nil
	case s.Mechanism == SASLScramSHA256:
		return scram.Mechanism(scram.SHA256, s.User, s.Password)
	default:
		return scram.Mechanism(scram.SHA512, s.User, s.Password)
	}
}

// KafkaGo is a Sink that produces to Kafka with a synchronous kafka-go Writer.
type KafkaGo struct {
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

var _ Sink = (*KafkaGo)(nil)

// newKafkaGo returns a KafkaGo sink for a validated cfg.
func newKafkaGo(cfg KafkaConfig) (*KafkaGo, error) {
	mech, err := kafkaGoSASL(cfg.SASL)
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
		SASL:           mech,
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
		Compression:            kafkaGoCodec(cfg.Compression),
		Transport:              transport,
		AllowAutoTopicCreation: true,
	}
	return &KafkaGo{w: w, transport: transport, topic: cfg.Topic, deadTopic: cfg.DeadTopic}, nil
}

// Write produces events to the output topic, keyed by Event.Key, and returns when all in-sync replicas
// have acknowledged every one, or the error of the first that failed.
func (k *KafkaGo) Write(ctx context.Context, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	buf, ends := appendEvents(k.buf[:0], k.ends[:0], events)
	return k.produce(ctx, k.topic, buf, ends, "events")
}

// WriteDead produces dead letters to the dead letter topic, keyed "topic/partition/offset", with the
// durability of Write. Without a dead letter topic it drops them.
func (k *KafkaGo) WriteDead(ctx context.Context, letters []DeadLetter) error {
	if len(letters) == 0 || k.deadTopic == "" {
		return nil
	}
	buf, ends := appendDeadLetters(k.buf[:0], k.ends[:0], letters)
	return k.produce(ctx, k.deadTopic, buf, ends, "dead letters")
}

// produce sends the messages whose keys and values lie in buf, delimited by ends.
func (k *KafkaGo) produce(ctx context.Context, topic string, buf []byte, ends []int, what string) error {
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
func (k *KafkaGo) Close() error {
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
