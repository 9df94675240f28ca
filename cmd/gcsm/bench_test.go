package main

import (
	"slices"
	"strings"
	"testing"
)

func TestGPUCounts(t *testing.T) {
	for _, tc := range []struct {
		list     string
		perShape bool
		want     []int
	}{
		{"1", false, []int{1}},
		{"1,2", false, []int{1, 2}},
		{" 2 , 4", false, []int{2, 4}},
		{"1", true, []int{1}},
		{"2", true, nil},
		{"0", false, nil},
		{"1,1", false, nil},
		{"x", false, nil},
		{"", false, nil},
	} {
		got, err := gpuCounts(tc.list, tc.perShape)
		if (err != nil) != (tc.want == nil) || !slices.Equal(got, tc.want) {
			t.Errorf("gpuCounts(%q, %v) = %v, %v; want %v", tc.list, tc.perShape, got, err, tc.want)
		}
	}
	// Without a second GPU, an engine on two is skipped, not fatal.
	out, errs, code := gcsm(t, "bench", "--scale", "8", "--batches", "64", "--per-size", "1", "--shapes", "triangle", "--engines", "cpu,device", "--gpus", "1,2")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

// TestGPUsFlag: --gpus is checked on every machine, and asking for more
// GPUs than there are is an error, not a quiet fallback.
func TestGPUsFlag(t *testing.T) {
	_, errs, code := gcsm(t, "match", "-d", "x", "-q", "(a)-->(b)", "--gpus", "0")
	if code != 2 || !strings.Contains(errs, "--gpus") {
		t.Fatalf("--gpus 0: exit %d, %s", code, errs)
	}
}
