// Package kernels is gcsm's GPU engine: the CUDA sources (match.cu), their
// fatbin embedded at build time, and the executor that satisfies
// incremental.Matcher by running the incremental matching kernel.
//
// The driver is reached through kernels/cuda (purego, no cgo), so gcsm builds
// and runs without the CUDA toolkit; a machine without a GPU gets an
// ordinary error from Open and the CPU executor is used instead.
//
// The placement decides where the kernel reads neighbour lists:
//   - zero-copy: in place, in dyngraph's arenas, which then live in pinned,
//     device-mapped host memory (GPU.Allocator); every read crosses PCIe.
//   - device: a mirror of the arenas in GPU memory. The first batch copies
//     every slab; later batches copy only the lists that changed, gathered
//     into one staging buffer and scattered on the device.
//   - unified: the same mirror in managed memory, which the driver pages
//     between host and device (the GCSM paper's UM baseline).
//   - gcsm, degree, khop: zero-copy, plus a DCSR block of the lists a
//     policy picks, copied to GPU memory for each batch (cache.Planner).
//
// The fatbin carries cubins for sm_80 and sm_90, so those chips load the
// kernel without compiling it (the driver's JIT of the PTX takes seconds on
// a first run, twenty times the cubin's start), and PTX for the rest.
//
// $GCSM_KERNEL_IMAGE, when set, names a PTX or fatbin file that Open loads
// instead of the embedded image: for trying a change to match.cu on a machine
// that has nvcc but not Go (kernels/gen.sh still makes the image gcsm embeds).
//
// The device keeps a copy of the per-vertex table that each batch updates
// in place: the rows of the lists it changed, and those of new vertices
// (syncTable). The vertex labels are still copied whole, |V|·4 bytes, in a
// batch that adds a vertex.
package kernels

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/gcsm/gcsm/cache"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/kernels/cuda"
	"github.com/gcsm/gcsm/query"
)

// Placement is where the kernel reads neighbour lists from.
type Placement string

const (
	ZeroCopy Placement = "zero-copy"
	Device   Placement = "device"
	Unified  Placement = "unified"
	// The cache placements: zero-copy plus a block of hot lists in GPU
	// memory, chosen by cache.PolicyGCSM, PolicyDegree or PolicyKHop.
	GCSM   Placement = Placement(cache.PolicyGCSM)
	Degree Placement = Placement(cache.PolicyDegree)
	KHop   Placement = Placement(cache.PolicyKHop)
)

// Placements lists every placement, in the order the help text gives them.
var Placements = []Placement{Device, ZeroCopy, GCSM, Degree, KHop, Unified}

// ParsePlacement reads a --gpu-placement value.
func ParsePlacement(s string) (Placement, error) {
	if slices.Contains(Placements, Placement(s)) {
		return Placement(s), nil
	}
	return "", fmt.Errorf("unknown GPU placement %q: want one of %v", s, Placements)
}

// Cached says whether p reads lists through a cache block.
func (p Placement) Cached() bool { return p == GCSM || p == Degree || p == KHop }

// mirrored says whether p copies every list to the device.
func (p Placement) mirrored() bool { return p == Device || p == Unified }

// Options configure the GPU executor.
type Options struct {
	Device    int       // ordinal
	Placement Placement // zero-copy or device; default device
	// MemLimit caps the device memory gcsm uses, in bytes; 0 means what
	// the device has free. A device placement whose mirror would not fit
	// falls back to zero-copy (GPU.Placement says which is in effect).
	MemLimit int64
	// CacheBytes is the cache placements' budget: the most bytes a batch's
	// block may hold. 0 means four fifths of what MemLimit leaves after
	// the executor's other buffers, or, without a cap, half the device's
	// free memory; a negative value means no cache at all (every read
	// zero-copy).
	CacheBytes int64
	// EstimateShare is the share of a batch's kernel time the gcsm
	// placement aims to spend estimating: from batch to batch, per set of
	// queries, the sampler's walks (sampler.Options.MaxWalks) follow the
	// last estimate's time against the last kernel's (BatchStats.Kernel).
	// 0 means cache.DefaultEstimateShare; a negative value leaves the walks
	// to the sampler (the paper's M, raised by formula 5 within its
	// budget), so that the cache depends on the batch alone.
	EstimateShare float64
	// MinCacheKernel: the gcsm placement neither estimates nor caches for
	// a set of queries whose last kernel, scaled to the batch's edges and
	// to what it would have taken without the cache, took less. 0 means
	// cache.DefaultMinCacheKernel; a negative value caches every batch.
	MinCacheKernel time.Duration
	// WeightedWalks makes the gcsm placement's sampler use weighted walks
	// (sampler.Options.Weighted) instead of the paper's. Given 15-25% of
	// the batch they cover the most read lists far better (top-1% 0.88 to
	// 1.00 where the paper's walks reach as little as 0.09); held to
	// cache.DefaultEstimateShare, no better.
	WeightedWalks bool
	// NoFill turns off the gcsm placement's fill: the degree placement's
	// longest lists, packed once per set of queries and kept on the device
	// from batch to batch in the room the estimate's lists leave in the
	// budget (cache/fill.go). Off, the room stays empty.
	NoFill bool
	// MinFill is the fewest bytes the gcsm placement fills: where the
	// estimate leaves less room, there is no fill. 0 means
	// cache.DefaultMinFill.
	MinFill int64
	// WholeLists makes the cache placements' blocks hold whole lists, the
	// paper's block, instead of the entries the queries can read
	// (cache.Reads); for measuring what trimming buys.
	WholeLists bool
	// SearchLookup makes the kernel find cached lists the paper's way, by
	// a binary search of the block's rowidx at every list access, instead
	// of through the per-vertex table rows that the executor points into
	// the block once per batch (cache/planner.go); for measuring the two.
	SearchLookup bool
	// NoSplit walks every unit whole instead of splitting deep plans into
	// seeds (see runSplit); for measuring what splitting buys.
	NoSplit bool
	// KeepBytes bounds the device memory of the static matcher's kept
	// intersections (match.cu's enter_kept); 0 means 1 GiB, and a negative value
	// keeps none, every level scanning its lists, for measuring what
	// keeping buys.
	KeepBytes int64
	// SpaceEntries bounds the candidate space that the static matcher
	// builds on the host for match_space, in entries of the graph's lists
	// it comes from (incremental.Candidates.Space); a query whose space
	// would pass it is counted by match_delta over the graph's lists. 0
	// means incremental.DefaultSpaceEntries, large enough for unlabelled
	// patterns, which the space counts with their tails (sp_tail) in less
	// time than match_delta takes (docs/benchmarks.md, STMatch). A
	// negative value builds none.
	SpaceEntries int
	// EnumRecords is the capacity of the enumeration buffer in matches;
	// 0 means 1<<22. A launch that fills it stops, the host drains the
	// buffer, and the next launch resumes every unit where it stopped, so
	// the size bounds device memory, not what a batch may find.
	EnumRecords int
}

