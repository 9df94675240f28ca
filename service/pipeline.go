package service

import (
	"context"
	"maps"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/gcsm/gcsm/engine"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/output"
)

// A generation runs as four stages joined by bounded queues, so that
// batch n+1 is decoded while n is matched, n-1's events are built and
// n-2's are delivered:
//
//	prepare:  cut a batch, decode its messages (in parallel), intern their
//	          ids and labels (in order, engine.Core.Intern)
//	run loop: the core's step (expire, apply, match, reorganize);
//	          HTTP operations and checkpoints, which need a quiet graph
//	build:    sort the matches and build their events (in parallel)
//	deliver:  write events and dead letters and wait for their acks
//
// The run loop owns the core but for its interning, which the decoding
// stage runs (graph.IDs lets the run loop read the names of ids it was
// handed meanwhile); the other stages touch only their batch. Positions, progress and commits advance when the run loop takes a
// batch's acknowledgement back, in batch order, so a batch's offsets count
// only once its output is durable. A full queue stops the stage before it:
// undelivered output stops matching, which stops decoding, which stops the
// reads (backpressure).

// maxInflight bounds the batches matched but not yet acknowledged: one
// being built, one delivered and one waiting. Delivery is sequential to
// keep the output's order, so a deeper queue would only hold more events
// in memory.
const maxInflight = 3

// pipeline is one generation's queues, and the run loop's count of
// batches handed to delivery and not yet taken back.
type pipeline struct {
	// ready is unbuffered: the decoder holds one decoded batch while the
	// graph stages run, which hides decoding; a deeper queue would only add
	// its batches to every update's latency under a backlog.
	ready    chan *batchState // decoded, to the run loop
	out      chan *batchState // matched, to the building of events
	built    chan *batchState // events built, to delivery
	acked    chan *batchState // delivered (or failed, err set), back to the run loop
	free     chan *buffers    // returned by the run loop for the next batches
	inflight int
	// handed holds when each batch out was handed to delivery, oldest
	// first, for the watch's "output undeliverable" (watch.go).
	handed []time.Time
	wg     sync.WaitGroup
}

// buffers are a batch's messages and their decoding, reused from batch to
// batch: at 4,096 messages they are about 0.7 MB.
type buffers struct {
	msgs []ingest.Message
	dec  []engine.Decoded
}

// startPipelineWith starts prepare as the decoding stage, until ctx ends,
// and the delivery stage, whose writes dctx bounds; stop ends them.
// prepare must close p.ready when it ends.
func (s *Service) startPipelineWith(ctx, dctx context.Context, prepare func(context.Context, *pipeline)) *pipeline {
	p := &pipeline{
		ready: make(chan *batchState),
		out:   make(chan *batchState, maxInflight),
		built: make(chan *batchState, maxInflight),
		acked: make(chan *batchState, maxInflight),
		free:  make(chan *buffers, 3),
	}
	p.wg.Go(func() { prepare(ctx, p) })
	p.wg.Go(func() { s.buildAll(p) })
	p.wg.Go(func() { s.deliverAll(dctx, p) })
	return p
}

// stop waits for both stages to end; ctx must be done or the input closed.
// It must be called from the run loop, after its last hand-off.
func (p *pipeline) stop() {
	close(p.out)
	p.wg.Wait()
}

// prepare cuts and decodes batches, the input being at pos, until the
// input ends or ctx is done. It first re-forms the batches of logged, as
// a previous run cut them, then cuts its own and logs them (batchlog.go).
func (s *Service) prepare(ctx context.Context, in <-chan []ingest.Message, pos map[int]int64, logged []loggedCut, p *pipeline) {
	defer close(p.ready)
	bt := newBatcher(in, s.cfg.Batch.Size, s.cfg.Batch.Linger)
	decs := s.decoders()
	for {
		var buf *buffers
		select {
		case buf = <-p.free:
		default:
			buf = &buffers{}
		}
		var msgs []ingest.Message
		more := true
		var following *loggedCut
		if len(logged) > 0 {
			msgs, more = bt.upTo(buf.msgs, pos, logged[0].ends, ctx.Done())
			// A logged batch whose records are all gone (retention) is
			// passed over, empty.
			following, pos, logged = &logged[0], logged[0].ends, logged[1:]
		} else {
			msgs, more = bt.next(buf.msgs, ctx.Done())
		}
		buf.msgs = msgs
		if len(msgs) > 0 {
			b := newBatchState(buf)
			if following != nil {
				// Exactly once, a batch logged in its transaction is not
				// written again; one logged by a run without transactions
				// (the mode changed) is, as its output may be missing.
				b.logOffset, b.replayed = following.offset, following.txn
				b.logFrom, b.logEnds = following.from, following.ends
			} else {
				pos = s.logCut(ctx, b, pos)
			}
			s.decodeBatch(b, buf, decs)
			if !p.send(ctx, b) {
				return
			}
		}
		if !more {
			return
		}
	}
}

