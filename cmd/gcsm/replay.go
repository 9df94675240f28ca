package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"runtime/debug"
	"time"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/demo"
	"github.com/gcsm/gcsm/device"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/replay"
)

type replayFlags struct {
	data, updates string
	queries       queryFlags
	batch         int
	semantics     string
	countOnly     bool
	emit          bool
	jsonOut       bool
	directed      bool
	skipBad       bool
	workers       int
	demo          bool
	progress      bool
	cpuprofile    string
	dev           deviceFlags
}

func runReplay(args []string, stdout, stderr io.Writer) error {
	var f replayFlags
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	tsUnitArg := f.register(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	unit, sem, err := f.settle(fs, *tsUnitArg)
	if err != nil {
		return err
	}
	if f.cpuprofile != "" {
		stop, err := startProfile(f.cpuprofile)
		if err != nil {
			return err
		}
		defer stop()
	}
	eng, err := f.dev.open(stderr, f.workers, f.batch)
	if err != nil {
		return err
	}
	defer eng.Close()
	t0 := time.Now()
	restoreGC := loadGC(f.data, f.updates)
	s, st, qs, err := f.load(fs, eng, unit, sem, stderr)
	restoreGC()
	if s != nil {
		defer s.Close()
	}
	if err != nil {
		return err
	}
	return f.replay(s, st, qs, eng, time.Since(t0), stdout, stderr)
}

// loadGC turns the collector off for a load of the files at paths, until
// restore. A load keeps what it allocates (the updates, the dictionaries)
// and, on the data sets' lines, allocates nothing else
// (ingest.Reader.NextUpdate), so a collection during it frees nothing and
// scans the updates: 12 ms of a 100 ms peer-style run on the human graph
// at GOMAXPROCS=1 (2-core VM). A memory limit of loadHeadroom plus
// loadPerByte times the input still collects where the lines do leave
// garbage (JSON lines), so that a large file cannot take all memory.
func loadGC(paths ...string) (restore func()) {
	var size int64
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			size += fi.Size()
		}
	}
	gc := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(-1)
	debug.SetMemoryLimit(min(limit, loadHeadroom+loadPerByte*size))
	return func() {
		debug.SetGCPercent(gc)
		debug.SetMemoryLimit(limit)
	}
}

// loadHeadroom and loadPerByte bound the heap of a load without
// collections: a CSM file's updates take 2.5 bytes per byte of its lines.
const (
	loadHeadroom = 64 << 20
	loadPerByte  = 4
)

// register defines replay's flags on fs and returns --ts-unit's.
func (f *replayFlags) register(fs *flag.FlagSet) *string {
	fs.StringVar(&f.data, "d", "", "initial data graph `file` (CSM, SNAP or JSON lines); empty graph if omitted")
	fs.StringVar(&f.updates, "u", "", "update stream `file` (CSM e/-e/v lines, SNAP or JSON lines)")
	fs.Var(&f.queries, "q", "query: a CSM or Cypher-style `file`, an inline pattern, or NAME=PATTERN (repeatable)")
	fs.IntVar(&f.batch, "batch", 1024, "updates per batch; 1 processes one update at a time like the peers")
	fs.StringVar(&f.semantics, "semantics", "embeddings", "embeddings (every injective map, the peers' counts) or instances (each subgraph once)")
	fs.BoolVar(&f.countOnly, "count-only", false, "count matches without enumerating the last query vertex")
	fs.BoolVar(&f.emit, "emit", false, "print every match delta as a line: +|- QUERY v1 v2 ... (query vertex order)")
	fs.BoolVar(&f.jsonOut, "json", false, "write JSON only to stdout: a line per --emit match, then a summary line; the human report goes to stderr")
	fs.BoolVar(&f.directed, "directed", false, "treat the graph as directed; by default JSON and CSV files are, CSM and SNAP files are not, and -d and -u of different defaults need it (--directed=false to read JSON as undirected)")
	fs.BoolVar(&f.skipBad, "skip-bad", false, "count and skip malformed lines and refused updates instead of failing")
	fs.IntVar(&f.workers, "workers", 0, "matching goroutines; 0 uses every core")
	fs.BoolVar(&f.demo, "demo", false, "replay a generated money-transfer workload with built-in queries (directed unless --directed=false)")
	fs.BoolVar(&f.progress, "progress", true, "show a progress bar on stderr when it is a terminal and the run takes over a second")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a Go CPU profile of the whole run to `file`")
	f.dev.register(fs)
	return tsUnitFlag(fs)
}