// GPU runs the incremental matching kernel on one device. It is not safe for
// concurrent use; one engine drives it.
type GPU struct {
	opts     Options
	ctx      *cuda.Context
	dev      *cuda.Device
	mod      *cuda.Module
	match    *cuda.Function
	keep     *cuda.Function // match_keep: match_delta for plans with kept lists
	space    *cuda.Function // match_space: the static count over a candidate space
	scat     *cuda.Function
	alloc    hostmem.Allocator // pinned host memory (cuda.HostAllocator)
	bufs     map[string]devBuf
	used     int64 // device bytes held
	mirror   []slabMirror
	mirrorOf *dyngraph.Graph // the graph the mirror copies
	// tracked is the graph whose batches stale follows: the lists its last
	// Reorganize rewrote, which copies on the device must refresh.
	tracked *dyngraph.Graph
	epoch   uint64 // tracked's Epoch when last prepared
	stale   []dyngraph.ListRef
	// current says the copies are tracked's as of its pending batch: a
	// second call in that batch (the Placer's query measured alone after
	// its share) copies nothing again.
	current bool
	// prepared is what the last call spent in prepare (LastPrepare).
	prepared time.Duration
	tab      tableCopy
	refs     []dyngraph.ListRef // the lists prepare copies, kept so they allocate once
	tabHost  []uint32           // staging for whole-table copies, kept so they allocate once
	labelLog []graph.VertexID   // staging for syncLabels, kept so it allocates once
	rows     rowWrites          // the changed lists' rows (readRows), kept so they allocate once
	// gathered is syncMirror's staging of the changed lists, kept so that
	// it allocates once; their words go in pinned memory (data).
	gathered struct {
		at, hdr []uint32
		data    pinnedWords
	}
	// listBytes counts the neighbour-list bytes the kernel read through
	// the slabs ([0]) and from the cache block ([1]).
	listBytes [2]uint64
	cache     cache.Planner
	cacheRows rowWrites // pointRows' staging, kept so it allocates once
	last      BatchStats
	// inFlight is set between a Begin that overlaps and its wait, while a
	// goroutine of run's drives the device.
	inFlight bool
	// deferring is set while prepare runs for a Begin that overlaps: its
	// copies and launches wait in ops, their data in staged (copyIn).
	deferring bool
	ops       []func() error
	staged    staging
	// FellBack is set when a device placement did not fit under the
	// memory cap and zero-copy is used instead.
	FellBack bool
}

type devBuf struct {
	p cuda.DevicePtr
	n int
}

type slabMirror struct {
	host     []uint32 // the slab it copies, to notice a different slab
	ids, lbl cuda.DevicePtr
}

var (
	_ incremental.Matcher    = (*GPU)(nil)
	_ incremental.Overlapper = (*GPU)(nil)
	_ incremental.Preparer   = (*GPU)(nil)
)

// Open starts the executor on a device. The error wraps cuda.ErrNoDriver or
// cuda.ErrNoDevice when there is no GPU to use.
func Open(opts Options) (*GPU, error) {
	if opts.Placement == "" {
		opts.Placement = Device
	}
	if _, err := ParsePlacement(string(opts.Placement)); err != nil {
		return nil, err
	}
	if opts.EnumRecords == 0 {
		opts.EnumRecords = 1 << 22
	}
	d, err := cuda.Open()
	if err != nil {
		return nil, err
	}
	n, err := d.Devices()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, cuda.ErrNoDevice
	}
	dev, err := d.Device(opts.Device)
	if err != nil {
		return nil, err
	}
	if dev.Major < 8 {
		return nil, fmt.Errorf("kernels: %s has compute capability %d.%d; gcsm needs 8.0 or newer", dev.Name, dev.Major, dev.Minor)
	}
	if !dev.UnifiedAddressing || !dev.CanMapHostMemory {
		return nil, fmt.Errorf("kernels: %s cannot map host memory with unified addressing", dev.Name)
	}
	ctx, err := dev.Context()
	if err != nil {
		return nil, err
	}
	x := &GPU{opts: opts, ctx: ctx, dev: dev, bufs: map[string]devBuf{}, alloc: cuda.NewHostAllocator(ctx)}
	x.cache.SetAlloc(x.alloc)
	image := matchImage
	if f := os.Getenv("GCSM_KERNEL_IMAGE"); f != "" {
		// A kernel change tried on a machine with nvcc but no Go: the image
		// it just compiled, without rebuilding gcsm.
		b, err := os.ReadFile(f)
		if err != nil {
			ctx.Close()
			return nil, fmt.Errorf("kernels: $GCSM_KERNEL_IMAGE: %w", err)
		}
		image = string(b)
	}
	if x.mod, err = ctx.LoadModule(image); err != nil {
		ctx.Close()
		return nil, fmt.Errorf("kernels: loading the matching kernel: %w", err)
	}
	if x.match, err = x.mod.Function("match_delta"); err == nil {
		x.scat, err = x.mod.Function("scatter")
	}
	if err == nil {
		x.keep, err = x.mod.Function("match_keep")
	}
	if err == nil {
		x.space, err = x.mod.Function("match_space")
	}
	if err == nil {
		// The host reads 128-bit counts (readCounts, countSpace): an image
		// from before them would be read wrong, so it is refused.
		if _, ferr := x.mod.Function("counts_128"); ferr != nil {
			err = fmt.Errorf("kernels: the kernel image predates 128-bit counts; regenerate it with kernels/gen.sh: %w", ferr)
		}
	}
	if err == nil {
		err = x.reserveCache()
	}
	if err != nil {
		x.Close()
		return nil, err
	}
	return x, nil
}

