package cuda

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// Context is a device's primary context, retained. A Context is safe for
// concurrent use by several goroutines; Close must not race with other calls.
//
// The driver keeps its current context per OS thread, while Go moves
// goroutines between threads at any time. So every method of Context, and of
// the Module, Function, Stream and Event it makes, locks the goroutine to its
// thread (runtime.LockOSThread) and calls cuCtxSetCurrent before its own
// driver call. That costs one extra driver call: 130 ns and one 8-byte
// allocation, beside 4 µs for a launch and 17 µs for a 4 KiB copy there and
// back (BenchmarkMakeCurrent, BenchmarkLaunch, BenchmarkCopy4K). Code that calls libcuda
// around this package must instead call runtime.LockOSThread and
// MakeCurrent at the start of each goroutine that uses CUDA.
type Context struct {
	lib    *lib
	dev    *Device
	handle uintptr // CUcontext
	closed atomic.Bool
}

// Device returns the device whose primary context c is.
func (c *Context) Device() *Device {
	if c == nil {
		return nil
	}
	return c.dev
}

// MakeCurrent makes c the current context of the calling OS thread. It is
// needed only by code that calls the driver without this package; pair it
// with runtime.LockOSThread, or the goroutine may move to a thread where c is
// not current.
func (c *Context) MakeCurrent() error {
	if c == nil || c.lib == nil {
		return errNoDriver("MakeCurrent")
	}
	if c.closed.Load() {
		return errClosed
	}
	return c.lib.call(fnCtxSetCurrent, c.handle)
}

// Close releases the primary context. When the last retain is released the
// driver destroys the context with all its memory, modules, streams and
// events. Close is idempotent.
func (c *Context) Close() error {
	if c == nil || c.lib == nil {
		return errNoDriver("Close")
	}
	if c.closed.Swap(true) {
		return nil
	}
	return c.lib.call(fnPrimaryCtxRelease, uintptr(c.dev.handle))
}

