package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gcsm/gcsm/ingest"
)

type produceFlags struct {
	updates, topic, format string
	kafka                  kafkaFlags
	rate                   float64
	skip                   int
	skipBad, progress      bool
}

func runProduce(args []string, stdout, stderr io.Writer) error {
	var f produceFlags
	fs := flag.NewFlagSet("produce", flag.ContinueOnError)
	fs.StringVar(&f.updates, "u", "", "stream `file` to publish (CSM, SNAP, timestamped CSV or JSON lines)")
	fs.StringVar(&f.topic, "topic", "", "Kafka `topic` to publish to; created if the brokers allow it")
	f.kafka.register(fs, "127.0.0.1:9092")
	fs.Float64Var(&f.rate, "rate", 0, "events per second, paced evenly; 0 publishes as fast as the brokers take them")
	fs.StringVar(&f.format, "format", "auto", "format of the file: auto, csm, snap, csv or json")
	fs.BoolVar(&f.skipBad, "skip-bad", false, "skip malformed lines instead of failing")
	fs.IntVar(&f.skip, "skip", 0, "publish from the file's event `N` on, skipping the N before it (what a failed run says to resume with)")
	fs.BoolVar(&f.progress, "progress", false, "show a progress bar on stderr when it is a terminal and the run takes over a second")
	tsUnitArg := fs.String("ts-unit", "ms", "what a numeric ts of the file counts since 1970: s, ms, us or ns; events are published in ms, and times outside 1990-2100 get a warning")
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if f.updates == "" || f.topic == "" {
		fmt.Fprintln(stderr, "gcsm produce: need -u STREAM and --topic TOPIC")
		return errUsage
	}
	format, err := streamFormat(f.format)
	if err != nil {
		return badFlags(err)
	}
	if err := badFlags(floatIn("rate", f.rate, 0, math.Inf(1))); err != nil {
		return err
	}
	unit, err := tsUnit(*tsUnitArg)
	if err != nil {
		return err
	}
	if f.skip < 0 {
		return fmt.Errorf("--skip must not be negative, got %d", f.skip)
	}
	conn, err := f.kafka.conn()
	if err != nil {
		return err
	}
	// Events are passed on whole: which properties matter is for the
	// service's queries to say.
	opts := ingest.Options{Format: format, SkipBad: f.skipBad, Keep: ingest.AllProps(), TSUnit: unit}

	// A first pass reads the whole file before anything is published, so
	// that a bad line fails the run before half the file is on the topic,
	// where a fixed rerun would duplicate it; it also gives the progress
	// bar its total. Parsing runs at millions of lines a second, publishing
	// at a fraction of that, so the pass costs little.
	total, odd, err := ingest.CountRecords(f.updates, opts)
	if err != nil {
		return err
	}
	if odd != nil {
		fmt.Fprintf(stderr, "gcsm produce: warning: %s:%d: %v\n", f.updates, odd.Line, *odd)
	}
	if f.skip > total {
		return fmt.Errorf("--skip %d: %s has only %d events", f.skip, f.updates, total)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// A wrong password or an untrusted certificate fails here, in one
	// line, not as records that time out.
	if err := conn.Check(ctx); err != nil {
		return err
	}
	bar := newProgress(stderr, total-f.skip, f.progress)
	p, err := ingest.NewPublisher(conn, f.topic, f.rate, f.skip, bar.set)
	if err != nil {
		return err
	}
	defer p.Close()
	start := time.Now()
	n, skipped, err := p.Publish(ctx, f.updates, opts)
	bar.done()
	if err != nil {
		if ctx.Err() != nil {
			err = errors.New("interrupted")
		}
		return resumeError(p, err, args, f, total)
	}
	elapsed := time.Since(start).Seconds()
	fmt.Fprintf(stdout, "produced %d events to %s in %.2f s (%.0f events/s)\n", n, f.topic, elapsed, float64(n)/max(elapsed, 1e-9))
	if skipped > 0 {
		fmt.Fprintf(stderr, "gcsm produce: skipped %d bad lines\n", skipped)
	}
	return nil
}

func streamFormat(s string) (ingest.Format, error) {
	switch s {
	case "auto":
		return ingest.FormatAuto, nil
	case "csm":
		return ingest.FormatCSM, nil
	case "snap", "csv":
		// The SNAP reader reads a file as CSV when its first line has a comma.
		return ingest.FormatSNAP, nil
	case "json":
		return ingest.FormatJSON, nil
	}
	return 0, fmt.Errorf("--format %q: want auto, csm, snap, csv or json", s)
}

// resumeError is the one error of a run that stopped after publishing part
// of the file: how much was acknowledged and the command that publishes
// the rest. The acknowledged events are a prefix of the file, so skipping
// them loses nothing; events of the failed chunk acknowledged after its
// first failure are published again, which at-least-once input allows.
func resumeError(p *ingest.Publisher, cause error, args []string, f produceFlags, total int) error {
	sent, lastLine, ackedAfter := p.Acked()
	acked := f.skip + sent
	if sent == 0 {
		// Nothing new is on the topic: the same command is the one to rerun.
		return fmt.Errorf("no event was acknowledged before publishing to %s failed: %w", f.topic, cause)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "acknowledged %d of %d events", acked, total)
	if lastLine > 0 {
		fmt.Fprintf(&b, " (through %s:%d)", f.updates, lastLine)
	}
	fmt.Fprintf(&b, " before publishing to %s failed: %v", f.topic, cause)
	if ackedAfter > 0 {
		fmt.Fprintf(&b, "; %d later events were acknowledged too and will be published again", ackedAfter)
	}
	fmt.Fprintf(&b, "; resume with: %s", resumeCommand(args, acked))
	return errors.New(b.String())
}

// resumeCommand is "gcsm produce" with args, any --skip among them replaced
// by --skip n, quoted for a POSIX shell.
func resumeCommand(args []string, n int) string {
	words := []string{"gcsm", "produce"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "skip" {
			if !hasValue {
				i++ // the value is the next argument
			}
			continue
		}
		words = append(words, shellQuote(a))
	}
	return strings.Join(append(words, "--skip", strconv.Itoa(n)), " ")
}

// shellQuote returns s as one word of a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./:,@+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
