package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/kernels"
)

// EngineSpec names an engine to open: "cpu", or a GPU engine with the
// executor's options.
type EngineSpec struct {
	Name string
	GPU  kernels.Options // unused for "cpu"
}

// OpenEngines opens specs in order: the CPU with workers goroutines, and
// each GPU engine once per count of GPUs in counts. With perShape above 0,
// every engine gets that many executors, one per shape (Engine.PerShape).
// A GPU engine that cannot open is skipped, with a note on log. The
// returned function closes every executor opened.
func OpenEngines(specs []EngineSpec, workers int, counts []int, perShape int, log io.Writer) ([]Engine, func()) {
	var es []Engine
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	for _, spec := range specs {
		if spec.Name == "cpu" {
			e := Engine{Name: "cpu", Matcher: &incremental.CPU{Workers: workers}, Alloc: hostmem.Mmap{}}
			for range perShape {
				e.PerShape = append(e.PerShape, &incremental.CPU{Workers: workers})
			}
			es = append(es, e)
			continue
		}
		for _, k := range counts {
			if k == 1 {
				continue
			}
			if e, ok := multiEngine(spec.Name, spec.GPU, k, log); ok {
				closers = append(closers, func() { e.Matcher.(*kernels.Multi).Close() })
				es = append(es, e)
			}
		}
		if !slices.Contains(counts, 1) {
			continue
		}
		e, ok, closers1 := gpuEngine1(spec, perShape, log)
		closers = append(closers, closers1...)
		if ok {
			es = append(es, e)
		}
	}
	return es, closeAll
}

// gpuEngine1 opens spec's GPU engine on one GPU: perShape executors, or
// one for 0. The executors of one engine share the device's primary
// context, so the first one's pinned graph serves them all. ok is false
// where one of them cannot open; the closers close those that did.
func gpuEngine1(spec EngineSpec, perShape int, log io.Writer) (Engine, bool, []func()) {
	n := max(1, perShape)
	var xs []incremental.Matcher
	var closers []func()
	for range n {
		x, err := kernels.Open(spec.GPU)
		if err != nil {
			fmt.Fprintf(log, "bench: skipping %s: %v\n", spec.Name, err)
			break
		}
		closers = append(closers, func() { x.Close() })
		xs = append(xs, x)
	}
	if len(xs) < n {
		return Engine{}, false, closers
	}
	first := xs[0].(*kernels.GPU)
	fmt.Fprintf(log, "bench: %s on %s\n", spec.Name, first.Name())
	e := Engine{Name: "gpu-" + spec.Name, Matcher: first, Alloc: first.Allocator()}
	if perShape > 0 {
		e.PerShape = xs
	}
	return e, true, closers
}

// multiEngine opens engine name on k GPUs, devices 0 to k-1, as one
// kernels.Multi; ok is false, with a note, where the machine has fewer.
func multiEngine(name string, opts kernels.Options, k int, log io.Writer) (Engine, bool) {
	m := &kernels.Multi{}
	for i := range k {
		opts.Device = i
		x, err := kernels.Open(opts)
		if err != nil {
			m.Close()
			fmt.Fprintf(log, "bench: skipping %s on %d GPUs: %v\n", name, k, err)
			return Engine{}, false
		}
		m.GPUs = append(m.GPUs, x)
	}
	fmt.Fprintf(log, "bench: %s on %d GPUs (%s first)\n", name, k, m.GPUs[0].Name())
	return Engine{Name: fmt.Sprintf("gpu-%s-x%d", name, k), Matcher: m, Alloc: m.GPUs[0].Allocator()}, true
}

// WriteEngineTable writes RunEngines' rows: a line per shape and batch
// size with the engines side by side, then the GPU engines' breakdown.
func WriteEngineTable(w io.Writer, cfg EngineConfig, es []Engine, rows []EngineRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	head := "shape\tbatch\t"
	for _, e := range es {
		head += e.Name + " ms\t"
	}
	for _, e := range es[1:] {
		head += "×" + e.Name + "\t"
	}
	fmt.Fprintln(tw, head+"updates/s (fastest)\t")
	for _, size := range cfg.Batches {
		for _, shape := range cfg.Shapes {
			fmt.Fprintln(tw, engineLine(shape.Name, size, es, rows))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return gpuTable(w, rows)
}

// engineLine is the table's line of shape at batches of size: each
// engine's milliseconds per batch, the first engine's over each other's,
// and the fastest engine's updates per second.
func engineLine(shape string, size int, es []Engine, rows []EngineRow) string {
	line := fmt.Sprintf("%s\t%d\t", shape, size)
	perBatch := make([]float64, len(es)) // 0: the engine has no row (khop over budget)
	best := 0.0
	for k, e := range es {
		if j := IndexOf(rows, shape, size, e.Name); j >= 0 {
			perBatch[k] = max(float64(rows[j].PerBatch.Microseconds())/1000, 1e-3)
			line += fmt.Sprintf("%.3f\t", perBatch[k])
			if best == 0 || perBatch[k] < best {
				best = perBatch[k]
			}
		} else {
			line += "-\t"
		}
	}
	for k := 1; k < len(perBatch); k++ {
		if perBatch[0] > 0 && perBatch[k] > 0 {
			line += fmt.Sprintf("%.1f\t", perBatch[0]/perBatch[k])
		} else {
			line += "-\t"
		}
	}
	if best > 0 {
		line += fmt.Sprintf("%.0f\t", float64(size)/(best/1000))
	} else {
		line += "-\t"
	}
	return line
}

// gpuTable breaks the GPU engines' batches down (the paper's Table II):
// estimation and packing+copy as shares of the batch, the block, the bytes
// read from host memory and the share of reads the block served.
func gpuTable(w io.Writer, rows []EngineRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	header := false
	for _, r := range rows {
		if !strings.HasPrefix(r.Engine, "gpu-") {
			continue
		}
		if !header {
			fmt.Fprintln(w)
			fmt.Fprintln(tw, "shape\tbatch\tengine\tms\testimate %\tpack+copy %\tblock MB\thost MB\thit %\tcov 1%\tcov 5%\trank 1%\trank 5%\ttop-1% MB\t")
			header = true
		}
		total := float64(r.PerBatch)
		cov := func(c float64) string {
			if c < 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", c)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.3f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%s\t%s\t%s\t%s\t%s\t\n", r.Shape, r.Batch, r.Engine,
			float64(r.PerBatch.Microseconds())/1000, 100*float64(r.Estimate)/max(total, 1), 100*float64(r.Pack)/max(total, 1),
			float64(r.CacheBytes)/1e6, float64(r.HostBytes)/1e6, 100*r.HitRatio, cov(r.Coverage1), cov(r.Coverage5), cov(r.Rank1), cov(r.Rank5), topMB(r))
	}
	return tw.Flush()
}

// topMB is the top-1% lists' block size, when coverage was measured.
func topMB(r EngineRow) string {
	if r.Coverage1 < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(r.Top1Bytes)/1e6)
}