// Close releases the device memory and the context.
func (x *GPU) Close() error {
	var errs []error
	for _, b := range x.bufs {
		errs = append(errs, x.ctx.Free(b.p))
	}
	for _, m := range x.mirror {
		errs = append(errs, x.ctx.Free(m.ids))
		if m.lbl != 0 {
			errs = append(errs, x.ctx.Free(m.lbl))
		}
	}
	errs = append(errs, x.cache.Close(), x.gathered.data.free(x.alloc))
	if x.mod != nil {
		errs = append(errs, x.mod.Close())
	}
	errs = append(errs, x.ctx.Close())
	return errors.Join(errs...)
}

// Name describes the device.
func (x *GPU) Name() string {
	return fmt.Sprintf("%s (sm_%d%d, %d SMs, %d MiB)", x.dev.Name, x.dev.Major, x.dev.Minor, x.dev.Multiprocessors, x.dev.TotalMem>>20)
}

// Placement is the placement in effect.
func (x *GPU) Placement() Placement {
	if x.FellBack {
		return ZeroCopy
	}
	return x.opts.Placement
}

// Allocator returns pinned, device-mapped host memory for dyngraph's arenas.
// The zero-copy placement needs the graph built on it; the device placement
// works with any allocator but copies faster from pinned memory.
func (x *GPU) Allocator() hostmem.Allocator { return x.alloc }

// buf returns a device buffer of at least n bytes under name, reallocating
// when it must grow.
func (x *GPU) buf(name string, n int) (cuda.DevicePtr, error) {
	n = max(n, 8)
	if b, ok := x.bufs[name]; ok && b.n >= n {
		return b.p, nil
	}
	if b, ok := x.bufs[name]; ok {
		x.ctx.Free(b.p)
		x.used -= int64(b.n)
		delete(x.bufs, name)
	}
	size := n + n/4 // headroom, so that slowly growing inputs reallocate rarely
	p, err := x.allocBuf(name, size)
	if err != nil {
		return 0, err
	}
	x.bufs[name] = devBuf{p, size}
	x.used += int64(size)
	return p, nil
}

// allocBuf allocates size bytes of device memory for buffer name, within
// the memory cap; the caller records it in bufs and used.
func (x *GPU) allocBuf(name string, size int) (cuda.DevicePtr, error) {
	if err := x.reserve(int64(size)); err != nil {
		return 0, err
	}
	p, err := x.ctx.Alloc(size)
	if err != nil {
		return 0, fmt.Errorf("kernels: device buffer %s of %d bytes: %w", name, size, err)
	}
	return p, nil
}

func (x *GPU) reserve(n int64) error {
	if x.opts.MemLimit > 0 && x.used+n > x.opts.MemLimit {
		return fmt.Errorf("kernels: %d more bytes would pass the GPU memory cap of %d (%d in use): %w", n, x.opts.MemLimit, x.used, cuda.ErrOutOfMemory)
	}
	return nil
}

func (x *GPU) upload(name string, data unsafe.Pointer, n int) (cuda.DevicePtr, error) {
	p, err := x.buf(name, n)
	if err != nil || n == 0 {
		return p, err
	}
	return p, x.copyIn(p, data, n)
}

// uploadKept is upload through copyInKept.
func (x *GPU) uploadKept(name string, data unsafe.Pointer, n int) (cuda.DevicePtr, error) {
	p, err := x.buf(name, n)
	if err != nil || n == 0 {
		return p, err
	}
	return p, x.copyInKept(p, data, n)
}

// copyIn copies n bytes from host memory to dst: at once, or, while prepare
// runs for a Begin that overlaps (x.deferring), from a copy of them taken
// now, on the goroutine that then runs the launches. Those copies, and the
// scatter launches after them (later), are the driver calls of a batch's
// prepare; deferred, they leave the run loop only the reads of the graph.
func (x *GPU) copyIn(dst cuda.DevicePtr, src unsafe.Pointer, n int) error {
	if !x.deferring {
		return x.ctx.CopyHtoD(dst, src, n)
	}
	b := x.staged.take(n)
	copy(b, unsafe.Slice((*byte)(src), n))
	x.ops = append(x.ops, func() error { return x.ctx.CopyHtoD(dst, unsafe.Pointer(&b[0]), n) })
	return nil
}

