package output

import "context"

// Sink delivers events and dead letters. Implementations are used by one goroutine at a time.
type Sink interface {
	// Write delivers events in order and returns only when every one is durable (for Kafka: acknowledged
	// by all in-sync replicas), so the caller may then checkpoint and commit its input offsets. On error
	// some events may have been delivered and the caller must treat the whole slice as undelivered: write
	// it again or stop without committing. The sink does not keep events or their strings after Write
	// returns.
	Write(ctx context.Context, events []Event) error

	// WriteDead delivers dead letters with the same durability and ownership rules as Write.
	WriteDead(ctx context.Context, letters []DeadLetter) error

	// Close releases the sink's connections. Writes after Close fail.
	Close() error
}

// A Sender is a Sink that can have several batches' records in flight: the caller hands over batch n+1's
// while the brokers acknowledge n's, which would otherwise leave the encoding idle during every round trip
// and the brokers idle during every encoding.
type Sender interface {
	Sink

	// Send hands the client the dead letters, then the events, and returns once it holds their records,
	// without waiting for acknowledgements. The records of successive Sends keep their order within a
	// partition. The sink does not keep events or their strings after Send returns.
	Send(ctx context.Context, letters []DeadLetter, events []Event) Pending
}

// Pending is a Send's records on their way to the brokers.
type Pending interface {
	// Done is closed once every record is acknowledged or has failed.
	Done() <-chan struct{}

	// Err is the outcome once Done is closed: nil when every record is durable, as Write's are; else
	// what failed. On error some records were delivered: Unsent says which were not.
	Err() error

	// Unsent returns, once Done is closed, the indexes in the Send's letters and in its events of the
	// records that failed, ascending; none when Err is nil. Every other record was acknowledged (or, for
	// an event, Diverted): the caller sends only these again, and never duplicates the others.
	Unsent() (letters, events []int)

	// Diverted returns, once Done is closed, the events that would have been over the output topic's
	// message limit, which went to the dead-letter topic instead (ReasonAlertTooLarge), in order. Their
	// letters are acknowledged, or their events are in Unsent.
	Diverted() []TooLarge
}
