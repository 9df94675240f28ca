package service

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/output"
)

// Members: several services share one stream (cluster.shards > 0). Each
// member holds the whole graph and applies every update; the matching work
// of a batch is split into S shards, a work unit (an update edge with its
// delta terms) belonging to shard hash(edge) mod S, and each member matches
// and emits only the units of the shards it owns. The union of the
// members' output is one instance's.
//
//   - Batches. Every member reads every input partition and forms batch n
//     from the n-th record of the cuts topic: the input records below its
//     end offsets, partition by partition, in offset order. One member, the
//     owner of shard 0, cuts (by batch.size and batch.linger, as alone) and
//     writes the cuts; all read them back, so all match batch n against the
//     same graph, and batch numbers survive restarts (a checkpoint's batch
//     is its position in the cuts topic). Ends merge by per-partition
//     maximum: a second cutter during a rebalance only makes a batch empty
//     or smaller.
//   - Shards. The members form a group on the coordination topic, whose S
//     partitions are the shards (ingest.ShardGroup). A member commits on
//     each shard it owns the next batch it has to emit, once the batch's
//     output is acknowledged.
//   - Rebalance. A member that gains shard s emits it from the committed
//     batch c_s on. Behind c_s it only starts emitting s there; past it, it
//     reloads its newest checkpoint older than c_s (or starts from the
//     logs' beginning) and replays, emitting s from c_s and the shards it
//     held before only past what it had emitted. Nothing acknowledged is
//     lost, and repeats carry the same keys and batch numbers.
//
// An edge's shard hashes its external names, not its internal ids: the ids
// a member hands out depend on when its recycler ran, so they may differ
// between members.

// member is a service's state as a member; nil when it runs alone.
type member struct {
	shards int
	// emitFrom holds, per shard, the first batch to emit; 0 for a shard
	// not owned. The run loop reads it; takeShards, between sessions,
	// writes it.
	emitFrom []uint64
	// owned are the shards of the current generation, whose emission up
	// to the applied batch is done.
	owned []int
	// acked is the last batch whose output is acknowledged, for the
	// committer.
	acked  atomic.Uint64
	cutter atomic.Bool
}

// errCheckpointTooNew makes a checkpoint load skip a checkpoint at or past
// Service.limit, to an older one.
var errCheckpointTooNew = errors.New("checkpoint too new for the replay")

// runCluster is Run as a member of a cluster.
func (s *Service) runCluster(ctx context.Context) error {
	group, topic, cuts := s.cfg.clusterNames()
	shards := s.cfg.Cluster.Shards
	if err := ingest.EnsureTopic(ctx, s.kafka, topic, shards, nil); err != nil {
		return err
	}
	// The cuts are a few dozen bytes a batch, and a member replaying from
	// an old checkpoint needs every cut since: keep them for ever.
	if err := ingest.EnsureTopic(ctx, s.kafka, cuts, 1, map[string]string{"retention.ms": "-1", "retention.bytes": "-1"}); err != nil {
		return err
	}
	s.member = &member{shards: shards, emitFrom: make([]uint64, shards)}
	sg, err := ingest.NewShardGroup(s.consumerConfig(topic), group, topic)
	if err != nil {
		return err
	}
	defer sg.Close()
	cw, err := ingest.NewCutWriter(s.kafka, cuts)
	if err != nil {
		return err
	}
	defer cw.Close()
	s.setReady(true)
	defer s.setReady(false)
	for ctx.Err() == nil {
		gen, err := await(ctx, s, sg.Next)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			s.log.Warn().Err(err).Msg("member group; retrying")
			continue
		}
		err = s.serveShards(ctx, gen, cw)
		gen.Release()
		if err != nil {
			return err
		}
	}
	return s.shutdown()
}

