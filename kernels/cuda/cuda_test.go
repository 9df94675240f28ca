package cuda

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"
)

// On a machine without libcuda (CI), Open must fail with ErrNoDriver, and
// every GPU test below must skip.
func TestOpenWithoutDriver(t *testing.T) {
	d, err := Open()
	if err == nil {
		t.Skipf("a CUDA driver is present (version %d)", d.Version())
	}
	if d != nil {
		t.Errorf("Open returned a Driver with error %v", err)
	}
	if !errors.Is(err, ErrNoDriver) && !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Open: %v; want ErrNoDriver or ErrNoDevice", err)
	}
	if errors.Is(err, ErrNoDriver) && !strings.Contains(err.Error(), "libcuda.so.1") {
		t.Errorf("Open: %q does not name the library it looked for", err)
	}
	if _, err2 := Open(); err2 != err {
		t.Errorf("second Open: %v; want the first error %v", err2, err)
	}
}

// Everything reachable without a driver answers ErrNoDriver and never
// panics.
func TestNoDriverNeverPanics(t *testing.T) {
	var (
		ctx *Context
		mod *Module
		fn  *Function
		st  *Stream
		ev  *Event
		dev *Device
	)
	buf := make([]byte, 8)
	calls := map[string]func() error{
		"Driver.Devices":       func() error { _, err := (*Driver)(nil).Devices(); return err },
		"Driver{}.Device":      func() error { _, err := new(Driver).Device(0); return err },
		"Device.Context":       func() error { _, err := dev.Context(); return err },
		"Device.Attribute":     func() error { _, err := dev.Attribute(AttrWarpSize); return err },
		"Context.MakeCurrent":  ctx.MakeCurrent,
		"Context.Close":        ctx.Close,
		"Context.Synchronize":  ctx.Synchronize,
		"Context.MemInfo":      func() error { _, _, err := ctx.MemInfo(); return err },
		"Context.Alloc":        func() error { _, err := ctx.Alloc(8); return err },
		"Context.Free":         func() error { return ctx.Free(1) },
		"Context.CopyHtoD":     func() error { return ctx.CopyHtoD(1, unsafe.Pointer(&buf[0]), 8) },
		"Context.CopyDtoH":     func() error { return ctx.CopyDtoH(unsafe.Pointer(&buf[0]), 1, 8) },
		"Context.Memset32":     func() error { return ctx.Memset32(1, 0, 2) },
		"Context.HostAlloc":    func() error { _, err := ctx.HostAlloc(8); return err },
		"Context.FreeHost":     func() error { return ctx.FreeHost(buf) },
		"Context.HostRegister": func() error { return ctx.HostRegister(buf) },
		"Context.DevicePointerOf": func() error {
			_, err := ctx.DevicePointerOf(buf)
			return err
		},
		"Context.LoadModule":   func() error { _, err := ctx.LoadModule(add1PTX); return err },
		"Context.NewStream":    func() error { _, err := ctx.NewStream(); return err },
		"Context.NewEvent":     func() error { _, err := ctx.NewEvent(); return err },
		"Module.Function":      func() error { _, err := mod.Function("add1"); return err },
		"Module.Global":        func() error { _, _, err := mod.Global("counter"); return err },
		"Function.Launch":      func() error { return fn.Launch([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, nil) },
		"Stream.Synchronize":   st.Synchronize,
		"Event.Record":         func() error { return ev.Record(nil) },
		"Elapsed":              func() error { _, err := Elapsed(ev, ev); return err },
		"HostAllocator.Alloc":  func() error { _, err := NewHostAllocator(nil).Alloc(8); return err },
		"HostAllocator{}.Free": func() error { return new(HostAllocator).Free(buf) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrNoDriver) {
			t.Errorf("%s: %v; want ErrNoDriver", name, err)
		}
	}
}

func TestErrorFormat(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{(*lib)(nil).newError("cuMemAlloc_v2", OutOfMemory), "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY: out of memory"},
		{(*lib)(nil).newError("cuInit", NoDevice), "cuInit: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected"},
		{(*lib)(nil).newError("cuLaunchKernel", Result(12345)), "cuLaunchKernel: CUresult(12345)"},
		{&Error{Call: "cuX", Code: 7, Name: "N", Message: "m"}, "cuX: N: m"},
		{ErrOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY: out of memory"},
		{fmt.Errorf("cuda: cannot allocate 8 bytes of device memory: %w", (*lib)(nil).newError("cuMemAlloc_v2", OutOfMemory)),
			"cuda: cannot allocate 8 bytes of device memory: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY: out of memory"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q; want %q", got, tc.want)
		}
	}
	if s := InvalidPTX.String(); s != "CUDA_ERROR_INVALID_PTX" {
		t.Errorf("InvalidPTX.String() = %q", s)
	}
}

func TestErrorIs(t *testing.T) {
	sentinels := map[Result]error{
		InvalidValue:          ErrInvalidValue,
		OutOfMemory:           ErrOutOfMemory,
		NotInitialized:        ErrNotInitialized,
		NoDevice:              ErrNoDevice,
		InvalidDevice:         ErrInvalidDevice,
		InvalidContext:        ErrInvalidContext,
		NoBinaryForGPU:        ErrNoBinaryForGPU,
		InvalidPTX:            ErrInvalidPTX,
		UnsupportedPTXVersion: ErrUnsupportedPTXVersion,
		InvalidHandle:         ErrInvalidHandle,
		NotFound:              ErrNotFound,
		NotReady:              ErrNotReady,
		IllegalAddress:        ErrIllegalAddress,
		LaunchOutOfResources:  ErrLaunchOutOfResources,
		LaunchFailed:          ErrLaunchFailed,
		NotSupported:          ErrNotSupported,
	}
	wantCodes := map[error]Result{
		ErrOutOfMemory: 2, ErrNotInitialized: 3, ErrNoDevice: 100, ErrInvalidDevice: 101,
		ErrInvalidPTX: 218, ErrNotFound: 500, ErrInvalidValue: 1, ErrLaunchFailed: 719,
		ErrIllegalAddress: 700, ErrNoBinaryForGPU: 209, ErrUnsupportedPTXVersion: 222,
	}
	for s, code := range wantCodes {
		if s.(*Error).Code != code {
			t.Errorf("%v has code %d; want %d", s, s.(*Error).Code, code)
		}
	}
	for code := range sentinels {
		err := fmt.Errorf("cuda: wrapped: %w", (*lib)(nil).newError("cuSomething", code))
		for other, s := range sentinels {
			if got := errors.Is(err, s); got != (other == code) {
				t.Errorf("errors.Is(%v, %v) = %v", err, s, got)
			}
		}
		if errors.Is(err, ErrNoDriver) {
			t.Errorf("errors.Is(%v, ErrNoDriver) = true", err)
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != code || e.Call != "cuSomething" {
			t.Errorf("errors.As(%v) = %+v", err, e)
		}
	}
	// A stub libcuda is no driver.
	if stub := (*lib)(nil).newError("cuInit", StubLibrary); !errors.Is(stub, ErrNoDriver) {
		t.Errorf("errors.Is(%v, ErrNoDriver) = false", stub)
	}
	// A target naming a call matches that call only.
	err := (*lib)(nil).newError("cuMemAlloc_v2", OutOfMemory)
	if !errors.Is(err, &Error{Call: "cuMemAlloc_v2", Code: OutOfMemory}) {
		t.Error("an *Error does not match a target with its own call")
	}
	if errors.Is(err, &Error{Call: "cuMemHostAlloc", Code: OutOfMemory}) {
		t.Error("an *Error matches a target naming another call")
	}
	// Argument checks done before reaching the driver are ErrInvalidValue too.
	if err := badSize("Alloc", -1); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("badSize: %v", err)
	}
}

func TestPackArgs(t *testing.T) {
	var b argBuf
	host := new(uint64)
	args := []any{
		DevicePtr(0xdead_beef_0000), uint32(7), int32(-3), uint64(1 << 40), int64(-1 << 40),
		float32(1.5), float64(-2.25), unsafe.Pointer(host), uintptr(0x1234),
	}
	// Dirty the buffer first: a 4-byte argument must not leave stale high
	// bytes from an earlier launch behind (they would be harmless to the
	// driver, which copies 4 bytes, but make the block differ run to run).
	for i := range b.vals {
		b.vals[i] = math.MaxUint64
	}
	if err := b.pack(args); err != nil {
		t.Fatal(err)
	}
	if b.n != len(args) {
		t.Fatalf("n = %d; want %d", b.n, len(args))
	}
	for i := range args {
		if b.ptrs[i] != unsafe.Pointer(&b.vals[i]) {
			t.Errorf("ptrs[%d] does not point at its slot", i)
		}
	}
	at := func(i int) unsafe.Pointer { return b.ptrs[i] }
	if v := *(*uint64)(at(0)); v != 0xdead_beef_0000 {
		t.Errorf("DevicePtr: %#x", v)
	}
	if v := *(*uint32)(at(1)); v != 7 {
		t.Errorf("uint32: %d", v)
	}
	if v := *(*int32)(at(2)); v != -3 {
		t.Errorf("int32: %d", v)
	}
	if v := *(*uint64)(at(3)); v != 1<<40 {
		t.Errorf("uint64: %d", v)
	}
	if v := *(*int64)(at(4)); v != -1<<40 {
		t.Errorf("int64: %d", v)
	}
	if v := *(*float32)(at(5)); v != 1.5 {
		t.Errorf("float32: %v", v)
	}
	if v := *(*float64)(at(6)); v != -2.25 {
		t.Errorf("float64: %v", v)
	}
	if v := *(*uintptr)(at(7)); v != uintptr(unsafe.Pointer(host)) {
		t.Errorf("unsafe.Pointer: %#x", v)
	}
	if v := *(*uintptr)(at(8)); v != 0x1234 {
		t.Errorf("uintptr: %#x", v)
	}
	for _, i := range []int{1, 2, 5} {
		if hi := b.vals[i] >> 32; hi != 0 {
			t.Errorf("slot %d keeps stale high bytes %#x", i, hi)
		}
	}

	// A shorter launch clears the pointers of the longer one.
	if err := b.pack([]any{uint32(1)}); err != nil {
		t.Fatal(err)
	}
	if b.n != 1 || b.ptrs[1] != nil || b.ptrs[len(args)-1] != nil {
		t.Errorf("after a shorter pack: n = %d, ptrs[1] = %v", b.n, b.ptrs[1])
	}

	// Packing allocates nothing: the boxing, if any, is the caller's.
	if n := testing.AllocsPerRun(100, func() { _ = b.pack(args) }); n != 0 {
		t.Errorf("pack allocates %v times", n)
	}

	for _, bad := range [][]any{
		{int(1)}, {uint(1)}, {"s"}, {[]byte{1}}, {nil}, {DevicePtr(1), int8(1)},
		make([]any, maxArgs+1),
	} {
		if err := b.pack(bad); !errors.Is(err, ErrInvalidValue) {
			t.Errorf("pack(%T…): %v; want ErrInvalidValue", bad[len(bad)-1], err)
		}
	}
}

// add1PTX is, hand-written, what nvcc -arch=sm_80 emits for
//
//	__device__ unsigned counter;
//	extern "C" __global__ void add1(unsigned *p, unsigned n) {
//		unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
//		if (i < n) p[i] += 1;
//	}
const add1PTX = `
.version 8.0
.target sm_80
.address_size 64

.visible .global .align 4 .u32 counter;

.visible .entry add1(
	.param .u64 add1_param_0,
	.param .u32 add1_param_1
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [add1_param_0];
	ld.param.u32 	%r2, [add1_param_1];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.u32 	%p1, %r1, %r2;
	@%p1 bra 	$L__BB0_2;
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.u32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.u32 	%r6, [%rd4];
	add.s32 	%r7, %r6, 1;
	st.global.u32 	[%rd4], %r7;
$L__BB0_2:
	ret;
}
`

// gpu returns a context on device 0, or skips the test where there is no
// driver or no device.
func gpu(tb testing.TB) *Context {
	tb.Helper()
	d, err := Open()
	if errors.Is(err, ErrNoDriver) || errors.Is(err, ErrNoDevice) {
		tb.Skipf("no GPU: %v", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	n, err := d.Devices()
	if err != nil {
		tb.Fatal(err)
	}
	if n == 0 {
		tb.Skip("no GPU: the driver reports no devices")
	}
	dev, err := d.Device(0)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, err := dev.Context()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := ctx.Close(); err != nil {
			tb.Error(err)
		}
	})
	return ctx
}

func TestGPUDeviceQuery(t *testing.T) {
	ctx := gpu(t)
	dev := ctx.Device()
	d, _ := Open()
	major, minor := dev.ComputeCapability()
	t.Logf("driver %d; device %d %q: sm_%d%d, %d SMs, %d MiB, L2 %d KiB, smem/block %d KiB (opt-in %d KiB), warp %d, map host %v, UVA %v, managed %v",
		d.Version(), dev.Ordinal, dev.Name, major, minor, dev.Multiprocessors, dev.TotalMem>>20, dev.L2CacheBytes>>10,
		dev.MaxSharedPerBlock>>10, dev.MaxSharedPerBlockOptin>>10, dev.WarpSize, dev.CanMapHostMemory, dev.UnifiedAddressing, dev.ManagedMemory)
	if d.Version() < 1000 || dev.Name == "" || major < 1 || dev.Multiprocessors < 1 || dev.TotalMem == 0 || dev.WarpSize != 32 {
		t.Errorf("implausible device: %+v", dev)
	}
	free, total, err := ctx.MemInfo()
	if err != nil {
		t.Fatal(err)
	}
	if free == 0 || free > total || total > dev.TotalMem {
		t.Errorf("MemInfo: free %d, total %d, device %d", free, total, dev.TotalMem)
	}
	if _, err := d.Device(1 << 20); !errors.Is(err, ErrInvalidDevice) {
		t.Errorf("Device(1<<20): %v; want ErrInvalidDevice", err)
	}
}

func TestGPUCopyRoundTrip(t *testing.T) {
	ctx := gpu(t)
	const n = 1 << 12
	src := make([]uint32, n)
	for i := range src {
		src[i] = uint32(i) * 2654435761
	}
	p, err := ctx.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free(p)
	if err := ctx.CopyHtoD(p, unsafe.Pointer(&src[0]), 4*n); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Memset32(p+4*10, 0xabcd, 5); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Memset8(p+4*100, 0x7f, 8); err != nil {
		t.Fatal(err)
	}
	got := make([]uint32, n)
	if err := ctx.CopyDtoH(unsafe.Pointer(&got[0]), p, 4*n); err != nil {
		t.Fatal(err)
	}
	want := append([]uint32(nil), src...)
	for i := 10; i < 15; i++ {
		want[i] = 0xabcd
	}
	want[100], want[101] = 0x7f7f7f7f, 0x7f7f7f7f
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("word %d: %#x; want %#x", i, got[i], want[i])
		}
	}

	// Device to device, into the middle of a second buffer.
	q, err := ctx.Alloc(8 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free(q)
	if err := ctx.Memset32(q, 0x5a5a5a5a, 2*n); err != nil {
		t.Fatal(err)
	}
	if err := ctx.CopyDtoD(q+4*n, p, 4*n); err != nil {
		t.Fatal(err)
	}
	both := make([]uint32, 2*n)
	if err := ctx.CopyDtoH(unsafe.Pointer(&both[0]), q, 8*n); err != nil {
		t.Fatal(err)
	}
	for i := range both {
		w := uint32(0x5a5a5a5a)
		if i >= n {
			w = want[i-n]
		}
		if both[i] != w {
			t.Fatalf("device-to-device word %d: %#x; want %#x", i, both[i], w)
		}
	}

	// The same through pinned memory and a stream.
	s, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pinned, err := ctx.HostAlloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.FreeHost(pinned)
	if err := ctx.CopyHtoDAsync(p, unsafe.Pointer(&src[0]), 4*n, s); err != nil {
		t.Fatal(err)
	}
	if err := ctx.CopyDtoHAsync(unsafe.Pointer(&pinned[0]), p, 4*n, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	back := unsafe.Slice((*uint32)(unsafe.Pointer(&pinned[0])), n)
	for i := range src {
		if back[i] != src[i] {
			t.Fatalf("async word %d: %#x; want %#x", i, back[i], src[i])
		}
	}
}

func TestGPUOutOfMemory(t *testing.T) {
	ctx := gpu(t)
	_, err := ctx.Alloc(1 << 50) // a pebibyte
	if !errors.Is(err, ErrOutOfMemory) {
		t.Fatalf("Alloc(1 PiB): %v; want ErrOutOfMemory", err)
	}
	t.Log(err)
}

func TestGPUHostMemory(t *testing.T) {
	ctx := gpu(t)
	dev := ctx.Device()
	b, err := ctx.HostAlloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.FreeHost(b)
	dp, err := ctx.HostDevicePointer(b)
	if err != nil {
		t.Fatal(err)
	}
	if dev.UnifiedAddressing && uintptr(dp) != uintptr(unsafe.Pointer(&b[0])) {
		t.Errorf("under UVA the device pointer %#x differs from the host pointer %p", dp, &b[0])
	}
	// A pointer inside the allocation maps too.
	if dp2, err := ctx.DevicePointerOf(b[4096:]); err != nil || dp2 != dp+4096 {
		t.Errorf("DevicePointerOf(b[4096:]) = %#x, %v; want %#x", dp2, err, dp+4096)
	}

	a := NewHostAllocator(ctx)
	if a.Name() != "cuda-pinned" {
		t.Errorf("Name() = %q", a.Name())
	}
	slab, err := a.Alloc(3 << 20)
	if err != nil {
		t.Fatal(err)
	}
	if uintptr(unsafe.Pointer(&slab[0]))%64 != 0 {
		t.Errorf("slab at %p is not 64-byte aligned", &slab[0])
	}
	for i, c := range slab {
		if c != 0 {
			t.Fatalf("slab byte %d is %d; want zeroed memory", i, c)
		}
	}
	if err := a.Free(slab); err != nil {
		t.Fatal(err)
	}

	// Registering memory from elsewhere (an mmap'd arena, as hostmem makes).
	m, err := syscall.Mmap(-1, 0, 1<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	if err := ctx.HostRegister(m); err != nil {
		t.Fatal(err)
	}
	if err := ctx.HostRegister(m); !errors.Is(err, &Error{Code: HostMemoryRegistered}) {
		t.Errorf("second HostRegister: %v; want CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", err)
	}
	mp, err := ctx.DevicePointerOf(m)
	if err != nil {
		t.Fatal(err)
	}
	if dev.UnifiedAddressing && uintptr(mp) != uintptr(unsafe.Pointer(&m[0])) {
		t.Errorf("registered memory: device pointer %#x, host %p", mp, &m[0])
	}
	if err := ctx.HostUnregister(m); err != nil {
		t.Fatal(err)
	}
}

func TestGPULaunch(t *testing.T) {
	ctx := gpu(t)
	mod, err := ctx.LoadModule(add1PTX)
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close()
	add1, err := mod.Function("add1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mod.Function("add2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Function(add2): %v; want ErrNotFound", err)
	}
	if _, size, err := mod.Global("counter"); err != nil || size != 4 {
		t.Errorf("Global(counter): size %d, %v; want 4", size, err)
	}

	const n = 1000
	host := make([]uint32, n)
	for i := range host {
		host[i] = uint32(i)
	}
	p, err := ctx.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free(p)
	if err := ctx.CopyHtoD(p, unsafe.Pointer(&host[0]), 4*n); err != nil {
		t.Fatal(err)
	}
	start, err := ctx.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer start.Close()
	end, err := ctx.NewEvent()
	if err != nil {
		t.Fatal(err)
	}
	defer end.Close()
	s, err := ctx.NewStream()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	grid := [3]uint32{(n + 255) / 256, 1, 1}
	block := [3]uint32{256, 1, 1}
	if err := start.Record(s); err != nil {
		t.Fatal(err)
	}
	if err := add1.Launch(grid, block, 0, s, p, uint32(n)); err != nil {
		t.Fatal(err)
	}
	// LaunchParams, the raw form: two more increments.
	dp, count := p, uint32(n)
	params := []unsafe.Pointer{unsafe.Pointer(&dp), unsafe.Pointer(&count)}
	for range 2 {
		if err := add1.LaunchParams(grid, block, 0, s, params); err != nil {
			t.Fatal(err)
		}
	}
	if err := end.Record(s); err != nil {
		t.Fatal(err)
	}
	if err := end.Synchronize(); err != nil {
		t.Fatal(err)
	}
	el, err := Elapsed(start, end)
	if err != nil || el < 0 {
		t.Errorf("Elapsed: %v, %v", el, err)
	}
	t.Logf("three add1 launches over %d words: %v", n, el)
	got := make([]uint32, n)
	if err := ctx.CopyDtoH(unsafe.Pointer(&got[0]), p, 4*n); err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != uint32(i)+3 {
			t.Fatalf("p[%d] = %d; want %d", i, got[i], i+3)
		}
	}

	// Zero-copy: the kernel works on pinned host memory in place.
	a := NewHostAllocator(ctx)
	slab, err := a.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free(slab)
	words := unsafe.Slice((*uint32)(unsafe.Pointer(&slab[0])), n)
	for i := range words {
		words[i] = uint32(10 * i)
	}
	hp, err := ctx.DevicePointerOf(slab)
	if err != nil {
		t.Fatal(err)
	}
	if err := add1.Launch(grid, block, 0, nil, hp, uint32(n)); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Synchronize(); err != nil {
		t.Fatal(err)
	}
	for i := range words {
		if words[i] != uint32(10*i)+1 {
			t.Fatalf("zero-copy word %d = %d; want %d", i, words[i], 10*i+1)
		}
	}

	// A bad launch configuration is an error of the launch.
	if err := add1.Launch(grid, [3]uint32{4096, 1, 1}, 0, nil, p, uint32(n)); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("launch with 4096 threads a block: %v; want ErrInvalidValue", err)
	}
	if err := add1.Launch(grid, block, 0, nil, p, n); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("launch with an untyped int: %v; want ErrInvalidValue", err)
	}
}

