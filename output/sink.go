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