// copyInKept is copyIn for a source that stays as it is until the
// deferred copies have run: the executor's own staging of a batch's lists
// and rows (x.gathered, x.rows), which only the next prepare rewrites, and
// that prepare waits for the flush (inFlight). Deferred, the copy reads it
// where it is: a copy of it would cost the run loop one more memmove of
// every list a batch changed, some 40% of its time on the alert-heavy mix.
func (x *GPU) copyInKept(dst cuda.DevicePtr, src unsafe.Pointer, n int) error {
	if !x.deferring {
		return x.ctx.CopyHtoD(dst, src, n)
	}
	x.ops = append(x.ops, func() error { return x.ctx.CopyHtoD(dst, src, n) })
	return nil
}

// later runs f now, or after the copies and launches deferred before it
// (copyIn).
func (x *GPU) later(f func() error) error {
	if !x.deferring {
		return f()
	}
	x.ops = append(x.ops, f)
	return nil
}

// flush runs the deferred copies and launches in order.
func (x *GPU) flush() error {
	var err error
	for _, f := range x.ops {
		if err == nil {
			err = f()
		}
	}
	clear(x.ops)
	x.ops = x.ops[:0]
	x.staged.reset()
	return err
}

// pinnedWords is a staging buffer of words in the executor's pinned host
// memory, kept from batch to batch and grown by doubling. The device copies
// from pinned memory by DMA; from Go's memory the driver first copies every
// byte again through a pinned buffer of its own, on the goroutine that
// launches.
type pinnedWords struct{ b []byte }

// sized returns the buffer with length n, its contents whatever they were;
// a buffer too small is replaced, so no copy may still read it.
func (p *pinnedWords) sized(a hostmem.Allocator, n int) ([]uint32, error) {
	if 4*n > len(p.b) {
		b, err := a.Alloc(max(4*n, 2*len(p.b), 1<<16))
		if err != nil {
			return nil, fmt.Errorf("kernels: staging for the changed lists: %w", err)
		}
		if err := p.free(a); err != nil {
			a.Free(b)
			return nil, err
		}
		p.b = b
	}
	return hostmem.Uint32s(p.b)[:n], nil
}

func (p *pinnedWords) free(a hostmem.Allocator) error {
	if p.b == nil {
		return nil
	}
	b := p.b
	p.b = nil
	return a.Free(b)
}

// staging is host memory for deferred copies, reused from batch to batch:
// chunks that never move, so that a copy taken keeps its address.
type staging struct {
	chunks    [][]byte
	cur, used int
}

const stagingChunk = 1 << 20

// take returns n bytes that stay put until reset.
func (s *staging) take(n int) []byte {
	for ; s.cur < len(s.chunks); s.cur, s.used = s.cur+1, 0 {
		if c := s.chunks[s.cur]; len(c)-s.used >= n {
			s.used += n
			return c[s.used-n : s.used : s.used]
		}
	}
	s.chunks = append(s.chunks, make([]byte, max(n, stagingChunk)))
	s.cur, s.used = len(s.chunks)-1, n
	return s.chunks[s.cur][:n:n]
}

func (s *staging) reset() { s.cur, s.used = 0, 0 }

func u32ptr(s []uint32) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}

// graphDesc is the kernel's view of the graph for a batch's launches:
// match.cu's struct Graph, field for field.
type graphDesc struct {
	slabIDs, slabLbls, outTab, inTab, vlabel cuda.DevicePtr
	cacheLo, cacheHi                         uint64 // the cache block's device addresses
	oneVLabel, multi, directed, _            uint32
	_                                        uint64 // where the kernel counts reads; its own
	// The block's arrays and number of lists for the search lookup
	// (Options.SearchLookup); cK is 0 otherwise.
	cRowIdx, cRowPtr, cColIdx, cLbls cuda.DevicePtr
	cK, _                            uint32
}

