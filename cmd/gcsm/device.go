package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/gcsm/gcsm/device"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/kernels"
)

// deviceFlags choose the executor: --device, --gpu-placement, --gpu-mem,
// --gpu-cache, --gpu-cache-lookup, --gpu-estimate-share, --gpu-walks,
// --gpu-cache-min-kernel, --gpu-cache-lists, --gpu-fill, --gpu-static-keep,
// --gpu-static-space.
type deviceFlags struct {
	device, placement string
	mem, cache        int64
	lookup, lists     string
	share             float64
	walks, fill, keep string
	space             string
	minKernel         time.Duration
	gpus              int
	// first is the first GPU's device number: a member of gcsm bench
	// service --members runs on its own GPUs.
	first int
}

func (d *deviceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.device, "device", "auto", "auto (the GPU when one is present, the CPU otherwise; on a stream's batches each query runs where it has been fastest at that batch size, both at once), cpu or gpu (every query there)")
	fs.StringVar(&d.placement, "gpu-placement", "device", "where the GPU reads neighbour lists: device (a mirror in GPU memory), zero-copy (pinned host memory), "+
		"gcsm, degree or khop (zero-copy plus a block of the lists the sampler's estimate, the degrees or the batch's k-hop neighbourhood pick, in GPU memory), or unified (a mirror in managed memory)")
	fs.Int64Var(&d.mem, "gpu-mem", 0, "cap on the GPU memory gcsm uses, in `bytes`; 0 means no cap. A device or unified placement that does not fit falls back to zero-copy")
	fs.Int64Var(&d.cache, "gpu-cache", 0, "the gcsm, degree and khop placements' cache budget in `bytes`; 0 means four fifths of what --gpu-mem leaves, or half the GPU's free memory")
	fs.StringVar(&d.lookup, "gpu-cache-lookup", "table", lookupUsage)
	fs.Float64Var(&d.share, "gpu-estimate-share", 0, estimateShareUsage)
	fs.StringVar(&d.fill, "gpu-fill", "on", fillUsage)
	fs.StringVar(&d.walks, "gpu-walks", "paper", walksUsage)
	fs.DurationVar(&d.minKernel, "gpu-cache-min-kernel", 0, minKernelUsage)
	fs.StringVar(&d.lists, "gpu-cache-lists", "trimmed", listsUsage)
	fs.StringVar(&d.keep, "gpu-static-keep", "on", keepUsage)
	fs.StringVar(&d.space, "gpu-static-space", "auto", spaceUsage)
	fs.IntVar(&d.gpus, "gpus", 1, "GPUs to use, devices 0 to N-1: each batch is split over them by shard, every GPU with its own copy of the graph (or view of it, under zero-copy)")
}

const listsUsage = "what the cache block holds of a list: trimmed (the entries of the vertex labels the queries can read from it) or whole (every entry, as in the GCSM paper)"

// wholeLists parses --gpu-cache-lists.
func wholeLists(v string) (bool, error) { return twoWay("gpu-cache-lists", v, "trimmed", "whole") }

const walksUsage = "the gcsm placement's random walks: paper (the GCSM paper's, which go on with probability 1/maximum degree) or weighted (a walk picks among a node's own candidates and carries their number as weight: better coverage of the hottest lists for a larger --gpu-estimate-share)"

// weightedWalks parses --gpu-walks.
func weightedWalks(v string) (bool, error) { return twoWay("gpu-walks", v, "paper", "weighted") }

// twoWay parses the value v of flag name, which must be off or on.
func twoWay(name, v, off, on string) (bool, error) {
	switch v {
	case off:
		return false, nil
	case on:
		return true, nil
	}
	return false, fmt.Errorf("--%s %q: want %s or %s", name, v, off, on)
}

const lookupUsage = "how the kernel finds a cached list: table (through the per-vertex table, whose rows of the cached lists point into the block) or search (the GCSM paper's binary search of the block's rowidx at every access)"

// searchLookup parses --gpu-cache-lookup.
func searchLookup(v string) (bool, error) { return twoWay("gpu-cache-lookup", v, "table", "search") }

