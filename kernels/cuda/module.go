package cuda

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"sync"
	"unsafe"
)

// Module is a loaded PTX module.
type Module struct {
	ctx    *Context
	handle uintptr // CUmodule
}

// JIT options of cuModuleLoadDataEx (CUjit_option).
const (
	jitErrorLogBuffer          = 5
	jitErrorLogBufferSizeBytes = 6
)

// jitLogSize bounds the JIT error log kept in an error. ptxas reports one line
// per error; 8 KiB holds the first hundred or so.
const jitLogSize = 8 << 10

// LoadModule loads a module image for the context's device: PTX text, which
// the driver JIT-compiles, or a cubin or fatbin, whose cubin for the device
// loads as it is. If the compiler rejects PTX the error satisfies
// errors.Is(err, ErrInvalidPTX) (or ErrUnsupportedPTXVersion, when the
// driver is older than the PTX's .version) and carries ptxas's error log.
func (c *Context) LoadModule(image string) (*Module, error) {
	if c == nil || c.lib == nil {
		return nil, errNoDriver("LoadModule")
	}
	img := cBytes(image)
	log := make([]byte, jitLogSize)
	// cuModuleLoadDataEx takes the options as two C arrays: CUjit_option
	// values (int) and void* values. A size travels in a void* slot as a
	// number, and the driver writes the log's length back into it; so the
	// values array is []uintptr, which the collector does not scan, and the
	// log buffer it points into is pinned and kept alive across the call
	// instead.
	opts := [2]int32{jitErrorLogBuffer, jitErrorLogBufferSizeBytes}
	vals := [2]uintptr{uintptr(unsafe.Pointer(&log[0])), jitLogSize}
	var pin runtime.Pinner
	pin.Pin(&log[0])
	var h uintptr
	err := c.do(fnModuleLoadDataEx, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&img[0])),
		uintptr(len(opts)), uintptr(unsafe.Pointer(&opts[0])), uintptr(unsafe.Pointer(&vals[0])))
	pin.Unpin()
	runtime.KeepAlive(log)
	if err != nil {
		n := min(int(vals[1]), len(log))
		if i := bytes.IndexByte(log[:n], 0); i >= 0 {
			n = i
		}
		if msg := string(bytes.TrimSpace(log[:n])); msg != "" {
			return nil, fmt.Errorf("cuda: cannot load module: %w\n%s", err, msg)
		}
		return nil, fmt.Errorf("cuda: cannot load module: %w", err)
	}
	return &Module{ctx: c, handle: h}, nil
}

// Close unloads the module. Its functions must not be launched after.
func (m *Module) Close() error {
	if m == nil {
		return errNoDriver("Module.Close")
	}
	if m.handle == 0 {
		return nil
	}
	err := m.ctx.do(fnModuleUnload, m.handle)
	m.handle = 0
	return err
}

// Function looks up an extern "C" __global__ function (a PTX .entry) by name.
// A missing name satisfies errors.Is(err, ErrNotFound).
func (m *Module) Function(name string) (*Function, error) {
	if m == nil {
		return nil, errNoDriver("Function")
	}
	cname := cBytes(name)
	var h uintptr
	if err := m.ctx.do(fnModuleGetFunction, uintptr(unsafe.Pointer(&h)), m.handle, uintptr(unsafe.Pointer(&cname[0]))); err != nil {
		return nil, fmt.Errorf("cuda: kernel %q: %w", name, err)
	}
	return &Function{ctx: m.ctx, handle: h, name: name}, nil
}

// Global returns the device address and size in bytes of a __device__ or
// __constant__ variable (a PTX .global or .const) of the module.
func (m *Module) Global(name string) (DevicePtr, int, error) {
	if m == nil {
		return 0, 0, errNoDriver("Global")
	}
	cname := cBytes(name)
	var p DevicePtr
	var n uint64 // size_t
	if err := m.ctx.do(fnModuleGetGlobal, uintptr(unsafe.Pointer(&p)), uintptr(unsafe.Pointer(&n)), m.handle, uintptr(unsafe.Pointer(&cname[0]))); err != nil {
		return 0, 0, fmt.Errorf("cuda: global %q: %w", name, err)
	}
	return p, int(n), nil
}

// Function is a kernel of a loaded Module.
type Function struct {
	ctx    *Context
	handle uintptr // CUfunction
	name   string
}

// Name returns the kernel's name.
func (f *Function) Name() string { return f.name }

// maxArgs bounds a kernel's parameter count. gcsm's kernels take about ten;
// the bound keeps the argument buffer a fixed-size object that a sync.Pool
// can hand out without allocating.
const maxArgs = 32