// prepare makes the graph readable by the kernel: slab addresses (mapped or
// mirrored), the per-vertex table, the vertex labels and, in the cache
// placements, the batch's cache block. It returns the device copy of the
// graph's description. With allAppended the table presents every list as
// appended by the batch, which turns the incremental kernel into a static
// matcher (see Static); there is no cache block then. delta and queries
// are the batch's, for the cache policies.
func (x *GPU) prepare(g *dyngraph.Graph, allAppended bool, delta []graph.Change, queries []*query.Query) (cuda.DevicePtr, error) {
	if x.inFlight {
		// Its staging may still be read by the last Begin's copies.
		return 0, errors.New("kernels: BUG: the executor was used before the wait of its last Begin")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0 := time.Now()
	defer func() { x.prepared = time.Since(t0) }()
	var a graphDesc
	// The lists changed since the last batch: rewritten by the last
	// Reorganize, or touched by this Apply. Only they need copying.
	var refs []dyngraph.ListRef
	switch e := g.Epoch(); {
	case x.tracked == g && e == x.epoch && x.current && g.Pending():
		refs = x.refs[:0] // the same pending batch again: nothing changed since
	case x.tracked == g && e == x.epoch:
		refs = append(x.refs[:0], x.stale...) // Static after the batch, its lists rewritten by Reorganize
	case x.tracked == g && e == x.epoch+1:
		refs = g.Touched(append(x.refs[:0], x.stale...))
		x.cache.TouchFills(g)
	default:
		// Another graph, or batches this executor did not see: copy
		// everything again.
		x.tracked, x.tab = g, tableCopy{}
		x.dropMirror()
		x.mirrorOf = nil
		if err := x.cache.Forget(); err != nil {
			return 0, err
		}
	}
	if cap(refs) > cap(x.refs) {
		x.refs = refs
	}
	x.epoch = g.Epoch()
	x.stale = g.Touched(x.stale[:0])
	x.current = false // until the copies below are made
	x.readRows(g, refs)
	ids, lbls, err := x.slabAddresses(g, refs)
	if err != nil {
		return 0, err
	}
	// The cache block, when there is one, is one more slab: the table rows
	// of the lists it holds point into it (pointRows).
	cacheSlab := uint32(len(ids))
	if x.Placement().Cached() && !allAppended {
		sl, err := x.fillCache(g, delta, queries)
		if err != nil {
			return 0, err
		}
		// The fill is one slab more, cacheSlab+1.
		ids, lbls = append(ids, sl.Col, sl.FillCol), append(lbls, sl.Lbl, sl.FillLbl)
		a.cacheLo, a.cacheHi = sl.Base, sl.Base+uint64(x.last.CacheBytes)
		if x.opts.SearchLookup && x.last.CachedLists > 0 {
			lay := x.cache.Block().Layout()
			a.cRowIdx = cuda.DevicePtr(sl.Base) + cuda.DevicePtr(4*lay.RowIdx)
			a.cRowPtr = cuda.DevicePtr(sl.Base) + cuda.DevicePtr(4*lay.RowPtr)
			a.cColIdx, a.cLbls = cuda.DevicePtr(sl.Col), cuda.DevicePtr(sl.Lbl)
			a.cK = uint32(x.last.CachedLists)
		}
	}
	if a.slabIDs, err = x.upload("slab_ids", unsafe.Pointer(&ids[0]), 8*len(ids)); err != nil {
		return 0, err
	}
	if a.slabLbls, err = x.upload("slab_lbls", unsafe.Pointer(&lbls[0]), 8*len(lbls)); err != nil {
		return 0, err
	}
	if err := x.syncTable(g, allAppended, refs); err != nil {
		return 0, err
	}
	if err := x.pointRows(g, cacheSlab); err != nil {
		return 0, err
	}
	a.outTab, a.inTab = x.bufs["out_tab"].p, x.bufs["out_tab"].p
	if g.Directed() {
		a.inTab = x.bufs["in_tab"].p
	}
	if err := x.syncLabels(g); err != nil {
		return 0, err
	}
	a.vlabel = x.bufs["vlabel"].p
	// The kernel must compare keys exactly as dyngraph sorted them.
	a.oneVLabel = b2u(g.Order().IDOnly())
	a.multi = b2u(g.MultiLabel())
	a.directed = b2u(g.Directed())
	p, err := x.upload("graph", unsafe.Pointer(&a), int(unsafe.Sizeof(a)))
	if err != nil {
		return 0, err
	}
	x.current = g.Pending()
	return p, nil
}

// Follow implements incremental.Follower: the executor matches nothing in
// g's pending batch, but notes the lists it touched, so that its next batch
// copies them with its own instead of copying the whole graph again. It
// costs no device work. Past a sixteenth as many lists as g has vertices,
// and 4096 more, the next batch copies everything instead: gathering lists
// one at a time (about 0.16 µs each) then costs more than copying the
// whole graph.
func (x *GPU) Follow(g *dyngraph.Graph) {
	if x.tracked != g || g.Epoch() != x.epoch+1 {
		return // not following g: its next batch copies everything anyway
	}
	// The last batch's lists, rewritten by its Reorganize, stay stale, and
	// this batch's join them: the copy reads them as they will be then.
	x.stale = g.Touched(x.stale)
	x.epoch = g.Epoch()
	x.current = false
	x.cache.TouchFills(g)
	if len(x.stale) > g.NumVertices()/16+4096 {
		x.tracked = nil
	}
}

// LastPrepare implements incremental.Preparer: what the last call spent
// bringing the device's copies up to date (in Begin, reading the host graph
// for the copies it leaves to the launching goroutine). A batch's first
// call pays it for the lists the batch changed; a second call in the same
// batch copies nothing again.
func (x *GPU) LastPrepare() time.Duration { return x.prepared }

// tableCopy records what the device's copy of the per-vertex table and the
// vertex labels reflect.
type tableCopy struct {
	nv       int  // rows in the table copy
	valid    bool // the copy matches the graph as of the last batch
	appended bool // it was made for Static (every list shown appended)
	vlNV     int  // vertex labels in their copy
	vlEpoch  uint64
}

// syncTable brings the device's per-vertex table up to date: the whole of it
// when the copy was made for another purpose, else only the rows of the
// changed lists, through the scatter kernel, and the rows of vertices new
// since the last batch, copied onto the end of the table. Copying the whole
// table every batch (|V|·20 bytes per direction) made small batches slower
// on the GPU than on the CPU, and a stream of new accounts grows the graph
// in almost every batch.
func (x *GPU) syncTable(g *dyngraph.Graph, allAppended bool, refs []dyngraph.ListRef) error {
	nv := g.NumVertices()
	if allAppended || !x.tab.valid || x.tab.appended || x.tab.nv > nv {
		tab := g.Table(x.tabHost[:0], false)
		if allAppended {
			presentAppended(tab)
		}
		if _, err := x.upload("out_tab", u32ptr(tab), 4*len(tab)); err != nil {
			return err
		}
		if g.Directed() {
			tab = g.Table(tab[:0], true)
			if allAppended {
				presentAppended(tab)
			}
			if _, err := x.upload("in_tab", u32ptr(tab), 4*len(tab)); err != nil {
				return err
			}
		}
		x.tabHost = tab
		x.tab.nv, x.tab.valid, x.tab.appended = nv, true, allAppended
		x.cache.ResetRows() // every row is the graph's again
		return nil
	}
	if !x.tableFits(g, nv) {
		if err := x.growTables(g, nv); err != nil {
			return err
		}
	}
	if err := x.appendRows(g, x.tab.nv, nv); err != nil {
		return err
	}
	x.tab.nv = nv
	if len(refs) == 0 {
		return nil
	}
	return x.writeRows("rows", g.Directed(), &x.rows)
}

// readRows stages the table rows of refs in x.rows, for syncTable to write
// and syncMirror to find the lists by. Each row costs a cache miss on the
// list's header, in a table of every vertex: the headers are read once
// here, not in three passes (the lists' lengths, their places, the rows),
// which saves a fifth of the host time Begin costs the run loop.
func (x *GPU) readRows(g *dyngraph.Graph, refs []dyngraph.ListRef) {
	rows := &x.rows
	rows.size(len(refs))
	directed := g.Directed()
	onCores(len(refs), parallelLists, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			rows.set(i, refs[i], directed, g.Row(refs[i]))
		}
	})
}