// serveShards runs sessions over one generation of the member group until
// it ends or ctx is done; a session whose reading failed is started again.
func (s *Service) serveShards(ctx context.Context, gen *ingest.ShardGeneration, cw *ingest.CutWriter) error {
	if err := s.takeShards(ctx, gen); err != nil {
		return err
	}
	s.setActive(len(gen.Shards) > 0)
	s.log.Info().Int32("generation", gen.ID).Ints("shards", gen.Shards).Uint64("batch", s.batch).Bool("cutter", s.member.cutter.Load()).
		Msg("member: matching the shards owned")
	if s.hold != nil {
		select {
		case <-s.hold:
		case <-gen.Ended():
			return nil
		case <-ctx.Done():
			return nil
		}
	}
	for {
		err := s.session(ctx, gen, cw)
		if s.exactly == nil {
			s.commitShards(gen)
		}
		if err != nil {
			return err
		}
		select {
		case <-gen.Ended():
			return nil
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// consumerConfig is the reading and group settings for topic.
func (s *Service) consumerConfig(topic string) ingest.ConsumerConfig {
	return ingest.ConsumerConfig{
		Conn: s.kafka, Topic: topic, SessionTimeout: s.cfg.Input.SessionTimeout,
		Logf: func(format string, args ...any) { s.log.Trace().Msgf(format, args...) },
		Skipped: func(p int, from, to int64) {
			s.log.Error().Str("topic", topic).Int("partition", p).Int64("from", from).Int64("to", to).
				Msg("records [from, to) are gone from the broker (retention): this member's graph now differs from the others'; " +
					"give it a state directory with a newer checkpoint or keep the input longer")
		},
	}
}

// takeShards sets the emission table for gen's shards, and reloads an
// older state when a gained shard's committed batch is already applied.
func (s *Service) takeShards(ctx context.Context, gen *ingest.ShardGeneration) error {
	m := s.member
	applied := s.batch
	emit := make([]uint64, m.shards)
	replay := uint64(math.MaxUint64)
	for _, sh := range gen.Shards {
		c := max(gen.Committed[sh], 1)
		if slices.Contains(m.owned, sh) {
			// Emitted through applied already, or waiting for its first
			// batch to emit.
			emit[sh] = max(c, m.emitFrom[sh], applied+1)
			continue
		}
		emit[sh] = c
		if c <= applied {
			replay = min(replay, c)
		}
	}
	m.emitFrom, m.owned = emit, slices.Clone(gen.Shards)
	m.cutter.Store(slices.Contains(gen.Shards, 0))
	s.met.shards.Set(float64(len(gen.Shards)))
	s.mu.Lock()
	s.progress.Shards = len(gen.Shards)
	s.mu.Unlock()
	if replay == math.MaxUint64 {
		return nil
	}
	if err := s.restoreBefore(replay); err != nil {
		return err
	}
	if err := s.registerConfigured(ctx); err != nil {
		return err
	}
	s.log.Info().Uint64("from_batch", s.batch+1).Uint64("to_batch", applied).Uint64("emit_from", replay).
		Msg("member: replaying batches for shards gained whose output is not all acknowledged")
	return nil
}

// restoreBefore reloads the newest checkpoint of a batch before limit, or
// the empty state, so that batches from limit on are matched again.
func (s *Service) restoreBefore(limit uint64) error {
	s.limit = limit
	defer func() { s.limit = 0 }()
	// What restore's fresh start does not set anew.
	s.ckptPos = map[int]int64{}
	if err := s.restore(); err != nil {
		return fmt.Errorf("member: cannot reload a state older than batch %d: %w", limit, err)
	}
	if s.batch >= limit {
		panic(fmt.Sprintf("BUG: replay for batch %d reloaded batch %d", limit, s.batch))
	}
	// What is acknowledged is now what the reloaded state covers: a
	// gained shard's commit must not claim the batches still to replay.
	s.member.acked.Store(s.batch)
	s.mu.Lock()
	s.progress.Batches = s.batch
	s.progress.Position = maps.Clone(s.position)
	s.mu.Unlock()
	return nil
}

// session reads the input and the cuts from the service's positions and
// runs batches until gen ends, a read fails, or ctx is done. It returns with
// every batch it matched acknowledged or, with an error, abandoned.
func (s *Service) session(ctx context.Context, gen *ingest.ShardGeneration, cw *ingest.CutWriter) error {
	_, _, cutsTopic := s.cfg.clusterNames()
	first, _, err := ingest.Offsets(ctx, s.kafka, cutsTopic, 0)
	if err != nil {
		// The brokers' trouble, which the next session may not have.
		if ctx.Err() == nil {
			s.log.Warn().Err(err).Msg("member: cannot start a session; trying again")
		}
		return nil
	}
	if int64(s.batch) < first {
		return fmt.Errorf("member: the state is at batch %d, but the cuts topic %q starts at offset %d (batch %d): "+
			"the batches in between are gone (retention); keep the cuts topic forever (retention.ms=-1) or start this member from a newer checkpoint",
			s.batch, cutsTopic, first, first+1)
	}
	if err := s.inputReachesBack(ctx); err != nil {
		var te *transientError
		if !errors.As(err, &te) {
			return err
		}
		if ctx.Err() == nil {
			s.log.Warn().Err(err).Msg("member: cannot start a session; trying again")
		}
		return nil
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-gen.Ended():
			cancel()
		case <-sctx.Done():
		}
	}()
	in := make(chan ingest.Message, 4*s.cfg.Batch.Size)
	cuts := make(chan ingest.Message, 64)
	var readers sync.WaitGroup
	var inErr, cutErr error
	readers.Go(func() { inErr = ingest.ReadAll(sctx, s.consumerConfig(s.cfg.Input.Topic), s.position, in) })
	readers.Go(func() {
		cutErr = ingest.ReadAll(sctx, s.consumerConfig(cutsTopic), map[int]int64{0: int64(s.batch)}, cuts)
	})
	dctx, dcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer dcancel()
	defer context.AfterFunc(ctx, func() { time.AfterFunc(shutdownGrace, dcancel) })()
	if err := s.core.ForgetOutstanding(); err != nil {
		return err
	}
	var commits sync.WaitGroup
	if s.exactly != nil {
		tx, err := s.openTxn(ctx, s.exactly, s.memberTxnID())
		if err != nil {
			return nil // ctx ended
		}
		s.txn, s.txnCommit = tx, s.commitShardsIn(gen)
		defer func() {
			tx.Close()
			s.txn, s.txnCommit = nil, nil
		}()
	} else {
		commits.Go(func() { s.committer(sctx, gen) })
	}
	p := s.startPipelineWith(sctx, dctx, func(ctx context.Context, p *pipeline) { s.prepareCuts(ctx, in, cuts, cw, p) })
	err = s.loop(ctx, nil, p)
	if err != nil {
		dcancel()
	}
	cancel()
	p.stop()
	readers.Wait()
	commits.Wait()
	if errors.Is(err, ingest.ErrFenced) {
		// The generation ended under a transaction, which aborted: what
		// this member emitted is what its shards' commits say, so the next
		// generation takes every shard as new, from its commit (takeShards).
		s.member.owned = nil
		s.log.Info().Err(err).Msg("member: the generation ended under a transaction; emitting from the shards' commits")
		return nil
	}
	if err != nil {
		return err
	}
	if rerr := errors.Join(inErr, cutErr); rerr != nil {
		s.log.Warn().Err(rerr).Msg("member: reading stopped; starting again")
	}
	return nil
}

// inputReachesBack checks that the input topic still holds every record
// past the state's position: a member that skipped some would match its
// batches against another graph than the other members.
func (s *Service) inputReachesBack(ctx context.Context) error {
	topic := s.cfg.Input.Topic
	n, err := ingest.Partitions(ctx, s.kafka, topic)
	if err != nil {
		return &transientError{err}
	}
	for p := range n {
		first, _, err := ingest.Offsets(ctx, s.kafka, topic, p)
		if err != nil {
			return &transientError{err}
		}
		if from := s.position[p]; from < first {
			return fmt.Errorf("member: the state (batch %d) goes on from offset %d of topic %q partition %d, but the topic starts at offset %d now (retention): "+
				"start this member from a newer checkpoint (a copy of another member's state directory) or keep the input longer", s.batch, from, topic, p, first)
		}
	}
	return nil
}

// transientError is a broker's failure to answer, which a later session
// may not meet.
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// committer commits the owned shards' next batches every
// commitEvery while the session runs.
func (s *Service) committer(ctx context.Context, gen *ingest.ShardGeneration) {
	t := time.NewTicker(commitEvery)
	defer t.Stop()
	var last uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if a := s.member.acked.Load(); a != last {
			s.commitShardsAt(gen, a)
			last = a
		}
	}
}

// commitEvery is how often a member commits its shards' progress: a shard
// taken over re-emits at most this much of its output.
const commitEvery = 100 * time.Millisecond

// commitShards commits the owned shards' progress as of the last
// acknowledged batch.
func (s *Service) commitShards(gen *ingest.ShardGeneration) {
	s.commitShardsAt(gen, s.member.acked.Load())
}

func (s *Service) commitShardsAt(gen *ingest.ShardGeneration, acked uint64) {
	if err := gen.Commit(s.shardsNext(gen, acked)); err != nil {
		s.log.Debug().Err(err).Msg("member: shard commit refused; the next owner re-emits from the last one")
	}
}

// shardsNext is the next batch to emit of each owned shard once batch
// acked is delivered.
func (s *Service) shardsNext(gen *ingest.ShardGeneration, acked uint64) map[int]uint64 {
	next := map[int]uint64{}
	for _, sh := range gen.Shards {
		// A shard whose emission starts later keeps its commit.
		if e := s.member.emitFrom[sh]; e > 0 && e <= acked+1 {
			next[sh] = acked + 1
		}
	}
	return next
}

// commitShardsIn is the txnCommit of a member in gen: exactly once, a
// shard's commit moves in the transaction of its batches' output, so the
// member that takes the shard over emits from there and repeats nothing.
func (s *Service) commitShardsIn(gen *ingest.ShardGeneration) txnCommit {
	return func(ctx context.Context, tx *output.Txn, last *batchState, inTxn bool) error {
		next := s.shardsNext(gen, last.id)
		if !inTxn {
			if err := gen.Commit(next); err != nil {
				// Nothing was emitted: the next owner emits as little.
				s.log.Debug().Err(err).Msg("member: shard commit refused")
			}
			return nil
		}
		return gen.CommitInTxn(ctx, tx.Client(), tx.ID(), next)
	}
}

// memberTxnID is a member's transactional id for one session: its own,
// since members write at once, and new each session, since two members
// restarted from copies of one state directory must not fence each other.
// The group's generation fences a member that lost its shards (KIP-447);
// what a killed member left open holds read_committed consumers back until
// output.TxnTimeout aborts it.
func (s *Service) memberTxnID() string {
	return s.cfg.transactionalID() + "-member-" + strconv.FormatUint(rand.Uint64(), 36)
}

// ownDelta is the part of delta that this member matches in batch: the
// units of the shards it emits from that batch on. Alone, it is delta.
func (s *Service) ownDelta(batch uint64, delta []graph.Change) []graph.Change {
	m := s.member
	if m != nil {
		own := make([]graph.Change, 0, len(delta)/max(1, len(m.owned))+1)
		for _, c := range delta {
			if e := m.emitFrom[s.shardOf(c.Edge, m.shards)]; e > 0 && e <= batch {
				own = append(own, c)
			}
		}
		delta = own
	}
	if len(s.queries) > 0 {
		s.met.units.Add(float64(len(delta)))
		s.mu.Lock()
		s.progress.Units += int64(len(delta))
		s.mu.Unlock()
	}
	return delta
}

// shardOf is an edge's shard among n, from its ends' external names and
// its label's name; an undirected edge has one shard either way round.
func (s *Service) shardOf(e graph.Edge, n int) int {
	a, b := s.core.IDs().Name(e.Src), s.core.IDs().Name(e.Dst)
	if !s.cfg.Graph.Directed && a > b {
		a, b = b, a
	}
	return shardOfNames(a, b, s.core.Labels().Name(e.Label), n)
}

func shardOfNames(src, dst, label string, n int) int {
	h := fnv.New64a()
	h.Write([]byte(src))
	h.Write([]byte{0})
	h.Write([]byte(dst))
	h.Write([]byte{0})
	h.Write([]byte(label))
	return int(h.Sum64() % uint64(n))
}

// cutState is the decoding stage's view of the input and the cuts as a
// member: the records read past the last batch, and the cuts read but not
// yet formed into batches.
type cutState struct {
	pending map[int][]ingest.Message // per partition, in offset order
	arrived map[int][]time.Time      // per pending record: when it was read
	n       int                      // records in pending
	read    map[int]int64            // per partition: the offset after the last record read
	ends    map[int]int64            // per partition: the end of the last batch formed
	next    int64                    // the cuts topic's offset of the next cut
	queue   []map[int]int64          // cuts read, oldest first
	// proposed is what this member, as the cutter, has cut: it cuts only
	// past it and past ends.
	proposed map[int]int64
	// caughtUp says that every cut that existed when the session started
	// has been read, so a cutter does not cut again what they cover.
	caughtUp bool
	cutsEnd  int64
}

// prepareCuts is the decoding stage of a member: it forms batches from the
// cuts, and as the cutter writes them.
func (s *Service) prepareCuts(ctx context.Context, in, cuts <-chan ingest.Message, cw *ingest.CutWriter, p *pipeline) {
	defer close(p.ready)
	_, _, cutsTopic := s.cfg.clusterNames()
	_, end, err := ingest.Offsets(ctx, s.kafka, cutsTopic, 0)
	if err != nil {
		s.log.Warn().Err(err).Msg("member: cuts topic")
		return
	}
	st := &cutState{pending: map[int][]ingest.Message{}, arrived: map[int][]time.Time{}, read: maps.Clone(s.position), ends: maps.Clone(s.position),
		next: int64(s.batch), proposed: maps.Clone(s.position), cutsEnd: end}
	st.caughtUp = st.next >= end
	decs := s.decoders()
	// deadline is when the records past the cuts must be cut at the latest
	// (batch.linger after the first); zero while there are none.
	var deadline time.Time
	for {
		if len(st.queue) > 0 && st.complete(st.queue[0]) {
			if !p.send(ctx, s.formBatch(p, st, decs)) {
				return
			}
			continue
		}
		deadline = time.Time{}
		if s.member.cutter.Load() && st.caughtUp && len(st.queue) == 0 {
			if n, oldest := st.uncut(); n > 0 {
				deadline = oldest.Add(s.cfg.Batch.Linger)
				if n >= s.cfg.Batch.Size || !time.Now().Before(deadline) {
					ends := st.cutEnds(s.cfg.Batch.Size)
					if err := cw.Write(ctx, nil, ends); err != nil {
						if ctx.Err() == nil {
							s.log.Warn().Err(err).Msg("member: cannot write a cut; reading again")
						}
						return
					}
					st.proposed = mergeEnds(st.proposed, ends)
					continue
				}
			}
		}
		// Reading stops while enough records wait, unless the next cut
		// needs more (backpressure).
		var inC <-chan ingest.Message
		if st.n < 4*s.cfg.Batch.Size || len(st.queue) > 0 {
			inC = in
		}
		var lingerC <-chan time.Time
		if !deadline.IsZero() {
			lingerC = time.After(time.Until(deadline))
		}
		select {
		case m, ok := <-inC:
			if !ok {
				return
			}
			// Take what is already there at channel speed: the checks above
			// cost more than a receive.
			now := time.Now()
			st.add(m, now)
			for more := true; more && st.n < 4*s.cfg.Batch.Size; {
				select {
				case m, ok := <-in:
					if !ok {
						return
					}
					st.add(m, now)
				default:
					more = false
				}
			}
		case m, ok := <-cuts:
			if !ok {
				return
			}
			if m.Offset != st.next {
				s.log.Error().Str("topic", cutsTopic).Int64("offset", m.Offset).Int64("want", st.next).
					Msg("member: the cuts topic skips offsets; its batches cannot be formed alike on every member")
				return
			}
			_, ends, err := ingest.ParseCut(m.Value)
			if err != nil {
				// A cut nobody can read is an empty batch on every member.
				s.log.Error().Err(err).Str("topic", cutsTopic).Int("partition", m.Partition).Int64("offset", m.Offset).
					Msg("member: unreadable cut record; its batch is empty")
				ends = map[int]int64{}
			}
			st.queue = append(st.queue, ends)
			st.next++
			st.caughtUp = st.caughtUp || st.next >= st.cutsEnd
		case <-lingerC:
		case <-ctx.Done():
			return
		}
	}
}

// add takes a record read at now.
func (st *cutState) add(m ingest.Message, now time.Time) {
	st.pending[m.Partition] = append(st.pending[m.Partition], m)
	st.arrived[m.Partition] = append(st.arrived[m.Partition], now)
	st.read[m.Partition] = m.Offset + 1
	st.n++
}

// complete says whether every record below cut's ends has been read.
func (st *cutState) complete(cut map[int]int64) bool {
	for p, e := range cut {
		if e > st.ends[p] && st.read[p] < e {
			return false
		}
	}
	return true
}

// firstUncut is the index in partition p's pending records of the first
// one past what was formed and what this member proposed.
func (st *cutState) firstUncut(p int) int {
	base := max(st.ends[p], st.proposed[p])
	i, _ := slices.BinarySearchFunc(st.pending[p], base, func(m ingest.Message, o int64) int { return compareInt64(m.Offset, o) })
	return i
}

// uncut counts the pending records no cut covers yet, and says when the
// oldest of them arrived.
func (st *cutState) uncut() (int, time.Time) {
	n := 0
	var oldest time.Time
	for p, q := range st.pending {
		i := st.firstUncut(p)
		if i < len(q) {
			n += len(q) - i
			if t := st.arrived[p][i]; oldest.IsZero() || t.Before(oldest) {
				oldest = t
			}
		}
	}
	return n, oldest
}

// cutEnds is the cut a cutter writes: up to size uncut records, taken
// from the partitions in turn so that a backlog of one does not starve
// the others.
func (st *cutState) cutEnds(size int) map[int]int64 {
	parts := slices.Sorted(maps.Keys(st.pending))
	idx := map[int]int{}
	for _, p := range parts {
		idx[p] = st.firstUncut(p)
	}
	ends := map[int]int64{}
	for n := 0; n < size; {
		took := false
		for _, p := range parts {
			if q := st.pending[p]; n < size && idx[p] < len(q) {
				ends[p] = q[idx[p]].Offset + 1
				idx[p]++
				n++
				took = true
			}
		}
		if !took {
			break
		}
	}
	return ends
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// mergeEnds is a with each partition raised to b's end where that is
// higher.
func mergeEnds(a, b map[int]int64) map[int]int64 {
	out := maps.Clone(a)
	if out == nil {
		out = map[int]int64{}
	}
	for p, e := range b {
		out[p] = max(out[p], e)
	}
	return out
}

// formBatch takes the next cut off the queue and decodes its batch: the
// pending records below its ends, partition by partition.
func (s *Service) formBatch(p *pipeline, st *cutState, decs []*ingest.Decoder) *batchState {
	cut := st.queue[0]
	st.queue = st.queue[1:]
	merged := mergeEnds(st.ends, cut)
	var buf *buffers
	select {
	case buf = <-p.free:
	default:
		buf = &buffers{}
	}
	msgs := buf.msgs[:0]
	for _, part := range slices.Sorted(maps.Keys(st.pending)) {
		q := st.pending[part]
		i := 0
		for i < len(q) && q[i].Offset < merged[part] {
			i++
		}
		msgs = append(msgs, q[:i]...)
		st.pending[part] = q[i:]
		st.arrived[part] = st.arrived[part][i:]
		st.n -= i
	}
	st.ends = merged
	buf.msgs = msgs
	b := newBatchState(buf)
	b.fixed = uint64(st.next - int64(len(st.queue)))
	b.ends = maps.Clone(merged)
	s.decodeBatch(b, buf, decs)
	return b
}

// errClusterQueries refuses the HTTP API's query changes to a member: the
// members must match the same queries from the same batch on, which only
// the configuration, read at start by every member, guarantees.
var errClusterQueries = errors.New("a cluster member's queries come from its configuration only (every member must match the same queries from the same batch on); change the configuration of every member")
