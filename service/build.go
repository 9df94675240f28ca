package service

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/internal/par"
	"github.com/gcsm/gcsm/output"
	"github.com/gcsm/gcsm/query"
)

// From matches to events: the run loop accounts for a batch's matches
// (events), and the build stage turns them into output events (build), in
// a deterministic order (query, disappeared before appeared, then vertex
// ids), on all cores, while the batch before is delivered.

// events accounts for a batch's collected matches on the run loop: the
// per-query counts, the limits hit, the metrics. The events themselves are
// built by the next stage (build), so that the serial run loop spends
// nothing per event: on alert-heavy, sorting and building them took over a
// microsecond per event, at five events per update.
func (s *Service) events(b *batchState, c *collector) {
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
		mt := &matched{c: c, queries: slices.Clone(s.queries), batch: b.id, n: kept, bound: s.core.Binder() != nil,
			parts: make([]int32, len(b.msgs)), names: s.core.IDs()}
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
		st.LastLimit = fmt.Sprintf("batch %d: %s", b.id, limit)
		s.met.limitHits.WithLabelValues(st.cfg.Name, limit).Inc()
		var emitted int64
		for _, w := range c.all() {
			for _, f := range w.found {
				if f.q == qi {
					emitted++
				}
			}
		}
		s.log.Warn().Str("query", st.cfg.Name).Str("limit", limit).Uint64("batch", b.id).
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
	bound   bool    // the matches bind transfers
	n       int     // matches kept
	maxN    int     // the most vertices of a query
	parts   []int32 // per message of the batch: its partition (the messages go back to the reader)
	// names are the vertices' names: the service's, or for an initial
	// run those of its copy, whose ids may since have been recycled.
	names *graph.IDs
}

// ref is one kept match, for sorting: pre holds the query, the sign and the
// first vertex, pre2 the next two vertices, so that comparisons of matches
// of up to three vertices read no vertex slice.
type ref struct {
	pre, pre2 uint64
	m         []graph.VertexID
	tx        []transfer    // the bound transfers of a query over transfers
	ret       []graph.Value // the RETURN row of a query with one
}

