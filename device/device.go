// Package device opens the matcher that gcsm's device flags choose: the
// CPU executor, a GPU or several (kernels.Multi), or under auto both, each
// query where it runs fastest (incremental.Placer); and the memory the
// graph must live in for it.
package device

import (
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/kernels"
	"github.com/gcsm/gcsm/kernels/cuda"
)

// Config is what to open, checked by the caller (cmd/gcsm's flags).
type Config struct {
	// Device is auto (the GPU when one is present, the CPU otherwise), cpu
	// or gpu.
	Device string
	// Workers are the CPU matcher's goroutines; 0 uses every core.
	Workers int
	// GPUs are opened from device number First on, each with GPU's options.
	GPUs, First int
	GPU         kernels.Options
	// MaxBatch, if set, is the most updates a batch will hold. Under auto,
	// batches that never reach the GPU (incremental.DefaultCPUBelow) open
	// none: its start, and its following of every batch, would be all it
	// did.
	MaxBatch int
}

// Executor is the chosen matcher and the memory the graph must live in.
type Executor struct {
	Matcher incremental.Matcher
	Alloc   hostmem.Allocator
	gpu     *kernels.GPU   // nil on the CPU; the first GPU under GPUs above 1
	multi   *kernels.Multi // all the GPUs under GPUs above 1
}

// WarnFallback says when the device placement did not fit under --gpu-mem
// and the GPU read the graph through zero-copy instead.
func (e *Executor) WarnFallback(w io.Writer) {
	if e.gpu != nil && e.gpu.Placement() == kernels.ZeroCopy && e.gpu.FellBack {
		fmt.Fprintln(w, "warning: the graph did not fit in GPU memory (under --gpu-mem, if set); the GPU read it through zero-copy")
	}
}

// Close releases the GPUs.
func (e *Executor) Close() {
	switch {
	case e.multi != nil:
		e.multi.Close()
	case e.gpu != nil:
		e.gpu.Close()
	}
}

// Open opens the executor c chooses and says which on w. Under auto, a
// machine without a CUDA driver or a GPU gets the CPU.
func Open(c Config, w io.Writer) (*Executor, error) {
	cpu := &Executor{Matcher: &incremental.CPU{Workers: c.Workers}, Alloc: hostmem.Mmap{}}
	if c.Device == "cpu" {
		fmt.Fprintf(w, "device: cpu, %d workers\n", CPUWorkers(c.Workers))
		return cpu, nil
	}
	if c.Device == "auto" && c.MaxBatch > 0 && c.MaxBatch < incremental.DefaultCPUBelow {
		fmt.Fprintf(w, "device: cpu, %d workers (auto: batches of fewer than %d updates run on the cpu)\n", CPUWorkers(c.Workers), incremental.DefaultCPUBelow)
		return cpu, nil
	}
	opts := c.GPU
	opts.Device = c.First
	x, err := kernels.Open(opts)
	if err != nil {
		if c.Device == "auto" && (errors.Is(err, cuda.ErrNoDriver) || errors.Is(err, cuda.ErrNoDevice)) {
			why := "no GPU"
			if errors.Is(err, cuda.ErrNoDriver) {
				why = "no CUDA driver"
			}
			fmt.Fprintf(w, "device: cpu, %d workers (%s)\n", CPUWorkers(c.Workers), why)
			return cpu, nil
		}
		return nil, fmt.Errorf("--device %s: %w", c.Device, err)
	}
	e := &Executor{Matcher: x, Alloc: x.Allocator(), gpu: x}
	name := x.Name()
	if c.GPUs > 1 {
		m := &kernels.Multi{GPUs: []*kernels.GPU{x}}
		for i := 1; i < c.GPUs; i++ {
			opts.Device = c.First + i
			y, err := kernels.Open(opts)
			if err != nil {
				m.Close()
				return nil, fmt.Errorf("--gpus %d: device %d: %w", c.GPUs, c.First+i, err)
			}
			m.GPUs = append(m.GPUs, y)
		}
		e.Matcher, e.multi = m, m
		name = fmt.Sprintf("%d× %s", c.GPUs, name)
	}
	if c.Device == "auto" {
		// Each query where it runs fastest, the CPU's and the GPU's at once;
		// the graph lives in pinned memory, which both read.
		fmt.Fprintf(w, "device: auto, each query on the cpu (%d workers) or the gpu %s (%s placement), where it runs fastest\n",
			CPUWorkers(c.Workers), name, opts.Placement)
		e.Matcher = &incremental.Placer{CPU: cpu.Matcher, GPU: e.Matcher}
		return e, nil
	}
	fmt.Fprintf(w, "device: gpu %s, %s placement\n", name, opts.Placement)
	return e, nil
}

// CPUWorkers is how many goroutines a CPU matcher of n workers runs.
func CPUWorkers(n int) int {
	if n > 0 {
		return n
	}
	return runtime.GOMAXPROCS(0)
}
