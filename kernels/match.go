package kernels

import (
	"errors"
	"fmt"
	"math/bits"
	"runtime"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/kernels/cuda"
	"github.com/gcsm/gcsm/query"
)

// Kernel geometry: match.cu's WARPS_PER_BLOCK, MAXN and per-level state.
const (
	warpsPerBlock = 4
	blocksPerSM   = 8
	levelWords    = 24 + 128 // S_WORDS + CHUNK
)

// Match implements incremental.Matcher.
func (x *GPU) Match(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode incremental.Mode, sink incremental.Sink) ([]incremental.Counts, error) {
	return x.begin(g, delta, queries, mode, sink, false)()
}

// Begin implements incremental.Overlapper. The match overlaps with the
// caller's work only where the kernel reads nothing of the host graph: in
// the device and unified placements, whose copy of the graph prepare has
// brought up to date before Begin returns. The zero-copy and cache
// placements read the host's lists, which the caller's next changes would
// rewrite under the kernel, so Begin does all of their match.
func (x *GPU) Begin(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode incremental.Mode, sink incremental.Sink) func() ([]incremental.Counts, error) {
	return x.begin(g, delta, queries, mode, sink, true)
}

// begin is Match, and Begin when overlap is set.
func (x *GPU) begin(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode incremental.Mode, sink incremental.Sink,
	overlap bool) func() ([]incremental.Counts, error) {
	if !g.Pending() && len(delta) > 0 {
		return finished(nil, fmt.Errorf("kernels: Match on a graph with no pending batch"))
	}
	res := make([]incremental.Counts, len(queries))
	live := possible(g, queries)
	x.last = BatchStats{}
	if len(delta) == 0 || len(live) == 0 {
		// Nothing to match, but the device's copies follow the batch, so
		// that the next one need not copy everything again.
		if g.NumSlabs() > 0 {
			_, err := x.prepare(g, false, nil, nil)
			return finished(res, err)
		}
		return finished(res, nil)
	}
	prog, err := encode(pick(queries, live), g.MultiLabel())
	if err != nil {
		return finished(nil, err)
	}
	changes := make([]uint32, 0, 4*len(delta))
	for _, c := range delta {
		changes = append(changes, c.Src, c.Dst, c.Label, b2u(c.Sign > 0))
	}
	wait := x.run(g, delta, prog, changes, pick(queries, live), mode, sink, live, overlap)
	return func() ([]incremental.Counts, error) {
		counts, err := wait()
		if err != nil {
			return nil, err
		}
		for i, qi := range live {
			res[qi] = counts[i]
		}
		return res, nil
	}
}

// finished is a wait function (incremental.Overlapper) for a match that is
// already done.
func finished(c []incremental.Counts, err error) func() ([]incremental.Counts, error) {
	return func() ([]incremental.Counts, error) { return c, err }
}

// Static implements incremental.Matcher. The matches of a graph are the
// matches that appear when every edge is inserted into an empty graph, so
// the kernel walks the static plan as a term in the new view, every list
// presented as wholly appended.
//
// Each query runs on its own, on the CPU static matcher's filter and order
// (incremental.Filter, query.StaticPlan). A count whose candidate space is
// small enough (Options.SpaceEntries) runs over that space (match_space,
// space.go). Otherwise every level checks its query vertex's candidate set,
// and the work units are the root edges, those from a candidate of the
// plan's first vertex to a candidate of its second. On a labeled query most
// edges fail that, and each would have been a unit.
func (x *GPU) Static(g *dyngraph.Graph, queries []*query.Query, mode incremental.Mode, sink incremental.Sink) ([]graph.Count, error) {
	if g.Pending() {
		return nil, fmt.Errorf("kernels: Static on a graph with a pending batch")
	}
	out := make([]graph.Count, len(queries))
	x.last = BatchStats{}
	for _, qi := range possible(g, queries) {
		q := queries[qi]
		f := incremental.Filter(g, q)
		if mode == incremental.Count && x.opts.SpaceEntries >= 0 {
			// The CPU's counting plan: leaves last, counted (sp_tail).
			cplan, factor, ok := f.CountPlan(q)
			if !ok {
				continue
			}
			n, ok, err := x.staticSpace(g, f, &cplan)
			if err != nil {
				return nil, err
			}
			if ok {
				out[qi] = n.MulUint64(uint64(factor))
				continue
			}
		}
		plan, ok := f.Plan(q, mode == incremental.Count)
		if !ok {
			continue
		}
		// The last level goes without: a vertex that completes a match is
		// in its set anyway, and without one the kernel counts that level
		// from the list's label range.
		sets := make([][]uint64, len(plan.Levels))
		for d, lv := range plan.Levels[:len(plan.Levels)-1] {
			sets[d] = f.Sets[lv.Vertex]
		}
		changes := rootEdges(g, f.Sets[plan.Levels[0].Vertex], f.Sets[plan.Levels[1].Vertex])
		if len(changes) == 0 {
			continue
		}
		prog, err := encodeStatic(q, &plan, sets, x.opts.KeepBytes >= 0, g.MultiLabel())
		if err != nil {
			return nil, err
		}
		counts, err := x.run(g, nil, prog, changes, []*query.Query{q}, mode, sink, []int{qi}, false)()
		if err != nil {
			return nil, err
		}
		out[qi] = counts[0].Positive
		if mode == incremental.Count {
			out[qi] = out[qi].MulUint64(uint64(q.CountFactor))
		}
	}
	return out, nil
}

