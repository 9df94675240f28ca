package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/gcsm/gcsm/internal/kafkaconn"
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
		tlsCert, tlsKey      string
		users                saslUsers
		partitions           int
	)
	cfg := service.DefaultConfig()
	fs := flag.NewFlagSet("broker", flag.ContinueOnError)
	fs.StringVar(&listen, "listen", "127.0.0.1:9092", "`host:port` to serve on; port 0 picks a free one")
	fs.StringVar(&data, "data", "", "state `directory` whose kafka/ subdirectory keeps the log (gcsm run's layout); a temporary one, removed on exit, if omitted")
	fs.IntVar(&partitions, "partitions", 1, "partitions of each topic it creates")
	fs.StringVar(&topics, "topics", "", "comma-separated topics to create besides gcsm's own (edges, matches, edges.dlq); others are created on first use")
	fs.DurationVar(&cfg.Embedded.Retention, "retention", cfg.Embedded.Retention, "drop records older than this (embedded.retention); 0 keeps them")
	fs.StringVar(&tlsCert, "tls-cert", "", "serve TLS only, with this PEM certificate `file` (with --tls-key)")
	fs.StringVar(&tlsKey, "tls-key", "", "the PEM private key `file` of --tls-cert")
	fs.Var(&users, "sasl", "require SASL, accepting `MECHANISM:USER:PASSWORD` (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; repeatable). For trying a secured setup: the password shows in the process list")
	fs.Var(&cfg.Embedded.RetentionBytes, "retention-bytes", "cap each partition's log at this `size`, dropping the oldest records (embedded.retention_bytes; KiB, MiB, GiB allowed); 0: no cap (default 1GiB)")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if err := badFlags(intIn("partitions", int64(partitions), 1, 1<<20)); err != nil {
		return err
	}
	sec := service.BrokerSecurity{Users: users}
	if (tlsCert == "") != (tlsKey == "") {
		return badFlags(errors.New("--tls-cert and --tls-key go together"))
	}
	if tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(tlsCert, tlsKey)
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		sec.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
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
	b, err := service.StartBroker(cfg, sec, extra...)
	if err != nil {
		return err
	}
	defer b.Close()
	fmt.Fprintln(stdout, strings.Join(b.Addrs(), ","))
	security := "plaintext"
	if sec.TLS != nil {
		security = "TLS"
	}
	if len(users) > 0 {
		security += fmt.Sprintf(", SASL for %d users", len(users))
	}
	fmt.Fprintf(stderr, "gcsm broker: serving on %s (%s), log in %s; SIGINT or SIGTERM stops it\n", strings.Join(b.Addrs(), ","), security, b.Dir())
	<-ctx.Done()
	fmt.Fprintln(stderr, "gcsm broker: stopped")
	return nil
}

// saslUsers are the logins of gcsm broker's --sasl flags.
type saslUsers []service.BrokerUser

func (u *saslUsers) String() string {
	names := make([]string, len(*u))
	for i, x := range *u {
		names[i] = x.Mechanism + ":" + x.User // never the password
	}
	return strings.Join(names, ",")
}

// Set parses MECHANISM:USER:PASSWORD. The password is everything after the
// second colon, so it may hold colons itself; a user may not.
func (u *saslUsers) Set(v string) error {
	mech, rest, ok1 := strings.Cut(v, ":")
	user, pass, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 {
		return errors.New("want MECHANISM:USER:PASSWORD")
	}
	switch mech {
	case kafkaconn.Plain, kafkaconn.ScramSHA256, kafkaconn.ScramSHA512:
	default:
		return fmt.Errorf("mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", mech)
	}
	if user == "" || pass == "" {
		return errors.New("the user and the password must not be empty")
	}
	*u = append(*u, service.BrokerUser{Mechanism: mech, User: user, Password: pass})
	return nil
}
