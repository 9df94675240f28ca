package incremental

import (
	"math/bits"

	"github.com/gcsm/gcsm/query"
)

// bucket is a batch size's cost bucket, k for more than 2^(k-1) changes
// and at most 2^k: 0 for one change, 1 for 2, 2 for 3-4, and so on. Batches
// are cut at powers of two, and a full one (4096 changes) shares its bucket
// with those a few no-ops made smaller: each bucket is measured apart.
func bucket(n int) int { return bits.Len(uint(max(n, 1) - 1)) }

// costModel keeps, per query and batch-size bucket, the average seconds
// each device took, and chooses the device. It takes timings and returns
// choices: nothing in it reads a clock.
type costModel struct {
	cells map[cellKey]*cell
	calls uint64 // plan calls, to age out the cells of removed queries
	home  []Device
	cur   []*cell // the cells of the batch being planned
	// overlapped: the batch being planned is begun (Placer.Begin), its
	// GPU share priced at what it costs the caller; b is its bucket.
	overlapped bool
	b          int
	// fixed is, per bucket, the average of the GPU's fixed cost per batch
	// (observeFixed).
	fixed map[int]float64
}

type cellKey struct {
	q *query.Query
	b int
}

// cell is one query's costs at one batch-size bucket.
type cell struct {
	est   [2]float64 // average seconds per batch on each device
	known [2]bool    // est holds a measurement
	home  Device     // where the query runs
	since int        // batches since it was last measured alone
	every int        // batches between such measurements
	base  int        // every's least value, Placer.Explore
	next  Device     // the device the next such measurement is on
	ref   float64    // est[home] when the choice was last confirmed
	seen  uint64     // the plan call that last saw it
	// spent is the seconds the query has been measured taking on its home
	// device; drifted those of the measurements drift brought forward,
	// which may take at most spent/base (driftBudget). pending says such a
	// measurement is under way.
	spent, drifted float64
	pending        bool
	// at[d] is the other device's average when d was last measured: d's
	// average is stale once the other's has grown drift times since.
	at [2]float64
}

const (
	// switchBelow: a query moves only when the other device's average is
	// under this share of its device's, so that noise does not flap it.
	switchBelow = 0.9
	// drift: a device's average rising past this multiple of what it was
	// when last compared, and to more than 1/drift of the other device's,
	// brings the next measurement on the other device forward. A graph that
	// densifies slows both devices alike, and the other may cost 8 times
	// as much.
	drift = 2
	// alphaShared weighs a new measurement from a call shared with other
	// queries (one per batch); alphaAlone one from a call alone (rarer).
	alphaShared, alphaAlone = 0.25, 0.5
	// maxBackoff bounds a cell's measurement interval, in multiples of
	// Explore.
	maxBackoff = 64
	// gpuFirst is the first bucket (over 2^(gpuFirst-1) = 512 changes)
	// whose queries start on the GPU until measured. In a large batch a
	// heavy query loses far more on the CPU than a light one loses on the
	// GPU; batches of a few changes pay the GPU's fixed cost of copies and
	// launches, so they start on the CPU.
	gpuFirst = 10
)

func (m *costModel) cell(q *query.Query, b, explore int) *cell {
	k := cellKey{q, b}
	c := m.cells[k]
	if c == nil {
		if m.cells == nil {
			m.cells = map[cellKey]*cell{}
		}
		c = &cell{every: explore, base: explore, home: OnCPU}
		if b >= gpuFirst {
			c.home = OnGPU
		}
		c.next = 1 - c.home
		m.cells[k] = c
	}
	c.seen = m.calls
	return c
}

// plan returns each query's device for a batch of bucket b and at most one
// query to measure alone (solo, or -1) on device on: the first query with a
// device not yet measured, else the first whose interval has passed or
// whose device's average has drifted up. Each query runs where it is
// cheaper (its cell's home), except that queries move off the device with
// the longer expected share while that shortens the batch (balance).
//
// The GPU's cost is its queries' own averages plus a fixed cost per batch
// (observeFixed): bringing its copy of the graph up to date, paid once
// whatever the queries, and most of what the overlapped GPU costs its
// caller. It is not shared out among the queries: then moving one off the
// GPU would look like saving that query's part of a cost the GPU pays
// anyway, and balance would split queries between the devices for a
// slower batch (docs/experiments.md, "What the cost model's rules came
// from").
//
// An overlapped batch (Placer.Begin) also weighs the CPU's seconds
// cpuLoadWeight times in every comparison: its caller works beside the
// executors (the service's run loop applies the next batch, its other
// stages decode and deliver), and the CPU's workers take their cores while
// the GPU's kernel does not.
func (m *costModel) plan(queries []*query.Query, b, explore int, overlapped bool) (home []Device, solo int, on Device) {
	m.overlapped, m.b = overlapped, b
	home, solo, on = m.choose(queries, b, explore)
	m.balance(solo, on)
	return home, solo, on
}

