package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/kernels"
)

// runBench times the engines side by side on a generated R-MAT workload:
// the CPU on all cores and, where a GPU is present, the GPU placements.
func runBench(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "service" {
		return runBenchService(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "static" {
		return runBenchStatic(args[1:], stdout, stderr)
	}
	var (
		scale, factor, vlabels, perSize, workers         int
		skew, cacheFraction                              float64
		batches, shapes, engines, svg, maxBatch, gpus    string
		labeled, coverage, warmEach, perShape, eachBatch bool
		seed                                             uint64
		gpuMem                                           int64
		share                                            float64
		walks, fill, cpuprofile                          string
		minKernel                                        time.Duration
	)
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&scale, "scale", 16, "R-MAT scale: 2^scale vertices")
	fs.IntVar(&factor, "edge-factor", 16, "edges per vertex")
	fs.IntVar(&vlabels, "labels", 8, "vertex labels, Zipf-distributed")
	fs.Float64Var(&skew, "label-skew", 1.5, "Zipf exponent of the vertex labels (0: uniform)")
	fs.BoolVar(&labeled, "labeled", true, "label the query vertices (with the two most common labels, alternating)")
	fs.StringVar(&batches, "batches", "64,1024,4096", "comma-separated batch sizes")
	fs.IntVar(&perSize, "per-size", 4, "batches timed per size")
	fs.BoolVar(&warmEach, "warm-each-size", false, "give every batch size an untimed batch before its timed ones, not only the first size")
	fs.BoolVar(&eachBatch, "each-batch", false, "log every timed batch's own row before each size's means")
	fs.BoolVar(&perShape, "executor-per-shape", false, "give every shape its own executor of each engine, as a service holding that one query would; by default one executor matches the shapes in turn, and on the GPU each shape's cache displaces the last one's")
	fs.StringVar(&shapes, "shapes", "triangle,4-cycle,diamond,house,5-cycle", "comma-separated query shapes: "+shapeNames())
	fs.StringVar(&maxBatch, "shape-max-batch", "", "comma-separated shape=size pairs: that shape runs only at batch sizes up to size (5-cycle=512: its batches of 2,048 take minutes through zero-copy)")
	fs.StringVar(&engines, "engines", "cpu,zero-copy,device", fmt.Sprintf("engines to compare: cpu, or a GPU placement (%s), a cache placement with :search for the binary-search lookup and :whole for blocks of whole lists (gcsm:search, degree:whole), gcsm:nofill for the gcsm placement without its fill (--gpu-fill off); the GPU ones are skipped without a GPU", placementNames()))
	fs.StringVar(&gpus, "gpus", "1", "comma-separated GPU counts: each GPU engine runs once per count, its batches split over that many GPUs by shard (kernels.Multi)")
	fs.Float64Var(&cacheFraction, "gpu-cache-fraction", 0, "cap the cache placements' budget at this share of the graph's list bytes (0.05: the paper's out-of-memory regime); 0 leaves it to --gpu-mem")
	fs.Int64Var(&gpuMem, "gpu-mem", 0, "cap on the GPU memory each GPU engine uses, in `bytes`; 0 means no cap")
	fs.Float64Var(&share, "gpu-estimate-share", 0, estimateShareUsage)
	fs.StringVar(&fill, "gpu-fill", "on", fillUsage)
	fs.DurationVar(&minKernel, "gpu-cache-min-kernel", 0, minKernelUsage)
	fs.StringVar(&walks, "gpu-walks", "paper", walksUsage)
	fs.BoolVar(&coverage, "coverage", false, "report the cache placements' top-1%/5% coverage against exact reads (the paper's: by the cache block; and, for gcsm, by the estimate's ranking) on each size's last timed batch")
	fs.StringVar(&svg, "svg", "", "write a plot of per-batch time against batch size to this `file`")
	fs.IntVar(&workers, "workers", 0, "CPU goroutines; 0 uses every core")
	fs.Uint64Var(&seed, "seed", 1, "workload seed")
	fs.StringVar(&cpuprofile, "cpuprofile", "", "write a Go CPU profile of the whole run to `file`")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	weighted, werr := weightedWalks(walks)
	nofill, ferr := noFill(fill)
	// A simple graph of 2^scale vertices has fewer than 2^scale edges per
	// vertex; R-MAT's vertex ids are 32 bits.
	if err := badFlags(
		intIn("scale", int64(scale), 1, 31),
		intIn("edge-factor", int64(factor), 1, int64(1)<<min(max(scale, 1), 31)-1),
		intIn("labels", int64(vlabels), 1, math.MaxInt64),
		labelSkew(skew),
		intIn("per-size", int64(perSize), 1, math.MaxInt64),
		workersFlag(workers),
		floatIn("gpu-cache-fraction", cacheFraction, 0, 1),
		intIn("gpu-mem", gpuMem, 0, math.MaxInt64),
		floatIn("gpu-estimate-share", share, math.Inf(-1), 1),
		werr, ferr,
	); err != nil {
		return err
	}
	if cpuprofile != "" {
		stop, err := startProfile(cpuprofile)
		if err != nil {
			return err
		}
		defer stop()
	}
	cfg := bench.EngineConfig{
		Graph:         bench.RMAT{Scale: scale, Edges: int64(factor) << scale, VertexLabels: vlabels, LabelSkew: skew, EdgeLabels: 1, Seed: seed},
		PerSize:       perSize,
		Fraction:      0.1,
		Seed:          seed,
		CacheFraction: cacheFraction,
		Coverage:      coverage,
		WarmEachSize:  warmEach,
		EachBatch:     eachBatch,
	}
	if skew == 0 {
		cfg.Graph.LabelSkew = 0
	}
	for _, b := range strings.Split(batches, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(b))
		if err != nil || n < 1 {
			return badFlags(fmt.Errorf("--batches: %q is not a batch size", b))
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
			return badFlags(fmt.Errorf("--shapes: unknown shape %q (have %s)", name, shapeNames()))
		}
	}
	var err error
	if cfg.MaxBatch, err = shapeMaxBatch(maxBatch, cfg.Shapes); err != nil {
		return badFlags(err)
	}
	counts, err := gpuCounts(gpus, perShape)
	if err != nil {
		return badFlags(err)
	}
	var es []bench.Engine
	if perShape {
		fmt.Fprintf(stderr, "bench: an executor per shape (%d) for each engine\n", len(cfg.Shapes))
	}
	for _, name := range strings.Split(engines, ",") {
		switch name = strings.TrimSpace(name); name {
		case "cpu":
			e := bench.Engine{Name: "cpu", Matcher: &incremental.CPU{Workers: workers}, Alloc: hostmem.Mmap{}}
			if perShape {
				for range cfg.Shapes {
					e.PerShape = append(e.PerShape, &incremental.CPU{Workers: workers})
				}
			}
			es = append(es, e)
		default:
			opts, err := engineOptions(name)
			if err != nil {
				return badFlags(err)
			}
			opts.MemLimit, opts.EstimateShare, opts.WeightedWalks, opts.MinCacheKernel = gpuMem, share, weighted, minKernel
			opts.NoFill = opts.NoFill || nofill
			for _, k := range counts {
				if k == 1 {
					continue
				}
				e, ok, err := multiEngine(name, opts, k, stderr)
				if err != nil {
					return err
				}
				if ok {
					defer e.Matcher.(*kernels.Multi).Close()
					es = append(es, e)
				}
			}
			if !slices.Contains(counts, 1) {
				continue
			}
			n := 1
			if perShape {
				n = len(cfg.Shapes)
			}
			// The executors of one engine share the device's primary
			// context, so the first one's pinned graph serves them all.
			var xs []incremental.Matcher
			for range n {
				x, err := kernels.Open(opts)
				if err != nil {
					fmt.Fprintf(stderr, "bench: skipping %s: %v\n", name, err)
					break
				}
				defer x.Close()
				xs = append(xs, x)
			}
			if len(xs) < n {
				continue
			}
			first := xs[0].(*kernels.GPU)
			fmt.Fprintf(stderr, "bench: %s on %s\n", name, first.Name())
			e := bench.Engine{Name: "gpu-" + name, Matcher: first, Alloc: first.Allocator()}
			if perShape {
				e.PerShape = xs
			}
			es = append(es, e)
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
	for _, size := range cfg.Batches {
		for _, shape := range cfg.Shapes {
			line := fmt.Sprintf("%s\t%d\t", shape.Name, size)
			ms := make([]float64, len(es)) // 0: the engine has no row (khop over budget)
			best := 0.0
			for k, e := range es {
				if j := bench.IndexOf(rows, shape.Name, size, e.Name); j >= 0 {
					ms[k] = max(float64(rows[j].PerBatch.Microseconds())/1000, 1e-3)
					line += fmt.Sprintf("%.3f\t", ms[k])
					if best == 0 || ms[k] < best {
						best = ms[k]
					}
				} else {
					line += "-\t"
				}
			}
			for k := 1; k < len(ms); k++ {
				if ms[0] > 0 && ms[k] > 0 {
					line += fmt.Sprintf("%.1f\t", ms[0]/ms[k])
				} else {
					line += "-\t"
				}
			}
			if best > 0 {
				line += fmt.Sprintf("%.0f\t", float64(size)/(best/1000))
			} else {
				line += "-\t"
			}
			fmt.Fprintln(tw, line)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := gpuTable(stdout, rows); err != nil {
		return err
	}
	if svg != "" {
		f, err := os.Create(svg)
		if err != nil {
			return err
		}
		title := fmt.Sprintf("R-MAT scale %d, %d edges; per-batch matching time", scale, int64(factor)<<scale)
		if cacheFraction > 0 {
			title += fmt.Sprintf(", cache budget %.0f%% of the graph", 100*cacheFraction)
		}
		if err := bench.PlotSVG(f, rows, title); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "bench: wrote %s\n", svg)
	}
	return nil
}

// labelSkew checks --label-skew: 0 for uniform labels, or a Zipf exponent,
// which must be above 1.
func labelSkew(v float64) error {
	if v == 0 || v > 1 && !math.IsInf(v, 1) {
		return nil
	}
	return fmt.Errorf("--label-skew %v: want 0 (uniform) or a Zipf exponent above 1", v)
}

// shapeMaxBatch reads --shape-max-batch: shape=size pairs, each shape one
// of the run's, at most once.
func shapeMaxBatch(arg string, shapes []bench.Shape) (map[string]int, error) {
	if strings.TrimSpace(arg) == "" {
		return nil, nil
	}
	m := map[string]int{}
	for _, pair := range strings.Split(arg, ",") {
		name, size, ok := strings.Cut(strings.TrimSpace(pair), "=")
		n, err := strconv.Atoi(size)
		if !ok || err != nil || n < 1 {
			return nil, fmt.Errorf("--shape-max-batch: %q is not shape=size", pair)
		}
		if !slices.ContainsFunc(shapes, func(s bench.Shape) bool { return s.Name == name }) {
			return nil, fmt.Errorf("--shape-max-batch: %q is not among --shapes", name)
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("--shape-max-batch: %q comes twice", name)
		}
		m[name] = n
	}
	return m, nil
}

// gpuTable breaks the GPU engines' batches down (the paper's Table II):
// estimation and packing+copy as shares of the batch, the block, the bytes
// read from host memory and the share of reads the block served.
func gpuTable(w io.Writer, rows []bench.EngineRow) error {
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
func topMB(r bench.EngineRow) string {
	if r.Coverage1 < 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(r.Top1Bytes)/1e6)
}

func placementNames() string {
	var names []string
	for _, p := range kernels.Placements {
		names = append(names, string(p))
	}
	return strings.Join(names, ", ")
}

func shapeNames() string {
	var names []string
	for _, s := range bench.Shapes() {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

// engineOptions reads a GPU engine of --engines: a placement, and for the
// cache placements the suffixes :search (Options.SearchLookup) and :whole
// (Options.WholeLists), and for gcsm :nofill (Options.NoFill, as --gpu-fill
// off does for every engine), in any order.
// gpuCounts parses --gpus: counts of 1 or more, each once; more than one GPU
// does not combine with an executor per shape.
func gpuCounts(list string, perShape bool) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || k < 1 || slices.Contains(out, k) {
			return nil, fmt.Errorf("--gpus: %q is not a list of distinct counts of 1 or more", list)
		}
		if k > 1 && perShape {
			return nil, errors.New("--gpus above 1 does not combine with --executor-per-shape")
		}
		out = append(out, k)
	}
	return out, nil
}

// multiEngine opens engine name on k GPUs, devices 0 to k-1, as one
// kernels.Multi; ok is false, with a note, where the machine has fewer.
func multiEngine(name string, opts kernels.Options, k int, stderr io.Writer) (bench.Engine, bool, error) {
	m := &kernels.Multi{}
	for i := range k {
		opts.Device = i
		x, err := kernels.Open(opts)
		if err != nil {
			m.Close()
			fmt.Fprintf(stderr, "bench: skipping %s on %d GPUs: %v\n", name, k, err)
			return bench.Engine{}, false, nil
		}
		m.GPUs = append(m.GPUs, x)
	}
	fmt.Fprintf(stderr, "bench: %s on %d GPUs (%s first)\n", name, k, m.GPUs[0].Name())
	return bench.Engine{Name: fmt.Sprintf("gpu-%s-x%d", name, k), Matcher: m, Alloc: m.GPUs[0].Allocator()}, true, nil
}

func engineOptions(name string) (kernels.Options, error) {
	parts := strings.Split(name, ":")
	pl, err := kernels.ParsePlacement(parts[0])
	if err != nil {
		return kernels.Options{}, fmt.Errorf("--engines: unknown engine %q (want cpu or one of %s)", name, placementNames())
	}
	opts := kernels.Options{Placement: pl}
	for _, s := range parts[1:] {
		switch {
		case !pl.Cached():
			return opts, fmt.Errorf("--engines: %q: only the cache placements (gcsm, degree, khop) take :search or :whole", name)
		case s == "search" && !opts.SearchLookup:
			opts.SearchLookup = true
		case s == "whole" && !opts.WholeLists:
			opts.WholeLists = true
		case s == "nofill" && pl == kernels.GCSM && !opts.NoFill:
			opts.NoFill = true
		default:
			return opts, fmt.Errorf("--engines: %q: %q is not :search, :whole or (gcsm only) :nofill, or comes twice", name, s)
		}
	}
	return opts, nil
}
