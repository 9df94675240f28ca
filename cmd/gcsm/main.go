// Command gcsm is the continuous subgraph matching stream processor.
//
//	gcsm run    [--config gcsm.yaml]                       consume Kafka, write match events (the service)
//	gcsm demo                                               the service end to end on a generated stream
//	gcsm replay -d DATA -u STREAM -q QUERY [-q QUERY ...]   replay a stream file in batches
//	gcsm replay --demo                                      replay a generated transfer workload
//	gcsm match  -d DATA -q QUERY [-q QUERY ...]             count or list all matches of a graph
//	gcsm bench  [--scale N] [--batches 64,1024,4096]        time the engines on an R-MAT workload
//	gcsm produce -u STREAM --topic T [--rate N]             publish a stream file to Kafka as JSON events
//	gcsm tail   [--config F] [--dlq] [--follow]             print the alerts (or dead letters) gcsm wrote
//	gcsm broker [--listen ADDR] [--data DIR]                the embedded Kafka broker in its own process
//	gcsm bench service [--mix MIX] [--device cpu|gpu]       time the service end to end through Kafka (mixes: alert-sparse, alert-heavy, rings-where, five)
//	gcsm bench static -d DATA --queries DIR [--answers F]   time the static matcher query by query, checking counts
//	gcsm bench suite --graph SNAP --out DIR                 write a CSM suite (graph, stream, queries) for bench/rapidflow.sh
//
// Run "gcsm COMMAND -h" for a command's flags, "gcsm COMMAND --help-all" for
// its GPU tuning flags too, and "gcsm --version" for the build.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/replay"
)

type command struct {
	name, summary string
	run           func(args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"run", "run the streaming service: Kafka in, match events out", runRun},
		{"demo", "run the service on a generated transfer stream and print its alerts", runDemo},
		{"replay", "replay a stream file against standing queries, batch by batch", runReplay},
		{"match", "find all matches of queries in a graph (the static matcher)", runMatch},
		{"bench", "time the CPU and GPU engines side by side on a generated R-MAT workload ('gcsm bench service': the service end to end through Kafka; 'gcsm bench static': the static matcher on a query set; 'gcsm bench suite': write a CSM suite from a SNAP graph)", runBench},
		{"produce", "publish a stream file to a Kafka topic as JSON events", runProduce},
		{"tail", "print the match events (alerts) or dead letters on the output topics", runTail},
		{"broker", "run the embedded Kafka-protocol broker in a process of its own", runBroker},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code, so tests can
// drive the whole command line.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	// Asked-for help and the version are the output, so they go to stdout;
	// usage after a mistake goes to stderr.
	switch args[0] {
	case "-h", "-help", "--help", "help", "--help-all":
		usage(stdout)
		return 0
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, version())
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(args[1:], stdout, stderr)
			var help *helpRequest
			var bad *flagError
			var spec *replay.SpecError
			var rejected *query.Error
			switch {
			case err == nil:
				return 0
			case errors.As(err, &help):
				help.print(stdout)
				return 0
			case errors.As(err, &bad) || errors.As(err, &spec):
				fmt.Fprintf(stderr, "gcsm %s: %v\nRun 'gcsm %s -h' for its flags.\n", c.name, err, c.name)
				return 2
			case errors.As(err, &rejected):
				// A query that does not parse or compile is a usage error
				// on every path (-q, a query file, the configuration), as
				// the README promises; its message names where.
				fmt.Fprintf(stderr, "gcsm %s: %v\n", c.name, err)
				return 2
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.Is(err, errUsage):
				return 2
			case errors.Is(err, errInterrupted):
				fmt.Fprintf(stderr, "gcsm %s: %v\n", c.name, err)
				return exitInterrupted
			}
			fmt.Fprintf(stderr, "gcsm %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "gcsm: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

// errUsage reports a command line that the flag package already explained.
var errUsage = errors.New("usage")

// errInterrupted ends a command that stopped early on Ctrl-C (SIGINT),
// after it reported what it had done.
var errInterrupted = errors.New("interrupted")

// exitInterrupted is the shell's code for a process ended by SIGINT
// (128+2), so that scripts see the run as cut short.
const exitInterrupted = 130

func usage(w io.Writer) {
	fmt.Fprintln(w, "gcsm: continuous subgraph matching\n\nUsage: gcsm COMMAND [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-8s %s\n", "version", "print the version, commit and Go release of this binary (also --version)")
	fmt.Fprintln(w, "\nRun 'gcsm COMMAND -h' for the flags of a command, 'gcsm COMMAND --help-all' for its GPU tuning flags too.")
}

// queryFlags collects repeated -q flags.
type queryFlags []string

func (q *queryFlags) String() string     { return fmt.Sprint(*q) }
func (q *queryFlags) Set(s string) error { *q = append(*q, s); return nil }

// parseFlags parses a command's flags. -h and --help-all return a
// *helpRequest, which run prints on stdout; a bad flag is explained on
// stderr and returns errUsage.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	all := fs.Bool("help-all", false, "list every flag, the GPU tuning ones too, and exit")
	fs.SetOutput(stderr)
	fs.Usage = func() {} // -h is a helpRequest; a mistake gets a hint below
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return &helpRequest{fs: fs}
		}
		fmt.Fprintf(stderr, "Run 'gcsm %s -h' for its flags.\n", fs.Name())
		return errUsage
	}
	if *all {
		return &helpRequest{fs: fs, all: true}
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gcsm %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return errUsage
	}
	return nil
}