// observeFixed takes the GPU's fixed cost in a batch of bucket b (the
// Placer's Preparer).
func (m *costModel) observeFixed(b int, secs float64) {
	if m.fixed == nil {
		m.fixed = map[int]float64{}
	}
	f, ok := m.fixed[b]
	switch {
	case !ok || f == 0:
		m.fixed[b] = secs
	default:
		m.fixed[b] = f + alphaShared*(min(secs, clip*f)-f)
	}
}

// cost is c's average on d as a choice for c alone compares it: on the
// GPU with the fixed cost when no other query of the batch is placed there
// (then c decides whether it is paid), on the CPU weighed in an overlapped
// batch.
func (m *costModel) cost(c *cell, d Device) float64 {
	if d == OnCPU {
		if m.overlapped {
			return cpuLoadWeight * c.est[d]
		}
		return c.est[d]
	}
	for qi, o := range m.cur {
		if o != c && m.home[qi] == OnGPU {
			return c.est[d]
		}
	}
	return c.est[d] + m.fixed[m.b]
}

// balanceGain is the least share of the batch's expected time a move must
// save, so that noise in the averages does not move queries back and forth.
const balanceGain = 0.1

// cpuLoadWeight is what a second of CPU matching counts for in balance
// while the GPU works beside it. The CPU's workers then share the cores
// with the GPU's host side (packing, ranking, gathering lists, the sink)
// and, in the service, with the pipeline's other stages, so a share on the
// CPU slows the rest more than its own time says. With the GPU idle the
// CPU's share counts as it is, unless the batch is overlapped: its caller
// then works beside the CPU's workers too. Weighed with the GPU idle and
// the batch not overlapped, the CPU's share made moving a query to the GPU
// look shorter, and the batches split between the devices ran slower than
// on the CPU alone. The runs that set the value are in docs/experiments.md
// ("What the cost model's rules came from").
const cpuLoadWeight = 1.5

// loads is what a batch's queries are expected to cost each device: the
// sum of their averages, and how many there are.
type loads struct {
	secs [2]float64
	n    [2]int
}

func (l *loads) add(c *cell, d Device, sign int) {
	l.secs[d] += float64(sign) * c.est[d]
	l.n[d] += sign
}

// balance moves queries from the device whose share of the batch is
// expected to take longer to the other while that shortens the batch's
// expected span by balanceGain of it: first all that can move at once,
// onto either device (only then is the GPU's fixed cost saved or paid),
// then one at a time, in order (a triangle cheaper on the GPU still runs
// on the idle CPU while the GPU matches a house). Only queries measured on
// both devices move.
func (m *costModel) balance(solo int, on Device) {
	var load loads
	movable := func(qi int) bool {
		c := m.cur[qi]
		return qi != solo && c.known[OnCPU] && c.known[OnGPU] && !c.stale()
	}
	for qi, c := range m.cur {
		d := m.home[qi]
		if qi == solo {
			d = on
		}
		load.add(c, d, 1)
	}
	for _, to := range []Device{OnCPU, OnGPU} {
		moved := load
		for qi, c := range m.cur {
			if movable(qi) && m.home[qi] != to {
				moved.add(c, 1-to, -1)
				moved.add(c, to, 1)
			}
		}
		if m.span(moved) < (1-balanceGain)*m.span(load) {
			for qi := range m.cur {
				if movable(qi) {
					m.home[qi] = to
				}
			}
			load = moved
		}
	}
	for qi, c := range m.cur {
		if !movable(qi) {
			continue
		}
		d := m.home[qi]
		o := 1 - d
		if m.share(load, d) < m.share(load, o) {
			continue // already on the shorter share
		}
		moved := load
		moved.add(c, d, -1)
		moved.add(c, o, 1)
		if m.span(moved) < (1-balanceGain)*m.span(load) {
			m.home[qi] = o
			load = moved
		}
	}
}

// share is device d's expected part of a batch with these loads: the
// GPU's with its fixed cost when it has queries, the CPU's counting
// cpuLoadWeight times while the GPU works too and in an overlapped batch.
func (m *costModel) share(l loads, d Device) float64 {
	switch {
	case d == OnGPU && l.n[OnGPU] > 0:
		return l.secs[d] + m.fixed[m.b]
	case d == OnCPU && (l.n[OnGPU] > 0 || m.overlapped):
		return cpuLoadWeight * l.secs[d]
	}
	return l.secs[d]
}

// span is a batch's expected time: both devices' shares run at once.
func (m *costModel) span(l loads) float64 {
	return max(m.share(l, OnCPU), m.share(l, OnGPU))
}

// choose is plan without the balance.
func (m *costModel) choose(queries []*query.Query, b, explore int) (home []Device, solo int, on Device) {
	m.calls++
	m.prune(len(queries))
	m.home = m.home[:0]
	m.cur = m.cur[:0]
	solo = -1
	for qi, q := range queries {
		c := m.cell(q, b, explore)
		m.cur = append(m.cur, c)
		m.home = append(m.home, c.home)
		c.since++
		if solo < 0 && !c.known[c.home] {
			solo, on = qi, c.home
		} else if solo < 0 && !c.known[1-c.home] {
			solo, on = qi, 1-c.home
		}
	}
	if solo >= 0 {
		return m.home, solo, on
	}
	for qi, c := range m.cur {
		switch {
		case c.ref > 0 && c.est[c.home] > drift*c.ref && drift*c.est[c.home] > c.est[1-c.home] && c.driftBudget():
			c.since, c.ref, c.pending = 0, c.est[c.home], true
			return m.home, qi, 1 - c.home
		case c.since >= c.every:
			on, c.next, c.since = c.next, 1-c.next, 0
			return m.home, qi, on
		}
	}
	return m.home, -1, 0
}

