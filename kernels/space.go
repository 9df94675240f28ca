package kernels

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/kernels/cuda"
	"github.com/gcsm/gcsm/query"
)

// The layout of match_space's arrays (space.cu's SP_ and SC_ macros).
const (
	spVerts = iota
	spNCons
	spCons
	spBuf
	spAbove
	spBelow
	spNVerts
	spSrc
	spCover
	spSame
	spGroup
	spStride
)

const (
	scFrom = iota
	scOff
	scNbr
	scStride
)

// maxSpaceScratch bounds the warps' candidate buffers of match_space: a
// buffer per depth, as long as the depth's longest possible intersection.
// A space whose buffers would not fit is counted by match_delta instead.
const maxSpaceScratch = 2 << 30

// spaceProgram is a candidate space laid out for match_space.
type spaceProgram struct {
	n                 int
	tail              int // the first depth sp_tail counts from, or n-1: none
	prog, cons        []uint32
	verts, offs, nbrs []uint32
	warpWords         int // a warp's scratch: the candidate buffers of depths 1 to n-2, and of the tail
	rootSeeds         int // candidates of depth 0, the first launch's seeds
}

// encodeSpace lays out sp, the candidate space of plan, for match_space,
// which counts from depth tail on as sp_tail does (n-1: walking to the
// last depth). ok is false when it cannot be: an array past 2^32 entries
// (the kernel indexes them with 32 bits), or a plan deeper than the
// kernel's walk state.
func encodeSpace(sp incremental.Space, plan *query.Plan, tail int) (p *spaceProgram, ok bool) {
	n := len(plan.Levels)
	if n < 2 || n > maxLevels {
		return nil, false
	}
	p = &spaceProgram{n: n, prog: make([]uint32, n*spStride), rootSeeds: len(sp.Verts[0])}
	p.tail = tailGroups(plan, tail, p.prog)
	var verts, offs, nbrs int
	for d := range n {
		verts += len(sp.Verts[d])
		for ci := range sp.Nbr[d] {
			offs += len(sp.Off[d][ci])
			nbrs += len(sp.Nbr[d][ci])
		}
	}
	if max(verts, offs, nbrs) > math.MaxUint32 {
		return nil, false
	}
	for d, lv := range plan.Levels {
		w := p.prog[d*spStride : (d+1)*spStride]
		w[spVerts], w[spNVerts] = uint32(len(p.verts)), uint32(len(sp.Verts[d]))
		for _, v := range sp.Verts[d] {
			p.verts = append(p.verts, uint32(v))
		}
		w[spNCons] = uint32(len(lv.Cons))
		w[spCons] = uint32(len(p.cons) / scStride)
		room := math.MaxInt // the longest intersection: the shortest of the constraints' longest lists
		for ci, c := range lv.Cons {
			off := sp.Off[d][ci]
			p.cons = append(p.cons, uint32(c.From), uint32(len(p.offs)), uint32(len(p.nbrs)))
			p.offs = append(p.offs, off...)
			p.nbrs = append(p.nbrs, sp.Nbr[d][ci]...)
			longest := 0
			for x := 1; x < len(off); x++ {
				longest = max(longest, int(off[x]-off[x-1]))
			}
			room = min(room, longest)
		}
		if d >= 1 && (d < n-1 || p.tail < n-1) { // a counted tail keeps its last depth's candidates too
			w[spBuf] = uint32(p.warpWords)
			p.warpWords += room
		}
		for _, a := range lv.Above {
			w[spAbove] |= 1 << a
		}
		for _, b := range lv.Below {
			w[spBelow] |= 1 << b
		}
	}
	for d := range n {
		w := p.prog[d*spStride : (d+1)*spStride]
		w[spSrc] = noSrc
		if s, cover, ok := keptSource(plan, sp.Verts, d); ok {
			w[spSrc], w[spCover], w[spSame] = uint32(s), cover, b2u(slices.Equal(sp.Verts[s], sp.Verts[d]))
		}
	}
	return p, true
}

// tailGroups writes the group (incremental.TailGroups) of each depth of
// plan's tail from depth tail into prog, and returns tail; or n-1, no
// tail, where there is none or a group has more levels than sp_tail counts.
func tailGroups(plan *query.Plan, tail int, prog []uint32) int {
	n := len(plan.Levels)
	if tail >= n-1 {
		return n - 1
	}
	for g, ds := range incremental.TailGroups(plan, tail) {
		if len(ds) > incremental.MaxGroup {
			return n - 1
		}
		for _, d := range ds {
			prog[d*spStride+spGroup] = uint32(g)
		}
	}
	return tail
}