func newRef(f found, m []graph.VertexID, tx []transfer, ret []graph.Value) ref {
	r := ref{pre: uint64(f.q) << 33, m: m, tx: tx, ret: ret}
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

// compareRefs orders matches by query, disappeared before appeared, vertex
// ids, then bound transfers.
func compareRefs(x, y ref) int {
	if c := compareVertices(x, y); c != 0 || x.tx == nil {
		return c
	}
	return slices.CompareFunc(x.tx, y.tx, func(a, b transfer) int {
		if c := strings.Compare(a.id, b.id); c != 0 {
			return c
		}
		return cmp.Compare(a.ms, b.ms)
	})
}

func compareVertices(x, y ref) int {
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
	if mt.maxN <= 3 && !mt.bound {
		refs = radixRefs(refs)
	} else {
		refs = sortRefs(refs, runtime.GOMAXPROCS(0))
	}

	// The events' bindings are carved from one slab, a run of one query at
	// a time, and their edges are the query's (output.Event.EdgeEnds), so
	// that an event allocates only its key.
	nb := 0
	for _, r := range refs {
		nb += len(r.m)
	}
	s.sources(b)
	eb := newEventBuilder(s, b, mt)
	b.slab = s.slab(len(refs), nb)
	bindings, events := b.slab.bindings[:nb], b.slab.events[:len(refs)]
	for lo := 0; lo < len(refs); {
		q := refs[lo].q()
		hi := lo + 1
		for hi < len(refs) && refs[hi].q() == q {
			hi++
		}
		st := mt.queries[q]
		nv := len(refs[lo].m)
		bs := bindings[:(hi-lo)*nv]
		bindings = bindings[len(bs):]
		par.Each(hi-lo, func(i int) {
			r := refs[lo+i]
			eb.event(&events[lo+i], st, r, bs[i*nv:(i+1)*nv:(i+1)*nv], r.pre&(1<<32) == 0)
		})
		if run := st.initial.Load(); run != nil && !mt.initial {
			run.touch(events[lo:hi])
		}
		lo = hi
	}
	if run := b.initial; run != nil {
		// Batches are built in order: every delta built before this one
		// has been recorded, and none after it is older (initial.go).
		events = run.fresh(events)
		run.st.initial.Store(nil)
	}
	b.events = events
}

// eventSlab is the memory of a batch's events and their bindings. A batch
// taken back gives its slab to a later one (Service.slabs): built in fresh
// memory, the events paid for the first touch of every page, which on the
// GPU machine took most of the build stage on alert-heavy (21,000 events a
// batch).
type eventSlab struct {
	events   []output.Event
	bindings []output.Binding
}

// slab is a slab for n events of nb bindings in all: a recycled one, grown
// if need be, or a new one.
func (s *Service) slab(n, nb int) *eventSlab {
	var sl *eventSlab
	select {
	case sl = <-s.slabs:
	default:
		sl = &eventSlab{}
	}
	if cap(sl.events) < n {
		sl.events = make([]output.Event, n+n/4)
	}
	if cap(sl.bindings) < nb {
		sl.bindings = make([]output.Binding, nb+nb/4)
	}
	return sl
}

// recycleSlab gives b's slab to later batches once b is taken back: the
// sink keeps nothing of the events after a Write or Send (output.Sink).
func (s *Service) recycleSlab(b *batchState) {
	if b.slab == nil {
		return
	}
	b.events = nil
	select {
	case s.slabs <- b.slab:
	default:
	}
	b.slab = nil
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
				q := mt.queries[f.q].q
				n := q.N()
				var tx []transfer
				if f.tx >= 0 {
					nb := len(q.Bindings)
					tx = w.txs[f.tx : f.tx+nb : f.tx+nb]
				}
				var ret []graph.Value
				if f.ret >= 0 {
					ni := len(q.Return.Items)
					ret = w.rets[f.ret : f.ret+ni : f.ret+ni]
				}
				out[i] = newRef(f, w.verts[f.at:f.at+n:f.at+n], tx, ret)
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

// event builds the event of one match into ev and its bindings into match,
// sized by the caller for st. It allocates only the key, and a message's
// event time the first time an event names it.
func (eb *eventBuilder) event(ev *output.Event, st *standing, r ref, match []output.Binding, disappeared bool) {
	s, b, mt := eb.s, eb.b, eb.mt
	m, tx := r.m, r.tx
	*ev = output.Event{Query: st.cfg.Name, Change: output.Appeared, Batch: mt.batch, Initial: mt.initial}
	if disappeared {
		ev.Change = output.Disappeared
	}
	var nameBuf, canonBuf [8]string // on the stack for queries of up to 8 vertices
	var scratch [8]graph.VertexID
	names := nameBuf[:0]
	for _, v := range m {
		names = append(names, mt.names.Name(v))
	}
	m, names = st.canonical(m, names, scratch[:0], canonBuf[:0])
	for i := range m {
		match[i] = output.Binding{Var: st.vars[i], ID: names[i]}
	}
	ev.Match = match
	src := -1
	for _, e := range st.q.Edges {
		if e.Label == graph.Wildcard || len(b.changedBy) == 0 {
			continue
		}
		keys, nk := s.edgeKeys(m[e.A], m[e.B], e)
		for _, k := range keys[:nk] {
			if o, ok := b.changedBy[k]; ok && o > src {
				src = o
			}
		}
	}
	for _, v := range m {
		if o, ok := b.setBy[v]; ok && o > src {
			src = o
		}
	}
	for _, t := range tx {
		if o, ok := b.setTx[t.id]; ok && o > src {
			src = o
		}
	}
	ev.EdgeEnds, ev.EdgeLabels = st.edgeEnds, st.edgeLabels
	if r.ret != nil {
		ev.Return = returnFields(st.q.Return, r.ret, names)
	}
	if tx == nil {
		ev.Key = output.Key(st.cfg.Name, st.form, ev.Match)
	} else {
		eb.transfers(ev, st, tx)
	}
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

// returnFields renders a RETURN row: a bare vertex variable as its
// account's name (names, in query-vertex order), any other value as
// query.AppendJSONValue writes it. The values share one buffer.
func returnFields(r *query.Returns, row []graph.Value, names []string) []output.Field {
	fields := make([]output.Field, len(row))
	var buf []byte
	ends := make([]int, len(row))
	for i, v := range row {
		if u := r.Items[i].Vertex; u >= 0 {
			buf = query.AppendJSONValue(buf, graph.StringValue(names[u]))
		} else {
			buf = query.AppendJSONValue(buf, v)
		}
		ends[i] = len(buf)
	}
	at := 0
	for i := range row {
		fields[i] = output.Field{Name: r.Items[i].Name, Value: buf[at:ends[i]:ends[i]]}
		at = ends[i]
	}
	return fields
}

// transfers names the bound transfers of ev, and keys ev by its vertices
// and its transfers' ids: a transfer-level match is its own alert. The key
// lists the ids as a set, so that it does not depend on which automorphic
// map the engine reported.
func (eb *eventBuilder) transfers(ev *output.Event, st *standing, tx []transfer) {
	ev.Transfers = make([]output.Transfer, len(tx))
	kb := make([]output.Binding, 0, len(ev.Match)+len(tx))
	kb = append(kb, ev.Match...)
	for k, t := range tx {
		ev.Transfers[k] = output.Transfer{Var: st.bindVars[k], ID: t.id}
		if t.ms != 0 {
			ev.Transfers[k].Time = formatTime(t.ms)
		}
		// "-" cannot begin a vertex variable, so these never meet one.
		kb = append(kb, output.Binding{Var: "-", ID: t.id})
	}
	ev.Key = output.Key(st.cfg.Name, st.form, kb)
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
