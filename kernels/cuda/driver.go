package cuda

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// libNames are tried in order. libcuda.so.1 is the name the driver package
// installs; the bare libcuda.so exists only where a development package adds
// the link, and may be the toolkit's stub (cuInit then returns
// CUDA_ERROR_STUB_LIBRARY, which errors.Is reports as ErrNoDriver).
var libNames = []string{"libcuda.so.1", "libcuda.so"}

// fn names one driver entry point; lib.fns holds its address.
type fn int

const (
	fnInit fn = iota
	fnDriverGetVersion
	fnGetErrorName
	fnGetErrorString
	fnDeviceGetCount
	fnDeviceGet
	fnDeviceGetName
	fnDeviceGetAttribute
	fnDeviceTotalMem
	fnPrimaryCtxRetain
	fnPrimaryCtxRelease
	fnCtxSetCurrent
	fnCtxSynchronize
	fnMemGetInfo
	fnModuleLoadData
	fnModuleLoadDataEx
	fnModuleUnload
	fnModuleGetFunction
	fnModuleGetGlobal
	fnLaunchKernel
	fnMemAlloc
	fnMemAllocManaged
	fnMemFree
	fnMemcpyHtoD
	fnMemcpyDtoH
	fnMemcpyDtoD
	fnMemcpyHtoDAsync
	fnMemcpyDtoHAsync
	fnMemsetD8
	fnMemsetD32
	fnMemHostAlloc
	fnMemFreeHost
	fnMemHostRegister
	fnMemHostUnregister
	fnMemHostGetDevicePointer
	fnStreamCreate
	fnStreamDestroy
	fnStreamSynchronize
	fnEventCreate
	fnEventRecord
	fnEventSynchronize
	fnEventElapsedTime
	fnEventDestroy
	numFns
)

