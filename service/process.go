package service

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/engine"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/kernels"
	"github.com/gcsm/gcsm/output"
)

// process runs a decoded batch through the engine's step (window expiry,
// apply, match and reorganize), after resolving its decoding. It returns
// only errors that end the service; bad input becomes dead letters. A
// match that overlaps is left running in the core and the batch in
// s.overlapped; the core finishes it in the next batch's Apply, which it
// overlapped, and process completes it before that batch's Match.
func (s *Service) process(p *pipeline, b *batchState) error {
	t0 := time.Now()
	s.resolve(b)
	b.times[stageDecode] += time.Since(t0)
	if b.fixed > 0 {
		s.batch = b.fixed
	} else {
		s.batch++
	}
	b.id = s.batch
	// Without queries the step matches nothing, and the collector's
	// methods are never called.
	var c *collector
	if len(s.queries) > 0 {
		c = newCollector(s.queries)
		b.collected = c
	}
	// The engine abandons a query once a limit is hit, instead of finishing
	// matches that would only be counted.
	st, err := s.core.Apply(engine.Batch{Updates: b.updates, Times: b.updateTimes, Recycled: b.recycled, Seq: b.seq,
		Queries: s.compiled(), Mode: incremental.Enumerate, Own: func(delta []graph.Change) []graph.Change { return s.ownDelta(b.id, delta) },
		Sink: c.sink, Bound: c.boundSink(s.core.Binder), Stop: c.stop})
	if err != nil {
		return err
	}
	// The last batch's match finished within the apply it overlapped; it
	// goes to delivery before this batch's match begins, and its wait
	// counts as its own match stage.
	if err := s.completeOverlapped(p); err != nil {
		return err
	}
	s.core.Match(st)
	b.step = st
	s.expired(b, st)
	for _, r := range st.Rejects {
		b.rejected(r.Index)
		if o := b.origin[r.Index]; o >= 0 {
			s.deadLetter(b, o, rejectReason(r.Err), r.Err.Error())
		}
	}
	b.applied = st.Applied
	b.times[stageApply] = st.Apply
	b.times[stageMatch] = st.Match
	b.times[stageReorganize] = st.Reorganize
	if st.Pending() {
		s.overlapped = b
		return nil
	}
	return s.complete(p, b)
}

// expired puts the window's expiries the step applied ahead of the batch's
// updates, as the step did, with no message of their own.
func (s *Service) expired(b *batchState, st *engine.Step) {
	if st.Expired == 0 {
		return
	}
	b.updates = st.Updates
	origin := make([]int, st.Expired, len(st.Updates))
	for i := range origin {
		origin[i] = -1
	}
	b.origin = append(origin, b.origin...)
	s.met.updates.WithLabelValues("expire", "applied").Add(float64(st.Expired))
}

// complete ends b's graph stages, once its step's match has finished: it
// builds its events, gives b's buffers back to the decoding stage and
// hands b to delivery.
func (s *Service) complete(p *pipeline, b *batchState) error {
	b.times[stageMatch] = b.step.Match
	if err := s.finishMatch(b); err != nil {
		return fmt.Errorf("match: %w", err)
	}
	s.observe(b, b.applied)
	select {
	case p.free <- b.buf:
	default:
	}
	b.buf, b.msgs = nil, nil
	return s.handOff(p, b)
}

// completeOverlapped completes the batch whose match overlapped, if any,
// once the core has finished it: before anything else uses the executor
// or needs every batch handed to delivery.
func (s *Service) completeOverlapped(p *pipeline) error {
	b := s.overlapped
	if b == nil {
		return nil
	}
	s.core.Finish()
	s.overlapped = nil
	return s.complete(p, b)
}