// do makes c current on this thread and calls f. It is the one way the
// context's methods reach the driver; see Context for why it binds the
// thread, and lib.call for the pointer rules (which go:uintptrescapes
// extends to do's callers).
//
//go:uintptrescapes
func (c *Context) do(f fn, args ...uintptr) error {
	if c == nil || c.lib == nil {
		return errNoDriver(symbols[f][0])
	}
	if c.closed.Load() {
		return fmt.Errorf("%s: %w", symbols[f][0], errClosed)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := c.lib.call(fnCtxSetCurrent, c.handle); err != nil {
		return err
	}
	return c.lib.call(f, args...)
}

// Synchronize waits for all work in the context to finish. It reports the
// first asynchronous error (a failed kernel, say) if there was one.
func (c *Context) Synchronize() error {
	return c.do(fnCtxSynchronize)
}

// MemInfo returns the free and total device memory in bytes.
func (c *Context) MemInfo() (free, total uint64, err error) {
	err = c.do(fnMemGetInfo, uintptr(unsafe.Pointer(&free)), uintptr(unsafe.Pointer(&total)))
	return free, total, err
}

// DevicePtr is an address in the device's (under UVA, the unified) address
// space: a CUdeviceptr. It is a number to Go, never dereferenced on the host.
type DevicePtr uintptr

// Flags for cuMemHostAlloc and cuMemHostRegister (the two share values).
const (
	hostPortable    = 0x01 // pinned for every context, not only the current one
	hostDeviceMap   = 0x02 // mapped into the device address space (zero-copy)
	memAttachGlobal = 0x01 // cuMemAllocManaged: accessible from any stream
)

func badSize(what string, n int) error {
	return fmt.Errorf("cuda: %s of %d bytes: %w", what, n, ErrInvalidValue)
}

// Alloc allocates n bytes of device memory, not zeroed. When the device is
// full the error satisfies errors.Is(err, ErrOutOfMemory).
func (c *Context) Alloc(n int) (DevicePtr, error) {
	if n <= 0 {
		return 0, badSize("Alloc", n)
	}
	var p DevicePtr
	if err := c.do(fnMemAlloc, uintptr(unsafe.Pointer(&p)), uintptr(n)); err != nil {
		return 0, fmt.Errorf("cuda: cannot allocate %d bytes of device memory: %w", n, err)
	}
	return p, nil
}

// AllocManaged allocates n bytes of managed (unified) memory, which host and
// device both address and the driver migrates on demand; it is the "unified"
// placement baseline. Never ask for more than the device has free: an
// oversubscribed managed allocation can hang the GPU rather than fail.
func (c *Context) AllocManaged(n int) (DevicePtr, error) {
	if n <= 0 {
		return 0, badSize("AllocManaged", n)
	}
	var p DevicePtr
	if err := c.do(fnMemAllocManaged, uintptr(unsafe.Pointer(&p)), uintptr(n), memAttachGlobal); err != nil {
		return 0, fmt.Errorf("cuda: cannot allocate %d bytes of managed memory: %w", n, err)
	}
	return p, nil
}

// Free releases memory from Alloc or AllocManaged. Free(0) does nothing.
func (c *Context) Free(p DevicePtr) error {
	if p == 0 {
		return nil
	}
	return c.do(fnMemFree, uintptr(p))
}

// CopyHtoD copies n bytes from host memory at src to the device. It returns
// when the copy is done, so src may be ordinary Go memory.
func (c *Context) CopyHtoD(dst DevicePtr, src unsafe.Pointer, n int) error {
	if n == 0 {
		return nil
	}
	if n < 0 || src == nil {
		return badSize("CopyHtoD", n)
	}
	return c.do(fnMemcpyHtoD, uintptr(dst), uintptr(src), uintptr(n))
}

// CopyDtoH copies n bytes from the device to host memory at dst and returns
// when they have arrived.
func (c *Context) CopyDtoH(dst unsafe.Pointer, src DevicePtr, n int) error {
	if n == 0 {
		return nil
	}
	if n < 0 || dst == nil {
		return badSize("CopyDtoH", n)
	}
	return c.do(fnMemcpyDtoH, uintptr(dst), uintptr(src), uintptr(n))
}

// CopyDtoD copies n bytes between two places in device memory. It returns
// once the copy is queued; later work on the device sees it done.
func (c *Context) CopyDtoD(dst, src DevicePtr, n int) error {
	if n == 0 {
		return nil
	}
	if n < 0 {
		return badSize("CopyDtoD", n)
	}
	return c.do(fnMemcpyDtoD, uintptr(dst), uintptr(src), uintptr(n))
}

// CopyHtoDAsync queues a copy of n bytes from src to the device on s (nil is
// the default stream). The copy is asynchronous only from pinned memory
// (HostAlloc, HostRegister); from pageable memory the driver stages it. Either
// way src must stay allocated and unchanged until s is synchronized: keep Go
// memory alive with runtime.KeepAlive after the synchronization, or better,
// use memory from HostAlloc, which the garbage collector does not manage.
func (c *Context) CopyHtoDAsync(dst DevicePtr, src unsafe.Pointer, n int, s *Stream) error {
	if n == 0 {
		return nil
	}
	if n < 0 || src == nil {
		return badSize("CopyHtoDAsync", n)
	}
	return c.do(fnMemcpyHtoDAsync, uintptr(dst), uintptr(src), uintptr(n), s.h())
}

// CopyDtoHAsync queues a copy of n bytes from the device to dst on s. dst must
// stay allocated, and unread, until s is synchronized (see CopyHtoDAsync).
func (c *Context) CopyDtoHAsync(dst unsafe.Pointer, src DevicePtr, n int, s *Stream) error {
	if n == 0 {
		return nil
	}
	if n < 0 || dst == nil {
		return badSize("CopyDtoHAsync", n)
	}
	return c.do(fnMemcpyDtoHAsync, uintptr(dst), uintptr(src), uintptr(n), s.h())
}

// Memset8 sets n bytes at p to v.
func (c *Context) Memset8(p DevicePtr, v uint8, n int) error {
	if n == 0 {
		return nil
	}
	if n < 0 {
		return badSize("Memset8", n)
	}
	return c.do(fnMemsetD8, uintptr(p), uintptr(v), uintptr(n))
}

// Memset32 sets n 32-bit words at p, which must be 4-byte aligned, to v.
func (c *Context) Memset32(p DevicePtr, v uint32, n int) error {
	if n == 0 {
		return nil
	}
	if n < 0 {
		return badSize("Memset32", 4*n)
	}
	return c.do(fnMemsetD32, uintptr(p), uintptr(v), uintptr(n))
}

// HostAlloc allocates n bytes of page-locked host memory, portable to every
// context and mapped into the device address space, and returns it as a Go
// slice. The memory is outside the Go heap: the garbage collector neither
// moves nor frees it, so it may be handed to asynchronous copies and to
// kernels (through HostDevicePointer). It is not zeroed. Release it with
// FreeHost, passing the slice (or a reslice starting at the same address).
//
// Pinning costs time at allocation (the driver faults in and locks every
// page) and physical memory that cannot be swapped.
func (c *Context) HostAlloc(n int) ([]byte, error) {
	if n <= 0 {
		return nil, badSize("HostAlloc", n)
	}
	var p unsafe.Pointer
	if err := c.do(fnMemHostAlloc, uintptr(unsafe.Pointer(&p)), uintptr(n), hostPortable|hostDeviceMap); err != nil {
		return nil, fmt.Errorf("cuda: cannot allocate %d bytes of pinned host memory: %w", n, err)
	}
	return unsafe.Slice((*byte)(p), n), nil
}

// FreeHost releases memory from HostAlloc.
func (c *Context) FreeHost(b []byte) error {
	p := unsafe.SliceData(b)
	if p == nil {
		return badSize("FreeHost", 0)
	}
	return c.do(fnMemFreeHost, uintptr(unsafe.Pointer(p)))
}

// HostRegister page-locks existing host memory and maps it into the device
// address space, as HostAlloc does for new memory. b should be memory outside
// the Go heap (an mmap'd arena); Go memory must be kept alive by the caller
// until HostUnregister, since the collector does not know the device uses it.
func (c *Context) HostRegister(b []byte) error {
	p := unsafe.SliceData(b)
	if p == nil || len(b) == 0 {
		return badSize("HostRegister", len(b))
	}
	return c.do(fnMemHostRegister, uintptr(unsafe.Pointer(p)), uintptr(len(b)), hostPortable|hostDeviceMap)
}

// HostUnregister undoes HostRegister; b must start where the registered
// range starts.
func (c *Context) HostUnregister(b []byte) error {
	p := unsafe.SliceData(b)
	if p == nil {
		return badSize("HostUnregister", 0)
	}
	return c.do(fnMemHostUnregister, uintptr(unsafe.Pointer(p)))
}

// HostDevicePointer returns the device address of the first byte of b, which
// must lie in memory from HostAlloc or HostRegister. Under unified
// addressing (every 64-bit Linux system with a current GPU) it equals the host
// address, but only the driver can say that the memory is mapped.
func (c *Context) HostDevicePointer(b []byte) (DevicePtr, error) {
	p := unsafe.SliceData(b)
	if p == nil {
		return 0, badSize("HostDevicePointer", 0)
	}
	var d DevicePtr
	if err := c.do(fnMemHostGetDevicePointer, uintptr(unsafe.Pointer(&d)), uintptr(unsafe.Pointer(p)), 0); err != nil {
		return 0, err
	}
	return d, nil
}

// DevicePointerOf returns the device address of b's first byte, where b is
// any subslice of a slab from a HostAllocator (or of HostAlloc or
// HostRegister memory). It is how the executor turns dyngraph's arena slices
// into kernel arguments for zero-copy reads; it is HostDevicePointer under
// the name the executor's callers use.
func (c *Context) DevicePointerOf(b []byte) (DevicePtr, error) {
	return c.HostDevicePointer(b)
}
