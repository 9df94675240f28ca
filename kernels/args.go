package kernels

import (
	"reflect"
	"unsafe"

	"github.com/gcsm/gcsm/kernels/cuda"
)

// matchArgs are the parameters of match.cu's match_delta and match_keep
// (MATCH_PARAMS), field for field, in order: params hands the driver a
// pointer to each field, so each field's Go type has its C parameter's
// size (cuda.DevicePtr and uint64 for pointers and unsigned long long,
// uint32 for uint32_t). TestMatchArgsLayout checks the fields against
// match.cu's list, which no build does: a field out of step with it would
// otherwise show only as a wrong answer on a GPU.
type matchArgs struct {
	prog, termOff cuda.DevicePtr
	nterms        uint32
	changes       cuda.DevicePtr
	nchanges      uint32
	graph         cuda.DevicePtr // graphDesc
	counts        cuda.DevicePtr
	scratch       cuda.DevicePtr
	nextUnit      cuda.DevicePtr
	totalUnits    uint64
	mode          uint32 // 1 to enumerate
	// The output: records of outWords words (matches, or seeds when split
	// is set), at most outCap of them, counted at outCount; park is where
	// a warp parks its unit when the records are full (0: the launch
	// ends instead), and overflow says it did.
	outRec    cuda.DevicePtr
	outCap    uint64
	outCount  cuda.DevicePtr
	outWords  uint32
	park      cuda.DevicePtr
	overflow  cuda.DevicePtr
	split     uint32
	seeds     cuda.DevicePtr // the units are these seeds of seedWords words, when set
	seedWords uint32
	listBytes cuda.DevicePtr
	cands     cuda.DevicePtr
	// The warps' kept lists (match.cu's enter_kept), for match_keep:
	// keepSlots lists of keepCap vertices a warp; keep is 0 where the
	// launches read none (program.readsKept).
	keep               cuda.DevicePtr
	keepCap, keepSlots uint32
}

// spaceArgs are the parameters of space.cu's match_space, field for
// field, in order, as matchArgs are match_delta's.
type spaceArgs struct {
	// The candidate space's arrays (spaceProgram), its vertices and the
	// level from which its tail is counted.
	prog, cons, verts, offs, nbrs cuda.DevicePtr
	n, tail                       uint32
	// The units: nseeds seeds of seedDepth vertices, taken through
	// nextSeed.
	seeds     cuda.DevicePtr
	seedDepth uint32
	nseeds    uint64
	nextSeed  cuda.DevicePtr
	// The output: seeds of outDepth vertices, at most outCap of them,
	// counted at outCount, overflow set when they did not fit; outDepth 0
	// counts the matches at count instead.
	out      cuda.DevicePtr
	outDepth uint32
	outCap   uint64
	outCount cuda.DevicePtr
	overflow cuda.DevicePtr
	// Each warp's scratch, warpWords words.
	scratch   cuda.DevicePtr
	warpWords uint32
	count     cuda.DevicePtr
}

// The field offsets of matchArgs and spaceArgs, in order.
var (
	matchArgOffsets = fieldOffsets(reflect.TypeFor[matchArgs]())
	spaceArgOffsets = fieldOffsets(reflect.TypeFor[spaceArgs]())
)

func fieldOffsets(t reflect.Type) []uintptr {
	off := make([]uintptr, t.NumField())
	for i := range off {
		off[i] = t.Field(i).Offset
	}
	return off
}

// params is the kernel's parameter list for cuda.Function.LaunchParams: a
// pointer to each of a's fields, in order. a must not change until the
// launch has been made.
func (a *matchArgs) params() []unsafe.Pointer {
	return fieldPointers(unsafe.Pointer(a), matchArgOffsets)
}

// params is spaceArgs' parameter list, as matchArgs.params.
func (a *spaceArgs) params() []unsafe.Pointer {
	return fieldPointers(unsafe.Pointer(a), spaceArgOffsets)
}

// fieldPointers returns base+off for each of offs.
func fieldPointers(base unsafe.Pointer, offs []uintptr) []unsafe.Pointer {
	p := make([]unsafe.Pointer, len(offs))
	for i, off := range offs {
		p[i] = unsafe.Add(base, off)
	}
	return p
}