// batchState is one batch on its way through the pipeline.
type batchState struct {
	buf      *buffers         // msgs and their decoding, until the graph stages are done
	msgs     []ingest.Message // buf.msgs
	messages int
	updates  []graph.Update
	origin   []int   // per update: index into msgs, -1 for a window expiry
	refused  []bool  // per update, after Apply: refused by the graph
	msgTime  []int64 // per message: its event time, 0 if none
	// updateTimes are the updates' event times, with a window.
	updateTimes []int64
	ranges      map[int][2]int64 // per partition: the batch's first and last offset
	dead        []output.DeadLetter
	events      []output.Event // built from matched by the build stage, in slab
	// diverted counts the events sent to the dead-letter topic as too
	// large; lost and lostLetters the events and dead letters delivery
	// gave up (delivery.go).
	diverted, lost, lostLetters int
	slab                        *eventSlab
	matched                     *matched
	// changedBy maps each edge this batch changed to the message that
	// changed it last, the "source" of the matches that edge completes;
	// nil until the batch's first event needs it (sources).
	changedBy map[edgeKey]int
	// setBy and setTx map each vertex and each transfer id a set of this
	// batch named to the message of its last set: the source of a match
	// that a set changed. nil without sets.
	setBy map[graph.VertexID]int
	setTx map[string]int
	// withheld counts per query the events a limit kept from the output.
	withheld map[int]string
	// initial, for a batch of a new query's initial matches, is their
	// run (initial.go); such a batch has no messages and no offsets.
	initial *initialRun

	// seq numbers the batch on the decoding stage; recycled are the ids
	// it released there, which the step forgets before the batch
	// (engine.Recycler).
	seq      uint32
	recycled []graph.VertexID

	id    uint64        // the batch's number, set by the graph stages
	fixed uint64        // a member's: the batch's number from the cuts topic
	ends  map[int]int64 // a member's: per partition, the offset after the batch

	// logging is the batch's cut on its way to the batch log (batchlog.go),
	// from logFrom to logEnds, and logOffset its offset there once
	// acknowledged (or read back); -1 for a member's batch.
	logging          *ingest.CutWritten
	logFrom, logEnds map[int]int64
	logOffset        int64
	// replayed marks a batch re-formed from a record of the batch log
	// written in its transaction: exactly once, its output is in the topic
	// already (txn.go), and skipped counts the events not written again.
	replayed bool
	skipped  int

	// step is the batch's engine step, and applied what its apply said;
	// its matches go to collected.
	step      *engine.Step
	applied   dyngraph.ApplyStats
	collected *collector

	cut    time.Time                      // when the batcher closed it
	queued time.Time                      // when it entered its current queue
	times  [stageOutput + 1]time.Duration // per stage, indexed like stages
	err    error                          // delivery's, which ends the service
}

// newBatchState starts a batch of buf's messages.
func newBatchState(buf *buffers) *batchState {
	msgs := buf.msgs
	b := &batchState{buf: buf, msgs: msgs, messages: len(msgs), origin: make([]int, 0, len(msgs)),
		msgTime: make([]int64, len(msgs)), ranges: map[int][2]int64{}, cut: time.Now(), logOffset: -1}
	// Messages come in runs of one partition (ingest.MaxChunk), so the map
	// is touched once a run, not once a message.
	for lo := 0; lo < len(msgs); {
		p := msgs[lo].Partition
		r, ok := b.ranges[p]
		if !ok {
			r = [2]int64{msgs[lo].Offset, msgs[lo].Offset}
		}
		for ; lo < len(msgs) && msgs[lo].Partition == p; lo++ {
			r = [2]int64{min(r[0], msgs[lo].Offset), max(r[1], msgs[lo].Offset)}
		}
		b.ranges[p] = r
	}
	return b
}

func (b *batchState) rejected(i int) {
	if b.refused == nil {
		b.refused = make([]bool, len(b.updates))
	}
	b.refused[i] = true
}

type edgeKey struct {
	a, b graph.VertexID
	l    graph.Label
}

func (s *Service) key(e graph.Edge) edgeKey {
	if !s.cfg.Graph.Directed && e.Src > e.Dst {
		e.Src, e.Dst = e.Dst, e.Src
	}
	return edgeKey{e.Src, e.Dst, e.Label}
}

