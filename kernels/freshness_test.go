package kernels

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"
)

// TestKernelImageUpToDate fails when match.cu changed but the embedded
// fatbin was not regenerated, the way cmd/go's help test catches a stale
// alldocs.go.
func TestKernelImageUpToDate(t *testing.T) {
	src, err := os.ReadFile("match.cu")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	if got := hex.EncodeToString(sum[:]); got != sourceHash {
		t.Fatalf("match.fatbin is not up to date: match.cu hashes to %s, the fatbin was built from %s; run kernels/gen.sh on a machine with nvcc", got, sourceHash)
	}
	// A fatbin starts with its magic number, 0xBA55ED50 little-endian.
	if len(matchImage) < 4 || matchImage[:4] != "\x50\xed\x55\xba" {
		t.Fatal("the embedded kernel image is not a fatbin")
	}
}
