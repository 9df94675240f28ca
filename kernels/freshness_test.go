package kernels

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"
)

// TestKernelImageUpToDate fails when the CUDA sources changed but the
// embedded fatbin was not regenerated, the way cmd/go's help test catches a
// stale alldocs.go.
func TestKernelImageUpToDate(t *testing.T) {
	var src []byte
	for _, f := range []string{"match.cu", "space.cu"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src = append(src, b...)
	}
	sum := sha256.Sum256(src)
	if got := hex.EncodeToString(sum[:]); got != sourceHash {
		t.Fatalf("match.fatbin is not up to date: match.cu and space.cu hash to %s, the fatbin was built from %s; run kernels/gen.sh on a machine with nvcc", got, sourceHash)
	}
	// A fatbin starts with its magic number, 0xBA55ED50 little-endian.
	if len(matchImage) < 4 || matchImage[:4] != "\x50\xed\x55\xba" {
		t.Fatal("the embedded kernel image is not a fatbin")
	}
}