// resolve takes the batch's updates from its decoding, dead-lettering what
// cannot be used: what failed to decode or intern, and with a window an
// edge that has no event time or comes too late for the watermark. A set
// needs no time: it makes no edge for the window to expire. The step puts
// the window's expiries first.
func (s *Service) resolve(b *batchState) {
	windowed := s.core.Expiry() != nil
	b.updates = slices.Grow(b.updates, len(b.msgs))
	b.origin = slices.Grow(b.origin, len(b.msgs))
	for i := range b.msgs {
		d := &b.buf.dec[i]
		if d.Err != nil {
			var de *ingest.DecodeError
			reason := "bad_value"
			if errors.As(d.Err, &de) {
				reason = de.Reason
			}
			s.deadLetter(b, i, reason, d.Err.Error())
			continue
		}
		rec := d.Rec
		if windowed && (rec.Op == graph.Insert || rec.Op == graph.Delete) {
			if rec.Time == 0 {
				s.deadLetter(b, i, "missing_time", `missing field "ts": a windowed stream needs event times`)
				continue
			}
			if s.core.Expiry().Late(rec.Time) {
				s.deadLetter(b, i, "late", fmt.Sprintf("event time %s is older than the window (watermark %s)",
					formatTime(rec.Time), formatTime(s.core.Expiry().Watermark())))
				continue
			}
		}
		if d.ResolveErr != nil {
			reason := "bad_value"
			switch {
			case errors.Is(d.ResolveErr, ingest.ErrSelfLoop):
				reason = "self_loop"
			case errors.Is(d.ResolveErr, graph.ErrUnknownVertex):
				reason = "unknown_vertex"
			}
			s.deadLetter(b, i, reason, d.ResolveErr.Error())
			continue
		}
		b.updates = append(b.updates, d.U)
		b.msgTime[i] = rec.Time
		b.origin = append(b.origin, i)
		if windowed {
			b.updateTimes = append(b.updateTimes, rec.Time)
		}
	}
}

func rejectReason(err error) string {
	var lc *dyngraph.LabelConflictError
	var moved *bundle.MovedError
	switch {
	case errors.As(err, &lc):
		return "label_conflict"
	case errors.As(err, &moved):
		return "transfer_moved"
	case errors.Is(err, dyngraph.ErrSelfLoop):
		return "self_loop"
	case errors.Is(err, graph.ErrUnknownVertex):
		return "unknown_vertex"
	case errors.Is(err, graph.ErrUnknownTransfer):
		return "unknown_transfer"
	}
	return "bad_value"
}

// maxDeadValue caps the value a dead letter carries. An oversized input
// message, base64-encoded, could exceed what the broker takes for the
// dead-letter topic; then the letter could never be written and the input
// would stall behind it. Its offset still finds the original.
const maxDeadValue = 64 << 10

func (s *Service) deadLetter(b *batchState, i int, reason, detail string) {
	m := b.msgs[i]
	value := m.Value
	if len(value) > maxDeadValue {
		value = value[:maxDeadValue]
		detail += fmt.Sprintf(" (value cut to its first %d bytes)", maxDeadValue)
	}
	d := output.NewDeadLetter(detail, s.cfg.Input.Topic, m.Partition, m.Offset, value)
	d.Reason = reason
	b.dead = append(b.dead, d)
	s.met.rejects.WithLabelValues(reason).Inc()
	s.log.Debug().Str("reason", reason).Int("partition", m.Partition).Int64("offset", m.Offset).Msg(detail)
}

// sources fills b.changedBy: which message changed each edge last, and
// setBy and setTx: which set named each vertex and transfer last. Only a
// batch with events needs them, and most batches of a selective query have
// none, so they are built on demand.
func (s *Service) sources(b *batchState) {
	if b.changedBy != nil {
		return
	}
	b.changedBy = make(map[edgeKey]int, len(b.updates))
	for i, u := range b.updates {
		if (b.refused != nil && b.refused[i]) || b.origin[i] < 0 {
			continue
		}
		// Vertex events change no edge, and sets name their vertex or
		// transfer, not an edge.
		switch u.Op {
		case graph.Insert, graph.Delete:
			b.changedBy[s.key(graph.Edge{Src: u.Src, Dst: u.Dst, Label: u.Label})] = b.origin[i]
		case graph.SetVertex:
			if b.setBy == nil {
				b.setBy = make(map[graph.VertexID]int)
			}
			b.setBy[u.Src] = b.origin[i]
		case graph.SetEdge:
			if b.setTx == nil {
				b.setTx = make(map[string]int)
			}
			b.setTx[u.Tx.ID] = b.origin[i]
		}
	}
}

