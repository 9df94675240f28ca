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

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/kernels"
	"github.com/gcsm/gcsm/output"
	"github.com/gcsm/gcsm/query"
)

// process runs a decoded batch through the graph stages: window expiry,
// resolving ids, apply, match (building the events) and reorganize. It
// returns only errors that end the service; bad input becomes dead letters.
func (s *Service) process(b *batchState) error {
	t0 := time.Now()
	if err := s.forget(b.recycled); err != nil {
		return err
	}
	s.resolve(b)
	t1 := time.Now()

	delta, rejects, stats, err := s.g.Apply(b.updates)
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	for _, r := range rejects {
		b.rejected(r.Index)
		if o := b.origin[r.Index]; o >= 0 {
			s.deadLetter(b, o, rejectReason(r.Err), r.Err.Error())
		}
	}
	s.track(b)
	t2 := time.Now()

	s.batch++
	b.id = s.batch
	if err := s.match(b, delta); err != nil {
		return fmt.Errorf("match: %w", err)
	}
	t3 := time.Now()
	s.g.Reorganize()
	if s.recycle != nil {
		s.leftAlone(b, delta)
	}
	t4 := time.Now()

	b.times[stageDecode] += t1.Sub(t0)
	b.times[stageApply] = t2.Sub(t1)
	b.times[stageMatch] = t3.Sub(t2)
	b.times[stageReorganize] = t4.Sub(t3)
	s.observe(b, stats)
	return nil
}

// batchState is one batch on its way through the pipeline.
type batchState struct {
	buf      *buffers         // msgs and their decoding, until the graph stages are done
	msgs     []ingest.Message // buf.msgs
	messages int
	updates  []graph.Update
	origin   []int            // per update: index into msgs, -1 for a window expiry
	refused  []bool           // per update, after Apply: refused by the graph
	msgTime  []int64          // per message: its event time, 0 if none
	ranges   map[int][2]int64 // per partition: the batch's first and last offset
	dead     []output.DeadLetter
	events   []output.Event // built from matched by the build stage
	matched  *matched
	// changedBy maps each edge this batch changed to the message that
	// changed it last, the "source" of the matches that edge completes;
	// nil until the batch's first event needs it (sources).
	changedBy map[edgeKey]int
	// withheld counts per query the events a limit kept from the output.
	withheld map[int]string

	// seq numbers the batch on the decoding stage; recycled are the ids
	// it released there, which the graph must forget before the batch, and
	// isolated the vertices the batch left without edges (recycle.go).
	seq      uint32
	recycled []graph.VertexID
	isolated []graph.VertexID

	id     uint64                         // the batch's number, set by the graph stages
	cut    time.Time                      // when the batcher closed it
	queued time.Time                      // when it entered its current queue
	times  [stageOutput + 1]time.Duration // per stage, indexed like stages
	err    error                          // delivery's, which ends the service
}

