package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/engine"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/query"
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
	eng, err := f.dev.open(stderr, f.workers)
	if err != nil {
		return err
	}
	defer eng.close()
	t0 := time.Now()
	s, st, qs, err := f.load(fs, eng, unit, sem, stderr)
	if s != nil {
		defer s.g.Close()
	}
	if err != nil {
		return err
	}
	return f.replay(s, st, qs, eng, time.Since(t0), stdout, stderr)
}

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
func (f *replayFlags) load(fs *flag.FlagSet, eng *executor, unit ingest.TimeUnit, sem query.Semantics, stderr io.Writer) (*session, *stream, []*query.Query, error) {
	fix := "drop --directed=false"
	var err error
	if !f.demo {
		f.directed, fix, err = graphDirected(f.directed, flagGiven(fs, "directed"), input{"-d", f.data}, input{"-u", f.updates})
		if err != nil {
			return nil, nil, nil, err
		}
	}
	s, err := newSession(f.directed, f.skipBad, eng.alloc)
	if err != nil {
		return nil, nil, nil, err
	}
	s.timeUnit(unit, stderr, "replay")

	if f.demo && len(f.queries) == 0 {
		f.queries = demoQueries
	}
	s.keepTransfersFor(previewQueries(f.queries, f.directed, sem, false))
	var st *stream
	if f.demo {
		if f.data != "" || f.updates != "" {
			return s, nil, nil, errors.New("--demo generates its own graph and stream: drop -d and -u")
		}
		st, err = s.loadDemo()
	} else {
		if f.updates == "" {
			fmt.Fprintln(stderr, "gcsm replay: need -u STREAM (and -d DATA unless the graph starts empty), or --demo")
			return s, nil, nil, errUsage
		}
		if f.data != "" {
			err = s.loadGraph(f.data)
		}
		if err == nil {
			st, err = s.read(f.updates)
		}
	}
	if err != nil {
		return s, nil, nil, err
	}
	known := s.labels.Len()
	qs, err := loadQueries(f.queries, s.labels, f.directed, fix, sem, false)
	if err != nil {
		return s, nil, nil, err
	}
	s.warnUnknownLabels(stderr, "replay", qs, known, "the data graph or the stream")
	s.warnProperties(stderr, "replay", qs, known)
	s.keepTransfersFor(qs)
	return s, st, qs, nil
}

