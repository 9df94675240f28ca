// Package output turns match deltas into output events and delivers them.
//
// An Event is one match that appeared or disappeared in one batch. AppendJSON encodes it as the JSON object
// of docs/operations.md with a hand-written encoder that appends to the caller's buffer and allocates nothing,
// because the output stage sees every delta of every query. Each event carries a key: the query name, "/",
// and the hex of the first 16 bytes of a SHA-256 over the match's bindings sorted by variable, each
// variable and id length-prefixed. The key depends only on the query and the match, never on the binding
// order, the batch or the process, so the Appeared and Disappeared events of one match share it, a
// compacted topic keeps each match's latest state, and a duplicate replayed after a restart has the same
// key as the original. Kafka partitions by key, so one match's events stay in order on one partition.
//
// A Sink delivers events and dead letters (input messages that could not be used). The contract is at
// least once: Write returns only when every event is durable (for Kafka, acknowledged by all in-sync
// replicas), and only then may the caller checkpoint and commit the input offsets that the batch covers.
// After a crash the batch is replayed, so consumers see duplicates, which they recognise by key.
//
// Tail reads a topic of events or dead letters back, read_committed, and prints it as a table or as the
// JSON lines the sink wrote.
package output
