package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/query"
)

func runMatch(args []string, stdout, stderr io.Writer) error {
	var (
		data                                        string
		queries                                     queryFlags
		semantics                                   string
		countOnly, emit, jsonOut, directed, skipBad bool
		unlabeled                                   bool
		workers                                     int
	)
	fs := flag.NewFlagSet("match", flag.ContinueOnError)
	fs.StringVar(&data, "d", "", "data graph `file` (CSM, SNAP or JSON lines)")
	fs.Var(&queries, "q", "query: a CSM or Cypher-style `file`, an inline pattern, or NAME=PATTERN (repeatable)")
	fs.StringVar(&semantics, "semantics", "embeddings", "embeddings (every injective map, the peers' counts) or instances (each subgraph once)")
	fs.BoolVar(&countOnly, "count-only", false, "count matches without enumerating the last query vertex")
	fs.BoolVar(&emit, "emit", false, "print every match as a line: QUERY v1 v2 ... (query vertex order)")
	fs.BoolVar(&jsonOut, "json", false, "write JSON only to stdout: a line per --emit match, then a summary line; the human report goes to stderr")
	fs.BoolVar(&directed, "directed", false, "treat the graph as directed; by default JSON and CSV files are, CSM and SNAP files are not (--directed=false to read JSON as undirected)")
	fs.BoolVar(&unlabeled, "unlabeled", false, "ignore the queries' vertex and edge labels (for unlabeled pattern sets such as STMatch's, whose labels are vertex ids)")
	fs.BoolVar(&skipBad, "skip-bad", false, "count and skip malformed lines instead of failing")
	fs.IntVar(&workers, "workers", 0, "matching goroutines; 0 uses every core")
	var dev deviceFlags
	dev.register(fs)
	tsUnitArg := tsUnitFlag(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	unit, err := tsUnit(*tsUnitArg)
	if err != nil {
		return err
	}
	if data == "" {
		fmt.Fprintln(stderr, "gcsm match: need -d DATA")
		return errUsage
	}
	if countOnly && emit {
		return fmt.Errorf("--emit lists matches, which --count-only does not enumerate; give one of them")
	}
	sem, err := query.ParseSemantics(semantics)
	if err != nil {
		return badFlags(choice("semantics", semantics, "embeddings", "instances"))
	}
	eng, err := dev.open(stderr, workers)
	if err != nil {
		return err
	}
	defer eng.close()
	directed, fix, err := graphDirected(directed, flagGiven(fs, "directed"), input{"-d", data})
	if err != nil {
		return err
	}
	s, err := newSession(directed, skipBad, eng.alloc)
	if err != nil {
		return err
	}
	defer s.g.Close()
	s.timeUnit(unit, stderr, "match")
	s.keepTransfersFor(previewQueries(queries, directed, sem, unlabeled))
	if err := s.loadGraph(data); err != nil {
		return err
	}
	known := s.labels.Len()
	qs, err := loadQueries(queries, s.labels, directed, fix, sem, unlabeled)
	if err != nil {
		return err
	}
	s.warnUnknownLabels(stderr, "match", qs, known, "the data graph")
	s.warnProperties(stderr, "match", qs, known)
	s.keepTransfersFor(qs)
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	var p *matchPrinter
	if emit {
		p = &matchPrinter{s: s, qs: qs, out: out, json: jsonOut}
	}
	t0 := time.Now()
	counts, qsecs, err := matchEach(s, eng.matcher, qs, countOnly, p)
	if err != nil {
		return err
	}
	secs := time.Since(t0).Seconds()
	eng.warnFallback(stderr)
	return reportMatch(humanOut(out, stderr, jsonOut), out, jsonOut, qs, counts, qsecs, secs, s.skipped)
}

// matchPrinter writes --emit's lines, as text or JSON, from any worker.
type matchPrinter struct {
	s    *session
	qs   []*query.Query
	out  *bufio.Writer
	json bool
	mu   sync.Mutex
}

func (p *matchPrinter) match(qi int, m []graph.VertexID) {
	line := p.s.matchLine("", p.qs[qi].Name, m)
	if p.json {
		line = p.s.matchJSON("", p.qs[qi].Name, m)
	}
	p.mu.Lock()
	p.out.WriteString(line)
	p.mu.Unlock()
}

func (p *matchPrinter) matchTx(qi int, m []graph.VertexID, tx []bundle.Tx) {
	line := p.s.matchLineTx("", p.qs[qi].Name, m, tx)
	if p.json {
		line = p.s.matchJSONTx("", p.qs[qi].Name, m, tx)
	}
	p.mu.Lock()
	p.out.WriteString(line)
	p.mu.Unlock()
}

// matchEach matches the queries on s's graph one at a time, so that each
// has its own time (the matchers take the queries of a call one after the
// other anyway), counting only under countOnly and printing every match
// through p where it is not nil. It returns each query's count and seconds.
func matchEach(s *session, matcher incremental.Matcher, qs []*query.Query, countOnly bool, p *matchPrinter) ([]int64, []float64, error) {
	mode, sink := incremental.Count, incremental.Sink(nil)
	if !countOnly {
		mode = incremental.Enumerate
		sink = func(_, qi int, _ graph.Sign, m []graph.VertexID) {
			if p != nil {
				p.match(qi, m)
			}
		}
	}
	counts, qsecs := make([]int64, len(qs)), make([]float64, len(qs))
	for i := range qs {
		one := sink
		if sink != nil {
			one = func(w, _ int, sign graph.Sign, m []graph.VertexID) { sink(w, i, sign, m) }
		}
		t := time.Now()
		var c []int64
		var err error
		if s.store != nil {
			b := &incremental.Binder{Matcher: matcher, Store: s.store}
			var bs incremental.BoundSink
			if p != nil {
				bs = func(_, _ int, _ graph.Sign, m []graph.VertexID, tx []bundle.Tx) { p.matchTx(i, m, tx) }
			}
			c, err = b.Static(s.g, qs[i:i+1], mode, bs)
		} else {
			c, err = matcher.Static(s.g, qs[i:i+1], mode, one)
		}
		if err != nil {
			return nil, nil, err
		}
		counts[i], qsecs[i] = c[0], time.Since(t).Seconds()
	}
	return counts, qsecs, nil
}

// reportMatch writes the table of counts and times to human and, under
// --json, the summary line to out.
func reportMatch(human io.Writer, out *bufio.Writer, jsonOut bool, qs []*query.Query, counts []int64, qsecs []float64, secs float64, skipped int) error {
	tw := tabwriter.NewWriter(human, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "query\tmatches\tseconds")
	for i, q := range qs {
		fmt.Fprintf(tw, "%s\t%d\t%.3f\n", q.Name, counts[i], qsecs[i])
	}
	tw.Flush()
	if skipped > 0 {
		fmt.Fprintf(human, "skipped: %d bad lines or refused updates\n", skipped)
	}
	fmt.Fprintf(human, "time: %.3fs\n", secs)
	if !jsonOut {
		return nil
	}
	type jq struct {
		Name    string  `json:"name"`
		Matches int64   `json:"matches"`
		Seconds float64 `json:"seconds"`
	}
	res := struct {
		Queries []jq    `json:"queries"`
		Skipped int     `json:"skipped"`
		Seconds float64 `json:"seconds"`
	}{Skipped: skipped, Seconds: secs}
	for i, q := range qs {
		res.Queries = append(res.Queries, jq{q.Name, counts[i], qsecs[i]})
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	out.Write(append(b, '\n'))
	return nil
}
