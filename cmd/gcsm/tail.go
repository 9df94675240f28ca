package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/output"
	"github.com/gcsm/gcsm/service"
)

type tailFlags struct {
	config, brokers, state, topic, format string
	queries                               queryFlags
	dlq, fromBeginning, follow            bool
	last, limit                           int
}

func runTail(args []string, stdout, stderr io.Writer) error {
	var f tailFlags
	fs := flag.NewFlagSet("tail", flag.ContinueOnError)
	fs.StringVar(&f.config, "config", "", "gcsm run's YAML configuration `file`, for its brokers, topics and state directory")
	fs.StringVar(&f.brokers, "brokers", "", "comma-separated Kafka `brokers`; overrides the file's, and \"embedded\" reads the embedded broker")
	fs.StringVar(&f.state, "state", "", "state `directory` whose embedded broker to read when no brokers are configured")
	fs.StringVar(&f.topic, "topic", "", "`topic` to read; default the configuration's output.topic (or dead_letter_topic with --dlq)")
	fs.BoolVar(&f.dlq, "dlq", false, "read dead letters (input messages gcsm could not use) instead of match events")
	fs.BoolVar(&f.fromBeginning, "from-beginning", false, "start at the first message of each partition")
	fs.IntVar(&f.last, "last", 10, "start at the `N`th last message of each partition (of the --query queries, when given)")
	fs.BoolVar(&f.follow, "follow", false, "keep printing new messages until interrupted; without it, stop at the end seen at the start")
	fs.Var(&f.queries, "query", "print only the events of query `NAME` (repeatable)")
	fs.StringVar(&f.format, "format", "table", "`table` or json (each message's JSON object as gcsm wrote it, one a line)")
	fs.IntVar(&f.limit, "limit", 0, "stop after printing `N` messages; 0 for no limit")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	switch {
	case f.format != "table" && f.format != "json":
		return fmt.Errorf("--format %q: want table or json", f.format)
	case f.last < 0:
		return fmt.Errorf("--last must not be negative, got %d", f.last)
	case f.limit < 0:
		return fmt.Errorf("--limit must not be negative, got %d", f.limit)
	case f.fromBeginning && set["last"]:
		return errors.New("--from-beginning and --last choose the start twice; give one")
	case f.dlq && len(f.queries) > 0:
		return errors.New("--query selects match events; dead letters belong to no query")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return tail(ctx, &f, set, stdout, stderr)
}

// tail prints the messages f asks for until the end offsets seen at the
// start, or, with --follow, until ctx is done.
func tail(ctx context.Context, f *tailFlags, set map[string]bool, stdout, stderr io.Writer) error {
	cfg := service.DefaultConfig()
	if f.config != "" {
		var err error
		if cfg, err = service.LoadConfig(f.config); err != nil {
			return err
		}
	}
	rf := runFlags{brokers: f.brokers, state: f.state}
	if err := rf.apply(&cfg, map[string]bool{"brokers": set["brokers"], "state": set["state"]}); err != nil {
		return err
	}
	topic := cfg.Output.Topic
	if f.dlq {
		topic = cfg.Output.DeadLetterTopic
	}
	if f.topic != "" {
		topic = f.topic
	}
	if topic == "" {
		return errors.New("output.dead_letter_topic is empty in the configuration, so no dead letters are kept; name one with --topic")
	}
	conn, release, err := tailBrokers(ctx, cfg, topic, set, f.follow, stderr)
	if err != nil {
		return err
	}
	defer release()

	o := output.TailOptions{Conn: conn, Topic: topic, DeadLetters: f.dlq, JSON: f.format == "json",
		FromBeginning: f.fromBeginning, Last: f.last, Follow: f.follow, Limit: f.limit,
		OnBad: func(m *kgo.Record, err error) {
			fmt.Fprintf(stderr, "gcsm tail: %s/%d/%d: %v\n", m.Topic, m.Partition, m.Offset, err)
		}}
	if len(f.queries) > 0 {
		o.Queries = map[string]bool{}
		for _, q := range f.queries {
			o.Queries[q] = true
		}
	}
	r, err := output.Tail(ctx, o, stdout)
	if err != nil {
		return err
	}
	if r.Printed == 0 && !f.follow && !o.JSON {
		f.hint(stderr, topic, r)
	}
	if r.Bad > 0 {
		return fmt.Errorf("%d messages of %s could not be read (reported above)", r.Bad, topic)
	}
	return nil
}

// hint says on stderr why nothing was printed, suggesting only flags not
// given: --from-beginning when part of the topic went unread, else
// --follow (tail prints hints only without it).
func (f *tailFlags) hint(stderr io.Writer, topic string, r output.TailResult) {
	what := r.What
	if len(f.queries) > 0 {
		what += " of query " + strings.Join(f.queries, ", ")
	}
	if r.Whole {
		fmt.Fprintf(stderr, "gcsm tail: %s holds no %s; --follow waits for new ones\n", topic, what)
		return
	}
	fmt.Fprintf(stderr, "gcsm tail: no %s in the last %d messages of each partition of %s; --from-beginning reads it all\n", what, f.last, topic)
}

// tailBrokers returns the brokers that hold topic, and a function that
// releases what it started. With no brokers configured it reads the embedded
// broker: through the listener of the gcsm that serves it when one does,
// else from a copy of its log in the state directory (see output.EmbeddedCopy).
// set holds the flags given, which its hints do not suggest again.
func tailBrokers(ctx context.Context, cfg service.Config, topic string, set map[string]bool, follow bool, stderr io.Writer) (kafkaconn.Conn, func(), error) {
	if len(cfg.Brokers) > 0 {
		conn, err := kafkaconn.Build(cfg.Brokers, cfg.TLS, cfg.SASL, os.Getenv)
		if err == nil {
			// A wrong password or an untrusted certificate fails here,
			// in one line.
			err = conn.Check(ctx)
		}
		return conn, func() {}, err
	}
	dir := filepath.Join(cfg.State.Dir, "kafka")
	addr := output.DialAddr(cfg.Embedded.Listen)
	want, idErr := output.EmbeddedClusterID(dir)
	running, err := output.ClusterID(ctx, addr)
	if err == nil {
		// A broker that answers on the configured address is this state
		// directory's only if their cluster ids agree: another gcsm, with
		// other state, may hold the default port.
		if idErr != nil || running == want {
			return kafkaconn.Plaintext(addr), func() {}, nil
		}
		fmt.Fprintf(stderr, "gcsm tail: the broker on %s is cluster %s, not %s of %s\n", addr, running, want, dir)
	}
	if idErr != nil {
		hint := "start gcsm run"
		if other := notGiven(set, "brokers", "state", "config"); other != "" {
			hint += ", or give " + other
		}
		return kafkaconn.Conn{}, nil, fmt.Errorf("no gcsm serves the embedded broker on %s, and %v: %s", addr, idErr, hint)
	}
	if follow {
		return kafkaconn.Conn{}, nil, fmt.Errorf("--follow needs the running broker, and no gcsm serves %s on %s: start gcsm run, or leave out --follow to read what %s holds", dir, addr, dir)
	}
	return output.EmbeddedCopy(dir, topic)
}

// notGiven lists the flags of names that set lacks, as "--a, --b or --c",
// so that a hint never asks for a flag the command line already has.
func notGiven(set map[string]bool, names ...string) string {
	var out []string
	for _, n := range names {
		if !set[n] {
			out = append(out, "--"+n)
		}
	}
	switch len(out) {
	case 0:
		return ""
	case 1:
		return out[0]
	}
	return strings.Join(out[:len(out)-1], ", ") + " or " + out[len(out)-1]
}
