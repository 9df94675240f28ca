package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/gcsm/gcsm/service"
)

// runBroker is gcsm broker: the embedded Kafka-protocol broker of gcsm run
// in a process of its own, until SIGINT or SIGTERM.
func runBroker(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serveBroker(ctx, args, stdout, stderr)
}

// serveBroker runs the broker until ctx is done. It writes the broker's
// address alone as the first line of stdout, for scripts, and the rest on
// stderr.
func serveBroker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		listen, data, topics string
		partitions           int
	)
	cfg := service.DefaultConfig()
	fs := flag.NewFlagSet("broker", flag.ContinueOnError)
	fs.StringVar(&listen, "listen", "127.0.0.1:9092", "`host:port` to serve on; port 0 picks a free one")
	fs.StringVar(&data, "data", "", "state `directory` whose kafka/ subdirectory keeps the log (gcsm run's layout); a temporary one, removed on exit, if omitted")
	fs.IntVar(&partitions, "partitions", 1, "partitions of each topic it creates")
	fs.StringVar(&topics, "topics", "", "comma-separated topics to create besides gcsm's own (edges, matches, edges.dlq); others are created on first use")
	fs.DurationVar(&cfg.Embedded.Retention, "retention", cfg.Embedded.Retention, "drop records older than this (embedded.retention); 0 keeps them")
	fs.Var(&cfg.Embedded.RetentionBytes, "retention-bytes", "cap each partition's log at this `size`, dropping the oldest records (embedded.retention_bytes; KiB, MiB, GiB allowed); 0: no cap (default 1GiB)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := badFlags(intIn("partitions", int64(partitions), 1, 1<<20)); err != nil {
		return err
	}
	if data == "" {
		dir, err := os.MkdirTemp("", "gcsm-broker-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		data = dir
	}
	var extra []string
	for _, t := range strings.Split(topics, ",") {
		if t = strings.TrimSpace(t); t != "" {
			extra = append(extra, t)
		}
	}
	cfg.Embedded.Listen = listen
	cfg.Embedded.Partitions = partitions
	cfg.State.Dir = data
	if err := cfg.Validate(); err != nil {
		return err
	}
	b, err := service.StartBroker(cfg, extra...)
	if err != nil {
		return err
	}
	defer b.Close()
	fmt.Fprintln(stdout, strings.Join(b.Addrs(), ","))
	fmt.Fprintf(stderr, "gcsm broker: serving on %s, log in %s; SIGINT or SIGTERM stops it\n", strings.Join(b.Addrs(), ","), b.Dir())
	<-ctx.Done()
	fmt.Fprintln(stderr, "gcsm broker: stopped")
	return nil
}