// place is the location of list i of x.rows: slab, offset and length.
func (w *rowWrites) place(i int) (slab, off, n uint32) {
	r := w.data[dyngraph.TableWords*i:]
	return r[0], r[1], r[2]
}

// syncLabels brings the device's copy of the vertex labels up to date. A
// stream of new accounts changes the labels in almost every batch, and the
// whole array is 4 bytes a vertex: so where the copy is of this graph, only
// the labels of vertices new since are copied onto its end, and those set or
// reset since (births into forgotten ids, forgettings) go through the
// scatter kernel; a buffer too small grows with its labels kept (grow).
// Otherwise, or when the graph no longer remembers the changes, everything
// is copied again.
func (x *GPU) syncLabels(g *dyngraph.Graph) error {
	vl := g.VertexLabels()
	if x.tab.vlNV == len(vl) && x.tab.vlEpoch == g.LabelEpoch() {
		return nil
	}
	b, have := x.bufs["vlabel"]
	var changed []graph.VertexID
	partial := have && x.tab.vlNV > 0 && x.tab.vlNV <= len(vl)
	if partial {
		changed, partial = g.Relabelled(x.labelLog[:0], x.tab.vlEpoch)
		x.labelLog = changed
		partial = partial && len(changed) <= len(vl)/8
	}
	if !partial {
		if _, err := x.upload("vlabel", u32ptr(vl), 4*len(vl)); err != nil {
			return err
		}
		x.tab.vlNV, x.tab.vlEpoch = len(vl), g.LabelEpoch()
		return nil
	}
	if b.n < 4*len(vl) {
		p, err := x.grow("vlabel", 4*x.tab.vlNV, 4*len(vl))
		if err != nil {
			return err
		}
		b.p = p
	}
	if tail := vl[x.tab.vlNV:]; len(tail) > 0 {
		if err := x.copyIn(b.p+cuda.DevicePtr(4*x.tab.vlNV), u32ptr(tail), 4*len(tail)); err != nil {
			return err
		}
	}
	// A vertex changed twice is written twice, with its label now both
	// times, so the scatter's order does not matter.
	var hdr, data []uint32
	for _, v := range changed {
		if int(v) < x.tab.vlNV {
			hdr = append(hdr, 0, v, 1, uint32(len(data)))
			data = append(data, vl[v])
		}
	}
	if len(hdr) > 0 {
		if err := x.scatterSegments("vlabels", []uint64{uint64(b.p)}, hdr, data); err != nil {
			return err
		}
	}
	x.tab.vlNV, x.tab.vlEpoch = len(vl), g.LabelEpoch()
	return nil
}

// parallelLists is the fewest lists a batch's copy gathers on more than one
// core: below it, starting goroutines costs more than it saves.
const parallelLists = 1 << 11

// onCores runs f over [0, n), in contiguous parts on up to every core when
// n is at least least, else at once on the caller's goroutine.
func onCores(n, least int, f func(lo, hi int)) {
	parts := min(runtime.GOMAXPROCS(0), n/max(1, least/4))
	if n < least || parts <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() { f(n*p/parts, n*(p+1)/parts) })
	}
	wg.Wait()
}

// growTables makes the device's table buffers hold nv rows, keeping the
// rows they hold. A stream of new accounts outgrows the buffers every few
// batches, and building and copying the whole table again each time would
// be most of the zero-copy placement's host time.
func (x *GPU) growTables(g *dyngraph.Graph, nv int) error {
	need := 4 * dyngraph.TableWords * nv
	names := []string{"out_tab"}
	if g.Directed() {
		names = append(names, "in_tab")
	}
	for _, name := range names {
		if _, err := x.grow(name, 4*dyngraph.TableWords*x.tab.nv, need); err != nil {
			return err
		}
	}
	return nil
}

// grow makes name's device buffer hold at least n bytes, with its first
// keep bytes as they were. A buffer that must move gets twice the room, so
// that one growing by a batch at a time moves a logarithmic number of times.
func (x *GPU) grow(name string, keep, n int) (cuda.DevicePtr, error) {
	old, ok := x.bufs[name]
	if ok && old.n >= n {
		return old.p, nil
	}
	if !ok {
		return x.buf(name, n)
	}
	size := 2 * n
	p, err := x.allocBuf(name, size)
	if err != nil {
		return 0, err
	}
	// The copy must be done before the old buffer goes.
	err = x.ctx.CopyDtoD(p, old.p, min(keep, old.n))
	if err == nil {
		err = x.ctx.Synchronize()
	}
	if err != nil {
		x.ctx.Free(p)
		return 0, err
	}
	x.ctx.Free(old.p)
	x.bufs[name] = devBuf{p, size}
	x.used += int64(size - old.n)
	return p, nil
}

// tableFits reports whether the device's table buffers hold nv rows.
func (x *GPU) tableFits(g *dyngraph.Graph, nv int) bool {
	need := 4 * dyngraph.TableWords * nv
	if b, ok := x.bufs["out_tab"]; !ok || b.n < need {
		return false
	}
	if b, ok := x.bufs["in_tab"]; g.Directed() && (!ok || b.n < need) {
		return false
	}
	return true
}