// send hands b, decoded, to the graph stage, and says whether it could:
// not once ctx has ended.
func (p *pipeline) send(ctx context.Context, b *batchState) bool {
	if ctx.Err() != nil {
		return false
	}
	b.queued = time.Now()
	select {
	case p.ready <- b:
		return true
	case <-ctx.Done():
		return false
	}
}

// decoders are the decoding stage's, one per core.
func (s *Service) decoders() []*ingest.Decoder {
	decs := make([]*ingest.Decoder, max(1, runtime.GOMAXPROCS(0)))
	for i := range decs {
		decs[i] = &ingest.Decoder{Format: s.dec.Format, MaxBytes: s.dec.MaxBytes, MaxIDBytes: s.dec.MaxIDBytes, TSUnit: s.dec.TSUnit, Seen: s.dec.Seen}
	}
	return decs
}

// decodeBatch decodes and interns the batch b of buf's messages.
func (s *Service) decodeBatch(b *batchState, buf *buffers, decs []*ingest.Decoder) {
	buf.dec = slices.Grow(buf.dec[:0], len(buf.msgs))[:len(buf.msgs)]
	keep := s.keep.Load()
	for _, d := range decs {
		d.Keep = keep
	}
	engine.Decode(buf.msgs, buf.dec, decs)
	s.warnOddTime(decs)
	b.recycled, b.seq = s.core.Intern(buf.dec, s.keepTime.Load())
	b.times[stageDecode] = time.Since(b.cut)
}

// warnOddTime warns, once a run, of the first numeric ts a decoder found
// outside 1990-2100: a stream in another unit than input.ts_unit, whose
// windows and WITHIN would be off by a factor of 1000 or more. Once a run
// is enough to be seen, where once an event would flood the log.
func (s *Service) warnOddTime(decs []*ingest.Decoder) {
	if s.oddTimeWarned.Load() {
		return
	}
	for _, d := range decs {
		if odd, ok := d.OddTime(); ok && !s.oddTimeWarned.Swap(true) {
			s.log.Warn().Int64("ts", odd.TS).Str("ts_unit", odd.Unit.String()).Str("topic", s.cfg.Input.Topic).
				Msgf("input event times look wrong: %v (input.ts_unit in the configuration); this warning is given once a run", odd)
			return
		}
	}
}

// buildAll builds the events of batches in order: batch n's while n-1's
// are delivered, whose acknowledgements take a broker's round trip.
func (s *Service) buildAll(p *pipeline) {
	defer close(p.built)
	for b := range p.out {
		t0 := time.Now()
		s.build(b)
		b.times[stageOutput] = time.Since(t0)
		s.met.outputSteps.WithLabelValues("build").Observe(b.times[stageOutput].Seconds())
		b.queued = time.Now()
		p.built <- b // never blocks: p.built holds maxInflight
	}
}

// deliverAll delivers batches and hands them back in order. After a
// failure, which only an ending ctx causes (delivery retries anything
// else), it writes nothing more: the later batches come back failed too.
func (s *Service) deliverAll(ctx context.Context, p *pipeline) {
	if s.txn != nil {
		s.transactAll(ctx, p, s.txn, s.txnCommit)
		return
	}
	sender, ok := s.sink.(output.Sender)
	if !ok {
		var failed error
		for b := range p.built {
			t0 := s.taken(b)
			if failed == nil {
				failed = s.awaitLogged(ctx, b)
			}
			if failed == nil {
				failed = s.deliver(ctx, b)
			}
			s.met.outputSteps.WithLabelValues("send").Observe(time.Since(t0).Seconds())
			s.delivered(p, b, t0, failed)
		}
		return
	}
	s.sendAll(ctx, p, sender)
}

// sent is a batch whose output was handed to a Sender, and when.
type sent struct {
	b       *batchState
	pending output.Pending
	t0, t1  time.Time // taken from the queue; sent
}

