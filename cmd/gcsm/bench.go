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
	"time"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/kernels"
)

// benchFlags are gcsm bench's flags.
type benchFlags struct {
	scale, factor, vlabels, perSize, workers         int
	skew, cacheFraction                              float64
	batches, shapes, engines, svg, maxBatch, gpus    string
	labeled, coverage, warmEach, perShape, eachBatch bool
	seed                                             uint64
	gpuMem                                           int64
	share                                            float64
	walks, fill, cpuprofile                          string
	minKernel                                        time.Duration
}

// runBench times the engines side by side on a generated R-MAT workload:
// the CPU on all cores and, where a GPU is present, the GPU placements.
func runBench(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "service" {
		return runBenchService(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "static" {
		return runBenchStatic(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "suite" {
		return runBenchSuite(args[1:], stdout, stderr)
	}
	var f benchFlags
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	f.register(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	weighted, werr := weightedWalks(f.walks)
	nofill, ferr := noFill(f.fill)
	if err := f.check(werr, ferr); err != nil {
		return err
	}
	if f.cpuprofile != "" {
		stop, err := startProfile(f.cpuprofile)
		if err != nil {
			return err
		}
		defer stop()
	}
	cfg, err := f.config()
	if err != nil {
		return err
	}
	counts, err := gpuCounts(f.gpus, f.perShape)
	if err != nil {
		return badFlags(err)
	}
	perShape := 0
	if f.perShape {
		perShape = len(cfg.Shapes)
		fmt.Fprintf(stderr, "bench: an executor per shape (%d) for each engine\n", len(cfg.Shapes))
	}
	specs, err := f.engineSpecs(weighted, nofill)
	if err != nil {
		return badFlags(err)
	}
	es, closeEngines := bench.OpenEngines(specs, f.workers, counts, perShape, stderr)
	defer closeEngines()
	if len(es) == 0 {
		return errors.New("no engine to run")
	}
	rows, err := bench.RunEngines(cfg, es, stderr)
	if err != nil {
		return err
	}
	if err := bench.WriteEngineTable(stdout, cfg, es, rows); err != nil {
		return err
	}
	if f.svg != "" {
		return f.plot(rows, stderr)
	}
	return nil
}

// register defines gcsm bench's flags on fs.
func (f *benchFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&f.scale, "scale", 16, "R-MAT scale: 2^scale vertices")
	fs.IntVar(&f.factor, "edge-factor", 16, "edges per vertex")
	fs.IntVar(&f.vlabels, "labels", 8, "vertex labels, Zipf-distributed")
	fs.Float64Var(&f.skew, "label-skew", 1.5, "Zipf exponent of the vertex labels (0: uniform)")
	fs.BoolVar(&f.labeled, "labeled", true, "label the query vertices (with the two most common labels, alternating)")
	fs.StringVar(&f.batches, "batches", "64,1024,4096", "comma-separated batch sizes")
	fs.IntVar(&f.perSize, "per-size", 4, "batches timed per size")
	fs.BoolVar(&f.warmEach, "warm-each-size", false, "give every batch size an untimed batch before its timed ones, not only the first size")
	fs.BoolVar(&f.eachBatch, "each-batch", false, "log every timed batch's own row before each size's means")
	fs.BoolVar(&f.perShape, "executor-per-shape", false, "give every shape its own executor of each engine, as a service holding that one query would; by default one executor matches the shapes in turn, and on the GPU each shape's cache displaces the last one's")
	fs.StringVar(&f.shapes, "shapes", "triangle,4-cycle,diamond,house,5-cycle", "comma-separated query shapes: "+bench.ShapeNames())
	fs.StringVar(&f.maxBatch, "shape-max-batch", "", "comma-separated shape=size pairs: that shape runs only at batch sizes up to size (5-cycle=512: its batches of 2,048 take minutes through zero-copy)")
	fs.StringVar(&f.engines, "engines", "cpu,zero-copy,device", fmt.Sprintf("engines to compare: cpu, or a GPU placement (%s), a cache placement with :search for the binary-search lookup and :whole for blocks of whole lists (gcsm:search, degree:whole), gcsm:nofill for the gcsm placement without its fill (--gpu-fill off); the GPU ones are skipped without a GPU", placementNames()))
	fs.StringVar(&f.gpus, "gpus", "1", "comma-separated GPU counts: each GPU engine runs once per count, its batches split over that many GPUs by shard (kernels.Multi)")
	fs.Float64Var(&f.cacheFraction, "gpu-cache-fraction", 0, "cap the cache placements' budget at this share of the graph's list bytes (0.05: the paper's out-of-memory regime); 0 leaves it to --gpu-mem")
	fs.Int64Var(&f.gpuMem, "gpu-mem", 0, "cap on the GPU memory each GPU engine uses, in `bytes`; 0 means no cap")
	fs.Float64Var(&f.share, "gpu-estimate-share", 0, estimateShareUsage)
	fs.StringVar(&f.fill, "gpu-fill", "on", fillUsage)
	fs.DurationVar(&f.minKernel, "gpu-cache-min-kernel", 0, minKernelUsage)
	fs.StringVar(&f.walks, "gpu-walks", "paper", walksUsage)
	fs.BoolVar(&f.coverage, "coverage", false, "report the cache placements' top-1%/5% coverage against exact reads (the paper's: by the cache block; and, for gcsm, by the estimate's ranking) on each size's last timed batch")
	fs.StringVar(&f.svg, "svg", "", "write a plot of per-batch time against batch size to this `file`")
	fs.IntVar(&f.workers, "workers", 0, "CPU goroutines; 0 uses every core")
	fs.Uint64Var(&f.seed, "seed", 1, "workload seed")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a Go CPU profile of the whole run to `file`")
}

// check checks the flags; werr and ferr are --gpu-walks' and --gpu-fill's.
func (f *benchFlags) check(werr, ferr error) error {
	// A simple graph of 2^scale vertices has fewer than 2^scale edges per
	// vertex; R-MAT's vertex ids are 32 bits.
	return badFlags(
		intIn("scale", int64(f.scale), 1, 31),
		intIn("edge-factor", int64(f.factor), 1, int64(1)<<min(max(f.scale, 1), 31)-1),
		intIn("labels", int64(f.vlabels), 1, math.MaxInt64),
		labelSkew(f.skew),
		intIn("per-size", int64(f.perSize), 1, math.MaxInt64),
		workersFlag(f.workers),
		floatIn("gpu-cache-fraction", f.cacheFraction, 0, 1),
		intIn("gpu-mem", f.gpuMem, 0, math.MaxInt64),
		floatIn("gpu-estimate-share", f.share, math.Inf(-1), 1),
		werr, ferr,
	)
}

// config is the workload the flags describe.
func (f *benchFlags) config() (bench.EngineConfig, error) {
	cfg := bench.EngineConfig{
		Graph:         bench.RMAT{Scale: f.scale, Edges: int64(f.factor) << f.scale, VertexLabels: f.vlabels, LabelSkew: f.skew, EdgeLabels: 1, Seed: f.seed},
		PerSize:       f.perSize,
		Fraction:      0.1,
		Seed:          f.seed,
		CacheFraction: f.cacheFraction,
		Coverage:      f.coverage,
		WarmEachSize:  f.warmEach,
		EachBatch:     f.eachBatch,
	}
	if f.skew == 0 {
		cfg.Graph.LabelSkew = 0
	}
	for _, b := range strings.Split(f.batches, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(b))
		if err != nil || n < 1 {
			return cfg, badFlags(fmt.Errorf("--batches: %q is not a batch size", b))
		}
		cfg.Batches = append(cfg.Batches, n)
	}
	var err error
	if cfg.Shapes, err = bench.ShapesNamed(strings.Split(f.shapes, ","), f.labeled); err != nil {
		return cfg, badFlags(fmt.Errorf("--shapes: %w", err))
	}
	if cfg.MaxBatch, err = shapeMaxBatch(f.maxBatch, cfg.Shapes); err != nil {
		return cfg, badFlags(err)
	}
	return cfg, nil
}

// engineSpecs reads --engines, with the GPU flags in every GPU engine's
// options.
func (f *benchFlags) engineSpecs(weighted, nofill bool) ([]bench.EngineSpec, error) {
	var specs []bench.EngineSpec
	for _, name := range strings.Split(f.engines, ",") {
		name = strings.TrimSpace(name)
		if name == "cpu" {
			specs = append(specs, bench.EngineSpec{Name: name})
			continue
		}
		opts, err := engineOptions(name)
		if err != nil {
			return nil, err
		}
		opts.MemLimit, opts.EstimateShare, opts.WeightedWalks, opts.MinCacheKernel = f.gpuMem, f.share, weighted, f.minKernel
		opts.NoFill = opts.NoFill || nofill
		specs = append(specs, bench.EngineSpec{Name: name, GPU: opts})
	}
	return specs, nil
}

// plot writes --svg: per-batch time against batch size.
func (f *benchFlags) plot(rows []bench.EngineRow, stderr io.Writer) error {
	out, err := os.Create(f.svg)
	if err != nil {
		return err
	}
	title := fmt.Sprintf("R-MAT scale %d, %d edges; per-batch matching time", f.scale, int64(f.factor)<<f.scale)
	if f.cacheFraction > 0 {
		title += fmt.Sprintf(", cache budget %.0f%% of the graph", 100*f.cacheFraction)
	}
	if err := bench.PlotSVG(out, rows, title); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "bench: wrote %s\n", f.svg)
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

func placementNames() string {
	var names []string
	for _, p := range kernels.Placements {
		names = append(names, string(p))
	}
	return strings.Join(names, ", ")
}

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

// engineOptions reads a GPU engine of --engines: a placement, and for the
// cache placements the suffixes :search (Options.SearchLookup) and :whole
// (Options.WholeLists), and for gcsm :nofill (Options.NoFill, as --gpu-fill
// off does for every engine), in any order.
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