// found is one match as the sink saw it.
type found struct {
	q    int
	sign graph.Sign
	at   int // offset of its vertices in the worker's buffer
	tx   int // offset of its transfers in the worker's buffer; -1: none
	ret  int // offset of its RETURN row in the worker's buffer; -1: none
}

// collector gathers matches per worker without locks. It also enforces
// the per-query limits where matches arrive: once a query has hit one, its
// further matches are counted but not stored, so an explosive pattern costs
// the engine's time but not the service's memory.
type collector struct {
	workers []workerBuf
	// overflow takes the matches of workers beyond len(workers), under mu;
	// no executor has that many today.
	mu       sync.Mutex
	overflow workerBuf
	limits   []queryLimit // per query
	start    time.Time
}

type workerBuf struct {
	found []found
	verts []graph.VertexID
	txs   []transfer
	rets  []graph.Value // RETURN rows
	count [][2]int64    // per query: appeared, disappeared
}

// queryLimit is one query's limits for the batch being collected.
type queryLimit struct {
	max     int64         // matches to store at most; 0: no cap
	maxTime time.Duration // 0: no cap
	seen    atomic.Int64
	hit     atomic.Int32 // 0, or 1 + the index of the limit hit in limitNames
}

var limitNames = []string{"max_matches_per_batch", "max_time"}

// newCollector prepares a collector for queries.
func newCollector(queries []*standing) *collector {
	c := &collector{workers: make([]workerBuf, max(64, 2*runtime.GOMAXPROCS(0))), limits: make([]queryLimit, len(queries)), start: time.Now()}
	for i, st := range queries {
		c.limits[i].max, c.limits[i].maxTime = st.cfg.MaxMatchesPerBatch, st.cfg.MaxTime
	}
	return c
}

func (c *collector) sink(worker, q int, sign graph.Sign, m []graph.VertexID) {
	w, unlock := c.buf(worker)
	defer unlock()
	if !c.count(w, q, sign) {
		return
	}
	w.found = append(w.found, found{q: q, sign: sign, at: len(w.verts), tx: -1, ret: -1})
	w.verts = append(w.verts, m...)
}

// buf is worker's buffer, and what to call when done with it.
func (c *collector) buf(worker int) (*workerBuf, func()) {
	if worker < len(c.workers) {
		return &c.workers[worker], func() {}
	}
	c.mu.Lock()
	return &c.overflow, c.mu.Unlock
}

// count counts a match of query q into w and says whether to keep it: not
// once the query has hit a limit.
func (c *collector) count(w *workerBuf, q int, sign graph.Sign) bool {
	if w.count == nil {
		w.count = make([][2]int64, len(c.limits))
	}
	if sign > 0 {
		w.count[q][0]++
	} else {
		w.count[q][1]++
	}
	if l := &c.limits[q]; l.max > 0 || l.maxTime > 0 {
		if l.hit.Load() != 0 {
			return false
		}
		n := l.seen.Add(1)
		switch {
		case l.max > 0 && n > l.max:
			l.hit.CompareAndSwap(0, 1)
			return false
		case l.maxTime > 0 && n%1024 == 0 && time.Since(c.start) > l.maxTime:
			l.hit.CompareAndSwap(0, 2)
			return false
		}
	}
	return true
}

// stop tells the executor whether query q has hit a limit; it is called
// from the executor's workers.
func (c *collector) stop(q int) bool {
	l := &c.limits[q]
	if l.hit.Load() != 0 {
		return true
	}
	if l.maxTime > 0 && time.Since(c.start) > l.maxTime {
		l.hit.CompareAndSwap(0, 2)
		return true
	}
	return false
}

// all lists the worker buffers, the overflow last.
func (c *collector) all() []*workerBuf {
	out := make([]*workerBuf, 0, len(c.workers)+1)
	for i := range c.workers {
		out = append(out, &c.workers[i])
	}
	return append(out, &c.overflow)
}

// finishMatch builds the events of b's finished match, if its step ran
// one.
func (s *Service) finishMatch(b *batchState) error {
	st := b.step
	if err := st.Err(); err != nil {
		return err
	}
	if !st.Matched {
		return nil
	}
	s.countGPU()
	s.countPlacement(st.Devices)
	s.events(b, b.collected)
	return nil
}

