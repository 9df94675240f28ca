package hostmem

import (
	"testing"
	"unsafe"
)

// TestAllocators is the conformance suite every Allocator runs: zeroed,
// aligned, writable memory that can be freed.
func TestAllocators(t *testing.T) {
	for _, a := range []Allocator{Mmap{}, Heap{}} {
		t.Run(a.Name(), func(t *testing.T) {
			b, err := a.Alloc(1 << 20)
			if err != nil {
				t.Fatal(err)
			}
			if len(b) != 1<<20 || uintptr(unsafe.Pointer(&b[0]))%64 != 0 {
				t.Fatalf("len %d, address %p", len(b), &b[0])
			}
			w := Uint32s(b)
			if len(w) != 1<<18 {
				t.Fatalf("Uint32s gave %d words", len(w))
			}
			for i, x := range w {
				if x != 0 {
					t.Fatalf("word %d is %d, not zero", i, x)
				}
			}
			w[len(w)-1] = 0xdeadbeef
			if b[len(b)-1] != 0xde && b[len(b)-4] != 0xde {
				t.Fatal("Uint32s does not alias the slab")
			}
			if err := a.Free(b); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Alloc(0); err == nil {
				t.Fatal("Alloc(0) succeeded")
			}
		})
	}
}