// settle checks the flags against each other, fills in --demo's defaults
// and returns the time unit and the semantics they say.
func (f *replayFlags) settle(fs *flag.FlagSet, tsUnitArg string) (ingest.TimeUnit, query.Semantics, error) {
	unit, err := tsUnit(tsUnitArg)
	if err != nil {
		return 0, 0, err
	}
	if err = badFlags(intIn("batch", int64(f.batch), 1, math.MaxInt64)); err != nil {
		return 0, 0, err
	}
	if f.countOnly && f.emit {
		return 0, 0, errors.New("--emit lists matches, which --count-only does not enumerate; give one of them")
	}
	if f.demo {
		// Transfers have a direction, and an alert should name a ring once,
		// not once per rotation, unless the user asked otherwise.
		f.directed = f.directed || !flagGiven(fs, "directed")
		set := false
		fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == "semantics" })
		if !set {
			f.semantics = "instances"
		}
	}
	sem, err := query.ParseSemantics(f.semantics)
	if err != nil {
		return 0, 0, badFlags(choice("semantics", f.semantics, "embeddings", "instances"))
	}
	return unit, sem, nil
}

// load makes the session and reads the data graph, the stream and the
// queries into it. The session, once made, is returned even with an error,
// for its graph to be closed.
func (f *replayFlags) load(fs *flag.FlagSet, eng *device.Executor, unit ingest.TimeUnit, sem query.Semantics, stderr io.Writer) (*replay.Session, *replay.Stream, []*query.Query, error) {
	fix := "drop --directed=false"
	var err error
	if !f.demo {
		f.directed, fix, err = replay.GraphDirected(f.directed, flagGiven(fs, "directed"), replay.Input{Flag: "-d", Path: f.data}, replay.Input{Flag: "-u", Path: f.updates})
		if err != nil {
			return nil, nil, nil, err
		}
	}
	if f.demo && len(f.queries) == 0 {
		f.queries = demo.Queries
	}
	s, err := replay.Open(replay.Config{Cmd: "replay", Warn: stderr, Directed: f.directed, Fix: fix, SkipBad: f.skipBad, TSUnit: unit,
		Alloc: eng.Alloc, Queries: f.queries, Semantics: sem})
	if err != nil {
		return nil, nil, nil, err
	}
	var st *replay.Stream
	if f.demo {
		if f.data != "" || f.updates != "" {
			return s, nil, nil, errors.New("--demo generates its own graph and stream: drop -d and -u")
		}
		// The demo's stream starts from an empty graph.
		st, err = s.LoadTransfers("demo", bench.Transfers(demo.Accounts, demo.Events, demo.Seed))
	} else {
		if f.updates == "" {
			fmt.Fprintln(stderr, "gcsm replay: need -u STREAM (and -d DATA unless the graph starts empty), or --demo")
			return s, nil, nil, errUsage
		}
		if f.data != "" {
			err = s.LoadGraph(f.data)
		}
		if err == nil {
			st, err = s.Read(f.updates)
		}
	}
	if err != nil {
		return s, nil, nil, err
	}
	qs, err := s.Compile("the data graph or the stream")
	if err != nil {
		return s, nil, nil, err
	}
	return s, st, qs, nil
}

// replay runs the stream through the session's core and reports.
func (f *replayFlags) replay(s *replay.Session, st *replay.Stream, qs []*query.Query, eng *device.Executor, loadTime time.Duration, stdout, stderr io.Writer) error {
	gs := s.Graph().Stats()
	// Ctrl-C stops the replay between batches and reports the counts so
	// far; a second one kills as usual. SIGTERM keeps its default, so that
	// its exit status stays its own (143, not Ctrl-C's 130).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	context.AfterFunc(ctx, stop)
	fmt.Fprintf(humanOut(stdout, stderr, f.jsonOut), "initial graph: %d vertices, %d edges, lists %.1f MiB in use of %.1f MiB capacity (loaded in %.2fs)\n",
		gs.Vertices, gs.Edges, float64(gs.Entries*4)/(1<<20), float64(gs.CapacityEntries*4)/(1<<20), loadTime.Seconds())

	out := bufio.NewWriter(stdout)
	r := &replay.Replayer{Session: s, Stream: st, Queries: qs, Matcher: eng.Matcher, Batch: f.batch,
		CountOnly: f.countOnly, Emit: f.emit, JSON: f.jsonOut, Out: out, Human: humanOut(out, stderr, f.jsonOut)}
	defer out.Flush()
	bar := newProgress(stderr, st.Len(), f.progress)
	res, err := r.Run(ctx, bar.set)
	bar.done()
	if err != nil {
		return err
	}
	eng.WarnFallback(stderr)
	if err := r.Report(res); err != nil {
		return err
	}
	if res.Interrupted {
		return fmt.Errorf("%w after %d of %d updates", errInterrupted, res.Replayed, st.Len())
	}
	return nil
}

// humanOut is where a command's report for people goes: stdout, or stderr
// under --json, which keeps stdout for JSON alone.
func humanOut(stdout, stderr io.Writer, jsonOut bool) io.Writer {
	if jsonOut {
		return stderr
	}
	return stdout
}
