package incremental

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// Device says which of a Placer's two executors ran a query.
type Device uint8

// The two devices.
const (
	OnCPU Device = iota
	OnGPU
)

func (d Device) String() string {
	if d == OnGPU {
		return "gpu"
	}
	return "cpu"
}

// Placer is a Matcher that runs each query, batch by batch, on the executor
// that has been fastest for it at that batch size, both executors at once:
// the CPU's workers on their queries while the GPU runs its own. A triangle,
// a few microseconds a batch on the CPU, would pay the GPU's fixed cost of a
// launch and copies; a house on a large batch runs several times faster on
// the GPU.
//
// Per query and batch-size bucket (log2 of the batch's changes, rounded
// up) it keeps an average of the seconds the query took on each device
// (costModel), and per bucket the GPU's fixed cost of bringing its copy of
// the graph up to date (Preparer), which its first call of a batch pays
// whatever the queries. A device's call over several queries is split
// among them by their averages; a query alone in a call is measured
// exactly. Each query is first measured alone on each device (on the GPU
// first for batches of more than 512 changes, on the CPU below), and again
// now and then (Explore). It runs where it is cheaper, unless moving it to
// the other device shortens the batch, both shares running at once. Given
// the same timings the choices are the same.
//
// Static goes to the CPU: its static matcher searches a filtered candidate
// space with work split deep in the tree, while the GPU's walks the whole
// graph from the filtered root edges, which on a large graph takes orders
// of magnitude longer (docs/experiments.md, "What the cost model's rules
// came from").
//
// Match and Begin must not be called concurrently, nor before the wait of
// the last Begin; they call both executors at once on the same graph, which
// they only read.
type Placer struct {
	// CPU and GPU are the two executors. The CPU's must say how many sink
	// workers it uses (NumWorkers): the GPU's worker numbers are offset past
	// them, so that a sink's per-worker buffers stay one goroutine's each.
	CPU, GPU Matcher
	// Explore is how many batches of a bucket pass before a query is
	// measured alone again, on the device it does not run on (and, every
	// other time, on the one it runs on); 0 means 64. The interval grows,
	// up to 64 times, with the other device's cost over its own, so that
	// a GPU too slow for batches of one update costs almost nothing to keep
	// checking.
	Explore int
	// Now reads the clock that times each device's calls; nil means
	// time.Now.
	Now func() time.Time
	// CPUBelow: a batch of fewer changes than this runs wholly on the CPU,
	// straight through, neither measured nor explored; 0 means
	// DefaultCPUBelow, and 1
	// measures every size. One update at a time the GPU's fixed cost of a
	// launch and its copies outweighs the work, and in per-update mode the
	// model's own bookkeeping and the GPU's occasional measurement would
	// cost a large share of the CPU's time.
	CPUBelow int

	model  costModel
	stop   func(q int) bool
	placed []Device
	warm   [2]bool // each device has had its warm-up call
	// followed: the device, a Follower, has followed batches since its
	// last call, and its next call catches up on what they changed.
	followed [2]bool
	sides    [2]side
}

var (
	_ Matcher    = (*Placer)(nil)
	_ Overlapper = (*Placer)(nil)
)

// Preparer is an executor that keeps its own copy of the graph and says
// what its last call spent bringing that copy up to date (kernels.GPU): a
// batch's first call pays it whatever its queries, and a second call in
// the same batch nothing. The Placer keeps it apart from the queries' own
// costs, as the device's fixed cost per batch.
type Preparer interface{ LastPrepare() time.Duration }

// SetStop installs stop, passed on to each executor that can stop (see
// CPU.SetStop) with the query indices of its share mapped back to the
// caller's.
func (p *Placer) SetStop(stop func(q int) bool) { p.stop = stop }

// Placed appends to dst, per query of the last Match, the device that ran
// it, and returns it; nothing when that batch had no changes.
func (p *Placer) Placed(dst []Device) []Device { return append(dst, p.placed...) }

