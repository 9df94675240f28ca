package cuda

import (
	"errors"
	"strconv"
)

// Result is a CUresult: the status code every driver call returns.
type Result int

// The CUresult values gcsm decides on. The full list is in cuda.h; a code not
// named here still reaches the caller in an *Error, with the driver's own name
// and message.
const (
	Success                 Result = 0
	InvalidValue            Result = 1
	OutOfMemory             Result = 2
	NotInitialized          Result = 3
	Deinitialized           Result = 4
	StubLibrary             Result = 34
	DeviceUnavailable       Result = 46
	NoDevice                Result = 100
	InvalidDevice           Result = 101
	InvalidImage            Result = 200
	InvalidContext          Result = 201
	NoBinaryForGPU          Result = 209
	InvalidPTX              Result = 218
	JITCompilerNotFound     Result = 221
	UnsupportedPTXVersion   Result = 222
	InvalidHandle           Result = 400
	NotFound                Result = 500
	NotReady                Result = 600
	IllegalAddress          Result = 700
	LaunchOutOfResources    Result = 701
	LaunchTimeout           Result = 702
	HostMemoryRegistered    Result = 712
	HostMemoryNotRegistered Result = 713
	IllegalInstruction      Result = 715
	MisalignedAddress       Result = 716
	LaunchFailed            Result = 719
	NotPermitted            Result = 800
	NotSupported            Result = 801
	SystemDriverMismatch    Result = 803
	Unknown                 Result = 999
)

// resultText holds the driver's own name and message for the codes above. It
// is used when the driver cannot be asked (it is not loaded, or
// cuGetErrorName does not know the code), so that an *Error reads the same
// with and without a driver.
var resultText = map[Result][2]string{
	Success:                 {"CUDA_SUCCESS", "no error"},
	InvalidValue:            {"CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	OutOfMemory:             {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	NotInitialized:          {"CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	Deinitialized:           {"CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
	StubLibrary:             {"CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
	DeviceUnavailable:       {"CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
	NoDevice:                {"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	InvalidDevice:           {"CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	InvalidImage:            {"CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
	InvalidContext:          {"CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	NoBinaryForGPU:          {"CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
	InvalidPTX:              {"CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	JITCompilerNotFound:     {"CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "PTX JIT compiler library not found"},
	UnsupportedPTXVersion:   {"CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
	InvalidHandle:           {"CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	NotFound:                {"CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	NotReady:                {"CUDA_ERROR_NOT_READY", "device not ready"},
	IllegalAddress:          {"CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
	LaunchOutOfResources:    {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
	LaunchTimeout:           {"CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
	HostMemoryRegistered:    {"CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory range is already mapped"},
	HostMemoryNotRegistered: {"CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region"},
	IllegalInstruction:      {"CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"},
	MisalignedAddress:       {"CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
	LaunchFailed:            {"CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
	NotPermitted:            {"CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
	NotSupported:            {"CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
	SystemDriverMismatch:    {"CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination"},
	Unknown:                 {"CUDA_ERROR_UNKNOWN", "unknown error"},
}

// String returns the cuda.h name of r, such as CUDA_ERROR_OUT_OF_MEMORY.
func (r Result) String() string {
	if t, ok := resultText[r]; ok {
		return t[0]
	}
	return "CUresult(" + strconv.Itoa(int(r)) + ")"
}

// Error is a driver call that did not return CUDA_SUCCESS. Test for a kind of
// failure with errors.Is against the sentinels (ErrOutOfMemory, ErrNoDevice,
// …), which compare Code only; use errors.As to read the call.
type Error struct {
	Call    string // the driver entry point, such as "cuMemAlloc_v2"; empty in a sentinel
	Code    Result
	Name    string // cuGetErrorName, such as "CUDA_ERROR_OUT_OF_MEMORY"
	Message string // cuGetErrorString, such as "out of memory"
}

// Error formats as "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY: out of memory".
func (e *Error) Error() string {
	s := e.Name
	if s == "" {
		s = e.Code.String()
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Call != "" {
		s = e.Call + ": " + s
	}
	return s
}

// Is reports whether target is an *Error with the same Code whose Call is
// empty or equal to e's: a sentinel matches every call that failed with its
// code. A stub libcuda (CUDA_ERROR_STUB_LIBRARY, the toolkit's link-time
// stand-in found before the real driver) also matches ErrNoDriver, since for a
// caller it means the same thing: there is no driver to use.
func (e *Error) Is(target error) bool {
	if target == ErrNoDriver {
		return e.Code == StubLibrary
	}
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && (t.Call == "" || t.Call == e.Call)
}

func sentinel(r Result) *Error {
	t := resultText[r]
	return &Error{Code: r, Name: t[0], Message: t[1]}
}

// Sentinels for errors.Is. Each matches any *Error with its Code.
var (
	ErrInvalidValue          = sentinel(InvalidValue)
	ErrOutOfMemory           = sentinel(OutOfMemory)
	ErrNotInitialized        = sentinel(NotInitialized)
	ErrNoDevice              = sentinel(NoDevice)
	ErrInvalidDevice         = sentinel(InvalidDevice)
	ErrInvalidContext        = sentinel(InvalidContext)
	ErrNoBinaryForGPU        = sentinel(NoBinaryForGPU)
	ErrInvalidPTX            = sentinel(InvalidPTX)
	ErrUnsupportedPTXVersion = sentinel(UnsupportedPTXVersion)
	ErrInvalidHandle         = sentinel(InvalidHandle)
	ErrNotFound              = sentinel(NotFound)
	ErrNotReady              = sentinel(NotReady)
	ErrIllegalAddress        = sentinel(IllegalAddress)
	ErrLaunchOutOfResources  = sentinel(LaunchOutOfResources)
	ErrLaunchFailed          = sentinel(LaunchFailed)
	ErrNotSupported          = sentinel(NotSupported)
)

// ErrNoDriver means libcuda could not be loaded (no NVIDIA driver on this
// machine, or one too old to export what this package calls). Open wraps it
// with the dynamic loader's message. Every method reached without a loaded
// driver (on a nil *Context, a zero Driver, …) returns it too.
var ErrNoDriver = errors.New("cuda: no CUDA driver")

// errNoDriver is what methods return when they are reached without a loaded
// driver, naming what was asked.
func errNoDriver(what string) error {
	return &noDriverError{what: what}
}

type noDriverError struct{ what string }

func (e *noDriverError) Error() string { return "cuda: " + e.what + ": no CUDA driver loaded" }
func (e *noDriverError) Unwrap() error { return ErrNoDriver }
