package servicebench

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"time"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/engine"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/query"
)

// baseline is gcsm bench service's engine alone: the stream through the
// service's own core with no Kafka, twice.
//
//   - As the service runs it: the same message bytes, held in memory,
//     decoded and interned on a stage of their own while the core steps
//     the batch before, each step's match overlapping the next apply where
//     the matcher can. Interning is inside the clock. The service's ratio
//     is taken against this run, so that the Kafka path's cost (reading,
//     batching, building and delivering events, the batch log, commits) is
//     the only difference.
//   - Serially: the updates resolved before the clock starts, each step
//     finished before the next, as replay did before the core could
//     overlap: the engine's own speed, reported beside it.
//
// Neither run has a window (--window): the core's expiry is the service's,
// but the baseline measures matching, not event time.
func (o *Options) baseline(evs []bench.TransferEvent) (*EngineResult, error) {
	r, err := o.baselineRun(evs, false)
	if err != nil {
		return nil, err
	}
	serial, err := o.baselineRun(evs, true)
	if err != nil {
		return nil, err
	}
	r.SerialSeconds, r.SerialUpdatesPerSec = serial.Seconds, serial.UpdatesPerSec
	return r, nil
}

// baselineCore is one run of the baseline: its core, queries and counts.
type baselineCore struct {
	core   *engine.Core
	qs     []*query.Query
	counts []incremental.Counts
	ran    []QueryMatches
	batch  engine.Batch
}

// baselineRun runs the stream through a new core, as the service does or
// serially.
func (o *Options) baselineRun(evs []bench.TransferEvent, serial bool) (*EngineResult, error) {
	eng, err := o.Open(io.Discard, 0)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	b, err := o.newBaseline(eng)
	if err != nil {
		return nil, err
	}
	defer b.core.Close()
	var spent time.Duration
	if serial {
		spent, err = b.runSerial(o, evs)
	} else {
		spent, err = b.runPipelined(o, evs)
	}
	if err != nil {
		return nil, err
	}
	r := b.result(len(evs), spent)
	st := b.core.Stats()
	r.Steps, r.Overlapped = st.Steps, st.Overlapped
	return r, nil
}

// newBaseline makes a core configured as the service's under bench
// service, with its queries.
func (o *Options) newBaseline(eng *Engine) (*baselineCore, error) {
	core, err := engine.New(engine.Config{Directed: true, DefaultVertexLabel: "Account", DefaultEdgeLabel: "TRANSFER",
		Alloc: eng.Alloc, Matcher: eng.Matcher, VertexMatches: true})
	if err != nil {
		return nil, err
	}
	var qs []*query.Query
	for _, c := range o.Queries {
		p, err := query.Parse(c.Name, c.Pattern)
		if err == nil {
			var q *query.Query
			q, err = query.Compile(p, core.Labels(), true, query.Instances)
			qs = append(qs, q)
		}
		if err != nil {
			core.Close()
			return nil, fmt.Errorf("query %s: %w", c.Name, err)
		}
	}
	// As the service does: keep transfers when the events have ids (from
	// the first batch on) or a query needs them.
	for _, q := range qs {
		if o.Transfers || q.ReadsTransfers() || q.NamesTransfers() {
			core.KeepTransfers(nil)
		}
	}
	core.Register(qs)
	b := &baselineCore{core: core, qs: qs, counts: make([]incremental.Counts, len(qs)), ran: make([]QueryMatches, len(qs))}
	b.batch = engine.Batch{Queries: qs, Mode: incremental.Enumerate,
		Sink:  func(int, int, graph.Sign, []graph.VertexID) {},
		Bound: func(int, int, graph.Sign, []graph.VertexID, []bundle.Tx) {}}
	return b, nil
}

// add counts a finished step, if any.
func (b *baselineCore) add(st *engine.Step) error {
	if st == nil {
		return nil
	}
	if err := st.Err(); err != nil {
		return err
	}
	for i, c := range st.Counts() {
		b.counts[i].Add(c)
		// The baseline enumerates, as the service does: its counts are of
		// matches delivered one by one, and the report's int64 holds them
		// unless something is badly wrong.
		if !fitsInt64(b.counts[i].Positive) || !fitsInt64(b.counts[i].Negative) {
			return fmt.Errorf("servicebench: query %s enumerated +%v -%v matches, past 2^63", b.qs[i].Name, b.counts[i].Positive, b.counts[i].Negative)
		}
		if st.Matched {
			b.ran[i].AddBatch(st.Devices[i], 1)
		}
	}
	return nil
}

