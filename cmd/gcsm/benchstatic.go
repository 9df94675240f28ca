package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/device"
	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/replay"
)

// runBenchStatic times the static matcher query by query on each engine and
// checks the counts against an answers file.
func runBenchStatic(args []string, stdout, stderr io.Writer) error {
	var (
		data, dir, answersPath, engines string
		cpuprofile                      string
		specs                           queryFlags
		workers                         int
		timeout                         time.Duration
		countOnly, jsonOut              bool
	)
	fs := flag.NewFlagSet("bench static", flag.ContinueOnError)
	fs.StringVar(&data, "d", "", "data graph `file` (CSM, SNAP or JSON lines)")
	fs.Var(&specs, "q", "query: a CSM or Cypher-style `file`, an inline pattern, or NAME=PATTERN (repeatable)")
	fs.StringVar(&dir, "queries", "", "a directory of query files (each file in it) or a glob of them; queries are named after their files")
	fs.StringVar(&answersPath, "answers", "", "`file` of expected counts, a 'QUERY COUNT' line per query, '#' comments; a count that differs is an error")
	fs.StringVar(&engines, "engines", "cpu", "comma-separated engines: cpu, gpu (the GPU static matcher)")
	fs.IntVar(&workers, "workers", 0, "CPU matching goroutines; 0 uses every core")
	fs.DurationVar(&timeout, "timeout", 0, "stop a query that runs longer than this `duration` and count it at the limit, marked timed out (on the GPU the kernels run to their end first); 0: no limit")
	fs.BoolVar(&countOnly, "count-only", false, "count matches without enumerating the last query vertex")
	fs.BoolVar(&jsonOut, "json", false, "write only the JSON summary to stdout; the table goes to stderr")
	fs.StringVar(&cpuprofile, "cpuprofile", "", "write a Go CPU profile of the queries' matching (not the loading) to `file`")
	tsUnitArg := tsUnitFlag(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	names, nerr := staticEngineNames(engines)
	if err := badFlags(workersFlag(workers), nerr, durationMin("timeout", timeout)); err != nil {
		return err
	}
	unit, err := tsUnit(*tsUnitArg)
	if err != nil {
		return err
	}
	if data == "" {
		fmt.Fprintln(stderr, "gcsm bench static: need -d DATA")
		return errUsage
	}
	specs, answers, err := staticInputs(specs, dir, answersPath)
	if err != nil {
		return err
	}
	es, alloc, closeEngines, err := bench.OpenStaticEngines(names, workers, stderr)
	if err != nil {
		return err
	}
	defer closeEngines()

	directed, fix, err := replay.GraphDirected(false, false, replay.Input{Flag: "-d", Path: data})
	if err != nil {
		return err
	}
	// The queries are compiled below, after the graph is read, with no
	// preview of what they read of events.
	s, err := replay.Open(replay.Config{Cmd: "bench static", Warn: stderr, Directed: directed, TSUnit: unit, Alloc: alloc})
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.LoadGraph(data); err != nil {
		return err
	}
	known := s.Labels().Len()
	qs, err := replay.LoadQueries(specs, s.Labels(), directed, fix, query.Embeddings, false)
	if err != nil {
		return err
	}
	s.WarnUnknownLabels(qs, known, "the data graph")

	sum := bench.StaticSummary{Data: data, Engines: names, Workers: device.CPUWorkers(workers), Timeout: timeout.Seconds(), CountOnly: countOnly}
	if cpuprofile != "" {
		stop, err := startProfile(cpuprofile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if err := bench.RunStatic(s.Graph(), qs, es, answers, timeout, &sum); err != nil {
		return err
	}

	out := bufio.NewWriter(stdout)
	defer out.Flush()
	human := humanOut(out, stderr, jsonOut)
	bench.ReportStatic(human, &sum, answersPath, timeout)
	if jsonOut {
		b, err := json.Marshal(sum)
		if err != nil {
			return err
		}
		out.Write(append(b, '\n'))
	}
	if sum.Mismatches > 0 {
		return fmt.Errorf("%d of %d queries have counts that differ from the answers or between engines", sum.Mismatches, len(sum.Queries))
	}
	return nil
}

// staticInputs adds the files of --queries to -q's specs, which must
// then name a query, and reads --answers.
func staticInputs(specs []string, dir, answersPath string) ([]string, bench.Answers, error) {
	if dir != "" {
		files, err := replay.QueryFiles(dir)
		if err != nil {
			return nil, nil, err
		}
		specs = append(specs, files...)
	}
	if len(specs) == 0 {
		return nil, nil, badFlags(errors.New("no query: give -q QUERY or --queries DIR_OR_GLOB"))
	}
	var answers bench.Answers
	if answersPath != "" {
		var err error
		if answers, err = bench.ReadAnswers(answersPath); err != nil {
			return nil, nil, fmt.Errorf("--answers: %w", err)
		}
	}
	return specs, answers, nil
}

// staticEngineNames parses --engines: known names, each once.
func staticEngineNames(v string) ([]string, error) {
	var names []string
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSpace(n)
		if n != "cpu" && n != "gpu" {
			return nil, fmt.Errorf("--engines: unknown engine %q (want cpu or gpu)", n)
		}
		if slices.Contains(names, n) {
			return nil, fmt.Errorf("--engines: %s given twice", n)
		}
		names = append(names, n)
	}
	return names, nil
}

// durationMin refuses a negative duration for flag name.
func durationMin(name string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("--%s %v: want 0 (no limit) or more", name, d)
	}
	return nil
}
