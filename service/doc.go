// Package service is gcsm run: it consumes edge events from Kafka, keeps the
// graph and the standing queries, and writes every match that appeared or
// disappeared to an output topic. It is the loop around the engine's core
// (package engine, docs/architecture.md): read and decode (ingest) →
// intern and step (engine: window expiry, apply, match, reorganize) →
// build events and deliver (output) → advance the core → checkpoint →
// commit.
//
// # Delivery
//
// Exactly once by default (txn.go): a batch's events, dead letters,
// batch-log record and input offsets commit in one Kafka transaction, and
// a restart aborts what was open, re-forms the logged batches without
// writing their output again, and goes on. A read_committed consumer sees
// each alert once. What follows is output.delivery: at-least-once, and
// the parts both share.
//
// At least once, a batch's events and dead letters are written and
// acknowledged before its offsets count as applied; a checkpoint of the
// whole state is written when due, and only the offsets a checkpoint covers
// are committed to the group. After a crash gcsm restarts from its newest
// valid checkpoint and re-reads the input from the checkpoint's offsets, so
// some events are written again, with the same keys (package output). It
// commits that checkpoint's offsets at once, new input or not: a crash
// between a checkpoint and its commit leaves them uncommitted. Alone, it
// re-forms the batches the run before it logged past the checkpoint
// (batchlog.go), so each match's last event stays its state.
//
// Batches overlap: batch n+1 is decoded while n is matched and n-1 is
// delivered, through queues of one or two batches, and undelivered output
// stops matching, decoding and reading in turn. Output keeps batch order.
// An executor that can (incremental.Overlapper: the GPU with the graph in its
// memory, alone or as the Placer's GPU side) matches batch n while the core
// reorganizes n and applies n+1 (engine.Core.Apply and Match).
// A sink that can (output.Sender: franz-go) sends batch n+1's output while
// the brokers acknowledge n's; if some of n's records fail, delivery waits
// for the batches sent after it and sends only the failed records again, in
// batch order (delivery.go): nothing acknowledged is written twice, a
// failed event whose key a later acknowledged event carries is dropped as
// superseded so a key's last event stays its newest, records the brokers
// refuse are given up after three rounds, logged and counted, so that no
// record blocks delivery, or an HTTP operation waiting for it, and records
// that failed for the cluster's sake are sent until acknowledged, so that
// an outage loses nothing. An alert over the
// output topic's message limit never reaches the producer: the sink sends
// it to the dead-letter topic (alert_too_large), and a match's disappeared
// with it.
// The graph runs ahead of the acknowledged offsets by the batches in
// delivery, so a due checkpoint, and an HTTP operation (a query's
// registration or removal, which checkpoints too), first waits until every
// matched batch is acknowledged: a checkpoint's graph and offsets agree.
// A new query's initial matches are found beside the stream on a copy of
// the graph and queued behind the batches matched meanwhile (initial.go). Draining
// stalls the graph stages for up to two batches' delivery per checkpoint.
//
// # Consumer group
//
// The group has one active member and any number of standbys (see
// ingest.Consumer): the graph is one state, so partitions are never split.
// A standby that takes over starts from its own newest checkpoint, in a
// state directory of its own, and re-reads the topic from there: New locks
// the state directory (statedir.Open), so a standby cannot share the active
// member's, whose checkpoints its own would overwrite.
//
// # Members
//
// With cluster.shards set, the service is one member of several that share
// the stream (cluster.go): every member reads every input partition and
// applies every update, batches are cut from a cuts topic so that all match
// the same batches, and each member matches and emits only the work units
// of the shards a group on the coordination topic gives it. Consumers order
// a key's events by their batch, not by their place in the output topic,
// which several members write at once.
//
// # Health
//
// A stall blocks the run loop, so nothing measured at a batch's end can
// show it. A watch (watch.go) samples the input's offsets on the brokers
// and the clock every second instead, and /readyz fails, naming why, when
// the broker is unreachable, the input went backwards, a matched batch
// waits health.stall_after for its acknowledgement, or input waits that
// long with no batch completed. Before reading, checkInput (inputcheck.go)
// refuses a position the input no longer has: a topic recreated behind the
// checkpoint, or records retention removed that no checkpoint holds.
//
// # Metrics
//
// All are prefixed gcsm_ and served on /metrics:
//
//	updates_total{op,result}      input updates: op insert, delete (applied: an edge changed), set (applied:
//	                              a property set taken), expire (window deletions scheduled), any (noop:
//	                              changed nothing; rejected: dead-lettered)
//	rejects_total{reason}         dead letters by reason: oversized, empty, json, missing_field, unknown_op,
//	                              bad_set, bad_time, ts_out_of_range, bad_value, csm, invalid_utf8,
//	                              id_too_long, self_loop, label_conflict, transfer_moved, late,
//	                              missing_time, unknown_vertex, unknown_transfer; alert_too_large (an
//	                              alert over the output topic's message limit)
//	undelivered_total{reason}     alerts and dead letters delivery gave up: retries, superseded
//	undelivered_last_timestamp_seconds  when delivery last gave records up
//	matches_total{query,change}   match deltas found (appeared, disappeared), withheld ones included
//	query_limit_hits_total{query,limit}  batches in which a query's limit withheld events
//	initial_runs_total{result}    initial runs of new queries: complete, or why cut short (max_matches,
//	                              max_time, max_memory, deleted, client_gone, stopping); see initial.go
//	query_batches_total{query,device}  batches each query was matched in, by device (cpu, gpu): under
//	                              engine.device auto each query runs where it has been fastest
//	batches_total                 batches processed
//	zero_copy_bytes_total         neighbour-list bytes the GPU read from host memory (zero on the CPU)
//	batch_seconds{stage}          time per batch in decode, apply, estimate, upload, match, reorganize,
//	                              output and commit (estimate and upload are the GPU cache's)
//	output_step_seconds{step}     the output stage per batch: build (the events), log (the wait for the
//	                              batch log's record), send (encode and hand to the producer) and
//	                              acknowledge
//	batch_wait_seconds{queue}     time a batch waited for its next stage: graph (decoded, for apply and
//	                              match) or output (matched, for delivery); long graph waits mean the
//	                              graph stages are the bottleneck, long output waits the output
//	run_loop_idle_seconds_total   time the graph stages had nothing to do, from their first batch on;
//	                              under a backlog, the decoding stage held them back
//	checkpoint_seconds            time to write a checkpoint
//	graph_vertices, graph_edges   the graph's size
//	gpu_cache_bytes, gpu_cache_hit_ratio  the GPU cache (zero on the CPU)
//	consumer_lag                  records past the acknowledged position, sampled from the brokers
//	                              every second (watch.go) and at each batch's end; 0 on a standby
//	checkpoint_age_seconds        time since the last checkpoint, sampled every second
//	ready                         1 while /readyz answers 200; 0 while starting or not ready (watch.go)
//	broker_reachable              0 once the input's offsets could not be read for 5s
//	queries                       standing queries
//	units_total                   work units (update edges with their delta terms) matched; a member
//	                              matches only its shards'
//	cluster_shards                shards this member owns (zero alone)
//
// plus the Go runtime's and the process's standard collectors.
package service