// argBuf is the argument block of one launch: vals holds each argument's
// bytes in an 8-byte slot, and ptrs is the void** kernelParams array, each
// entry pointing at its slot. ptrs holds Go pointers, and is itself Go memory
// passed to C: the cgo rules allow that only if the pointees are pinned, so
// Launch pins the argBuf (one object: the pointees live inside it) for the
// length of the call. cuLaunchKernel copies the values before it returns, so
// the block is free for reuse after.
type argBuf struct {
	vals [maxArgs]uint64
	ptrs [maxArgs]unsafe.Pointer
	n    int
}

var argBufs = sync.Pool{New: func() any { return new(argBuf) }}

// pack stores args into b. Each argument must have the C type of the kernel's
// parameter at the same position, since the driver copies as many bytes as
// the parameter has: DevicePtr, unsafe.Pointer, uintptr, uint64 and int64 for
// 8-byte parameters (pointers, unsigned long long), uint32 and int32 for
// 4-byte ones (unsigned, int), float32 for float and float64 for double. Go's
// int and uint are refused, because their size says nothing about the C
// parameter's.
func (b *argBuf) pack(args []any) error {
	if len(args) > maxArgs {
		return fmt.Errorf("cuda: %d kernel arguments, more than %d: %w", len(args), maxArgs, ErrInvalidValue)
	}
	for i, a := range args {
		slot := &b.vals[i]
		*slot = 0
		switch v := a.(type) {
		case DevicePtr:
			*slot = uint64(v)
		case unsafe.Pointer:
			*slot = uint64(uintptr(v))
		case uintptr:
			*slot = uint64(v)
		case uint64:
			*slot = v
		case int64:
			*slot = uint64(v)
		case uint32:
			*(*uint32)(unsafe.Pointer(slot)) = v
		case int32:
			*(*int32)(unsafe.Pointer(slot)) = v
		case float32:
			*(*uint32)(unsafe.Pointer(slot)) = math.Float32bits(v)
		case float64:
			*slot = math.Float64bits(v)
		default:
			return fmt.Errorf("cuda: kernel argument %d has type %T; want DevicePtr, unsafe.Pointer, uintptr, uint64, int64, uint32, int32, float32 or float64: %w", i, a, ErrInvalidValue)
		}
		b.ptrs[i] = unsafe.Pointer(slot)
	}
	for i := len(args); i < b.n; i++ {
		b.ptrs[i] = nil
	}
	b.n = len(args)
	return nil
}

// Launch queues the kernel on s (nil is the default stream) with the given
// grid and block dimensions, dynamic shared memory in bytes, and arguments.
// Arguments are copied at launch (see argBuf.pack for the types accepted), so
// the values may change as soon as Launch returns; memory they point to must
// stay valid until the kernel finishes. An unsafe.Pointer argument must be
// device-accessible: HostAlloc or registered memory, never ordinary Go
// memory, which the kernel would read after the call, unpinned.
//
// Launch errors are those of the launch itself (a bad configuration, say); a
// fault inside the kernel surfaces at the next synchronization.
//
// The host side costs about 4 µs and two small allocations (the driver call's
// argument lists) per launch (BenchmarkLaunch); gcsm launches once per batch
// and stage, not per update.
func (f *Function) Launch(grid, block [3]uint32, shared uint32, s *Stream, args ...any) error {
	if f == nil {
		return errNoDriver("Launch")
	}
	b := argBufs.Get().(*argBuf)
	if err := b.pack(args); err != nil {
		argBufs.Put(b)
		return fmt.Errorf("cuda: launch of %s: %w", f.name, err)
	}
	var pin runtime.Pinner
	pin.Pin(b)
	err := f.launch(grid, block, shared, s, unsafe.Pointer(&b.ptrs[0]))
	pin.Unpin()
	argBufs.Put(b)
	runtime.KeepAlive(args)
	return err
}

// LaunchParams is Launch with a prepared kernelParams array: params[i] points
// at the value of parameter i. The pointees are pinned for the call, since
// the array holding them is passed to C.
func (f *Function) LaunchParams(grid, block [3]uint32, shared uint32, s *Stream, params []unsafe.Pointer) error {
	if f == nil {
		return errNoDriver("LaunchParams")
	}
	var pin runtime.Pinner
	for _, p := range params {
		pin.Pin(p)
	}
	var kp unsafe.Pointer
	if len(params) > 0 {
		kp = unsafe.Pointer(&params[0])
	}
	err := f.launch(grid, block, shared, s, kp)
	pin.Unpin()
	runtime.KeepAlive(params)
	return err
}

func (f *Function) launch(grid, block [3]uint32, shared uint32, s *Stream, params unsafe.Pointer) error {
	err := f.ctx.do(fnLaunchKernel, f.handle,
		uintptr(grid[0]), uintptr(grid[1]), uintptr(grid[2]),
		uintptr(block[0]), uintptr(block[1]), uintptr(block[2]),
		uintptr(shared), s.h(), uintptr(params), 0)
	if err != nil {
		return fmt.Errorf("cuda: launch of %s (grid %v, block %v, %d B shared): %w", f.name, grid, block, shared, err)
	}
	return nil
}
