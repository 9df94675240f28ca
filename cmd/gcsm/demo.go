package main

import (
	"flag"
	"io"
	"math"

	"github.com/gcsm/gcsm/bench/servicebench"
	"github.com/gcsm/gcsm/demo"
	"github.com/gcsm/gcsm/service"
)

func runDemo(args []string, stdout, stderr io.Writer) error {
	var (
		events, accounts, show, batch, rate, members int
		state                                        string
		dev                                          deviceFlags
	)
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.IntVar(&events, "events", demo.Events, "transfer events to generate")
	fs.IntVar(&accounts, "accounts", demo.Accounts, "accounts among which they flow")
	fs.IntVar(&show, "show", 5, "alerts to print per query and change; the rest are counted")
	fs.IntVar(&batch, "batch", 1024, "updates per batch at most")
	fs.IntVar(&rate, "rate", 20000, "events per second to produce; 0 produces as fast as the broker takes them")
	fs.StringVar(&state, "state", "", "state `directory`, new or empty, kept for gcsm tail; a temporary one, removed at the end, if omitted")
	fs.IntVar(&members, "members", 1, "cluster members sharing the stream, in this process; above 1 the demo prints each one's share of the work and checks that the union of their alerts equals one member's")
	dev.register(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	// A ring needs three accounts, and three events to close it.
	if err := badFlags(intIn("events", int64(events), 3, math.MaxInt64), intIn("accounts", int64(accounts), 3, math.MaxInt64),
		intIn("show", int64(show), 0, math.MaxInt64), intIn("batch", int64(batch), 1, math.MaxInt64), intIn("rate", int64(rate), 0, math.MaxInt64),
		intIn("members", int64(members), 1, 64)); err != nil {
		return err
	}
	log, err := newLogger(stderr, service.LogConfig{Level: "warn", Format: "console"})
	if err != nil {
		return err
	}
	return demo.Run(stdout, demo.Options{Events: events, Accounts: accounts, Show: show, Batch: batch, Rate: rate, Members: members,
		State: state, Log: log, Open: func(w io.Writer) (*servicebench.Engine, error) {
			e, err := dev.open(w, 0, 0)
			if err != nil {
				return nil, err
			}
			return harness(e), nil
		}})
}