// keptSource picks the deepest earlier depth s whose candidates depth d can
// scan instead of a list (space.cu's SP_SRC): s has two constraints or more
// and d has each of them (the same placed vertex, edge label and
// direction); every candidate of d (verts[d]) is one of s (a query vertex
// of degree 2 has candidates that one of degree 4 has not); and s's
// symmetry conditions follow from d's. So every vertex s refused d would
// refuse too. cover has bit c set for each constraint c of d that s meets.
// Unlike keepIntersections, s's candidates are filtered already (placed
// vertices, symmetry), hence the last rule.
func keptSource(plan *query.Plan, verts [][]graph.VertexID, d int) (s int, cover uint32, ok bool) {
	above, below := orderAt(plan, d)
	lv := &plan.Levels[d]
	for s = d - 1; s >= 1; s-- {
		src := &plan.Levels[s]
		if len(src.Cons) < 2 || !subset(src.Above, above) || !subset(src.Below, below) || !within(verts[d], verts[s]) {
			continue
		}
		cover = 0
		for _, c := range src.Cons {
			i := slices.IndexFunc(lv.Cons, func(e query.Constraint) bool {
				return e.From == c.From && e.Label == c.Label && e.Dir == c.Dir
			})
			if i < 0 {
				cover = 0
				break
			}
			cover |= 1 << i
		}
		if cover != 0 {
			return s, cover, true
		}
	}
	return 0, 0, false
}

// orderAt returns the depths whose data vertices depth d's must be above
// (and below) once depths 0 to d are placed: the symmetry conditions of
// those depths, closed transitively.
func orderAt(plan *query.Plan, d int) (above, below uint64) {
	gt := make([]uint64, d+1) // gt[x]: the depths whose vertices x's is above
	for x := 0; x <= d; x++ {
		for _, a := range plan.Levels[x].Above {
			gt[x] |= 1 << a
		}
		for _, b := range plan.Levels[x].Below {
			gt[b] |= 1 << x
		}
	}
	for changed := true; changed; {
		changed = false
		for x := range gt {
			for y := range gt {
				if gt[x]&(1<<y) != 0 && gt[x]|gt[y] != gt[x] {
					gt[x] |= gt[y]
					changed = true
				}
			}
		}
	}
	for y := range gt {
		if gt[y]&(1<<d) != 0 {
			below |= 1 << y
		}
	}
	return gt[d], below
}

// within says whether every vertex of a, ascending, is in b, ascending.
func within(a, b []graph.VertexID) bool {
	if len(a) > len(b) {
		return false
	}
	j := 0
	for _, v := range a {
		for j < len(b) && b[j] < v {
			j++
		}
		if j == len(b) || b[j] != v {
			return false
		}
	}
	return true
}

// subset says whether every depth of ds is in the set.
func subset(ds []int, set uint64) bool {
	for _, d := range ds {
		if set&(1<<d) == 0 {
			return false
		}
	}
	return true
}

// staticSpace counts the matches of plan over the candidate space of f's
// sets with match_space; ok is false when the space or its buffers do not
// fit, and the caller walks the graph's lists instead.
func (x *GPU) staticSpace(g *dyngraph.Graph, f *incremental.Candidates, plan *query.Plan) (count graph.Count, ok bool, err error) {
	budget := x.opts.SpaceEntries
	if budget == 0 {
		budget = incremental.DefaultSpaceEntries
	}
	sp, ok := f.Space(g, plan, budget)
	if !ok {
		return graph.Count{}, false, nil
	}
	p, ok := encodeSpace(sp, plan, incremental.IndependentTail(plan))
	if !ok {
		return graph.Count{}, false, nil
	}
	return x.countSpace(p)
}

