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
//
// Run "gcsm COMMAND -h" for a command's flags.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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
		{"bench", "time the CPU and GPU engines side by side on a generated R-MAT workload", runBench},
		{"produce", "publish a stream file to a Kafka topic as JSON events", runProduce},
		{"tail", "print the match events (alerts) or dead letters on the output topics", runTail},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code, so tests can
// drive the whole command line.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			err := c.run(args[1:], stdout, stderr)
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.Is(err, errUsage):
				return 2
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

func usage(w io.Writer) {
	fmt.Fprintln(w, "gcsm: continuous subgraph matching\n\nUsage: gcsm COMMAND [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'gcsm COMMAND -h' for the flags of a command.")
}

// queryFlags collects repeated -q flags.
type queryFlags []string

func (q *queryFlags) String() string     { return fmt.Sprint(*q) }
func (q *queryFlags) Set(s string) error { *q = append(*q, s); return nil }

func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gcsm %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return errUsage
	}
	return nil
}
