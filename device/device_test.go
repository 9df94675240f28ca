package device

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/incremental"
)

// TestAutoSmallBatchesOpenNoGPU: under auto, batches too small ever to
// reach the GPU open the CPU alone, and say why; larger ones try the GPU
// (on a machine without one, falling back with the reason).
func TestAutoSmallBatchesOpenNoGPU(t *testing.T) {
	for _, tc := range []struct {
		maxBatch int
		cpuOnly  bool
	}{{1, true}, {incremental.DefaultCPUBelow - 1, true}, {incremental.DefaultCPUBelow, false}, {0, false}} {
		var w bytes.Buffer
		e, err := Open(Config{Device: "auto", Workers: 1, GPUs: 1, MaxBatch: tc.maxBatch}, &w)
		if err != nil {
			t.Fatalf("MaxBatch %d: %v", tc.maxBatch, err)
		}
		said := strings.Contains(w.String(), "batches of fewer than")
		if said != tc.cpuOnly {
			t.Errorf("MaxBatch %d: said %q", tc.maxBatch, w.String())
		}
		if _, ok := e.Matcher.(*incremental.CPU); tc.cpuOnly && !ok {
			t.Errorf("MaxBatch %d: matcher %T, want the CPU's", tc.maxBatch, e.Matcher)
		}
		e.Close()
	}
}