// rootEdges lists the static matcher's units as changes (x, y, label,
// insertion): x in a, y in b, and y a neighbour of x in either direction,
// each pair once. The kernel checks the plan's constraints between the two
// levels, with their directions and labels.
func rootEdges(g *dyngraph.Graph, a, b []uint64) []uint32 {
	in := func(set []uint64, v uint32) bool { return set[v/64]&(1<<(v%64)) != 0 }
	var changes []uint32
	var ys []uint32
	for xw, word := range a {
		for word != 0 {
			x := uint32(xw*64 + bits.TrailingZeros64(word))
			word &= word - 1
			ys = ys[:0]
			lists := []dyngraph.Adj{g.Out(graph.VertexID(x))}
			if g.Directed() {
				lists = append(lists, g.In(graph.VertexID(x)))
			}
			for _, adj := range lists {
				for _, e := range adj.Sorted {
					if y := e & dyngraph.IDMask; in(b, y) {
						ys = append(ys, y)
					}
				}
			}
			slices.Sort(ys)
			for _, y := range slices.Compact(ys) {
				changes = append(changes, x, y, graph.Wildcard, 1)
			}
		}
	}
	return changes
}

// possible lists the queries whose edge labels the graph can match at all
// (incremental's edgeLabelsPossible).
func possible(g *dyngraph.Graph, queries []*query.Query) []int {
	var live []int
	for qi, q := range queries {
		ok := true
		if !g.MultiLabel() {
			l, has := g.EdgeLabel()
			ok = has
			for _, e := range q.Edges {
				if e.Label != graph.Wildcard && e.Label != l {
					ok = false
				}
			}
		}
		if ok {
			live = append(live, qi)
		}
	}
	return live
}

func pick(queries []*query.Query, idx []int) []*query.Query {
	out := make([]*query.Query, len(idx))
	for i, qi := range idx {
		out[i] = queries[qi]
	}
	return out
}

// run launches the kernel over every (term, change) unit until all units
// are done: in Enumerate mode a launch that fills the record buffer stops,
// the finished units' matches go to the sink, and the rest run again. delta
// is the batch's, or nil for the static matcher (prog.static). With overlap
// (Begin), the launches run on a goroutine of their own once prepare has
// read what it needs of g, where the placement allows it; the returned
// function waits for them.
func (x *GPU) run(g *dyngraph.Graph, delta []graph.Change, prog *program, changes []uint32, qs []*query.Query,
	mode incremental.Mode, sink incremental.Sink, live []int, overlap bool) func() ([]incremental.Counts, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if x.inFlight {
		return finished(nil, errors.New("kernels: BUG: the executor was used before the wait of its last Begin"))
	}
	r := &batchRun{prog: prog, changes: changes, qs: qs, mode: mode, sink: sink, live: live,
		static: delta == nil, edges: len(delta), maxDegree: g.MaxDegreeBound(), start: time.Now()}
	x.deferring = overlap && x.Placement().mirrored()
	var err error
	r.graph, err = x.prepare(g, delta == nil, delta, qs)
	x.deferring = false
	if err != nil {
		return finished(nil, errors.Join(err, x.flush()))
	}
	// A mirror that did not fit falls back to zero-copy in prepare: then
	// the kernel reads the host's lists, which must not change under it.
	if !overlap || !x.Placement().mirrored() {
		if err := x.flush(); err != nil {
			return finished(nil, err)
		}
		return finished(x.launchAll(r))
	}
	x.inFlight = true
	done := make(chan struct{})
	var counts []incremental.Counts
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err = x.flush(); err == nil {
			counts, err = x.launchAll(r)
		}
		close(done)
	}()
	return func() ([]incremental.Counts, error) {
		<-done
		x.inFlight = false
		return counts, err
	}
}