// stale says the average on the device the query does not run on was
// measured when the home device's was under 1/drift of what it is now. The
// graph may have grown since, and the other device's cost with it: the
// query moves on that average (decide, balance) only once drift has
// measured it again (driftBudget). Moved on a stale average, a query on a
// densifying graph goes to a device many times slower than its own, and
// comes back, each time its home average catches up with the other's old
// one.
func (c *cell) stale() bool {
	o := 1 - c.home
	return c.at[o] > 0 && c.est[c.home] > drift*c.at[o]
}

// driftBudget says whether drift may bring a measurement forward: those
// measurements, the next one at the other device's average, must stay
// within 1/Explore of the query's time on its home device. On a graph that
// densifies, the query's own device slows on every batch, the other
// slows alike unseen, and its old average soon looks close: without the
// budget each doubling of the home cost would measure a device many times
// slower again, and those measurements would cost more than the placement
// gains. A device that slows alone (contention) is still caught at once
// while the budget lasts, and at the interval after.
func (c *cell) driftBudget() bool {
	o := 1 - c.home
	next := c.est[o]
	if c.at[o] > 0 {
		next *= c.est[c.home] / c.at[o]
	}
	return c.drifted+next <= c.spent/float64(c.base)
}

// prune drops, now and then, the cells of queries no plan has seen for a
// while.
func (m *costModel) prune(nq int) {
	if len(m.cells) <= 64*(nq+1) {
		return
	}
	for k, c := range m.cells {
		if m.calls-c.seen > 1024 {
			delete(m.cells, k)
		}
	}
}

// observe takes a call of device d over queries idx of bucket b that took
// secs. A query alone gets the whole; several share it in proportion to
// their averages, and only when all have one (else the shares would rest
// on a guess).
func (m *costModel) observe(queries []*query.Query, b int, d Device, idx []int, secs float64) {
	if len(idx) == 1 {
		c := m.cells[cellKey{queries[idx[0]], b}]
		if c == nil {
			return
		}
		switch {
		case d == c.home:
			c.spent += secs
			c.update(d, secs, alphaAlone)
		default:
			if c.pending {
				c.drifted, c.pending = c.drifted+secs, false
			}
			// The other device's average is as old as the interval, on a
			// graph that may have grown since: replace it. Nudged by at
			// most clip times, it stayed so low that the query moved onto
			// a device many times slower, batch after batch.
			c.est[d], c.known[d] = secs, true
		}
		c.at[d] = c.est[1-d]
		m.decide(c, d != c.home)
		return
	}
	total := 0.0
	for _, qi := range idx {
		c := m.cells[cellKey{queries[qi], b}]
		if c == nil || !c.known[d] {
			return
		}
		total += c.est[d]
	}
	for _, qi := range idx {
		c := m.cells[cellKey{queries[qi], b}]
		share := 1 / float64(len(idx))
		if total > 0 {
			share = c.est[d] / total
		}
		if d == c.home {
			c.spent += secs * share
		}
		c.update(d, secs*share, alphaShared)
		c.at[d] = c.est[1-d]
		m.decide(c, false)
	}
}

// clip bounds a measurement at this multiple of the average: one batch
// slowed by a collection or a neighbour moves the average by at most
// alpha·(clip-1) of itself, while a lasting change still shows within a few
// batches.
const clip = 4

func (c *cell) update(d Device, secs, alpha float64) {
	if !c.known[d] {
		c.est[d], c.known[d] = secs, true
		return
	}
	c.est[d] += alpha * (min(secs, clip*c.est[d]) - c.est[d])
}

// decide moves the query to the other device when that one is clearly
// cheaper. measured says the other device was just measured: a choice it
// confirms doubles the interval to the next measurement, a switch resets
// it.
func (m *costModel) decide(c *cell, measured bool) {
	if !c.known[OnCPU] || !c.known[OnGPU] {
		return
	}
	other := 1 - c.home
	switch {
	case (measured || !c.stale()) && m.cost(c, other) < switchBelow*m.cost(c, c.home):
		c.home = other
		c.every, c.ref, c.next = c.base, c.est[other], 1-other
	case measured:
		// Measuring a device n times slower costs n times the query's
		// batch: the interval is n times Explore, so that measuring takes
		// about 1/Explore of the query's time. It does not grow while the
		// choice holds: on a graph that densifies the devices' costs move
		// apart, and a query left on the device it outgrew costs more than
		// the measurements would have.
		n := int(min(m.cost(c, other)/max(m.cost(c, c.home), 1e-9), maxBackoff))
		c.every = max(n, 1) * c.base
		c.ref = c.est[c.home]
	case c.ref == 0:
		c.ref = c.est[c.home]
	}
}
