package kernels

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"
)

// TestPTXUpToDate fails when match.cu changed but the embedded PTX was not
// regenerated, the way cmd/go's help test catches a stale alldocs.go.
func TestPTXUpToDate(t *testing.T) {
	src, err := os.ReadFile("match.cu")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(src)
	if got := hex.EncodeToString(sum[:]); got != sourceHash {
		t.Fatalf("match.ptx is not up to date: match.cu hashes to %s, the PTX was built from %s; run kernels/gen.sh on a machine with nvcc", got, sourceHash)
	}
	if len(matchPTX) == 0 {
		t.Fatal("no PTX embedded")
	}
}
