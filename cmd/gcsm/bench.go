package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/kernels"
)

// runBench times the engines side by side on a generated R-MAT workload:
// the CPU on all cores and, where a GPU is present, both GPU placements.
func runBench(args []string, stdout, stderr io.Writer) error {
	var (
		scale, factor, vlabels, perSize, workers int
		skew                                     float64
		batches, shapes, engines                 string
		labeled                                  bool
		seed                                     uint64
	)
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&scale, "scale", 16, "R-MAT scale: 2^scale vertices")
	fs.IntVar(&factor, "edge-factor", 16, "edges per vertex")
	fs.IntVar(&vlabels, "labels", 8, "vertex labels, Zipf-distributed")
	fs.Float64Var(&skew, "label-skew", 1.5, "Zipf exponent of the vertex labels (0: uniform)")
	fs.BoolVar(&labeled, "labeled", true, "label the query vertices (with the two most common labels, alternating)")
	fs.StringVar(&batches, "batches", "64,1024,4096", "comma-separated batch sizes")
	fs.IntVar(&perSize, "per-size", 4, "batches timed per size")
	fs.StringVar(&shapes, "shapes", "triangle,4-cycle,diamond,house,5-cycle", "comma-separated query shapes: "+shapeNames())
	fs.StringVar(&engines, "engines", "cpu,zero-copy,device", "engines to compare: cpu, zero-copy, device (the GPU ones are skipped without a GPU)")
	fs.IntVar(&workers, "workers", 0, "CPU goroutines; 0 uses every core")
	fs.Uint64Var(&seed, "seed", 1, "workload seed")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	cfg := bench.EngineConfig{
		Graph:    bench.RMAT{Scale: scale, Edges: int64(factor) << scale, VertexLabels: vlabels, LabelSkew: skew, EdgeLabels: 1, Seed: seed},
		PerSize:  perSize,
		Fraction: 0.1,
		Seed:     seed,
	}
	if skew == 0 {
		cfg.Graph.LabelSkew = 0
	}
	for _, b := range strings.Split(batches, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(b))
		if err != nil || n < 1 {
			return fmt.Errorf("--batches: %q is not a batch size", b)
		}
		cfg.Batches = append(cfg.Batches, n)
	}
	all := bench.Shapes()
	for _, name := range strings.Split(shapes, ",") {
		found := false
		for _, s := range all {
			if s.Name == strings.TrimSpace(name) {
				if labeled {
					ls := make([]uint32, s.Vertices)
					for i := range ls {
						ls[i] = uint32(i % 2)
					}
					s.Cypher = s.Labeled(ls)
				}
				cfg.Shapes = append(cfg.Shapes, s)
				found = true
			}
		}
		if !found {
			return fmt.Errorf("--shapes: unknown shape %q (have %s)", name, shapeNames())
		}
	}
	var es []bench.Engine
	for _, name := range strings.Split(engines, ",") {
		switch name = strings.TrimSpace(name); name {
		case "cpu":
			es = append(es, bench.Engine{Name: "cpu", Matcher: &incremental.CPU{Workers: workers}, Alloc: hostmem.Mmap{}})
		case "zero-copy", "device":
			x, err := kernels.Open(kernels.Options{Placement: kernels.Placement(name)})
			if err != nil {
				fmt.Fprintf(stderr, "bench: skipping %s: %v\n", name, err)
				continue
			}
			defer x.Close()
			fmt.Fprintf(stderr, "bench: %s on %s\n", name, x.Name())
			es = append(es, bench.Engine{Name: "gpu-" + name, Matcher: x, Alloc: x.Allocator()})
		default:
			return fmt.Errorf("--engines: unknown engine %q", name)
		}
	}
	if len(es) == 0 {
		return errors.New("no engine to run")
	}
	rows, err := bench.RunEngines(cfg, es, stderr)
	if err != nil {
		return err
	}
	// One line per shape and batch size, engines side by side.
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	head := "shape\tbatch\t"
	for _, e := range es {
		head += e.Name + " ms\t"
	}
	for _, e := range es[1:] {
		head += "×" + e.Name + "\t"
	}
	fmt.Fprintln(tw, head+"updates/s (fastest)\t")
	for i := 0; i < len(rows); {
		r := rows[i]
		line := fmt.Sprintf("%s\t%d\t", r.Shape, r.Batch)
		var ms []float64
		for k := range es {
			// rows are grouped by batch size, then engine, then shape
			j := indexOf(rows, r.Shape, r.Batch, es[k].Name)
			ms = append(ms, float64(rows[j].PerBatch.Microseconds())/1000)
			line += fmt.Sprintf("%.3f\t", ms[k])
		}
		best := ms[0]
		for k := 1; k < len(ms); k++ {
			line += fmt.Sprintf("%.1f\t", ms[0]/max(ms[k], 1e-6))
			best = min(best, ms[k])
		}
		line += fmt.Sprintf("%.0f\t", float64(r.Batch)/(max(best, 1e-6)/1000))
		fmt.Fprintln(tw, line)
		i++
		for i < len(rows) && (rows[i].Engine != es[0].Name) {
			i++
		}
	}
	return tw.Flush()
}

func indexOf(rows []bench.EngineRow, shape string, batch int, engine string) int {
	for i, r := range rows {
		if r.Shape == shape && r.Batch == batch && r.Engine == engine {
			return i
		}
	}
	panic("BUG: bench row missing")
}

func shapeNames() string {
	var names []string
	for _, s := range bench.Shapes() {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}
