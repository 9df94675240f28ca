// Package ingest turns outside input into validated records.
// The input is files (CSM graph and stream files, SNAP edge lists and their
// CSV variant, JSON lines) or the messages of a Kafka topic, each one event
// in JSON or as a CSM line.
//
// A Reader yields Records from a file, a Decoder from one message value:
// events as read, with vertex ids and labels still strings. Both parse with
// the same code, so a line means the same in a file and in a message, and
// AppendEvent writes any Record back as the JSON event that decodes to it.
// Events may name their own edge (an id, one of several parallel edges) and
// carry properties; a PropFilter says which properties records keep, so
// that memory holds what the standing queries read, not all that is sent.
// A set event (JSON only) changes the properties of a vertex or of a
// transfer named by its id. A Resolver then interns Records into a
// graph.Update; a set's vertex must be known already, as a set never makes
// one. The split keeps the
// parsers free of shared state, so several can parse in parallel while one
// goroutine owns the dictionaries.
//
// Bad input is never silently dropped or guessed at. Every malformed line
// comes back as a *LineError that names the file, the line and what is wrong
// with it. A reader with Options.SkipBad set counts and skips such lines
// instead, and keeps the first few errors for a report. A refused message is
// a *DecodeError, whose Reason is a small fixed class for metrics and dead
// letters.
//
// A Consumer reads the input topic as a member of a Kafka consumer group in
// which one member is active and the others stand by (the graph is one
// state, so partitions are never split); the caller says where each
// partition's reading starts, from its checkpoint.
package ingest
