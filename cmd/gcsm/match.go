package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/replay"
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
	eng, err := dev.open(stderr, workers, 0)
	if err != nil {
		return err
	}
	defer eng.Close()
	directed, fix, err := replay.GraphDirected(directed, flagGiven(fs, "directed"), replay.Input{Flag: "-d", Path: data})
	if err != nil {
		return err
	}
	s, err := replay.Open(replay.Config{Cmd: "match", Warn: stderr, Directed: directed, Fix: fix, SkipBad: skipBad, TSUnit: unit,
		Alloc: eng.Alloc, Queries: queries, Semantics: sem, Unlabeled: unlabeled})
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.LoadGraph(data); err != nil {
		return err
	}
	qs, err := s.Compile("the data graph")
	if err != nil {
		return err
	}
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	var p *replay.Printer
	if emit {
		p = replay.NewPrinter(s, qs, out, jsonOut)
	}
	t0 := time.Now()
	counts, qsecs, err := replay.MatchEach(s, eng.Matcher, qs, countOnly, p)
	if err != nil {
		return err
	}
	secs := time.Since(t0).Seconds()
	eng.WarnFallback(stderr)
	return replay.ReportMatch(humanOut(out, stderr, jsonOut), out, jsonOut, qs, counts, qsecs, secs, s.Skipped())
}