// batchRun is what run's launches need: nothing of the host graph, which
// may change while they run (Begin).
type batchRun struct {
	graph     cuda.DevicePtr // the device's description of the graph (prepare)
	prog      *program
	changes   []uint32
	qs        []*query.Query
	mode      incremental.Mode
	sink      incremental.Sink
	live      []int
	static    bool // the static matcher's run: no batch
	edges     int  // the batch's changes
	maxDegree int  // the graph's dyngraph.Graph.MaxDegreeBound
	start     time.Time
}

// launchAll is run's work after prepare.
func (x *GPU) launchAll(r *batchRun) ([]incremental.Counts, error) {
	prog, changes, qs, mode := r.prog, r.changes, r.qs, r.mode
	t1 := time.Now()
	defer func() {
		x.last.Kernel = time.Since(t1)
		x.last.Match = time.Since(r.start) - x.last.Estimate - x.last.Pack
		x.tuneEstimate(qs, r.edges)
	}()
	nch := len(changes) / 4
	total := uint64(len(prog.terms)) * uint64(nch)
	l, err := x.batchLaunch(r)
	if err != nil {
		return nil, err
	}
	defer x.addListBytes(l.args.listBytes)
	e := enumeration{words: uint32(2 + prog.maxN), capRecs: uint64(x.opts.EnumRecords)}
	if mode == incremental.Enumerate {
		if err := x.enumBuffers(&e, l.warps); err != nil {
			return nil, err
		}
	}
	// What the last launches walk: the units, or seeds of depth split.
	units, split, seeds, seedWords := total, uint32(0), cuda.DevicePtr(0), uint32(0)
	if (r.static || mode == incremental.Enumerate) && !x.opts.NoSplit {
		// The static matcher's plan starts at its most selective vertex,
		// so a few root edges can hold all the work; and enumerating a
		// batch, its hub edges' units would each keep one warp busy while
		// the others idle. An expansion launch cannot emit matches, so
		// seeds stop short of the shallowest term.
		perWarp := uint64(enumerateSeeds)
		if r.static {
			perWarp = staticSeeds
		}
		if seeds, seedWords, units, err = x.deepen(l, total, prog.minN(), perWarp*uint64(l.warps)); err != nil {
			return nil, err
		}
		if seeds != 0 {
			split = seedWords - 2
		}
	} else if mode == incremental.Count && !x.opts.NoSplit {
		if done, err := x.countSplit(l, total, prog.maxN, len(qs)); done || err != nil {
			if err != nil {
				return nil, err
			}
			return x.readCounts(l.args.counts, len(qs))
		}
	}
	// A level reads a kept list only when the same walk made it, and an
	// expansion launch walks a single level (deepen runs match_delta). The
	// last launches walk from the seeds' depth: they keep lists only where
	// a level at or below it reads one.
	if start := max(int(split), 2); prog.keepSlots > 0 && prog.readsKept(start) {
		if err := x.keepLists(&l, r.maxDegree, l.warps, prog.keepSlots); err != nil {
			return nil, err
		}
	}
	a := l.args
	a.totalUnits, a.mode, a.split, a.seeds, a.seedWords = units, b2u(mode == incremental.Enumerate), split, seeds, seedWords
	a.outRec, a.outCap, a.outCount, a.outWords, a.park = e.rec, e.capRecs, e.outCount, e.words, e.park
	if err := x.launchUntilDrained(l, &a, r, &e); err != nil {
		return nil, err
	}
	return x.readCounts(l.args.counts, len(qs))
}

