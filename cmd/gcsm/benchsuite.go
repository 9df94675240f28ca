package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"

	"github.com/gcsm/gcsm/bench"
)

// runBenchSuite writes a CSM suite in the peers' format from a SNAP edge
// list: a labeled initial graph, a stream and queries, for bench/rapidflow.sh.
func runBenchSuite(args []string, stdout, stderr io.Writer) error {
	s := bench.DefaultSuite()
	var graphPath, out, sizes string
	fs := flag.NewFlagSet("bench suite", flag.ContinueOnError)
	fs.StringVar(&graphPath, "graph", "", "SNAP edge list `file`, read as undirected (self-loops and duplicates dropped)")
	fs.StringVar(&out, "out", "", "new or empty `directory` for data.graph, stream.graph and query_graph/Q_1..Q_n")
	fs.IntVar(&s.Labels, "labels", s.Labels, "vertex labels, Zipf-distributed")
	fs.Float64Var(&s.LabelSkew, "label-skew", s.LabelSkew, "Zipf exponent of the vertex labels (0: uniform)")
	fs.Float64Var(&s.Fraction, "fraction", s.Fraction, "share of the edges withheld as the stream, half inserted and half deleted")
	fs.IntVar(&s.Queries, "queries", s.Queries, "number of queries, trees and queries with cycles in turn")
	fs.StringVar(&sizes, "sizes", fmt.Sprintf("%d-%d", s.MinSize, s.MaxSize), "query vertices: LO-HI, taken in turn, or N")
	fs.Uint64Var(&s.Seed, "seed", s.Seed, "seed of the labels, the stream and the queries")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	var serr, ferr error
	if s.MinSize, s.MaxSize, serr = bench.ParseSizes(sizes); serr != nil {
		serr = fmt.Errorf("--sizes %w", serr)
	}
	if !(s.Fraction > 0 && s.Fraction <= 1) {
		ferr = fmt.Errorf("--fraction %v: want a share above 0 and at most 1", s.Fraction)
	}
	// A label takes a counter in the report: 65536 is more than any
	// labeled suite of the peers has.
	if err := badFlags(
		intIn("labels", int64(s.Labels), 1, 1<<16),
		labelSkew(s.LabelSkew),
		ferr,
		intIn("queries", int64(s.Queries), 1, math.MaxInt32),
		serr,
	); err != nil {
		return err
	}
	if graphPath == "" || out == "" {
		return badFlags(errors.New("need --graph FILE and --out DIR"))
	}
	el, err := bench.ReadEdgeList(graphPath)
	if err != nil {
		return err
	}
	rep, err := bench.WriteSuite(out, el, s)
	if err != nil {
		return err
	}
	rep.Print(stdout)
	return nil
}