// Devices implements Matcher: the devices Placed says.
func (p *Placer) Devices(dst []Device, _ int) []Device { return p.Placed(dst) }

// NumWorkers implements Matcher: the CPU's workers, then the GPU's, as
// begin numbers them.
func (p *Placer) NumWorkers() int { return p.CPU.NumWorkers() + p.GPU.NumWorkers() }

// Follow implements Matcher: both devices follow the batch.
func (p *Placer) Follow(g *dyngraph.Graph) {
	p.follow(g, OnCPU)
	p.follow(g, OnGPU)
}

// side is one device's share of a batch: the queries of its main call
// (caller's indices) and the query it runs alone, or -1.
type side struct {
	idx       []int
	solo      int
	main, one time.Duration
	err       error
	// wait finishes the device's last call of the batch where Begin began
	// it (the GPU's, in an overlapped batch), and begun is what that
	// Begin took; unmeasured says the main share ran ahead of a begun solo
	// call and its time is not comparable.
	wait       func() error
	begun      time.Duration
	unmeasured bool
	// fixed is what the device's first timed call of the batch spent
	// preparing (Preparer), when no untimed call prepared before it.
	fixed      time.Duration
	fixedKnown bool
}

func (p *Placer) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Placer) device(d Device) Matcher {
	if d == OnGPU {
		return p.GPU
	}
	return p.CPU
}

// Match implements Matcher.
func (p *Placer) Match(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode Mode, sink Sink) ([]Counts, error) {
	return p.begin(g, delta, queries, mode, sink, nil)()
}

// Begin implements Overlapper when the GPU executor does: the GPU's share
// of the batch is begun (its Begin) while the CPU's runs, and finishes in
// wait, so that the GPU matches batch n while the caller applies n+1, as
// it does under --device gpu. The GPU's cost is then what its Begin took
// plus what wait blocked on it: the time it worked beside the caller costs
// the caller nothing, and measured from Begin to the end of wait it would
// have priced the GPU at the caller's work as well. Queries that the
// overlapped GPU matches faster than the CPU, and the GPU within the call
// slower, would then stay on the CPU.
//
// When the GPU measures a query alone in the batch (Explore), that call
// is the one begun; its main share runs within Begin before it, and is not
// measured, since its time would include the kernel's.
func (p *Placer) Begin(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode Mode, sink Sink) func() ([]Counts, error) {
	o, _ := p.GPU.(Overlapper)
	return p.begin(g, delta, queries, mode, sink, o)
}