// batchLaunch uploads the batch's program, terms, changes and candidates,
// and readies the buffers every launch of the batch shares.
func (x *GPU) batchLaunch(r *batchRun) (launch, error) {
	prog, changes, nq := r.prog, r.changes, len(r.qs)
	l := launch{kernel: x.match}
	a := &l.args
	a.graph, a.nterms, a.nchanges = r.graph, uint32(len(prog.terms)), uint32(len(changes)/4)
	var err error
	if a.prog, err = x.upload("prog", u32ptr(prog.words), 4*len(prog.words)); err != nil {
		return l, err
	}
	if a.termOff, err = x.upload("terms", u32ptr(prog.terms), 4*len(prog.terms)); err != nil {
		return l, err
	}
	if a.changes, err = x.upload("changes", u32ptr(changes), 4*len(changes)); err != nil {
		return l, err
	}
	if len(prog.cands) > 0 { // else none: no level reads it
		if a.cands, err = x.upload("cands", u32ptr(prog.cands), 4*len(prog.cands)); err != nil {
			return l, err
		}
	}
	if a.counts, err = x.buf("counts", countBytes*nq); err != nil {
		return l, err
	}
	if err := x.ctx.Memset32(a.counts, 0, countBytes/4*nq); err != nil {
		return l, err
	}
	sms := uint32(x.dev.Multiprocessors)
	l.blocks = sms * blocksPerSM
	l.warps = int(l.blocks) * warpsPerBlock
	if a.scratch, err = x.buf("scratch", l.warps*maxLevels*levelWords*4); err != nil {
		return l, err
	}
	if a.nextUnit, err = x.buf("next", 8); err != nil {
		return l, err
	}
	if a.overflow, err = x.buf("overflow", 8); err != nil {
		return l, err
	}
	if a.listBytes, err = x.buf("list_bytes", 16); err != nil {
		return l, err
	}
	return l, x.ctx.Memset32(a.listBytes, 0, 4)
}

// enumeration is the record buffer of an Enumerate batch: capRecs records
// of words words at rec, the count written at outCount, and the warps'
// park records.
type enumeration struct {
	rec, outCount, park cuda.DevicePtr
	capRecs             uint64
	words               uint32
}

// enumBuffers readies e's buffers for warps warps, the park records
// cleared.
func (x *GPU) enumBuffers(e *enumeration, warps int) error {
	var err error
	if e.rec, err = x.buf("records", int(e.capRecs)*int(e.words)*4); err != nil {
		return err
	}
	if e.outCount, err = x.buf("out_count", 8); err != nil {
		return err
	}
	if e.park, err = x.buf("park", warps*parkWords*4); err != nil {
		return err
	}
	return x.ctx.Memset32(e.park, 0, warps*parkWords)
}

// countSplit counts the batch in two launches split at 4, or else 3,
// vertices (runSplit), where the plans are deep enough. done is false
// when neither ran, the counts cleared again, for the launches unsplit.
func (x *GPU) countSplit(l launch, total uint64, maxN, nq int) (done bool, err error) {
	for _, split := range []int{4, 3} {
		// A plan one level deeper than split seeds too: each seed counts
		// the last level. Unsplit, a hub's units keep one warp busy while
		// the others idle, whether the graph is in GPU memory or read
		// through zero-copy; and a 5-vertex plan runs several times faster
		// split at 4 than at 3.
		if maxN < split+1 {
			continue
		}
		ok, err := x.runSplit(l, total, split)
		if err != nil || ok {
			return ok, err
		}
		// Too many seeds for the buffer: start again, less deep.
		if err := x.ctx.Memset32(l.args.counts, 0, countBytes/4*nq); err != nil {
			return false, err
		}
	}
	return false, nil
}

// launchUntilDrained launches the batch's last launches with a. In
// enumerate mode a launch that fills the record buffer parks its units;
// the next one, next left as it was, resumes them. Each launch writes at
// least one record, so this ends.
func (x *GPU) launchUntilDrained(l launch, a *matchArgs, r *batchRun, e *enumeration) error {
	for _, p := range []cuda.DevicePtr{a.nextUnit, a.overflow} {
		if err := x.ctx.Memset32(p, 0, 2); err != nil {
			return err
		}
	}
	for {
		if r.mode == incremental.Enumerate {
			if err := x.ctx.Memset32(e.outCount, 0, 2); err != nil {
				return err
			}
		}
		err := l.run(a)
		if err == nil {
			err = x.ctx.Synchronize()
		}
		if err != nil {
			return fmt.Errorf("kernels: match_delta: %w", err)
		}
		x.last.Launches++
		if r.mode != incremental.Enumerate {
			return nil
		}
		full, err := x.drain(r.prog, r.qs, r.changes, e.rec, e.outCount, a.overflow, e.capRecs, e.words, r.sink, r.live)
		if err != nil {
			return err
		}
		if !full {
			return nil
		}
		if err := x.ctx.Memset32(a.overflow, 0, 2); err != nil {
			return err
		}
	}
}