// newBatchState starts a batch of buf's messages.
func newBatchState(buf *buffers) *batchState {
	msgs := buf.msgs
	b := &batchState{buf: buf, msgs: msgs, messages: len(msgs), origin: make([]int, 0, len(msgs)),
		msgTime: make([]int64, len(msgs)), ranges: map[int][2]int64{}, cut: time.Now()}
	for _, m := range msgs {
		r, ok := b.ranges[m.Partition]
		if !ok {
			r = [2]int64{m.Offset, m.Offset}
		}
		b.ranges[m.Partition] = [2]int64{min(r[0], m.Offset), max(r[1], m.Offset)}
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
// cannot be used, and puts the window's expiries first: an edge that
// expires and is sent again in this batch is then refreshed, not deleted.
func (s *Service) resolve(b *batchState) {
	if s.expiry != nil {
		n := len(b.updates)
		b.updates = s.expiry.Expire(b.updates)
		for range b.updates[n:] {
			b.origin = append(b.origin, -1)
		}
		if k := len(b.updates) - n; k > 0 {
			s.met.updates.WithLabelValues("expire", "applied").Add(float64(k))
		}
	}
	for i := range b.msgs {
		d := &b.buf.dec[i]
		if d.err != nil {
			var de *ingest.DecodeError
			reason := "bad_value"
			if errors.As(d.err, &de) {
				reason = de.Reason
			}
			s.deadLetter(b, i, reason, d.err.Error())
			continue
		}
		rec := d.rec
		if s.expiry != nil && rec.Op != graph.AddVertex {
			if rec.Time == 0 {
				s.deadLetter(b, i, "missing_time", `missing field "ts": a windowed stream needs event times`)
				continue
			}
			if s.expiry.Late(rec.Time) {
				s.deadLetter(b, i, "late", fmt.Sprintf("event time %s is older than the window (watermark %s)",
					formatTime(rec.Time), formatTime(s.expiry.Watermark())))
				continue
			}
		}
		if d.resolveErr != nil {
			reason := "bad_value"
			if errors.Is(d.resolveErr, ingest.ErrSelfLoop) {
				reason = "self_loop"
			}
			s.deadLetter(b, i, reason, d.resolveErr.Error())
			continue
		}
		b.updates = append(b.updates, d.u)
		b.msgTime[i] = rec.Time
		b.origin = append(b.origin, i)
	}
}

func rejectReason(err error) string {
	var lc *dyngraph.LabelConflictError
	switch {
	case errors.As(err, &lc):
		return "label_conflict"
	case errors.Is(err, dyngraph.ErrSelfLoop):
		return "self_loop"
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
	b.dead = append(b.dead, output.NewDeadLetter(detail, s.cfg.Input.Topic, m.Partition, m.Offset, value))
	s.met.rejects.WithLabelValues(reason).Inc()
	s.log.Debug().Str("reason", reason).Int("partition", m.Partition).Int64("offset", m.Offset).Msg(detail)
}

// track records the window's last-seen times of the edges the batch
// changed.
func (s *Service) track(b *batchState) {
	if s.expiry == nil {
		return
	}
	for i, u := range b.updates {
		if u.Op == graph.AddVertex || (b.refused != nil && b.refused[i]) || b.origin[i] < 0 {
			continue
		}
		e := graph.Edge{Src: u.Src, Dst: u.Dst, Label: u.Label}
		if u.Op == graph.Insert {
			s.expiry.Observe(e, b.msgTime[b.origin[i]])
		} else {
			s.expiry.Forget(e)
		}
	}
}

// sources fills b.changedBy: which message changed each edge last. Only a
// batch with events needs it, and most batches of a selective query have
// none, so it is built on demand.
func (s *Service) sources(b *batchState) {
	if b.changedBy != nil {
		return
	}
	b.changedBy = make(map[edgeKey]int, len(b.updates))
	for i, u := range b.updates {
		if u.Op == graph.AddVertex || (b.refused != nil && b.refused[i]) || b.origin[i] < 0 {
			continue
		}
		b.changedBy[s.key(graph.Edge{Src: u.Src, Dst: u.Dst, Label: u.Label})] = b.origin[i]
	}
}

// found is one match as the sink saw it.
type found struct {
	q    int
	sign graph.Sign
	at   int // offset of its vertices in the worker's buffer
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
	count [][2]int64 // per query: appeared, disappeared
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
	w := &c.overflow
	if worker < len(c.workers) {
		w = &c.workers[worker]
	} else {
		c.mu.Lock()
		defer c.mu.Unlock()
	}
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
			return
		}
		n := l.seen.Add(1)
		switch {
		case l.max > 0 && n > l.max:
			l.hit.CompareAndSwap(0, 1)
			return
		case l.maxTime > 0 && n%1024 == 0 && time.Since(c.start) > l.maxTime:
			l.hit.CompareAndSwap(0, 2)
			return
		}
	}
	w.found = append(w.found, found{q: q, sign: sign, at: len(w.verts)})
	w.verts = append(w.verts, m...)
}

// stoppable is an executor that can abandon a query mid-batch (the CPU
// executor; the GPU's kernels run each launch to its end).
type stoppable interface{ SetStop(stop func(q int) bool) }

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

// match runs the queries on the batch and turns their matches into events.
func (s *Service) match(b *batchState, delta []graph.Change) error {
	if len(s.queries) == 0 || len(delta) == 0 {
		return nil
	}
	c := newCollector(s.queries)
	if st, ok := s.matcher.(stoppable); ok {
		// The engine abandons a query once a limit is hit, instead of
		// finishing matches that would only be counted.
		st.SetStop(c.stop)
		defer st.SetStop(nil)
	}
	if _, err := s.matcher.Match(s.g, delta, s.compiled(), incremental.Enumerate, c.sink); err != nil {
		return err
	}
	s.countGPU()
	s.countPlacement()
	s.events(b, c, false)
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

// events accounts for a batch's collected matches on the run loop: the
// per-query counts, the limits hit, the metrics. The events themselves are
// built by the next stage (build), so that the serial run loop spends
// nothing per event: on alert-heavy, sorting and building them took over a
// microsecond per event, at five events per update.
func (s *Service) events(b *batchState, c *collector, initial bool) {
	found := make([][2]int64, len(s.queries)) // appeared, disappeared
	kept := 0
	for _, w := range c.all() {
		kept += len(w.found)
		for q, n := range w.count {
			found[q][0] += n[0]
			found[q][1] += n[1]
		}
	}
	for q := range c.limits {
		if h := c.limits[q].hit.Load(); h != 0 {
			b.withhold(q, limitNames[h-1])
		}
	}
	if kept > 0 {
		mt := &matched{c: c, queries: slices.Clone(s.queries), batch: s.batch, initial: initial, n: kept,
			parts: make([]int32, len(b.msgs))}
		for _, st := range s.queries {
			mt.maxN = max(mt.maxN, st.q.N())
		}
		for i, m := range b.msgs {
			mt.parts[i] = int32(m.Partition)
		}
		b.matched = mt
	}
	for qi, n := range found {
		st := s.queries[qi]
		st.Appeared += n[0]
		st.Disappeared += n[1]
		if n[0] > 0 {
			s.met.matches.WithLabelValues(st.cfg.Name, output.Appeared).Add(float64(n[0]))
		}
		if n[1] > 0 {
			s.met.matches.WithLabelValues(st.cfg.Name, output.Disappeared).Add(float64(n[1]))
		}
	}
	for qi, limit := range b.withheld {
		st := s.queries[qi]
		st.LimitHits++
		st.LastLimit = fmt.Sprintf("batch %d: %s", s.batch, limit)
		s.met.limitHits.WithLabelValues(st.cfg.Name, limit).Inc()
		var emitted int64
		for _, w := range c.all() {
			for _, f := range w.found {
				if f.q == qi {
					emitted++
				}
			}
		}
		s.log.Warn().Str("query", st.cfg.Name).Str("limit", limit).Uint64("batch", s.batch).
			Int64("emitted", emitted).Msg("query limit hit: further matches of this batch were counted but not emitted")
	}
	s.publishQueries()
}

// matched is a batch's kept matches, handed from the run loop to the
// build stage, which builds their events. The collector stored at most
// each query's limit, so every kept match is emitted.
type matched struct {
	c       *collector
	queries []*standing // the service's queries when the batch was matched, indexed like found.q
	batch   uint64
	initial bool
	n       int     // matches kept
	maxN    int     // the most vertices of a query
	parts   []int32 // per message of the batch: its partition (the messages go back to the reader)
}

// ref is one kept match, for sorting: pre holds the query, the sign and the
// first vertex, pre2 the next two vertices, so that comparisons of matches
// of up to three vertices read no vertex slice.
type ref struct {
	pre, pre2 uint64
	m         []graph.VertexID
}

func newRef(f found, m []graph.VertexID) ref {
	r := ref{pre: uint64(f.q) << 33, m: m}
	if f.sign > 0 { // disappeared before appeared
		r.pre |= 1 << 32
	}
	if len(m) > 0 {
		r.pre |= uint64(m[0])
	}
	if len(m) > 1 {
		r.pre2 = uint64(m[1]) << 32
	}
	if len(m) > 2 {
		r.pre2 |= uint64(m[2])
	}
	return r
}

// q is the query's index.
func (r ref) q() int { return int(r.pre >> 33) }

// compareRefs orders matches by query, disappeared before appeared, then
// vertex ids.
func compareRefs(x, y ref) int {
	if x.pre != y.pre {
		if x.pre < y.pre {
			return -1
		}
		return 1
	}
	if x.pre2 != y.pre2 {
		if x.pre2 < y.pre2 {
			return -1
		}
		return 1
	}
	if len(x.m) <= 3 {
		return 0
	}
	return slices.Compare(x.m[3:], y.m[3:])
}

// build turns the batch's kept matches into b.events, in a deterministic
// order (query, disappeared before appeared, then vertex ids), on all
// cores. It runs on the build stage (or in deliver, for a new query's
// initial matches); what it reads is the batch's own or does not change
// while the batch is in flight (queries are added and removed only once
// delivery is drained), and ids' names are safe to read while later
// batches intern new ones.
func (s *Service) build(b *batchState) {
	mt := b.matched
	if mt == nil {
		return
	}
	b.matched = nil
	refs := mt.gather()
	if mt.maxN <= 3 {
		refs = radixRefs(refs)
	} else {
		refs = sortRefs(refs, runtime.GOMAXPROCS(0))
	}

	// The events' bindings and edges are carved from two slabs, a run of
	// one query at a time, so that an event allocates only its key.
	nb, ne := 0, 0
	for _, r := range refs {
		st := mt.queries[r.q()]
		nb += len(r.m)
		ne += len(st.q.Edges)
	}
	s.sources(b)
	eb := newEventBuilder(s, b, mt)
	bindings := make([]output.Binding, nb)
	edges := make([][3]string, ne)
	events := make([]output.Event, len(refs))
	for lo := 0; lo < len(refs); {
		q := refs[lo].q()
		hi := lo + 1
		for hi < len(refs) && refs[hi].q() == q {
			hi++
		}
		st := mt.queries[q]
		nv, nq := len(refs[lo].m), len(st.q.Edges)
		bs, es := bindings[:(hi-lo)*nv], edges[:(hi-lo)*nq]
		bindings, edges = bindings[len(bs):], edges[len(es):]
		parallel(hi-lo, func(i int) {
			r := refs[lo+i]
			eb.event(&events[lo+i], st, r.m, bs[i*nv:(i+1)*nv:(i+1)*nv], es[i*nq:(i+1)*nq:(i+1)*nq], r.pre&(1<<32) == 0)
		})
		lo = hi
	}
	b.events = events
}

// gather lists the kept matches of every worker buffer, each buffer's on
// its own goroutine.
func (mt *matched) gather() []ref {
	bufs := mt.c.all()
	refs := make([]ref, mt.n)
	var wg sync.WaitGroup
	at := 0
	for _, w := range bufs {
		if len(w.found) == 0 {
			continue
		}
		out := refs[at : at+len(w.found)]
		at += len(w.found)
		wg.Go(func() {
			for i, f := range w.found {
				n := mt.queries[f.q].q.N()
				out[i] = newRef(f, w.verts[f.at:f.at+n:f.at+n])
			}
		})
	}
	wg.Wait()
	return refs
}

// sortRefs sorts refs by compareRefs: a chunk per worker, then merged
// pairwise, each round's merges in parallel. It returns the sorted slice,
// which may be a new one.
func sortRefs(refs []ref, workers int) []ref {
	if len(refs) < 4096 || workers == 1 {
		slices.SortFunc(refs, compareRefs)
		return refs
	}
	width := (len(refs) + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < len(refs); lo += width {
		part := refs[lo:min(lo+width, len(refs))]
		wg.Go(func() { slices.SortFunc(part, compareRefs) })
	}
	wg.Wait()
	tmp := make([]ref, len(refs))
	for ; width < len(refs); width *= 2 {
		for lo := 0; lo < len(refs); lo += 2 * width {
			mid, hi := min(lo+width, len(refs)), min(lo+2*width, len(refs))
			wg.Go(func() { mergeRefs(tmp[lo:hi], refs[lo:mid], refs[mid:hi]) })
		}
		wg.Wait()
		refs, tmp = tmp, refs
	}
	return refs
}

// radixRefs sorts refs of matches of up to three vertices, whose (pre,
// pre2) is their whole order, by a radix sort of those 128 bits, a byte at
// a time, skipping the bytes that all refs share (the high bytes of ids
// among fewer than 2^24 vertices, of the query index). It returns the
// sorted slice, which may be a new one. On alert-heavy's triangles the
// comparison sort took a quarter microsecond per event.
func radixRefs(refs []ref) []ref {
	if len(refs) < 64 {
		slices.SortFunc(refs, compareRefs)
		return refs
	}
	var or0, or1 uint64
	and0, and1 := ^uint64(0), ^uint64(0)
	for i := range refs {
		or0, and0 = or0|refs[i].pre2, and0&refs[i].pre2
		or1, and1 = or1|refs[i].pre, and1&refs[i].pre
	}
	varies := [2]uint64{or0 ^ and0, or1 ^ and1}
	tmp := make([]ref, len(refs))
	for pass := range 16 {
		word, shift := pass/8, uint(pass%8)*8
		if varies[word]>>shift&0xff == 0 {
			continue
		}
		var at [256]int
		if word == 0 {
			for i := range refs {
				at[byte(refs[i].pre2>>shift)]++
			}
		} else {
			for i := range refs {
				at[byte(refs[i].pre>>shift)]++
			}
		}
		sum := 0
		for d, n := range at {
			at[d] = sum
			sum += n
		}
		if word == 0 {
			for i := range refs {
				d := byte(refs[i].pre2 >> shift)
				tmp[at[d]] = refs[i]
				at[d]++
			}
		} else {
			for i := range refs {
				d := byte(refs[i].pre >> shift)
				tmp[at[d]] = refs[i]
				at[d]++
			}
		}
		refs, tmp = tmp, refs
	}
	return refs
}

// mergeRefs merges the sorted a and b into dst, which holds both.
func mergeRefs(dst, a, b []ref) {
	i, j, k := 0, 0, 0
	for i < len(a) && j < len(b) {
		if compareRefs(b[j], a[i]) < 0 {
			dst[k] = b[j]
			j++
		} else {
			dst[k] = a[i]
			i++
		}
		k++
	}
	k += copy(dst[k:], a[i:])
	copy(dst[k:], b[j:])
}

// decoded is one message's decoding and its interned update.
type decoded struct {
	rec        ingest.Record
	err        error // decoding's
	u          graph.Update
	resolveErr error // interning's (ingest.Resolver.Resolve)
}

// internAll resolves the decoded records of a batch into updates. It runs
// in the decoding stage, ahead of the run loop, and in message order, as
// new ids are numbered in the order they are seen. A record the run loop
// will refuse for what it says alone (no event time on a windowed stream)
// is not interned; one it finds late is, as lateness depends on the batches
// before it: an id so interned is a vertex without edges.
func (s *Service) internAll(b *batchState) {
	s.interning.Lock()
	defer s.interning.Unlock()
	windowed := s.cfg.Window.Size > 0
	r := s.recycle
	if r != nil {
		b.recycled = r.release(s.ids)
		r.seq++
		b.seq = r.seq
	}
	for i := range b.buf.dec {
		d := &b.buf.dec[i]
		d.u, d.resolveErr = graph.Update{}, nil
		if d.err != nil || (windowed && d.rec.Op != graph.AddVertex && d.rec.Time == 0) {
			continue
		}
		d.u, d.resolveErr = s.resolver.Resolve(d.rec)
		if r != nil && d.resolveErr == nil {
			r.named(d.u.Src)
			if d.u.Op != graph.AddVertex {
				r.named(d.u.Dst)
			}
		}
	}
}

// decodeAll decodes msgs into out, one decoder per worker.
func decodeAll(msgs []ingest.Message, out []decoded, decs []*ingest.Decoder) {
	if len(msgs) < 512 || len(decs) == 1 {
		for i, m := range msgs {
			out[i].rec, out[i].err = decs[0].Decode(m.Value)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for _, d := range decs {
		wg.Go(func() {
			for {
				lo := int(next.Add(64)) - 64
				if lo >= len(msgs) {
					return
				}
				for i := lo; i < min(lo+64, len(msgs)); i++ {
					out[i].rec, out[i].err = d.Decode(msgs[i].Value)
				}
			}
		})
	}
	wg.Wait()
}

// parallel calls f(0..n-1) on all cores; small n stays on the caller's
// goroutine, where starting goroutines would cost more than it saves.
func parallel(n int, f func(i int)) {
	workers := runtime.GOMAXPROCS(0)
	if n < 512 || workers == 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				lo := int(next.Add(64)) - 64
				if lo >= n {
					return
				}
				for i := lo; i < min(lo+64, n); i++ {
					f(i)
				}
			}
		})
	}
	wg.Wait()
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

// eventBuilder holds what a batch's events share: one Source per partition
// and each source message's event time, formatted once.
type eventBuilder struct {
	s       *Service
	b       *batchState
	mt      *matched
	sources map[int32]*output.Source // per partition; read-only while events are built
	times   []atomic.Pointer[string] // per message: its event time, set on first use
}

func newEventBuilder(s *Service, b *batchState, mt *matched) *eventBuilder {
	eb := &eventBuilder{s: s, b: b, mt: mt, sources: make(map[int32]*output.Source, len(b.ranges))}
	for p, r := range b.ranges {
		eb.sources[int32(p)] = &output.Source{Topic: s.cfg.Input.Topic, Partition: p, FromOffset: r[0], ToOffset: r[1]}
	}
	if len(b.msgTime) > 0 {
		eb.times = make([]atomic.Pointer[string], len(b.msgTime))
	}
	return eb
}

// event builds the event of one match into ev, its bindings into match and
// its edges into edges, sized by the caller for st. It allocates only the
// key, and a message's event time the first time an event names it.
func (eb *eventBuilder) event(ev *output.Event, st *standing, m []graph.VertexID, match []output.Binding, edges [][3]string, disappeared bool) {
	s, b, mt := eb.s, eb.b, eb.mt
	*ev = output.Event{Query: st.cfg.Name, Change: output.Appeared, Batch: mt.batch, Initial: mt.initial}
	if disappeared {
		ev.Change = output.Disappeared
	}
	var nameBuf, canonBuf [8]string // on the stack for queries of up to 8 vertices
	var scratch [8]graph.VertexID
	names := nameBuf[:0]
	for _, v := range m {
		names = append(names, s.ids.Name(v))
	}
	m, names = st.canonical(m, names, scratch[:0], canonBuf[:0])
	for i := range m {
		match[i] = output.Binding{Var: st.vars[i], ID: names[i]}
	}
	ev.Match = match
	src := -1
	for i, e := range st.q.Edges {
		edges[i] = [3]string{match[e.A].ID, match[e.B].ID, st.edgeLabels[i]}
		if e.Label == graph.Wildcard {
			continue
		}
		keys, nk := s.edgeKeys(m[e.A], m[e.B], e)
		for _, k := range keys[:nk] {
			if o, ok := b.changedBy[k]; ok && o > src {
				src = o
			}
		}
	}
	ev.Edges = edges
	ev.Key = output.Key(st.cfg.Name, ev.Match)
	if src >= 0 {
		ev.Source = eb.sources[mt.parts[src]]
		if t := b.msgTime[src]; t != 0 {
			p := eb.times[src].Load()
			if p == nil {
				f := formatTime(t)
				eb.times[src].CompareAndSwap(nil, &f)
				p = eb.times[src].Load()
			}
			ev.EventTime = *p
		}
	}
}

// edgeKeys are the data edges that can stand for query edge e between a and
// b: one, or both orientations for an undirected query edge on a directed
// graph. They come back in an array, not a slice, which would cost an
// allocation per query edge of every event.
func (s *Service) edgeKeys(a, b graph.VertexID, e query.QEdge) (keys [2]edgeKey, n int) {
	keys[0] = s.key(graph.Edge{Src: a, Dst: b, Label: e.Label})
	if s.cfg.Graph.Directed && !e.Directed {
		keys[1] = s.key(graph.Edge{Src: b, Dst: a, Label: e.Label})
		return keys, 2
	}
	return keys, 1
}

// rfc3339Milli is formatTime's layout, which time.Format takes outside years
// 0 to 9999.
const rfc3339Milli = "2006-01-02T15:04:05.000Z07:00"

// formatTime writes ms as rfc3339Milli in UTC. It writes the digits by hand
// because time.Format, parsing its layout on every call, took a third of the
// time of building an event (alert-heavy BenchmarkService).
func formatTime(ms int64) string {
	t := time.UnixMilli(ms).UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format(rfc3339Milli)
	}
	hour, minute, sec := t.Clock()
	var b [len("2006-01-02T15:04:05.000Z")]byte
	digits := func(at, v, n int) {
		for i := at + n - 1; i >= at; i-- {
			b[i] = byte('0' + v%10)
			v /= 10
		}
	}
	digits(0, year, 4)
	b[4] = '-'
	digits(5, int(month), 2)
	b[7] = '-'
	digits(8, day, 2)
	b[10] = 'T'
	digits(11, hour, 2)
	b[13] = ':'
	digits(14, minute, 2)
	b[16] = ':'
	digits(17, sec, 2)
	b[19] = '.'
	digits(20, t.Nanosecond()/1e6, 3)
	b[23] = 'Z'
	return string(b[:])
}

// deliver writes the batch's dead letters and events and waits for their
// acknowledgement, retrying a failing output with backoff: consumption
// stops meanwhile (backpressure), and nothing is committed past undelivered
// output.
func (s *Service) deliver(ctx context.Context, b *batchState) error {
	s.build(b)
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
	s.met.updates.WithLabelValues("any", "noop").Add(float64(st.Updates - st.Inserted - st.Deleted - st.Rejected))
	s.met.updates.WithLabelValues("any", "rejected").Add(float64(len(b.dead)))
	s.met.vertices.Set(float64(s.g.NumVertices()))
	s.met.edges.Set(float64(s.g.NumEdges()))
	lag := map[int]int64{}
	for _, m := range b.msgs {
		lag[m.Partition] = max(0, m.HighWaterMark-m.Offset-1)
	}
	var total int64
	for _, l := range lag {
		total += l
	}
	s.met.lag.Set(float64(total))
	if !s.lastCkpt.IsZero() {
		s.met.checkpointAge.Set(time.Since(s.lastCkpt).Seconds())
	}
}
