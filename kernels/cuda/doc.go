// Package cuda is gcsm's binding of the CUDA driver API (libcuda.so.1): the
// few dozen entry points the GPU executor needs to query devices, hold a
// context, allocate device, pinned and managed memory, copy, load PTX, launch
// kernels and time them with streams and events. It loads libcuda at run time
// and calls it from pure Go through github.com/ebitengine/purego, so gcsm
// still builds with CGO_ENABLED=0 on a machine with no CUDA toolkit, and a
// machine with no driver or no GPU gets an ordinary error from Open
// (errors.Is(err, ErrNoDriver) or ErrNoDevice), never a panic or an exit.
//
// Why purego rather than gorgonia.org/cu: cu is cgo over cuda.h, so every
// build needs the toolkit's headers and a C compiler, and it has no wrappers
// for cuMemHostAlloc with DEVICEMAP or cuMemHostGetDevicePointer, which the
// zero-copy placement rests on (docs/gpu.md). Calling the driver directly
// also keeps the toolkit out of the run-time dependencies: the driver JITs
// the embedded PTX itself.
//
// # Building without cgo
//
// With CGO_ENABLED=0, importing purego links its fakecgo package, a Go
// implementation of runtime/cgo's thread setup, so threads are created by
// pthread_create and C code finds the thread-local storage it expects. No
// build flags are needed. The cost is that such a binary is dynamically
// linked against the C library (purego imports dlopen from libdl.so.2 and
// libc.so.6): it runs on glibc systems, which every NVIDIA driver needs
// anyway, but not on musl.
//
// # Threads and contexts
//
// The driver's current context is a property of the OS thread. Every method
// here binds its goroutine to its thread and makes its Context current before
// calling the driver (see Context), so goroutines may use a Context freely;
// code calling libcuda by other means must runtime.LockOSThread and call
// Context.MakeCurrent itself.
//
// # Pointers
//
// The cgo pointer rules apply to purego calls as they do to cgo: C may not keep
// a Go pointer past the call, and Go memory passed to C may hold Go pointers
// only to pinned objects. Pointer arguments are passed as
// uintptr(unsafe.Pointer(p)) inside the call expression, which the
// functions marked go:uintptrescapes keep alive; the one array of pointers C reads,
// Launch's kernelParams, points into an argument block pinned with
// runtime.Pinner for the call. Memory the device reads after a call returns
// (asynchronous copies, kernel arguments that are host pointers) should be
// pinned host memory from HostAlloc or HostAllocator, which is outside the Go
// heap.
//
// # Errors
//
// Every CUresult other than CUDA_SUCCESS becomes an *Error naming the call, so
// callers decide with errors.Is(err, ErrOutOfMemory), ErrNoDevice, ErrInvalidPTX
// and the other sentinels.
package cuda