// addListBytes adds what the launches of a batch counted to the totals and
// to the batch's stats.
func (x *GPU) addListBytes(lb cuda.DevicePtr) {
	var n [2]uint64
	if x.ctx.CopyDtoH(unsafe.Pointer(&n[0]), lb, 16) == nil {
		x.listBytes[0] += n[0]
		x.listBytes[1] += n[1]
		x.last.SlabBytes, x.last.BlockBytes = n[0], n[1]
	}
}

// ListBytes is the number of bytes of neighbour lists the kernel has asked
// for since Open, 4 per word read, wherever it read them.
func (x *GPU) ListBytes() uint64 { return x.listBytes[0] + x.listBytes[1] }

// HostBytes is the part of ListBytes read from host memory through the
// device mapping: every list read in the zero-copy placement, the misses
// in the cache placements, nothing in the device and unified placements.
// It bounds what crossed PCIe from above: the GPU's caches serve repeated
// reads, and the bus moves 32-byte sectors.
func (x *GPU) HostBytes() uint64 {
	if x.Placement().mirrored() {
		return 0
	}
	return x.listBytes[0]
}

// countBytes is a query's counts in device memory: |ΔM+| and |ΔM-|, each
// 128 bits, low word first (add_count in match.cu).
const countBytes = 32

func (x *GPU) readCounts(counts cuda.DevicePtr, nq int) ([]incremental.Counts, error) {
	host := make([]uint64, countBytes/8*nq)
	if err := x.ctx.CopyDtoH(unsafe.Pointer(&host[0]), counts, 8*len(host)); err != nil {
		return nil, err
	}
	out := make([]incremental.Counts, nq)
	for i := range out {
		w := host[4*i : 4*i+4]
		out[i] = incremental.Counts{Positive: graph.Count{Hi: w[1], Lo: w[0]}, Negative: graph.Count{Hi: w[3], Lo: w[2]}}
	}
	return out, nil
}

// launch holds the kernel, its grid and the arguments that every launch
// of a batch shares; a launch's own (the units, the output, the seeds)
// are set on a copy of args.
type launch struct {
	// kernel is match_delta, or match_keep where the launches read kept
	// lists (keepLists).
	kernel *cuda.Function
	blocks uint32
	warps  int // blocks·warpsPerBlock
	args   matchArgs
}

// run launches l.kernel on l's grid with a.
func (l *launch) run(a *matchArgs) error {
	return l.kernel.LaunchParams([3]uint32{l.blocks, 1, 1}, [3]uint32{warpsPerBlock * 32, 1, 1}, 0, nil, a.params())
}

// defaultKeepBytes bounds the kept lists where Options.KeepBytes is 0.
// STMatch's 24 patterns on Wiki-Vote and Email-Enron need a tenth of it.
const defaultKeepBytes = 1 << 30

// keepLists gives each warp room for slots kept lists, each as long as the
// graph's longest list or as the budget allows (a level whose driver is
// longer keeps nothing, and the levels below it read the lists), and has
// the launches run match_keep. Without room they run match_delta, which
// ignores the plan's kept lists.
func (x *GPU) keepLists(l *launch, maxDegree, warps, slots int) error {
	budget := int64(defaultKeepBytes)
	if x.opts.KeepBytes > 0 {
		budget = x.opts.KeepBytes
	}
	capacity := min(int64(maxDegree), budget/int64(4*warps*slots))
	if capacity < 32 {
		return nil // too little room to keep anything worth reading
	}
	p, err := x.buf("keep", int(capacity)*warps*slots*4)
	if errors.Is(err, cuda.ErrOutOfMemory) {
		return nil // under a tight --gpu-mem: read the lists
	}
	if err != nil {
		return err
	}
	l.kernel, l.args.keep, l.args.keepCap, l.args.keepSlots = x.keep, p, uint32(capacity), uint32(slots)
	return nil
}

