package service

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/output"
)

// Exactly-once delivery (output.delivery: exactly-once, the default). A
// batch's alerts, its dead letters, its batch-log record and its input
// offsets commit in one Kafka transaction, so a read_committed consumer
// sees all of them or none:
//
//   - A restart opens the transactional id first, which aborts what the
//     killed run left open, then reads the batch log read_committed. A
//     logged batch is one whose alerts are in the output topic; it is
//     re-formed and matched again to rebuild the graph past the
//     checkpoint, and its output is not sent again. Past the log it cuts
//     anew, and what it sends was never committed before.
//   - The members of one input group share one transactional id
//     (Config.transactionalID): the member that becomes active fences the
//     one it replaces, whose next transaction fails (ProducerFenced); a
//     fenced service stops rather than write what its successor writes.
//     A transaction that commits before its successor opens the id is in
//     the batch log the successor reads, so it is not written twice either.
//     Offsets of a generation that has ended are refused by the group
//     coordinator (KIP-447); alone, the transaction commits without them,
//     and the next generation commits them at its start.
//   - A cluster member has a transactional id of its own, and commits its
//     shards' next batches in each transaction. When its generation ends
//     under an open transaction, the coordinator refuses those commits: the
//     transaction aborts and the session ends, and the next one emits
//     every shard from its committed batch on, replaying from a checkpoint
//     where needed (cluster.go), so a shard that moved is emitted once, by
//     its new owner.
//   - The pipeline goes on: decoding and matching of the next batches
//     overlap a transaction, and the batches built while one commits share
//     the next, so a transaction's round trips are paid once for several
//     batches under load.
//
// A failed transaction is aborted and written again whole, by delivery's
// rules (delivery.go): records the brokers refuse are given up after
// maxResends rounds, a cluster's failure is waited out.

// errFenced ends a service whose transactional id or group generation
// another member now holds.
var errFenced = errors.New("fenced: another gcsm now writes this output (the input group's active member changed); stopping")

// fenced says whether err means another writer took the transactional id
// over.
func fenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.TransactionalIDNotFound)
}

// txnBatch is a batch in a transaction: the indexes of its dead letters
// and events still to deliver, and what the last attempt left unsent.
type txnBatch struct {
	b                *batchState
	t0               time.Time
	letters, events  []int
	unsentL, unsentE []int
	err              error
	logged           chan struct{}
	logOffset        int64
	logErr           error
	pending          output.Pending
}