// appendRows copies the table rows of vertices lo to hi-1 onto the device's
// tables, whose buffers hold them (tableFits).
func (x *GPU) appendRows(g *dyngraph.Graph, lo, hi int) error {
	if lo >= hi {
		return nil
	}
	dirs := []bool{false}
	if g.Directed() {
		dirs = append(dirs, true)
	}
	for _, in := range dirs {
		tab := x.tabHost[:0]
		for v := lo; v < hi; v++ {
			row := g.Row(dyngraph.ListRef{V: graph.VertexID(v), In: in})
			tab = append(tab, row[:]...)
		}
		x.tabHost = tab
		name := "out_tab"
		if in {
			name = "in_tab"
		}
		at := x.bufs[name].p + cuda.DevicePtr(4*dyngraph.TableWords*lo)
		if err := x.copyIn(at, u32ptr(tab), 4*len(tab)); err != nil {
			return err
		}
	}
	return nil
}

// rowWrites stages rows of the per-vertex tables for writeRows.
type rowWrites struct{ hdr, data []uint32 }

// size empties w and makes room for n rows, to be staged by set.
func (w *rowWrites) size(n int) {
	w.hdr, w.data = sized(w.hdr, 4*n), sized(w.data, dyngraph.TableWords*n)
}

// sized returns s with length n, reusing its backing array when that is
// large enough; the elements' values are whatever they were.
func sized[T any](s []T, n int) []T { return slices.Grow(s[:0], n)[:n] }

// set stages row as list r's row in slot i of a w made by size: the slots
// are disjoint, so several goroutines may set them at once.
func (w *rowWrites) set(i int, r dyngraph.ListRef, directed bool, row [dyngraph.TableWords]uint32) {
	h := w.hdr[4*i : 4*i+4]
	h[0], h[1], h[2], h[3] = b2u(r.In && directed), dyngraph.TableWords*r.V, dyngraph.TableWords, uint32(dyngraph.TableWords*i)
	copy(w.data[dyngraph.TableWords*i:], row[:])
}

// writeRows copies the staged rows into the device's tables, through the
// scatter kernel; name keeps its staging buffers apart from other users'.
func (x *GPU) writeRows(name string, directed bool, w *rowWrites) error {
	if len(w.hdr) == 0 {
		return nil
	}
	out, in := x.bufs["out_tab"].p, x.bufs["out_tab"].p
	if directed {
		in = x.bufs["in_tab"].p
	}
	return x.scatterSegments(name, []uint64{uint64(out), uint64(in)}, w.hdr, w.data)
}

// scatterSegments copies staged segments to device addresses: hdr holds,
// per segment, an index into dst, a word offset there, a length and the
// segment's offset in data. The three must stay as they are until the
// copies have run (copyInKept): every caller's are either fresh or the
// executor's staging, rewritten only by the next prepare.
func (x *GPU) scatterSegments(name string, dst []uint64, hdr, data []uint32) error {
	dp, err := x.uploadKept(name+"_dst", unsafe.Pointer(&dst[0]), 8*len(dst))
	if err != nil {
		return err
	}
	hp, err := x.uploadKept(name+"_hdr", u32ptr(hdr), 4*len(hdr))
	if err != nil {
		return err
	}
	sp, err := x.uploadKept(name+"_data", u32ptr(data), 4*len(data))
	if err != nil {
		return err
	}
	nseg := uint32(len(hdr) / 4)
	return x.later(func() error {
		return x.scat.Launch([3]uint32{min(nseg, 65535), 1, 1}, [3]uint32{64, 1, 1}, 0, nil, dp, hp, nseg, sp)
	})
}

// presentAppended rewrites table rows so that each list reads as wholly
// appended: sorted part empty, no tombstones.
func presentAppended(tab []uint32) {
	for i := 0; i < len(tab); i += dyngraph.TableWords {
		tab[i+3], tab[i+4] = 0, 0
	}
}

// slabAddresses returns, per slab, the device address of its ids and labels.
func (x *GPU) slabAddresses(g *dyngraph.Graph, refs []dyngraph.ListRef) (ids, lbls []uint64, err error) {
	ns := g.NumSlabs()
	if ns == 0 {
		return []uint64{0}, []uint64{0}, nil
	}
	if x.opts.Placement.mirrored() && !x.FellBack {
		if err := x.syncMirror(g, refs); err != nil {
			if !errors.Is(err, cuda.ErrOutOfMemory) {
				return nil, nil, err
			}
			x.dropMirror()
			x.FellBack = true
		} else {
			for _, m := range x.mirror {
				ids = append(ids, uint64(m.ids))
				lbls = append(lbls, uint64(m.lbl))
			}
			return ids, lbls, nil
		}
	}
	for i := 0; i < ns; i++ {
		s, l := g.Slab(i)
		p, err := x.ctx.DevicePointerOf(unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s)))
		if err != nil {
			return nil, nil, fmt.Errorf("kernels: zero-copy needs the graph's arenas in pinned memory (build the graph with GPU.Allocator): %w", err)
		}
		ids = append(ids, uint64(p))
		var lp cuda.DevicePtr
		if l != nil {
			if lp, err = x.ctx.DevicePointerOf(unsafe.Slice((*byte)(unsafe.Pointer(&l[0])), 4*len(l))); err != nil {
				return nil, nil, err
			}
		}
		lbls = append(lbls, uint64(lp))
	}
	return ids, lbls, nil
}