// replay runs the stream through the session's core and reports.
func (f *replayFlags) replay(s *session, st *stream, qs []*query.Query, eng *executor, loadTime time.Duration, stdout, stderr io.Writer) error {
	gs := s.g.Stats()
	// Ctrl-C stops the replay between batches and reports the counts so
	// far; a second one kills as usual. SIGTERM keeps its default, so that
	// its exit status stays its own (143, not Ctrl-C's 130).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	context.AfterFunc(ctx, stop)
	fmt.Fprintf(humanOut(stdout, stderr, f.jsonOut), "initial graph: %d vertices, %d edges, lists %.1f MiB in use of %.1f MiB capacity (loaded in %.2fs)\n",
		gs.Vertices, gs.Edges, float64(gs.Entries*4)/(1<<20), float64(gs.CapacityEntries*4)/(1<<20), loadTime.Seconds())

	r := &replayer{s: s, st: st, queries: qs, flags: f, out: bufio.NewWriter(stdout), matcher: eng.matcher}
	r.human = humanOut(r.out, stderr, f.jsonOut)
	defer r.out.Flush()
	bar := newProgress(stderr, len(st.updates), f.progress)
	res, err := r.run(ctx, bar)
	bar.done()
	if err != nil {
		return err
	}
	eng.warnFallback(stderr)
	if err := r.report(res); err != nil {
		return err
	}
	if res.interrupted {
		return fmt.Errorf("%w after %d of %d updates", errInterrupted, res.replayed, len(st.updates))
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

type replayer struct {
	s       *session
	st      *stream
	queries []*query.Query
	flags   *replayFlags
	matcher incremental.Matcher
	out     *bufio.Writer
	human   io.Writer  // the report: out, or stderr under --json
	mu      sync.Mutex // guards out while workers emit
}

type replayResult struct {
	counts                  []incremental.Counts
	batches                 int
	apply, match, reorg     time.Duration
	inserted, deleted, noop int
	replayed                int  // updates of the stream replayed
	interrupted             bool // ctx ended the replay before the stream did
}

// run replays the stream batch by batch until its end or until ctx is done,
// checked between batches.
func (r *replayer) run(ctx context.Context, bar *progress) (replayResult, error) {
	res := replayResult{counts: make([]incremental.Counts, len(r.queries))}
	mode, sink := incremental.Count, incremental.Sink(nil)
	if !r.flags.countOnly {
		mode = incremental.Enumerate
		sink = func(int, int, graph.Sign, []graph.VertexID) {}
		if r.flags.emit {
			sink = r.emit
		}
	}
	b := engine.Batch{Queries: r.queries, Mode: mode, Sink: sink}
	if r.flags.emit {
		b.Bound = r.emitBound
	}
	r.s.core.SetMatcher(r.matcher)
	// A step's counts are known once it is finished: at once, or, where its
	// match overlaps the next batch's apply, within the next step.
	add := func(st *engine.Step) error {
		if st == nil {
			return nil
		}
		if err := st.Err(); err != nil {
			return err
		}
		res.match += st.Match
		for i, c := range st.Counts() {
			res.counts[i].Positive += c.Positive
			res.counts[i].Negative += c.Negative
		}
		return nil
	}
	var last *engine.Step
	n := len(r.st.updates)
	for lo := 0; lo < n; lo += r.flags.batch {
		if ctx.Err() != nil {
			res.interrupted = true
			break
		}
		hi := min(lo+r.flags.batch, n)
		st, err := r.s.step(r.st, lo, hi, b)
		if err != nil {
			return res, err
		}
		if err := add(last); err != nil { // finished by this step
			return res, err
		}
		last = st
		res.apply += st.Apply
		res.reorg += st.Reorganize
		res.batches++
		for _, c := range st.Delta {
			if c.Sign > 0 {
				res.inserted++
			} else {
				res.deleted++
			}
		}
		res.noop += hi - lo - len(st.Delta) - len(st.Rejects)
		res.replayed = hi
		bar.set(hi)
	}
	r.s.core.Finish()
	return res, add(last)
}

func (r *replayer) emit(_ int, qi int, sign graph.Sign, m []graph.VertexID) {
	line := r.s.matchLine(sign.String(), r.queries[qi].Name, m)
	if r.flags.jsonOut {
		line = r.s.matchJSON(sign.String(), r.queries[qi].Name, m)
	}
	r.mu.Lock()
	r.out.WriteString(line)
	r.mu.Unlock()
}

// emitBound is emit for a match over transfers: the transfer ids follow.
func (r *replayer) emitBound(_ int, qi int, sign graph.Sign, m []graph.VertexID, tx []bundle.Tx) {
	line := r.s.matchLineTx(sign.String(), r.queries[qi].Name, m, tx)
	if r.flags.jsonOut {
		line = r.s.matchJSONTx(sign.String(), r.queries[qi].Name, m, tx)
	}
	r.mu.Lock()
	r.out.WriteString(line)
	r.mu.Unlock()
}

func (r *replayer) report(res replayResult) error {
	total := res.apply + res.match + res.reorg
	if res.interrupted {
		fmt.Fprintf(r.human, "stream: INTERRUPTED after %d of %d updates, in %d batches of up to %d (%d inserted, %d deleted, %d without effect); the counts are those so far\n",
			res.replayed, len(r.st.updates), res.batches, r.flags.batch, res.inserted, res.deleted, res.noop)
	} else {
		fmt.Fprintf(r.human, "stream: %d updates in %d batches of up to %d (%d inserted, %d deleted, %d without effect)\n",
			len(r.st.updates), res.batches, r.flags.batch, res.inserted, res.deleted, res.noop)
	}
	if r.s.skipped > 0 {
		fmt.Fprintf(r.human, "skipped: %d bad lines or refused updates\n", r.s.skipped)
	}
	tw := tabwriter.NewWriter(r.human, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "query\tpositive\tnegative")
	for i, q := range r.queries {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", q.Name, res.counts[i].Positive, res.counts[i].Negative)
	}
	tw.Flush()
	rate := 0.0
	if total > 0 {
		rate = float64(res.replayed) / total.Seconds()
	}
	fmt.Fprintf(r.human, "time: apply %.3fs, match %.3fs, reorganize %.3fs, total %.3fs (%.0f updates/s)\n",
		res.apply.Seconds(), res.match.Seconds(), res.reorg.Seconds(), total.Seconds(), rate)
	if !r.flags.jsonOut {
		return nil
	}
	type jq struct {
		Name     string `json:"name"`
		Positive int64  `json:"positive"`
		Negative int64  `json:"negative"`
	}
	out := struct {
		Queries     []jq    `json:"queries"`
		Updates     int     `json:"updates"` // replayed: the stream's, unless interrupted
		Batches     int     `json:"batches"`
		Skipped     int     `json:"skipped"`
		Interrupted bool    `json:"interrupted"`
		Seconds     float64 `json:"seconds"`
	}{Updates: res.replayed, Batches: res.batches, Skipped: r.s.skipped, Interrupted: res.interrupted, Seconds: total.Seconds()}
	for i, q := range r.queries {
		out.Queries = append(out.Queries, jq{q.Name, res.counts[i].Positive, res.counts[i].Negative})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	r.out.Write(append(b, '\n'))
	return nil
}