// begin is Match (o nil) and Begin (o the GPU executor).
func (p *Placer) begin(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode Mode, sink Sink,
	o Overlapper) func() ([]Counts, error) {
	if p.CPU == nil || p.GPU == nil {
		return done(nil, errors.New("incremental: a Placer needs a CPU and a GPU executor"))
	}
	res := make([]Counts, len(queries))
	p.placed = p.placed[:0]
	if len(delta) == 0 || len(queries) == 0 {
		p.follow(g, OnCPU)
		p.follow(g, OnGPU)
		return done(res, nil)
	}
	if len(delta) < p.cpuBelow() {
		return done(p.cpuOnly(g, delta, queries, mode, sink))
	}
	b := bucket(len(delta))
	home, solo, soloOn := p.model.plan(queries, b, p.explore(), o != nil)
	for d := range p.sides {
		p.sides[d] = side{idx: p.sides[d].idx[:0], solo: -1}
	}
	for qi, d := range home {
		if qi == solo {
			d = soloOn
			p.sides[d].solo = qi
		} else {
			p.sides[d].idx = append(p.sides[d].idx, qi)
		}
		p.placed = append(p.placed, d)
	}
	offset := [2]int{0, p.CPU.NumWorkers()}
	// A device works in this batch when it has queries or is not warmed up
	// yet; an idle one follows the batch (Follow), since syncing the idle
	// GPU's copy in every batch, alongside the CPU's matching, takes host
	// cores from the CPU's share.
	works := func(d Device) bool { return len(p.sides[d].idx) > 0 || p.sides[d].solo >= 0 || !p.warm[d] }
	run := func(d Device) {
		if !works(d) {
			p.follow(g, d)
			return
		}
		var od Overlapper
		if d == OnGPU {
			od = o
		}
		p.run(d, &p.sides[d], offset[d], g, delta, queries, mode, sink, res, od)
	}
	if works(OnCPU) && works(OnGPU) {
		var wg sync.WaitGroup
		wg.Go(func() { run(OnGPU) })
		run(OnCPU)
		wg.Wait()
	} else {
		run(OnCPU)
		run(OnGPU)
	}
	return func() ([]Counts, error) {
		if s := &p.sides[OnGPU]; s.wait != nil {
			t0 := p.now()
			err := s.wait()
			s.wait = nil
			if s.err == nil {
				s.err = err
			}
			spent := s.begun + p.now().Sub(t0)
			if s.solo >= 0 {
				s.one = spent
			} else {
				s.main = spent
			}
		}
		for d := range p.sides {
			if err := p.sides[d].err; err != nil {
				return nil, fmt.Errorf("incremental: placer, %s: %w", Device(d), err)
			}
		}
		for d := range p.sides {
			s := &p.sides[d]
			if s.fixedKnown && Device(d) == OnGPU {
				p.model.observeFixed(b, s.fixed.Seconds())
			}
			if len(s.idx) > 0 && !s.unmeasured {
				p.model.observe(queries, b, Device(d), s.idx, s.main.Seconds())
			}
			if s.solo >= 0 {
				p.model.observe(queries, b, Device(d), []int{s.solo}, s.one.Seconds())
			}
		}
		return res, nil
	}
}

// done is a wait function (Overlapper) for a match that is already done.
func done(c []Counts, err error) func() ([]Counts, error) {
	return func() ([]Counts, error) { return c, err }
}

// DefaultCPUBelow is Placer.CPUBelow's default.
const DefaultCPUBelow = 16

func (p *Placer) cpuBelow() int {
	if p.CPUBelow > 0 {
		return p.CPUBelow
	}
	return DefaultCPUBelow
}

// cpuOnly runs a small batch on the CPU with the caller's indices and
// workers, while the GPU follows it.
func (p *Placer) cpuOnly(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode Mode, sink Sink) ([]Counts, error) {
	p.CPU.SetStop(p.stop)
	res, err := p.CPU.Match(g, delta, queries, mode, sink)
	if err != nil {
		return nil, fmt.Errorf("incremental: placer, cpu: %w", err)
	}
	for range queries {
		p.placed = append(p.placed, OnCPU)
	}
	p.follow(g, OnGPU)
	return res, nil
}

func (p *Placer) explore() int {
	if p.Explore > 0 {
		return p.Explore
	}
	return 64
}

// follow tells device d of the batch when it runs no query in it.
func (p *Placer) follow(g *dyngraph.Graph, d Device) {
	if g.Pending() {
		p.device(d).Follow(g)
		p.followed[d] = true
	}
}