func (x *GPU) dropMirror() {
	for _, m := range x.mirror {
		x.ctx.Free(m.ids)
		x.used -= int64(4 * len(m.host))
		if m.lbl != 0 {
			x.ctx.Free(m.lbl)
			x.used -= int64(4 * len(m.host))
		}
	}
	x.mirror = nil
}

// mirrorAlloc allocates n bytes for the mirror: device memory, or managed
// memory in the unified placement. A managed allocation larger than what
// the device has free is refused here, as ErrOutOfMemory, because the
// driver would accept it and the GPU could then hang paging
// (cuda.Context.AllocManaged).
func (x *GPU) mirrorAlloc(n int) (cuda.DevicePtr, error) {
	if x.opts.Placement != Unified {
		return x.ctx.Alloc(n)
	}
	free, _, err := x.ctx.MemInfo()
	if err != nil {
		return 0, err
	}
	if uint64(n) > free {
		return 0, fmt.Errorf("kernels: %d bytes of managed memory, with %d free on the device: %w", n, free, cuda.ErrOutOfMemory)
	}
	return x.ctx.AllocManaged(n)
}

// syncMirror brings the device copy of the arenas up to date: new slabs (or
// slabs that gained label arrays) are copied whole, and the lists changed
// since the last call, refs, are copied through one staging buffer and the
// scatter kernel. Their places are those of x.rows (readRows).
func (x *GPU) syncMirror(g *dyngraph.Graph, refs []dyngraph.ListRef) error {
	if x.mirrorOf != g {
		// Another graph: nothing of the mirror is valid, and every slab is
		// copied whole below.
		x.dropMirror()
		x.mirrorOf = g
	}
	if err := x.syncSlabs(g); err != nil {
		return err
	}
	if len(refs) == 0 {
		return nil
	}
	return x.scatterLists(g, refs)
}

// syncSlabs copies to the mirror, whole, the slabs it lacks and those
// that gained label arrays.
func (x *GPU) syncSlabs(g *dyngraph.Graph) error {
	for i := 0; i < g.NumSlabs(); i++ {
		ids, lbls := g.Slab(i)
		if i < len(x.mirror) && &x.mirror[i].host[0] == &ids[0] && (lbls == nil) == (x.mirror[i].lbl == 0) {
			continue
		}
		if i < len(x.mirror) { // a new slab or one that gained labels: copy again
			m := x.mirror[i]
			x.ctx.Free(m.ids)
			x.used -= int64(4 * len(m.host))
			if m.lbl != 0 {
				x.ctx.Free(m.lbl)
				x.used -= int64(4 * len(m.host))
			}
		}
		need := int64(4 * len(ids))
		if lbls != nil {
			need *= 2
		}
		if err := x.reserve(need); err != nil {
			return err
		}
		m := slabMirror{host: ids}
		var err error
		if m.ids, err = x.mirrorAlloc(4 * len(ids)); err != nil {
			return err
		}
		// At once, even for a Begin (copyIn): the next batch writes into
		// the slab, and a slab is too large to stage.
		if err = x.ctx.CopyHtoD(m.ids, unsafe.Pointer(&ids[0]), 4*len(ids)); err != nil {
			return err
		}
		if lbls != nil {
			if m.lbl, err = x.mirrorAlloc(4 * len(lbls)); err != nil {
				return err
			}
			if err = x.ctx.CopyHtoD(m.lbl, unsafe.Pointer(&lbls[0]), 4*len(lbls)); err != nil {
				return err
			}
		}
		x.used += need
		if i < len(x.mirror) {
			x.mirror[i] = m
		} else {
			x.mirror = append(x.mirror, m)
		}
	}
	return nil
}

// scatterLists copies the lists refs, whose places are those of x.rows,
// to the mirror: gathered into one staging buffer and scattered on the
// device.
func (x *GPU) scatterLists(g *dyngraph.Graph, refs []dyngraph.ListRef) error {
	// Each list's place in data is a prefix sum of the lengths in the
	// staged rows; then every core copies its share of the lists. On one
	// core the gathering would be most of a batch's GPU time on the
	// service's mixes, some 16,000 lists a batch of 4,096 updates (those it
	// touched and those the last batch's Reorganize rewrote).
	segs := uint32(1)
	if g.MultiLabel() {
		segs = 2 // the ids, then the labels
	}
	st := &x.gathered
	st.at = sized(st.at, len(refs)+1)
	at := st.at
	at[0] = 0
	for i := range refs {
		_, _, n := x.rows.place(i)
		at[i+1] = at[i] + segs*n
	}
	if at[len(refs)] == 0 {
		return nil
	}
	// One table of destinations: ids of slab s at 2s, labels at 2s+1. An
	// empty list's segments copy nothing, from slab 0.
	dst := make([]uint64, 2*len(x.mirror))
	for i, m := range x.mirror {
		dst[2*i], dst[2*i+1] = uint64(m.ids), uint64(m.lbl)
	}
	st.hdr = sized(st.hdr, 4*int(segs)*len(refs))
	data, err := st.data.sized(x.alloc, int(at[len(refs)]))
	if err != nil {
		return err
	}
	hdr := st.hdr
	onCores(len(refs), parallelLists, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			slab, off, n := x.rows.place(i)
			h, p := hdr[4*int(segs)*i:], at[i]
			if n == 0 {
				slab = 0
			}
			ids, lbls := g.Slab(int(slab))
			h[0], h[1], h[2], h[3] = 2*slab, off, n, p
			copy(data[p:p+n], ids[off:off+n])
			if segs == 2 {
				h[4], h[5], h[6], h[7] = 2*slab+1, off, n, p+n
				copy(data[p+n:p+2*n], lbls[off:off+n])
			}
		}
	})
	return x.scatterSegments("lists", dst, hdr, data)
}