// symbols gives the exported names of each entry point. Where cuda.h
// #defines a name to a versioned symbol (cuMemAlloc → cuMemAlloc_v2, which
// takes size_t rather than unsigned int), the versioned symbol is the one to
// call: the bare one keeps the old ABI. Names after the first are fallbacks
// for drivers older than the versioned symbol.
var symbols = [numFns][]string{
	fnInit:                    {"cuInit"},
	fnDriverGetVersion:        {"cuDriverGetVersion"},
	fnGetErrorName:            {"cuGetErrorName"},
	fnGetErrorString:          {"cuGetErrorString"},
	fnDeviceGetCount:          {"cuDeviceGetCount"},
	fnDeviceGet:               {"cuDeviceGet"},
	fnDeviceGetName:           {"cuDeviceGetName"},
	fnDeviceGetAttribute:      {"cuDeviceGetAttribute"},
	fnDeviceTotalMem:          {"cuDeviceTotalMem_v2"},
	fnPrimaryCtxRetain:        {"cuDevicePrimaryCtxRetain"},
	fnPrimaryCtxRelease:       {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"},
	fnCtxSetCurrent:           {"cuCtxSetCurrent"},
	fnCtxSynchronize:          {"cuCtxSynchronize"},
	fnMemGetInfo:              {"cuMemGetInfo_v2"},
	fnModuleLoadData:          {"cuModuleLoadData"},
	fnModuleLoadDataEx:        {"cuModuleLoadDataEx"},
	fnModuleUnload:            {"cuModuleUnload"},
	fnModuleGetFunction:       {"cuModuleGetFunction"},
	fnModuleGetGlobal:         {"cuModuleGetGlobal_v2"},
	fnLaunchKernel:            {"cuLaunchKernel"},
	fnMemAlloc:                {"cuMemAlloc_v2"},
	fnMemAllocManaged:         {"cuMemAllocManaged"},
	fnMemFree:                 {"cuMemFree_v2"},
	fnMemcpyHtoD:              {"cuMemcpyHtoD_v2"},
	fnMemcpyDtoH:              {"cuMemcpyDtoH_v2"},
	fnMemcpyDtoD:              {"cuMemcpyDtoD_v2"},
	fnMemcpyHtoDAsync:         {"cuMemcpyHtoDAsync_v2"},
	fnMemcpyDtoHAsync:         {"cuMemcpyDtoHAsync_v2"},
	fnMemsetD8:                {"cuMemsetD8_v2"},
	fnMemsetD32:               {"cuMemsetD32_v2"},
	fnMemHostAlloc:            {"cuMemHostAlloc"},
	fnMemFreeHost:             {"cuMemFreeHost"},
	fnMemHostRegister:         {"cuMemHostRegister_v2", "cuMemHostRegister"},
	fnMemHostUnregister:       {"cuMemHostUnregister"},
	fnMemHostGetDevicePointer: {"cuMemHostGetDevicePointer_v2"},
	fnStreamCreate:            {"cuStreamCreate"},
	fnStreamDestroy:           {"cuStreamDestroy_v2"},
	fnStreamSynchronize:       {"cuStreamSynchronize"},
	fnEventCreate:             {"cuEventCreate"},
	fnEventRecord:             {"cuEventRecord"},
	fnEventSynchronize:        {"cuEventSynchronize"},
	fnEventElapsedTime:        {"cuEventElapsedTime"},
	fnEventDestroy:            {"cuEventDestroy_v2"},
}

// lib is the loaded libcuda: the address and resolved name of each entry
// point, called through purego.SyscallN (see call).
type lib struct {
	handle uintptr
	fns    [numFns]uintptr
	names  [numFns]string
}

// loadLib opens libcuda and resolves every entry point. Any failure is
// ErrNoDriver, wrapped with the loader's words.
func loadLib() (*lib, error) {
	var msgs []string
	l := &lib{}
	for _, name := range libNames {
		h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err == nil {
			l.handle = h
			break
		}
		msgs = append(msgs, err.Error())
	}
	if l.handle == 0 {
		return nil, fmt.Errorf("%w: cannot load %s: %s", ErrNoDriver, strings.Join(libNames, " or "), strings.Join(msgs, "; "))
	}
	for f, names := range symbols {
		for _, name := range names {
			if p, err := purego.Dlsym(l.handle, name); err == nil && p != 0 {
				l.fns[f], l.names[f] = p, name
				break
			}
		}
		if l.fns[f] == 0 {
			_ = purego.Dlclose(l.handle)
			return nil, fmt.Errorf("%w: libcuda lacks %s (driver too old)", ErrNoDriver, names[0])
		}
	}
	return l, nil
}

// call invokes the C function fn with args and turns its CUresult into an
// error.
//
// Pointer arguments follow unsafe.Pointer rule 4: the caller writes
// uintptr(unsafe.Pointer(p)) in the argument list of call itself, and
// The go:uintptrescapes mark (here, and again on purego.SyscallN) keeps p alive and
// unmoved until call returns. The C side never keeps a Go pointer past the
// call, as the cgo rules require; where a pointer is stored inside Go memory
// handed to C (Launch, LoadModule) the pointee is pinned with runtime.Pinner.
//
// CUresult is a 32-bit enum: only the low half of the returned register is
// defined, hence the int32 conversion.
//
//go:uintptrescapes
func (l *lib) call(f fn, args ...uintptr) error {
	r1, _, _ := purego.SyscallN(l.fns[f], args...)
	if r := Result(int32(r1)); r != Success {
		return l.newError(l.names[f], r)
	}
	return nil
}

// newError builds the *Error for a failed call, asking the driver for the
// code's name and message and falling back to resultText.
func (l *lib) newError(call string, r Result) *Error {
	e := &Error{Call: call, Code: r}
	if l != nil {
		var p *byte
		if r1, _, _ := purego.SyscallN(l.fns[fnGetErrorName], uintptr(r), uintptr(unsafe.Pointer(&p))); int32(r1) == 0 {
			e.Name = cString(p)
		}
		p = nil
		if r1, _, _ := purego.SyscallN(l.fns[fnGetErrorString], uintptr(r), uintptr(unsafe.Pointer(&p))); int32(r1) == 0 {
			e.Message = cString(p)
		}
	}
	if t, ok := resultText[r]; ok {
		if e.Name == "" {
			e.Name = t[0]
		}
		if e.Message == "" {
			e.Message = t[1]
		}
	}
	if e.Name == "" {
		e.Name = r.String()
	}
	return e
}

// cString copies the NUL-terminated C string at p, which is static driver
// memory (or a C buffer), into Go memory.
func cString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// cBytes returns s as a NUL-terminated C string in Go memory.
func cBytes(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

var (
	openOnce sync.Once
	opened   *Driver
	openErr  error
)

// Driver is the loaded CUDA driver. There is one per process: Open returns the
// same value each time.
type Driver struct {
	lib     *lib
	version int
}

// Open loads libcuda and initialises it with cuInit(0). It does both once per
// process and returns the same result to every caller. Without libcuda the
// error satisfies errors.Is(err, ErrNoDriver); with a driver but no usable GPU,
// errors.Is(err, ErrNoDevice). Neither panics nor exits: a machine without a
// GPU is an ordinary case for gcsm, which then runs on the CPU.
func Open() (*Driver, error) {
	openOnce.Do(func() {
		l, err := loadLib()
		if err != nil {
			openErr = err
			return
		}
		if err := l.call(fnInit, 0); err != nil {
			openErr = fmt.Errorf("cuda: cannot initialise the driver: %w", err)
			return
		}
		d := &Driver{lib: l}
		var v int32
		if err := l.call(fnDriverGetVersion, uintptr(unsafe.Pointer(&v))); err != nil {
			openErr = fmt.Errorf("cuda: %w", err)
			return
		}
		d.version = int(v)
		opened = d
	})
	return opened, openErr
}

func (d *Driver) loaded(what string) (*lib, error) {
	if d == nil || d.lib == nil {
		return nil, errNoDriver(what)
	}
	return d.lib, nil
}

// Version is the CUDA version the driver supports, as 1000*major + 10*minor
// (12040 is CUDA 12.4); 0 without a driver.
func (d *Driver) Version() int {
	if d == nil {
		return 0
	}
	return d.version
}

// Devices returns the number of CUDA devices.
func (d *Driver) Devices() (int, error) {
	l, err := d.loaded("Devices")
	if err != nil {
		return 0, err
	}
	var n int32
	if err := l.call(fnDeviceGetCount, uintptr(unsafe.Pointer(&n))); err != nil {
		return 0, err
	}
	return int(n), nil
}

// DeviceAttribute is a CUdevice_attribute.
type DeviceAttribute int

// The attributes Device reads. Attribute takes any other value of cuda.h's
// CUdevice_attribute.
const (
	AttrMaxThreadsPerBlock           DeviceAttribute = 1
	AttrMaxSharedMemoryPerBlock      DeviceAttribute = 8
	AttrWarpSize                     DeviceAttribute = 10
	AttrMultiprocessorCount          DeviceAttribute = 16
	AttrCanMapHostMemory             DeviceAttribute = 19
	AttrL2CacheSize                  DeviceAttribute = 38
	AttrUnifiedAddressing            DeviceAttribute = 41
	AttrComputeCapabilityMajor       DeviceAttribute = 75
	AttrComputeCapabilityMinor       DeviceAttribute = 76
	AttrManagedMemory                DeviceAttribute = 83
	AttrMaxSharedMemoryPerBlockOptin DeviceAttribute = 97
)

// Device describes one GPU. The fields are read once, by Driver.Device.
type Device struct {
	drv     *Driver
	handle  int32 // CUdevice
	Ordinal int

	Name                   string
	Major, Minor           int    // compute capability
	Multiprocessors        int    // streaming multiprocessors
	TotalMem               uint64 // bytes of device memory
	CanMapHostMemory       bool   // pinned host memory can be mapped into the device (zero-copy)
	UnifiedAddressing      bool   // host and device share one address space (UVA)
	ManagedMemory          bool   // cuMemAllocManaged is supported
	L2CacheBytes           int
	WarpSize               int
	MaxThreadsPerBlock     int
	MaxSharedPerBlock      int // bytes of shared memory a block gets without opting in (48 KiB)
	MaxSharedPerBlockOptin int // bytes a block may get after opting in per function
}

// ComputeCapability returns the device's compute capability, such as (9, 0)
// for the Hopper generation.
func (dev *Device) ComputeCapability() (major, minor int) { return dev.Major, dev.Minor }

// Device opens device i, 0 ≤ i < Devices(), and reads its properties.
func (d *Driver) Device(i int) (*Device, error) {
	l, err := d.loaded("Device")
	if err != nil {
		return nil, err
	}
	dev := &Device{drv: d, Ordinal: i}
	if err := l.call(fnDeviceGet, uintptr(unsafe.Pointer(&dev.handle)), uintptr(i)); err != nil {
		return nil, fmt.Errorf("cuda: device %d: %w", i, err)
	}
	var name [256]byte
	if err := l.call(fnDeviceGetName, uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)-1), uintptr(dev.handle)); err != nil {
		return nil, fmt.Errorf("cuda: device %d: %w", i, err)
	}
	dev.Name = cString(&name[0])
	var total uint64 // size_t
	if err := l.call(fnDeviceTotalMem, uintptr(unsafe.Pointer(&total)), uintptr(dev.handle)); err != nil {
		return nil, fmt.Errorf("cuda: device %d: %w", i, err)
	}
	dev.TotalMem = total
	for _, a := range []struct {
		attr DeviceAttribute
		dst  *int
	}{
		{AttrComputeCapabilityMajor, &dev.Major},
		{AttrComputeCapabilityMinor, &dev.Minor},
		{AttrMultiprocessorCount, &dev.Multiprocessors},
		{AttrL2CacheSize, &dev.L2CacheBytes},
		{AttrWarpSize, &dev.WarpSize},
		{AttrMaxThreadsPerBlock, &dev.MaxThreadsPerBlock},
		{AttrMaxSharedMemoryPerBlock, &dev.MaxSharedPerBlock},
		{AttrMaxSharedMemoryPerBlockOptin, &dev.MaxSharedPerBlockOptin},
	} {
		v, err := dev.Attribute(a.attr)
		if err != nil {
			return nil, fmt.Errorf("cuda: device %d: %w", i, err)
		}
		*a.dst = v
	}
	for _, a := range []struct {
		attr DeviceAttribute
		dst  *bool
	}{
		{AttrCanMapHostMemory, &dev.CanMapHostMemory},
		{AttrUnifiedAddressing, &dev.UnifiedAddressing},
		{AttrManagedMemory, &dev.ManagedMemory},
	} {
		v, err := dev.Attribute(a.attr)
		if err != nil {
			return nil, fmt.Errorf("cuda: device %d: %w", i, err)
		}
		*a.dst = v != 0
	}
	return dev, nil
}