// run makes device d's calls of the batch: at its first batch a warm-up
// call, every query counted on the batch's first change alone (its result
// dropped), then its main share and the query it runs alone, each timed.
// The warm-up keeps the device's one-time costs (the GPU copies the whole
// graph, loads its kernels, compiles each query's program) out of the
// measurements, and runs while the other device works. With o, the
// device's last call is begun through o and left to s.wait. What a
// Preparer spends preparing is kept apart from the queries' time, as the
// device's fixed cost.
//
// A device that has only followed the batches since its last call first
// catches up on them in a call with no query, untimed. Timed, that catch-up
// (up to the whole graph copied again) made every measurement of the GPU
// after a run of batches on the CPU look many times its cost: on a stream of
// four million updates, whose graph densifies until the GPU matches
// alert-sparse 1.6 times as fast as the CPU, auto kept every query on the CPU.
func (p *Placer) run(d Device, s *side, offset int, g *dyngraph.Graph, delta []graph.Change, queries []*query.Query,
	mode Mode, sink Sink, res []Counts, o Overlapper) {
	fresh := true // no call has prepared the device for this batch yet
	if !p.warm[d] {
		if _, s.err = p.device(d).Match(g, delta[:1], queries, Count, nil); s.err != nil {
			return
		}
		p.warm[d], fresh = true, false
	} else if p.followed[d] {
		if _, s.err = p.device(d).Match(g, delta, nil, Count, nil); s.err != nil {
			return
		}
		fresh = false
	}
	p.followed[d] = false
	// spent is a call's time since t0 less what it spent preparing, which
	// the batch's first call records as the fixed cost.
	spent := func(t0 time.Time) time.Duration {
		t := p.now().Sub(t0)
		pr, ok := p.device(d).(Preparer)
		if !ok {
			return t
		}
		prep := min(pr.LastPrepare(), t)
		if fresh {
			s.fixed, s.fixedKnown, fresh = prep, true, false
		}
		return t - prep
	}
	if len(s.idx) > 0 {
		t0 := p.now()
		if o != nil && s.solo < 0 {
			s.wait = p.start(d, s.idx, offset, g, delta, queries, mode, sink, res, o)
			s.begun = spent(t0)
			return
		}
		s.err = p.start(d, s.idx, offset, g, delta, queries, mode, sink, res, nil)()
		s.main = spent(t0)
		s.unmeasured = o != nil
	}
	if s.solo >= 0 && s.err == nil {
		t0 := p.now()
		if o != nil {
			s.wait = p.start(d, []int{s.solo}, offset, g, delta, queries, mode, sink, res, o)
			s.begun = spent(t0)
			return
		}
		s.err = p.start(d, []int{s.solo}, offset, g, delta, queries, mode, sink, res, nil)()
		s.one = spent(t0)
	}
}

// start calls device d over the queries idx (caller's indices), with the
// sink's worker numbers moved up by offset and query indices mapped back:
// through o's Begin when o is set, else its Match. The function it returns
// finishes the call and stores the counts in res.
func (p *Placer) start(d Device, idx []int, offset int, g *dyngraph.Graph, delta []graph.Change, queries []*query.Query,
	mode Mode, sink Sink, res []Counts, o Overlapper) func() error {
	m := p.device(d)
	// idx is ascending: of the caller's length, it is every query in order,
	// and needs no mapping.
	all := len(idx) == len(queries)
	qs := queries
	if !all {
		qs = make([]*query.Query, len(idx))
		for i, qi := range idx {
			qs[i] = queries[qi]
		}
	}
	switch stop := p.stop; {
	case stop == nil || all:
		m.SetStop(stop)
	default:
		m.SetStop(func(q int) bool { return stop(idx[q]) })
	}
	mapped := sink
	if sink != nil && (!all || offset != 0) {
		mapped = func(worker, q int, sign graph.Sign, mv []graph.VertexID) { sink(worker+offset, idx[q], sign, mv) }
	}
	var wait func() ([]Counts, error)
	if o != nil {
		wait = o.Begin(g, delta, qs, mode, mapped)
	} else {
		wait = done(m.Match(g, delta, qs, mode, mapped))
	}
	return func() error {
		c, err := wait()
		if err != nil {
			return err
		}
		for i, qi := range idx {
			res[qi] = c[i]
		}
		return nil
	}
}

// Static implements Matcher on the CPU executor.
func (p *Placer) Static(g *dyngraph.Graph, queries []*query.Query, mode Mode, sink Sink) ([]graph.Count, error) {
	if p.CPU == nil {
		return nil, errors.New("incremental: a Placer needs a CPU executor")
	}
	return p.CPU.Static(g, queries, mode, sink)
}
