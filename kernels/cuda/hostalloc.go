package cuda

// HostAllocator hands out pinned, device-mapped host memory from
// cuMemHostAlloc (PORTABLE|DEVICEMAP), so that dyngraph's arenas can be read
// by kernels in place: the zero-copy placement, and the cache's miss path. It
// has the method set of internal/hostmem.Allocator (which this package does
// not import: kernels/cuda sits below every package of ours).
//
// A slab's device address, for kernel arguments, is
// Context.DevicePointerOf(slab); under unified addressing it equals the host
// address.
type HostAllocator struct {
	ctx *Context
}

// NewHostAllocator returns an allocator of pinned memory in c.
func NewHostAllocator(c *Context) *HostAllocator { return &HostAllocator{ctx: c} }

// Alloc returns n zeroed bytes of pinned, mapped host memory, page-aligned.
// The memory is outside the Go heap, holds no Go pointers and never moves; it
// belongs to the caller until Free.
//
// cuMemHostAlloc does not promise zeroed memory, so Alloc clears it: a pass
// over the slab at memory bandwidth, small beside the page locking the driver
// has already done for every page.
func (a *HostAllocator) Alloc(n int) ([]byte, error) {
	if a == nil || a.ctx == nil {
		return nil, errNoDriver("HostAllocator.Alloc")
	}
	b, err := a.ctx.HostAlloc(n)
	if err != nil {
		return nil, err
	}
	clear(b)
	return b, nil
}

// Free releases a slab from Alloc. The slice must not be used after.
func (a *HostAllocator) Free(b []byte) error {
	if a == nil || a.ctx == nil {
		return errNoDriver("HostAllocator.Free")
	}
	return a.ctx.FreeHost(b)
}

// Name says what backs the memory, for logs and stats.
func (a *HostAllocator) Name() string { return "cuda-pinned" }