// sendAll is deliverAll through a Sender: it sends each batch as soon as
// it is built, while earlier batches wait for their acknowledgement (at
// most maxInflight in all, which the run loop bounds), and hands batches
// back in order as their acknowledgements arrive. If some of a batch's
// records fail, the batches sent after it may already be in the topic; so
// it waits for them, sends nothing new, and sends again only the records
// that failed, in batch order, a bounded number of times (resend): no
// acknowledged record is written twice, a key's last event stays its
// newest, and a record that cannot be written is given up and reported
// rather than blocking all alerting.
func (s *Service) sendAll(ctx context.Context, p *pipeline, sender output.Sender) {
	var (
		failed error
		window []sent // sent, not yet handed back, in batch order
		in     = p.built
	)
	for in != nil || len(window) > 0 {
		var acked <-chan struct{}
		if len(window) > 0 {
			acked = window[0].pending.Done()
		}
		select {
		case b, ok := <-in:
			if !ok {
				in = nil
				continue
			}
			t0 := s.taken(b)
			if failed == nil {
				failed = s.awaitLogged(ctx, b)
			}
			if failed != nil { // the window is empty: a failure drains it
				s.delivered(p, b, t0, failed)
				continue
			}
			w := sent{b: b, pending: sender.Send(ctx, b.dead, b.events), t0: t0, t1: time.Now()}
			s.met.outputSteps.WithLabelValues("send").Observe(w.t1.Sub(t0).Seconds())
			window = append(window, w)
		case <-acked:
			w := window[0]
			window = window[1:]
			s.met.outputSteps.WithLabelValues("acknowledge").Observe(time.Since(w.t1).Seconds())
			if w.pending.Err() == nil {
				s.diverted(w.b, w.pending.Diverted(), nil)
				s.delivered(p, w.b, w.t0, nil)
				continue
			}
			redo := append([]sent{w}, window...)
			window = nil
			for _, l := range redo[1:] {
				select {
				case <-l.pending.Done():
				case <-ctx.Done():
				}
			}
			if failed == nil {
				failed = ctx.Err()
			}
			if failed == nil {
				failed = s.resend(ctx, sender, redo)
			}
			for _, r := range redo {
				s.delivered(p, r.b, r.t0, failed)
			}
		}
	}
}

// taken records the wait of a built batch for delivery, and returns when
// delivery took it.
func (s *Service) taken(b *batchState) time.Time {
	t0 := time.Now()
	s.met.wait.WithLabelValues("output").Observe(t0.Sub(b.queued).Seconds())
	return t0
}

// delivered hands b back to the run loop, failed with err if not nil.
func (s *Service) delivered(p *pipeline, b *batchState, t0 time.Time, err error) {
	b.err = err
	b.times[stageOutput] += time.Since(t0)
	p.acked <- b
}

// handOff passes a matched batch to delivery, first taking back
// acknowledgements while maxInflight batches are out.
func (s *Service) handOff(p *pipeline, b *batchState) error {
	for p.inflight >= maxInflight {
		if err := s.takeBack(p, <-p.acked); err != nil {
			return err
		}
	}
	// The build stage owns b once it is sent: read nothing of it after.
	queued := time.Now()
	b.queued = queued
	p.out <- b // never blocks: p.out holds maxInflight
	p.inflight++
	if p.handed = append(p.handed, queued); len(p.handed) == 1 {
		s.oldestOut.Store(queued.UnixNano())
	}
	return nil
}

// abandonOverlapped waits for a match left running when the loop ends on an
// error, so that nothing drives the executor after the loop, and drops the
// batch: as with any batch not acknowledged, its offsets do not count.
func (s *Service) abandonOverlapped() {
	s.core.Finish()
	s.overlapped = nil
}

// drain completes the batch whose match overlapped, if any, and waits
// until every batch handed to delivery is acknowledged.
func (s *Service) drain(p *pipeline) error {
	if err := s.completeOverlapped(p); err != nil {
		return err
	}
	for p.inflight > 0 {
		if err := s.takeBack(p, <-p.acked); err != nil {
			return err
		}
	}
	return nil
}