func TestGPUInvalidPTX(t *testing.T) {
	ctx := gpu(t)
	bad := strings.Replace(add1PTX, "add.s32", "add.bogus", 1)
	_, err := ctx.LoadModule(bad)
	if !errors.Is(err, ErrInvalidPTX) {
		t.Fatalf("LoadModule(bad PTX): %v; want ErrInvalidPTX", err)
	}
	if !strings.Contains(err.Error(), "ptxas") {
		t.Errorf("the error carries no JIT log: %v", err)
	}
	t.Log(err)
}

func TestGPUManaged(t *testing.T) {
	ctx := gpu(t)
	if !ctx.Device().ManagedMemory {
		t.Skip("no managed memory on this device")
	}
	p, err := ctx.AllocManaged(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctx.Memset32(p, 5, 1<<14); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Synchronize(); err != nil {
		t.Fatal(err)
	}
	// Managed memory is addressable from the host.
	if v := *(*uint32)(unsafe.Add(unsafe.Pointer(nil), uintptr(p)+4*100)); v != 5 {
		t.Errorf("managed word read on the host: %d; want 5", v)
	}
	if err := ctx.Free(p); err != nil {
		t.Fatal(err)
	}
}

// Goroutines move between OS threads; each call must still find the context
// current.
func TestGPUGoroutines(t *testing.T) {
	ctx := gpu(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			buf := make([]byte, 1<<16)
			for i := range buf {
				buf[i] = byte(g + i)
			}
			back := make([]byte, len(buf))
			for range 50 {
				p, err := ctx.Alloc(len(buf))
				if err != nil {
					errs <- err
					return
				}
				if err := ctx.CopyHtoD(p, unsafe.Pointer(&buf[0]), len(buf)); err != nil {
					errs <- err
					return
				}
				if err := ctx.CopyDtoH(unsafe.Pointer(&back[0]), p, len(buf)); err != nil {
					errs <- err
					return
				}
				if err := ctx.Free(p); err != nil {
					errs <- err
					return
				}
				if string(back) != string(buf) {
					errs <- fmt.Errorf("goroutine %d: round trip differs", g)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestGPUClosedContext(t *testing.T) {
	ctx := gpu(t)
	dev := ctx.Device()
	c2, err := dev.Context()
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c2.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := c2.Alloc(8); err == nil {
		t.Error("Alloc on a closed Context succeeded")
	}
	// The retain held by ctx keeps the primary context alive.
	p, err := ctx.Alloc(8)
	if err != nil {
		t.Fatal(err)
	}
	ctx.Free(p)
}

// BenchmarkLaunch measures the host side of a launch: packing, pinning,
// making the context current and cuLaunchKernel.
func BenchmarkLaunch(b *testing.B) {
	ctx := gpu(b)
	mod, err := ctx.LoadModule(add1PTX)
	if err != nil {
		b.Fatal(err)
	}
	defer mod.Close()
	add1, err := mod.Function("add1")
	if err != nil {
		b.Fatal(err)
	}
	p, err := ctx.Alloc(4)
	if err != nil {
		b.Fatal(err)
	}
	defer ctx.Free(p)
	args := []any{p, uint32(0)}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if err := add1.Launch([3]uint32{1, 1, 1}, [3]uint32{32, 1, 1}, 0, nil, args...); err != nil {
			b.Fatal(err)
		}
		if i%1024 == 1023 {
			ctx.Synchronize()
		}
	}
	if err := ctx.Synchronize(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkMakeCurrent measures the cuCtxSetCurrent every method pays.
func BenchmarkMakeCurrent(b *testing.B) {
	ctx := gpu(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := ctx.MakeCurrent(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCopy4K measures a small synchronous round trip.
func BenchmarkCopy4K(b *testing.B) {
	ctx := gpu(b)
	buf := make([]byte, 4096)
	p, err := ctx.Alloc(len(buf))
	if err != nil {
		b.Fatal(err)
	}
	defer ctx.Free(p)
	b.SetBytes(int64(2 * len(buf)))
	for b.Loop() {
		if err := ctx.CopyHtoD(p, unsafe.Pointer(&buf[0]), len(buf)); err != nil {
			b.Fatal(err)
		}
		if err := ctx.CopyDtoH(unsafe.Pointer(&buf[0]), p, len(buf)); err != nil {
			b.Fatal(err)
		}
	}
}
