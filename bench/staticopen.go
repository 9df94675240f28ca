package bench

import (
	"fmt"
	"io"

	"github.com/gcsm/gcsm/device"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/kernels"
)

// OpenStaticEngines opens the engines names (cpu, gpu) of the static
// benchmark, the CPU's with workers goroutines (0: every core), saying
// which on stderr, and returns them with the memory the graph must live in and what
// closes them.
func OpenStaticEngines(names []string, workers int, stderr io.Writer) ([]StaticEngine, hostmem.Allocator, func(), error) {
	var es []StaticEngine
	var alloc hostmem.Allocator = hostmem.Mmap{}
	closeAll := func() {}
	for _, name := range names {
		switch name {
		case "cpu":
			c := &incremental.CPU{Workers: workers}
			es = append(es, StaticEngine{Name: name, Matcher: c, CPU: c})
			fmt.Fprintf(stderr, "engine cpu: %d workers\n", device.CPUWorkers(workers))
		case "gpu":
			x, err := kernels.Open(kernels.Options{})
			if err != nil {
				closeAll()
				return nil, nil, nil, fmt.Errorf("--engines gpu: %w", err)
			}
			closeAll = func() { x.Close() }
			// The graph lives in the GPU's pinned memory, which the CPU
			// reads too.
			alloc = x.Allocator()
			es = append(es, StaticEngine{Name: name, Matcher: x})
			fmt.Fprintf(stderr, "engine gpu: %s, %s placement\n", x.Name(), x.Placement())
		}
	}
	return es, alloc, closeAll, nil
}
