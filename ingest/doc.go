// Package ingest turns outside input into validated records and batches.
// Today the input is files (CSM graph and stream files, SNAP edge lists and
// their CSV variant, JSON lines); a Kafka source will follow.
//
// A Reader yields Records: events as read, with vertex ids and labels still
// strings. A Resolver then interns them into a graph.Update. The split keeps
// the readers free of shared state, so several can parse in parallel while
// one goroutine owns the dictionaries.
//
// Bad input is never silently dropped or guessed at. Every malformed line
// comes back as a *LineError that names the file, the line and what is wrong
// with it. A reader with Options.SkipBad set counts and skips such lines
// instead, and keeps the first few errors for a report.
package ingest