// openTxn opens the transactional sink, waiting out the brokers' failures
// until ctx ends.
func (s *Service) openTxn(ctx context.Context, franz output.Transactor, id string) (*output.Txn, error) {
	backoff := time.Second
	for {
		tx, err := franz.Transactional(ctx, id)
		if err == nil {
			return tx, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		s.log.Warn().Err(err).Str("transactional_id", id).Dur("retry_in", backoff).Msg("cannot open the output's transactions; retrying")
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

// transactAll is deliverAll in transactions: it takes the built batches in
// order, those waiting together, commits each group in one transaction,
// and hands them back. After a failure, which only an ending ctx or a
// fence causes, it writes nothing more.
func (s *Service) transactAll(ctx context.Context, p *pipeline, tx *output.Txn, commit txnCommit) {
	var failed error
	for in := p.built; in != nil; {
		b, ok := <-in
		if !ok {
			return
		}
		group := []txnBatch{{b: b, t0: s.taken(b)}}
	more:
		for len(group) < maxInflight {
			select {
			case b, ok := <-in:
				if !ok {
					in = nil
					break more
				}
				group = append(group, txnBatch{b: b, t0: s.taken(b)})
			default:
				break more
			}
		}
		if failed == nil {
			failed = s.transact(ctx, tx, commit, group)
		}
		for _, g := range group {
			s.delivered(p, g.b, g.t0, failed)
		}
	}
}

// txnCommit adds to tx's open transaction the progress that the input
// batch last, the group's newest, makes: the input offsets of a service
// alone, a member's shards' next batches. Where the transaction has no
// records (inTxn false: a member's batch without output), it commits the
// progress outside, as there is nothing for it to duplicate.
type txnCommit func(ctx context.Context, tx *output.Txn, last *batchState, inTxn bool) error

// commitInput is the txnCommit of a service alone in generation gen. Its
// transactions always hold the batch-log record.
func (s *Service) commitInput(gen *ingest.Generation) txnCommit {
	return func(ctx context.Context, tx *output.Txn, last *batchState, inTxn bool) error {
		commit := func() error { return gen.CommitInTxn(ctx, tx.Client(), tx.ID(), last.logEnds) }
		if !inTxn {
			commit = func() error { return gen.Commit(last.logEnds) }
		}
		err := commit()
		if errors.Is(err, ingest.ErrFenced) {
			s.log.Info().Err(err).Uint64("batch", last.id).Msg("input offsets not committed with the batch: the next generation commits them at its start")
			return nil
		}
		return err
	}
}

// transact delivers group in one transaction, written again until it
// commits; it fails only once ctx ends or the service is fenced. A nil
// commit moves no progress.
func (s *Service) transact(ctx context.Context, tx *output.Txn, commit txnCommit, group []txnBatch) error {
	var last *batchState
	for i := range group {
		g := &group[i]
		if g.b.replayed {
			// Committed by the run before, with its log record.
			g.b.skipped = len(g.b.events)
			continue
		}
		g.letters, g.events = upTo(len(g.b.dead)), upTo(len(g.b.events))
		if g.b.initial == nil && commit != nil {
			last = g.b
		}
	}
	if !slices.ContainsFunc(group, func(g txnBatch) bool { return !g.b.replayed }) {
		return nil
	}
	backoff := 250 * time.Millisecond
	for round := 1; ; round++ {
		t0 := time.Now()
		err := s.attempt(ctx, tx, commit, group, last)
		if err == nil {
			s.met.outputSteps.WithLabelValues("transaction").Observe(time.Since(t0).Seconds())
			return nil
		}
		// What the attempt wrote is invisible once aborted; the abort's own
		// failure only delays the next attempt's, which fails alike.
		if aerr := tx.End(ctx, false); aerr != nil && err == nil {
			err = aerr
		}
		if fenced(err) {
			s.log.Error().Err(err).Str("transactional_id", tx.ID()).Msg("output fenced")
			return fmt.Errorf("%w: %v", errFenced, err)
		}
		if errors.Is(err, ingest.ErrFenced) {
			return err // a member's generation ended: its session ends
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if round >= maxResends {
			s.giveUpRefused(group)
		}
		s.log.Warn().Err(err).Uint64("batch", group[0].b.id).Int("batches", len(group)).Int("round", round).Dur("retry_in", backoff).
			Msg("output transaction aborted; writing it again")
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// attempt writes group in one transaction and commits it.
func (s *Service) attempt(ctx context.Context, tx *output.Txn, commit txnCommit, group []txnBatch, last *batchState) error {
	if err := tx.Begin(); err != nil {
		return err
	}
	for i := range group {
		g := &group[i]
		if g.b.replayed {
			continue
		}
		g.logged, g.logErr, g.logOffset = nil, nil, -1
		if g.b.initial == nil && g.b.logEnds != nil {
			done := make(chan struct{})
			g.logged = done
			tx.Produce(ctx, &kgo.Record{Topic: s.batchLog.Topic(), Value: ingest.AppendTxnCut(nil, g.b.logFrom, g.b.logEnds)}, func(r *kgo.Record, err error) {
				g.logOffset, g.logErr = r.Offset, err
				close(done)
			})
		}
		g.pending = tx.Send(ctx, pickAll(g.b.dead, g.letters), pickAll(g.b.events, g.events))
	}
	var first error
	for i := range group {
		g := &group[i]
		if g.b.replayed {
			continue
		}
		if g.logged != nil {
			select {
			case <-g.logged:
			case <-ctx.Done():
				return ctx.Err()
			}
			if first == nil && g.logErr != nil {
				first = fmt.Errorf("batch log: %w", g.logErr)
			}
		}
		select {
		case <-g.pending.Done():
		case <-ctx.Done():
			return ctx.Err()
		}
		l, e := g.pending.Unsent()
		g.unsentL, g.unsentE, g.err = remap(l, g.letters), remap(e, g.events), g.pending.Err()
		if first == nil && g.err != nil {
			first = g.err
		}
	}
	if first != nil {
		return first
	}
	if last != nil {
		if err := commit(ctx, tx, last, tx.Produced()); err != nil {
			return err
		}
	}
	if err := tx.End(ctx, true); err != nil {
		return err
	}
	if e := s.log.Debug(); e.Enabled() {
		e.Uint64("from_batch", group[0].b.id).Uint64("to_batch", group[len(group)-1].b.id).Bool("progress", last != nil).Msg("output transaction committed")
	}
	for i := range group {
		g := &group[i]
		if g.b.replayed {
			continue
		}
		if g.logged != nil {
			g.b.logOffset = g.logOffset
		}
		var sent []int
		if len(g.events) < len(g.b.events) {
			sent = g.events
		}
		s.diverted(g.b, g.pending.Diverted(), sent)
	}
	return nil
}

// giveUpRefused drops from group the records that the brokers refused for
// what they are in the last attempt: they would fail the transaction for
// ever.
func (s *Service) giveUpRefused(group []txnBatch) {
	for i := range group {
		g := &group[i]
		if g.b.replayed || !recordRefused(g.err) || len(g.unsentL)+len(g.unsentE) == 0 {
			continue
		}
		n := len(g.unsentL) + len(g.unsentE)
		g.b.lost += len(g.unsentE)
		g.b.lostLetters += len(g.unsentL)
		g.letters, g.events = without(g.letters, g.unsentL), without(g.events, g.unsentE)
		s.gaveUp(n)
		s.log.Error().Err(g.err).Uint64("batch", g.b.id).Int("events", len(g.unsentE)).Int("dead_letters", len(g.unsentL)).
			Int("rounds", maxResends).Msg("output given up: the brokers refuse these records; the batch's transaction goes on without them")
		g.unsentL, g.unsentE = nil, nil
	}
}

// upTo is the indexes 0 to n-1.
func upTo(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// pickAll is pick, without the copy when idx is all of xs: the common
// case, a batch's first attempt.
func pickAll[T any](xs []T, idx []int) []T {
	if len(idx) == len(xs) {
		return xs
	}
	return pick(xs, idx)
}

// without returns the sorted idx less the sorted drop.
func without(idx, drop []int) []int {
	out := idx[:0:0]
	j := 0
	for _, i := range idx {
		for j < len(drop) && drop[j] < i {
			j++
		}
		if j < len(drop) && drop[j] == i {
			continue
		}
		out = append(out, i)
	}
	return out
}