// step steps the core through updates and counts the step it finished.
func (b *baselineCore) step(last **engine.Step, updates []graph.Update, times []int64) error {
	bt := b.batch
	bt.Updates, bt.Times = updates, times
	st, err := b.core.Step(bt)
	if err != nil {
		return err
	}
	if err := b.add(*last); err != nil { // finished by this step
		return err
	}
	*last = st
	return nil
}

// runSerial resolves the stream, then times its steps, each finished
// before the next.
func (b *baselineCore) runSerial(o *Options, evs []bench.TransferEvent) (time.Duration, error) {
	updates := make([]graph.Update, len(evs))
	for i, ev := range evs {
		u, err := b.core.Resolver().Resolve(TransferRecord(ev, o.Transfers))
		if err != nil {
			return 0, err
		}
		updates[i] = u
	}
	t0 := time.Now()
	var last *engine.Step
	for lo := 0; lo < len(updates); lo += o.Batch {
		if err := b.step(&last, updates[lo:min(lo+o.Batch, len(updates))], nil); err != nil {
			return 0, err
		}
		b.core.Finish()
	}
	err := b.add(last)
	return time.Since(t0), err
}

// decodedBatch is a batch the decoding stage made ready for a step.
type decodedBatch struct {
	updates []graph.Update
	times   []int64
	err     error
}

// runPipelined times the stream's bytes through decoding, interning and
// the core's steps, the decoding of batch n+1 beside the step of n.
func (b *baselineCore) runPipelined(o *Options, evs []bench.TransferEvent) (time.Duration, error) {
	msgs := make([]ingest.Message, len(evs))
	var buf []byte
	ends := make([]int, len(evs))
	for i, ev := range evs {
		buf = ingest.AppendEvent(buf, TransferRecord(ev, o.Transfers))
		ends[i] = len(buf)
	}
	for i, lo := 0, 0; i < len(msgs); i++ {
		msgs[i].Value, lo = buf[lo:ends[i]], ends[i]
	}
	// One decoder per core, as the service's decoding stage has.
	decs := make([]*ingest.Decoder, max(1, runtime.GOMAXPROCS(0)))
	for i := range decs {
		decs[i] = &ingest.Decoder{Format: ingest.FormatAuto}
		if st := b.core.Store(); st != nil {
			decs[i].Keep = ingest.NewPropFilter(st.EdgeColumns(), st.VertexColumns())
		}
	}
	keepTime := b.core.Store() != nil && b.core.Store().KeepsTime()
	t0 := time.Now()
	ready := make(chan decodedBatch)
	go func() {
		defer close(ready)
		for lo := 0; lo < len(msgs); lo += o.Batch {
			ready <- b.decode(msgs[lo:min(lo+o.Batch, len(msgs))], decs, keepTime)
		}
	}()
	var last *engine.Step
	var err error
	for d := range ready {
		if err == nil {
			err = d.err
		}
		if err == nil {
			err = b.step(&last, d.updates, d.times)
		}
	}
	b.core.Finish()
	if err == nil {
		err = b.add(last)
	}
	return time.Since(t0), err
}

// decode decodes and interns a batch of messages.
func (b *baselineCore) decode(msgs []ingest.Message, decs []*ingest.Decoder, keepTime bool) decodedBatch {
	dec := make([]engine.Decoded, len(msgs))
	engine.Decode(msgs, dec, decs)
	b.core.Intern(dec, keepTime)
	out := decodedBatch{updates: make([]graph.Update, 0, len(dec)), times: make([]int64, 0, len(dec))}
	for _, d := range dec {
		if d.Err != nil {
			return decodedBatch{err: d.Err}
		}
		if d.ResolveErr != nil {
			return decodedBatch{err: d.ResolveErr}
		}
		out.updates = append(out.updates, d.U)
		out.times = append(out.times, d.Rec.Time)
	}
	return out
}

// result is the run's figures.
func (b *baselineCore) result(updates int, spent time.Duration) *EngineResult {
	r := &EngineResult{Seconds: spent.Seconds()}
	var total float64
	for i, q := range b.qs {
		pos, neg := int64(b.counts[i].Positive.Lo), int64(b.counts[i].Negative.Lo) // add checked they fit
		r.Matches = append(r.Matches, QueryMatches{Query: q.Name, Appeared: pos, Disappeared: neg,
			CPUBatches: b.ran[i].CPUBatches, GPUBatches: b.ran[i].GPUBatches})
		total += float64(pos) + float64(neg)
	}
	if r.Seconds > 0 {
		r.UpdatesPerSec = float64(updates) / r.Seconds
		r.MatchesPerSec = total / r.Seconds
	}
	return r
}

// fitsInt64 says whether c is at most 2^63-1.
func fitsInt64(c graph.Count) bool {
	n, ok := c.Uint64()
	return ok && n <= math.MaxInt64
}
