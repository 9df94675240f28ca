// Package hostmem owns memory outside the Go heap: the large slabs (arenas)
// that hold dyngraph's neighbour lists.
//
// Keeping the arenas off the heap does two things. The garbage collector never
// scans or moves gigabytes of neighbour ids (they hold no pointers), and the
// same slabs can later be pinned and mapped into a GPU's address space, so the
// device reads neighbour lists in place over PCIe (GCSM's zero-copy access).
// dyngraph only sees the Allocator interface; which memory backs it is chosen
// by whoever builds the graph.
package hostmem

import (
	"fmt"
	"syscall"
	"unsafe"
)

// Allocator hands out large zeroed slabs.
type Allocator interface {
	// Alloc returns n zeroed bytes, aligned to at least 64 bytes. The memory
	// belongs to the caller until it passes the same slice to Free; it holds
	// no Go pointers and is never moved.
	Alloc(n int) ([]byte, error)
	// Free releases a slab returned by Alloc. The slice must not be used after.
	Free(b []byte) error
	// Name says what backs the memory, for logs and stats.
	Name() string
}

// Mmap allocates slabs with anonymous private mmap. Pages are committed on
// first touch, so a slab's untouched tail costs no physical memory.
type Mmap struct{}

// Alloc implements Allocator.
func (Mmap) Alloc(n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("hostmem: cannot allocate %d bytes", n)
	}
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("hostmem: mmap of %d bytes: %w", n, err)
	}
	return b, nil
}

// Free implements Allocator.
func (Mmap) Free(b []byte) error {
	if err := syscall.Munmap(b); err != nil {
		return fmt.Errorf("hostmem: munmap: %w", err)
	}
	return nil
}

// Name implements Allocator.
func (Mmap) Name() string { return "mmap" }

// Heap allocates slabs on the Go heap. It exists for platforms without mmap
// and for tests that want the race detector to see every access.
type Heap struct{}

// Alloc implements Allocator.
func (Heap) Alloc(n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("hostmem: cannot allocate %d bytes", n)
	}
	// A []uint64 backing keeps the slab 8-byte aligned; the Go allocator rounds
	// large objects to page boundaries, which gives the promised 64.
	w := make([]uint64, (n+7)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), n), nil
}

// Free implements Allocator.
func (Heap) Free([]byte) error { return nil }

// Name implements Allocator.
func (Heap) Name() string { return "heap" }

// Uint32s views a slab as 32-bit words. len(b) must be a multiple of 4 and b
// 4-byte aligned, which every Allocator guarantees for its slabs.
func Uint32s(b []byte) []uint32 {
	if len(b) == 0 {
		return nil
	}
	if len(b)%4 != 0 || uintptr(unsafe.Pointer(&b[0]))%4 != 0 {
		panic("BUG: hostmem.Uint32s on a misaligned slab")
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
}