// gpuReads is what the GPU executor says of its reads and its cache.
type gpuReads interface {
	HostBytes() uint64
	Last() kernels.BatchStats
}

// countGPU updates the GPU's series after a batch: zero_copy_bytes_total
// gains what the kernel read from host memory (the words it asked for, so
// an upper bound of the PCIe traffic: the GPU's caches serve repeats), and
// the cache gauges show the last block. The device placement reads nothing
// from the host; it holds the whole graph, but no block.
func (s *Service) countGPU() {
	r, ok := s.gpuOf().(gpuReads)
	if !ok {
		return
	}
	n := r.HostBytes()
	s.met.zeroCopy.Add(float64(n - s.hostBytes))
	s.hostBytes = n
	st := r.Last()
	s.met.cacheBytes.Set(float64(st.CacheBytes))
	s.met.cacheRatio.Set(st.HitRatio())
}

// withhold records that a limit kept some of query q's events from the
// output; the first limit hit is the one reported.
func (b *batchState) withhold(q int, limit string) {
	if b.withheld == nil {
		b.withheld = map[int]string{}
	}
	if _, seen := b.withheld[q]; !seen {
		b.withheld[q] = limit
	}
}

// deliver writes the batch's dead letters and events and waits for their
// acknowledgement, retrying a failing output with backoff: consumption
// stops meanwhile (backpressure), and nothing is committed past undelivered
// output.
//
// Through a Sender it re-sends only what failed, a bounded number of
// times, as the delivery stage does (delivery.go).
func (s *Service) deliver(ctx context.Context, b *batchState) error {
	s.build(b)
	if s.txn != nil {
		// Exactly once, between batches (delivery drained): in a
		// transaction of its own, which moves no offsets.
		return s.transact(ctx, s.txn, nil, []txnBatch{{b: b}})
	}
	if sender, ok := s.sink.(output.Sender); ok {
		w := sent{b: b, pending: sender.Send(ctx, b.dead, b.events)}
		select {
		case <-w.pending.Done():
		case <-ctx.Done():
			return ctx.Err()
		}
		return s.resend(ctx, sender, []sent{w})
	}
	backoff := 100 * time.Millisecond
	for {
		err := s.sink.WriteDead(ctx, b.dead)
		if err == nil {
			err = s.sink.Write(ctx, b.events)
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.log.Warn().Err(err).Dur("retry_in", backoff).Msg("output not acknowledged; retrying")
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}

// observe updates the metrics after a batch's graph stages; the output
// stage is observed when its acknowledgement comes back.
func (s *Service) observe(b *batchState, st dyngraph.ApplyStats) {
	s.met.batches.Inc()
	for i, d := range b.times[:stageOutput] {
		s.met.batchSeconds.WithLabelValues(stages[i]).Observe(d.Seconds())
	}
	s.met.updates.WithLabelValues("insert", "applied").Add(float64(st.Inserted))
	s.met.updates.WithLabelValues("delete", "applied").Add(float64(st.Deleted))
	s.met.updates.WithLabelValues("set", "applied").Add(float64(st.Sets))
	s.met.updates.WithLabelValues("any", "noop").Add(float64(st.Updates - st.Inserted - st.Deleted - st.Sets - st.Rejected))
	s.met.updates.WithLabelValues("any", "rejected").Add(float64(len(b.dead)))
	s.updates.Add(int64(st.Updates))
	s.met.vertices.Set(float64(s.core.Graph().NumVertices()))
	s.met.edges.Set(float64(s.core.Graph().NumEdges()))
	s.met.lag.Set(float64(lag(b.msgs)))
	if !s.lastCkpt.IsZero() {
		s.met.checkpointAge.Set(time.Since(s.lastCkpt).Seconds())
	}
}

// lag is the records behind the partitions' ends, summed over the
// partitions of msgs, as of each partition's last message. The map is
// written once per run of one partition, as messages come in runs.
func lag(msgs []ingest.Message) int64 {
	last := map[int]int64{}
	for i, m := range msgs {
		if i+1 == len(msgs) || msgs[i+1].Partition != m.Partition {
			last[m.Partition] = max(0, m.HighWaterMark-m.Offset-1)
		}
	}
	var total int64
	for _, l := range last {
		total += l
	}
	return total
}