// Attribute reads one CUdevice_attribute of the device.
func (dev *Device) Attribute(a DeviceAttribute) (int, error) {
	if dev == nil {
		return 0, errNoDriver("Attribute")
	}
	l, err := dev.drv.loaded("Attribute")
	if err != nil {
		return 0, err
	}
	var v int32
	if err := l.call(fnDeviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a), uintptr(dev.handle)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// Context retains the device's primary context (the one the CUDA runtime
// would use too, so memory and modules are shared with any library in the
// process that uses it) and makes it current on the calling thread. Each
// Context must be Closed; the driver counts retains.
func (dev *Device) Context() (*Context, error) {
	if dev == nil {
		return nil, errNoDriver("Context")
	}
	l, err := dev.drv.loaded("Context")
	if err != nil {
		return nil, err
	}
	c := &Context{lib: l, dev: dev}
	if err := l.call(fnPrimaryCtxRetain, uintptr(unsafe.Pointer(&c.handle)), uintptr(dev.handle)); err != nil {
		return nil, fmt.Errorf("cuda: device %d: %w", dev.Ordinal, err)
	}
	if err := c.MakeCurrent(); err != nil {
		_ = l.call(fnPrimaryCtxRelease, uintptr(dev.handle))
		return nil, fmt.Errorf("cuda: device %d: %w", dev.Ordinal, err)
	}
	return c, nil
}

var errClosed = errors.New("cuda: use of a closed Context")
