package service

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/gcsm/gcsm/ingest"
)

// The batch log makes a restart re-form the batches whose events may
// already be out. A batch's events are the net change of the matches over
// the batch, so they depend on where it was cut: if a run that is killed
// wrote "appeared" for a match in one batch, and a restart cut its input
// into one batch in which the match appears and disappears again, the
// restart would write nothing for it, and the killed run's "appeared"
// would stay its last event. So a service running alone writes each
// batch's cut (the input position before and after it, ingest.AppendCut)
// to output.batches_topic when it cuts the batch, and sends none of the
// batch's events before that record is acknowledged. A generation reads
// the records written since its checkpoint and follows them: from its
// position, the logged batch that starts there, then the one that starts
// where that one ends, and so on; past them it cuts as usual. Where two
// records start at the same position (a run that re-cut after the log's
// records were lost), the later one wins, as its events came later.
//
// Batches cut alike from the same graph give the same events, so the
// topic's last event of every match is its state, however often the
// service was killed. Members need none of this: their batches are cut
// from the cuts topic already (cluster.go).

// loggedCut is a batch read back from the batch log.
type loggedCut struct {
	from, ends map[int]int64
	offset     int64 // in the batch log
	// txn says that the record was written in the transaction of the
	// batch's output, which is therefore in the topic (txn.go).
	txn bool
}

// batchLogConfigs bound the log by size, not by time: a service that was
// down for days must still find the records its checkpoint needs, and
// those are the last checkpoint interval's, a small part of the cap.
var batchLogConfigs = map[string]string{"retention.ms": "-1", "retention.bytes": "268435456"}

// openBatchLog makes sure the batch log exists and opens its writer.
func (s *Service) openBatchLog(ctx context.Context) error {
	topic := s.cfg.batchesTopic()
	if err := ingest.EnsureTopic(ctx, s.kafka, topic, 1, batchLogConfigs); err != nil {
		return fmt.Errorf("output.batches_topic: %w", err)
	}
	w, err := ingest.NewCutWriter(s.kafka, topic)
	if err != nil {
		return err
	}
	s.batchLog = w
	return nil
}

// readBatchLog reads the batch log from the first record past the applied
// batches to its end, and returns the chain of logged batches that starts
// at the service's position.
func (s *Service) readBatchLog(ctx context.Context) ([]loggedCut, error) {
	topic := s.batchLog.Topic()
	first, end, err := ingest.Offsets(ctx, s.kafka, topic, 0)
	if err != nil {
		return nil, err
	}
	from := max(s.logNext, first)
	if s.logNext < first && s.logNext > 0 {
		s.log.Warn().Str("topic", topic).Int64("want", s.logNext).Int64("first", first).
			Msg("the batch log's records since the checkpoint are gone (retention): batches are cut anew, and a match that appeared and disappeared again may keep a stale last event")
	}
	if from >= end {
		return nil, nil
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	recs := make(chan ingest.Message, 256)
	errc := make(chan error, 1)
	// Read committed: exactly once, a logged batch is one whose output
	// is in the topic (txn.go). The markers' offsets show the end.
	cc := s.consumerConfig(topic)
	cc.ReadCommitted = true
	go func() { errc <- ingest.ReadAll(rctx, cc, map[int]int64{0: from}, recs) }()
	var chain []loggedCut
	at := map[string]int{} // a chain entry's start → its index
	pos := ckey(s.position)
	reached := false
	for m := range recs {
		if m.Partition != 0 || reached {
			continue
		}
		start, ends, txn, err := ingest.ParseLoggedCut(m.Value)
		switch {
		case m.Control:
		case err != nil:
			s.log.Error().Err(err).Str("topic", topic).Int64("offset", m.Offset).Msg("unreadable batch log record; skipped")
		case start == nil:
			s.log.Error().Str("topic", topic).Int64("offset", m.Offset).Msg("batch log record without a start (a member's cut?); skipped")
		default:
			k := ckey(start)
			if i, ok := at[k]; ok {
				// A later run cut again from here: its batches supersede.
				for _, c := range chain[i:] {
					delete(at, ckey(c.from))
				}
				chain = chain[:i]
			}
			if len(chain) == 0 && k == pos || len(chain) > 0 && k == ckey(chain[len(chain)-1].ends) {
				at[k] = len(chain)
				chain = append(chain, loggedCut{from: start, ends: ends, offset: m.Offset, txn: txn})
			}
		}
		if m.Offset+1 >= end {
			reached = true
			cancel()
		}
	}
	if err := <-errc; !reached {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("batch log %q: not read to its end (offset %d): %v", topic, end, err)
	}
	if len(chain) > 0 {
		s.log.Info().Int("batches", len(chain)).Interface("from", s.position).Interface("to", chain[len(chain)-1].ends).
			Msg("re-forming the batches a previous run logged")
	}
	return chain, nil
}

// readLogPatiently is readBatchLog, tried again while the brokers fail
// it: cutting anew instead could leave a stale event, and a broker's
// outage should not end the service. It fails only once ctx has ended.
func (s *Service) readLogPatiently(ctx context.Context) ([]loggedCut, error) {
	backoff := time.Second
	for {
		chain, err := s.readBatchLog(ctx)
		if err == nil || ctx.Err() != nil {
			return chain, err
		}
		s.log.Warn().Err(err).Dur("retry_in", backoff).Msg("cannot read the batch log; retrying")
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// ckey is a position as a comparable string.
func ckey(pos map[int]int64) string { return string(ingest.AppendCut(nil, nil, pos)) }

// logCut starts writing b's cut, the position before it and after it, and
// returns the position after it.
func (s *Service) logCut(ctx context.Context, b *batchState, pos map[int]int64) map[int]int64 {
	next := maps.Clone(pos)
	for p, r := range b.ranges {
		next[p] = r[1] + 1
	}
	b.logFrom, b.logEnds = pos, next
	if s.txn == nil {
		// Exactly once, the record goes out in the batch's transaction.
		b.logging = s.batchLog.Start(ctx, pos, next)
	}
	return next
}

// awaitLogged waits until b's cut is in the batch log, writing it again
// while the brokers refuse it, before any of b's events go out.
func (s *Service) awaitLogged(ctx context.Context, b *batchState) error {
	if b.logging == nil {
		return nil
	}
	t0 := time.Now()
	defer func() { s.met.outputSteps.WithLabelValues("log").Observe(time.Since(t0).Seconds()) }()
	backoff := 100 * time.Millisecond
	for {
		err := b.logging.Wait(ctx)
		if err == nil {
			b.logOffset = b.logging.Offset
			b.logging = nil
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.log.Warn().Err(err).Uint64("batch", b.id).Dur("retry_in", backoff).Msg("batch log not acknowledged; retrying")
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff = min(2*backoff, 10*time.Second)
		b.logging = s.batchLog.Start(ctx, b.logFrom, b.logEnds)
	}
}