// takeBack records a delivered batch: its offsets now count as applied.
func (s *Service) takeBack(p *pipeline, b *batchState) error {
	p.inflight--
	// Batches come back in the order they were handed off.
	if p.handed = p.handed[1:]; len(p.handed) > 0 {
		s.oldestOut.Store(p.handed[0].UnixNano())
	} else {
		s.oldestOut.Store(0)
	}
	if b.err != nil {
		if b.initial != nil {
			s.initialEnded(b.initial, 0, "stopping")
		}
		return b.err
	}
	if b.initial != nil {
		s.initialDelivered(b)
		return nil
	}
	for part, r := range b.ranges {
		s.position[part] = r[1] + 1
	}
	maps.Copy(s.position, b.ends)
	if b.logOffset >= 0 {
		s.logNext = b.logOffset + 1
	}
	if s.member != nil {
		s.member.acked.Store(b.id)
	}
	if b.step != nil {
		s.core.Advance(b.step)
	}
	s.mu.Lock()
	s.doneAt = time.Now()
	s.progress.Batches = b.id
	s.progress.Position = maps.Clone(s.position)
	s.progress.Events += int64(len(b.events) - b.diverted - b.lost - b.skipped)
	s.progress.DeadLetters += int64(len(b.dead) - b.lostLetters + b.diverted)
	s.mu.Unlock()
	s.met.batchSeconds.WithLabelValues(stages[stageOutput]).Observe(b.times[stageOutput].Seconds())
	if s.onBatch != nil {
		s.onBatch(BatchInfo{Batch: b.id, Messages: b.messages, Events: len(b.events), Latency: time.Since(b.cut)})
	}
	s.recycleSlab(b)
	return nil
}

// loop is the run loop of one generation: it takes decoded batches through
// the graph stages, runs HTTP operations and checkpoints between them, and
// takes acknowledgements back. It returns once the input has ended and
// every batch is acknowledged, or on a fatal error.
func (s *Service) loop(ctx context.Context, gen *ingest.Generation, p *pipeline) error {
	tick := time.NewTicker(max(s.cfg.State.CheckpointEvery, 10*time.Millisecond))
	defer tick.Stop()
	defer s.oldestOut.Store(0) // what is still out is abandoned
	defer s.abandonOverlapped()
	// idle counts the loop's waits from its first batch on: the wait for a
	// generation's first records is not the decoding stage's doing.
	started := false
	idle := func(t0 time.Time) {
		if started {
			s.met.idle.Add(time.Since(t0).Seconds())
		}
	}
	// batch takes the next decoded batch through the graph stages; ok is
	// false once the input has ended.
	batch := func(b *batchState, ok bool) (end bool, err error) {
		if !ok {
			if err := s.drain(p); err != nil {
				return true, err
			}
			return true, s.maybeCheckpoint(gen, p)
		}
		s.met.wait.WithLabelValues("graph").Observe(time.Since(b.queued).Seconds())
		started = true
		return false, s.process(p, b)
	}
	for {
		t0 := time.Now()
		if s.overlapped != nil {
			// A match left running overlaps the next batch's apply only
			// if that batch is decoded already: its alerts would otherwise
			// wait for the input.
			select {
			case b, ok := <-p.ready:
				if end, err := batch(b, ok); end || err != nil {
					return err
				}
				if err := s.maybeCheckpoint(gen, p); err != nil {
					return err
				}
				continue
			default:
				if err := s.completeOverlapped(p); err != nil {
					return err
				}
			}
		}
		select {
		case b, ok := <-p.ready:
			idle(t0)
			if end, err := batch(b, ok); end || err != nil {
				return err
			}
		case b := <-p.acked:
			idle(t0)
			if err := s.takeBack(p, b); err != nil {
				return err
			}
		case o := <-s.ops:
			idle(t0)
			// An operation sees the graph as of the last batch, with all its
			// events delivered: a new query's initial matches come after
			// every earlier event, and a checkpoint covers what it holds.
			if err := s.drain(p); err != nil {
				o.done <- opResult{nil, err}
				return err
			}
			s.runOp(ctx, o)
		case run := <-s.initialDone:
			idle(t0)
			if b := s.takeInitial(run); b != nil {
				// Behind the batch still matching, as its deltas are
				// older than the initial events that follow them.
				if err := s.completeOverlapped(p); err != nil {
					return err
				}
				if err := s.handOff(p, b); err != nil {
					return err
				}
			}
		case <-tick.C:
			idle(t0)
		}
		if err := s.maybeCheckpoint(gen, p); err != nil {
			return err
		}
	}
}