// maxSeeds bounds the seed buffer: 2^25 seeds of up to 6 words, 768 MiB.
const maxSeeds = 1 << 25

// runSplit counts in two launches: the first walks every unit down to level
// split-1 and writes the partial matches as seeds (finishing plans of at
// most split vertices itself), the second spreads the seeds over all
// warps. One unit of a power-law graph can hold most of a batch's work,
// and walked by one warp it leaves the rest of the GPU idle. ok is false
// when the seeds did not fit.
func (x *GPU) runSplit(l launch, units uint64, split int) (ok bool, err error) {
	words := uint32(2 + split)
	seeds, err := x.buf("seeds", maxSeeds*int(words)*4)
	if errors.Is(err, cuda.ErrOutOfMemory) {
		return false, nil // under a tight --gpu-mem: walk units whole
	}
	if err != nil {
		return false, err
	}
	nseeds, err := x.buf("seed_count", 8)
	if err != nil {
		return false, err
	}
	for _, p := range []cuda.DevicePtr{l.args.nextUnit, l.args.overflow, nseeds} {
		if err := x.ctx.Memset32(p, 0, 2); err != nil {
			return false, err
		}
	}
	// No park: a full buffer ends the launch.
	a := l.args
	a.totalUnits, a.split = units, uint32(split)
	a.outRec, a.outCap, a.outCount, a.outWords = seeds, maxSeeds, nseeds, words
	err = l.run(&a)
	if err == nil {
		err = x.ctx.Synchronize()
	}
	if err != nil {
		return false, fmt.Errorf("kernels: match_delta (expansion): %w", err)
	}
	var ov [2]uint32
	var n [1]uint64
	if err := x.ctx.CopyDtoH(unsafe.Pointer(&ov[0]), l.args.overflow, 4); err != nil {
		return false, err
	}
	if err := x.ctx.CopyDtoH(unsafe.Pointer(&n[0]), nseeds, 8); err != nil {
		return false, err
	}
	if ov[0] != 0 {
		return false, nil
	}
	if n[0] == 0 {
		return true, nil
	}
	if err := x.ctx.Memset32(l.args.nextUnit, 0, 2); err != nil {
		return false, err
	}
	a = l.args
	a.totalUnits, a.split, a.seeds, a.seedWords = n[0], uint32(split), seeds, words
	a.outCount, a.outWords = nseeds, words
	err = l.run(&a)
	if err == nil {
		err = x.ctx.Synchronize()
	}
	if err != nil {
		return false, fmt.Errorf("kernels: match_delta (seeds): %w", err)
	}
	return true, nil
}

// seedBytes bounds each of the static matcher's two seed buffers.
const seedBytes = 768 << 20

// The seeds per warp that deepen aims for. A static query's subtrees are
// uneven, and eight times the seeds balance a dense query's warps enough to
// cut its time by up to 45%, while a query with few matches pays about a
// millisecond for the deeper expansion. A stream's batch keeps 32: each
// expansion launch adds a round trip to the batch's latency.
const (
	staticSeeds    = 256
	enumerateSeeds = 32
)

// minSeedDepth is the depth the static matcher's seeds reach however many
// root edges there are: on a power-law graph a hub's edges hold most of the
// work, and seeds of 4 vertices spread it as the incremental split does.
const minSeedDepth = 4