const minKernelUsage = "the gcsm placement neither estimates nor caches for a set of queries whose last kernel, scaled to the batch's size and to what it would have taken without the cache, took less than this `duration`: the GPU's L2 cache serves such batches, and the block does not pay; 0 means 2.5ms, a negative one (-1s) caches every batch"

const fillUsage = "on: the gcsm placement keeps the longest lists on the GPU, packed once per set of queries, in the room its estimate's lists leave in the budget (at least 4 MiB of it); off: that room stays empty"

// noFill parses --gpu-fill.
func noFill(v string) (bool, error) { return twoWay("gpu-fill", v, "on", "off") }

const keepUsage = "on: a level of the GPU static matcher whose constraints include all of an earlier level's scans the intersection that level kept (STMatch's code motion, 3-5x faster on cliques); off: every level scans the graph's lists, for measuring what keeping buys"

// keepLists parses --gpu-static-keep.
func keepLists(v string) (bool, error) { return twoWay("gpu-static-keep", v, "off", "on") }

const spaceUsage = "how the GPU static matcher counts a query: over the candidate space the CPU matcher builds (lists of the candidates adjacent to each candidate) or over the graph's lists; auto and on: wherever it fits in 2^26 entries, off: never"

// spaceEntries parses --gpu-static-space into kernels.Options.SpaceEntries.
func spaceEntries(v string) (int, error) {
	switch v {
	case "auto":
		return 0, nil
	case "on":
		return incremental.DefaultSpaceEntries, nil
	case "off":
		return -1, nil
	}
	return 0, fmt.Errorf("--gpu-static-space %q: want auto, on or off", v)
}

const estimateShareUsage = "the share of a batch's kernel time the gcsm placement aims to spend on its estimate, which sets the sampler's walks from batch to batch; 0 means 0.05, a negative value the sampler's own number (the paper's M, raised by its formula 5)"

// options checks every device flag and --workers, on a machine without a
// GPU and under --device cpu too, and returns the GPU executor's options.
func (d *deviceFlags) options(workers int) (kernels.Options, error) {
	pl, perr := kernels.ParsePlacement(d.placement)
	if perr != nil {
		perr = fmt.Errorf("--gpu-placement %q: want one of %s", d.placement, placementNames())
	}
	weighted, werr := weightedWalks(d.walks)
	search, serr := searchLookup(d.lookup)
	whole, lerr := wholeLists(d.lists)
	nofill, ferr := noFill(d.fill)
	keep, kerr := keepLists(d.keep)
	space, sperr := spaceEntries(d.space)
	err := badFlags(
		choice("device", d.device, "auto", "cpu", "gpu"),
		workersFlag(workers),
		perr, werr, serr, lerr, ferr, kerr, sperr,
		intIn("gpu-mem", d.mem, 0, math.MaxInt64),
		intIn("gpus", int64(d.gpus), 1, 64),
		intIn("gpu-cache", d.cache, 0, math.MaxInt64),
		// Negative: the sampler's own number; above 1 the estimate would
		// take longer than the kernel it serves.
		floatIn("gpu-estimate-share", d.share, math.Inf(-1), 1),
	)
	opts := kernels.Options{Placement: pl, MemLimit: d.mem, CacheBytes: d.cache, SearchLookup: search, WholeLists: whole,
		EstimateShare: d.share, NoFill: nofill, WeightedWalks: weighted, MinCacheKernel: d.minKernel, SpaceEntries: space}
	if !keep {
		opts.KeepBytes = -1
	}
	return opts, err
}

// open picks the executor and says which on w; maxBatch, if set, is the
// most updates a batch will hold (device.Config.MaxBatch).
func (d *deviceFlags) open(w io.Writer, workers, maxBatch int) (*device.Executor, error) {
	opts, err := d.options(workers)
	if err != nil {
		return nil, err
	}
	return device.Open(device.Config{Device: d.device, Workers: workers, GPUs: d.gpus, First: d.first, GPU: opts, MaxBatch: maxBatch}, w)
}