// countSpace counts the matches of a static plan over its candidate space
// with match_space: the candidates of depth 0 are the first seeds; launches
// of one level each expand them until there are staticSeeds per warp (or
// the next would not fit), and a last launch counts the rest of the plan
// from them. ok is false when the space's buffers do not fit the device.
func (x *GPU) countSpace(p *spaceProgram) (count graph.Count, ok bool, err error) {
	blocks := uint32(x.dev.Multiprocessors) * blocksPerSM
	warps := int(blocks) * warpsPerBlock
	scratchBytes := warps * max(p.warpWords, 1) * 4
	if scratchBytes > maxSpaceScratch {
		return graph.Count{}, false, nil
	}
	// Under a tight --gpu-mem the space may not fit: match_delta counts
	// the query from the graph's lists instead.
	scratch, err := x.buf("space_scratch", scratchBytes)
	if errors.Is(err, cuda.ErrOutOfMemory) {
		return graph.Count{}, false, nil
	}
	if err != nil {
		return graph.Count{}, false, err
	}
	root := make([]uint32, p.rootSeeds)
	for i := range root {
		root[i] = uint32(i)
	}
	var arr [6]cuda.DevicePtr // the space's five arrays, and the first seeds
	for i, a := range [][]uint32{p.prog, p.cons, p.verts, p.offs, p.nbrs, root} {
		arr[i], err = x.upload([]string{"space_prog", "space_cons", "space_verts", "space_offs", "space_nbrs", "seeds"}[i], u32ptr(a), 4*len(a))
		if errors.Is(err, cuda.ErrOutOfMemory) {
			return graph.Count{}, false, nil
		}
		if err != nil {
			return graph.Count{}, false, err
		}
	}
	// The counters, a word each: the next seed, the seeds written, the
	// seed buffer's overflow, and the count's three words (match_space):
	// 128 bits, low first, and the flag of a count past 2^128.
	const nctrs = 6
	ctrs, err := x.buf("space_counters", 8*nctrs)
	if err != nil {
		return graph.Count{}, false, err
	}
	next, outCount, overflow, total := ctrs, ctrs+8, ctrs+16, ctrs+24
	seeds := arr[5]
	depth, nseeds := 1, uint64(len(root))
	launch := func(seeds, out cuda.DevicePtr, outDepth int, outCap uint64) error {
		if err := x.ctx.Memset32(ctrs, 0, 2*nctrs); err != nil {
			return err
		}
		a := spaceArgs{prog: arr[0], cons: arr[1], verts: arr[2], offs: arr[3], nbrs: arr[4], n: uint32(p.n), tail: uint32(p.tail),
			seeds: seeds, seedDepth: uint32(depth), nseeds: nseeds, nextSeed: next,
			out: out, outDepth: uint32(outDepth), outCap: outCap, outCount: outCount, overflow: overflow,
			scratch: scratch, warpWords: uint32(p.warpWords), count: total}
		err := x.space.LaunchParams([3]uint32{blocks, 1, 1}, [3]uint32{warpsPerBlock * 32, 1, 1}, 0, nil, a.params())
		if err == nil {
			err = x.ctx.Synchronize()
		}
		x.last.Launches++
		if err != nil {
			return fmt.Errorf("kernels: match_space: %w", err)
		}
		return nil
	}
	for buf := 0; depth < p.tail && nseeds < uint64(staticSeeds*warps); buf++ {
		out, err := x.buf([2]string{"seeds_next", "seeds"}[buf%2], seedBytes)
		if errors.Is(err, cuda.ErrOutOfMemory) {
			break // under a tight --gpu-mem: walk what there is
		}
		if err != nil {
			return graph.Count{}, false, err
		}
		if err := launch(seeds, out, depth+1, uint64(seedBytes/(4*(depth+1)))); err != nil {
			return graph.Count{}, false, err
		}
		var c [nctrs]uint64
		if err := x.ctx.CopyDtoH(unsafe.Pointer(&c[0]), ctrs, 8*nctrs); err != nil {
			return graph.Count{}, false, err
		}
		if c[2] != 0 {
			break // the seeds of the level before stand
		}
		if c[1] == 0 {
			return graph.Count{}, true, nil
		}
		seeds, depth, nseeds = out, depth+1, c[1]
	}
	if err := launch(seeds, 0, 0, 0); err != nil {
		return graph.Count{}, false, err
	}
	var c [nctrs]uint64
	if err := x.ctx.CopyDtoH(unsafe.Pointer(&c[0]), ctrs, 8*nctrs); err != nil {
		return graph.Count{}, false, err
	}
	if c[5] != 0 {
		return graph.SaturatedCount(), true, nil // past 2^128: an error where it is reported
	}
	return graph.Count{Hi: c[4], Lo: c[3]}, true, nil
}