// deepen expands the units into seeds, a level at a time, until there are
// at least target of them and they are minSeedDepth deep. It stops short
// where the next level would be the last of the shallowest term, n levels,
// or its seeds would not fit the buffer; seeds is 0 when no expansion was
// made. Each expansion walks the seeds of the one before, so one heavy unit
// ends up spread over many warps, as STMatch's work stealing spreads it.
func (x *GPU) deepen(l launch, units uint64, n int, target uint64) (seeds cuda.DevicePtr, words uint32, count uint64, err error) {
	count = units
	nseeds, err := x.buf("seed_count", 8)
	if err != nil {
		return 0, 0, 0, err
	}
	for depth := 3; depth < n && (count < target || depth <= minSeedDepth); depth++ {
		w := uint32(2 + depth)
		capSeeds := uint64(seedBytes / (4 * int(w)))
		out, err := x.buf([2]string{"seeds", "seeds_next"}[depth%2], seedBytes)
		if errors.Is(err, cuda.ErrOutOfMemory) {
			break // under a tight --gpu-mem: walk what there is
		}
		if err != nil {
			return 0, 0, 0, err
		}
		for _, p := range []cuda.DevicePtr{l.args.nextUnit, l.args.overflow, nseeds} {
			if err := x.ctx.Memset32(p, 0, 2); err != nil {
				return 0, 0, 0, err
			}
		}
		// No park: a full buffer ends the launch.
		a := l.args
		a.totalUnits, a.split, a.seeds, a.seedWords = count, uint32(depth), seeds, words
		a.outRec, a.outCap, a.outCount, a.outWords = out, capSeeds, nseeds, w
		err = l.run(&a)
		if err == nil {
			err = x.ctx.Synchronize()
		}
		if err != nil {
			return 0, 0, 0, fmt.Errorf("kernels: match_delta (expansion to depth %d): %w", depth, err)
		}
		x.last.Launches++
		var ov [2]uint32
		var got [1]uint64
		if err := x.ctx.CopyDtoH(unsafe.Pointer(&ov[0]), l.args.overflow, 4); err != nil {
			return 0, 0, 0, err
		}
		if err := x.ctx.CopyDtoH(unsafe.Pointer(&got[0]), nseeds, 8); err != nil {
			return 0, 0, 0, err
		}
		if ov[0] != 0 {
			break // the seeds of the level before stand
		}
		seeds, words, count = out, w, got[0]
	}
	return seeds, words, count, nil
}

// parkWords is the size of a warp's park record (match.cu, PARK_WORDS).
const parkWords = 5 + maxLevels

// minDrainChunk is the fewest records a drain goroutine takes: below it
// starting one costs more than it saves.
const minDrainChunk = 2048

// NumWorkers is the number of sink workers Match and Static use: the
// goroutines that drain a launch's records, up to 16.
func (x *GPU) NumWorkers() int { return min(16, runtime.GOMAXPROCS(0)) }

// drain hands the launch's records to the sink and says whether the buffer
// filled, so that parked units wait for another launch.
func (x *GPU) drain(prog *program, qs []*query.Query, changes []uint32, rec, outCount, flags cuda.DevicePtr,
	capRecs uint64, words uint32, sink incremental.Sink, live []int) (full bool, err error) {
	var hdr [1]uint64
	if err := x.ctx.CopyDtoH(unsafe.Pointer(&hdr[0]), outCount, 8); err != nil {
		return false, err
	}
	var ov [1]uint32
	if err := x.ctx.CopyDtoH(unsafe.Pointer(&ov[0]), flags, 4); err != nil {
		return false, err
	}
	got := min(hdr[0], capRecs)
	recs := make([]uint32, got*uint64(words))
	if got > 0 {
		if err := x.ctx.CopyDtoH(unsafe.Pointer(&recs[0]), rec, 4*len(recs)); err != nil {
			return false, err
		}
	}
	total := uint64(len(prog.terms)) * uint64(len(changes)/4)
	nch := uint64(len(changes) / 4)
	// The records go to the sink from several goroutines, each as a worker
	// of its own, as the CPU's workers deliver theirs: a batch of
	// alert-heavy's has 21,000, and the service builds its events from
	// each worker's buffer on a goroutine of its own.
	n := min(uint64(x.NumWorkers()), (got+minDrainChunk-1)/minDrainChunk)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			m := make([]graph.VertexID, prog.maxN)
			for r := w * got / n; r < (w+1)*got/n; r++ {
				row := recs[r*uint64(words) : (r+1)*uint64(words)]
				unit := uint64(row[0])
				if unit >= total {
					errs[w] = fmt.Errorf("kernels: BUG: record %d names unit %d of %d", r, unit, total)
					return
				}
				t := prog.owner[unit/nch]
				q := qs[t.q]
				sign := graph.Negative
				if row[1] == 1 {
					sign = graph.Positive
				}
				for d, lv := range t.plan.Levels {
					m[lv.Vertex] = row[2+d]
				}
				sink(int(w), live[t.q], sign, m[:q.N()])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return false, err
	}
	return ov[0] != 0, nil
}
