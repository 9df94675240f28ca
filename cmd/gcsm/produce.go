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
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/internal/kafkaconn"
)

type produceFlags struct {
	updates, topic, format string
	kafka                  kafkaFlags
	rate                   float64
	skip                   int
	skipBad, progress      bool
}

// produceChunk is the most events handed to the writer at once. The writer
// is synchronous, so one chunk is in flight at a time and its buffers are
// reused; 4096 events like the documented input event are about 600 KiB, under the
// 1 MiB a request may carry per partition, and enough that a round trip
// per chunk does not bound the rate.
const produceChunk = 4096

// produceLinger is the client's linger: how long it waits for a
// partition's batch to fill before sending it anyway. Every chunk ends in
// part-filled batches, so it is paid once per chunk and must stay small.
const produceLinger = 2 * time.Millisecond

// produceGiveUp is how long a record may wait for its acknowledgement: a
// leader election rides through, a cluster gone for good fails the run.
const produceGiveUp = 15 * time.Second

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
	total, err := countStreamRecords(f.updates, opts, stderr)
	if err != nil {
		return err
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
	cl, err := conn.NewClient(
		kgo.DefaultProduceTopic(f.topic),
		// Keys are source vertices: one vertex's edges go to one partition
		// and keep their order there. The sticky key partitioner hashes
		// keys by murmur2, the Java client's default, so other producers of
		// the topic place a vertex alike.
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(produceLinger),
		kgo.MaxBufferedRecords(2*produceChunk),
		// A lost cluster fails the run, with the resume command, instead
		// of waiting for ever: ten tries, and at most produceGiveUp.
		kgo.RecordRetries(10),
		kgo.RecordDeliveryTimeout(produceGiveUp),
	)
	if err != nil {
		return err
	}
	closeClient := sync.OnceFunc(cl.Close)
	defer closeClient()
	p := &producer{cl: cl, closeClient: closeClient, rate: f.rate, skip: f.skip, bar: newProgress(stderr, total-f.skip, f.progress)}
	start := time.Now()
	n, skipped, err := p.publish(ctx, f.updates, opts)
	p.bar.done()
	if err != nil {
		if ctx.Err() != nil {
			err = errors.New("interrupted")
		}
		return p.resumeError(err, args, f, total)
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

// countStreamRecords reads the file at path to its end and returns the
// number of records, or the first bad line's error (file:line: reason). It
// warns on warn of the file's first odd time, before anything is published.
func countStreamRecords(path string, opts ingest.Options, warn io.Writer) (int, error) {
	r, c, err := ingest.Open(path, opts)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	n := 0
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			if odd, ok := r.OddTime(); ok {
				fmt.Fprintf(warn, "gcsm produce: warning: %s:%d: %v\n", path, odd.Line, odd)
			}
			return n, nil
		}
		if err != nil {
			return n, err
		}
		n++
	}
}

// producer publishes records as JSON input events, in chunks.
type producer struct {
	cl          *kgo.Client
	closeClient func()  // closes cl once
	rate        float64 // events per second; 0 for no pacing
	skip        int     // events at the start of the file not to publish
	bar         *progress

	recs  []*kgo.Record
	buf   []byte // every key and value of the chunk in msgs
	ends  []int  // the end in buf of each message's key, then of its value
	lines []int  // the file line of each message of the chunk
	sent  int    // events after the skipped ones acknowledged, all of them before the chunk

	// Set by a failed flush: the last acknowledged event's line, and how
	// many events of the failed chunk after its first failure were
	// acknowledged all the same.
	lastLine, ackedAfter int
}

// publish reads the file at path and publishes each record after the first
// p.skip. It returns the number acknowledged, which on an error is the
// length of the acknowledged prefix, and the number of bad lines skipped.
func (p *producer) publish(ctx context.Context, path string, opts ingest.Options) (n, skipped int, err error) {
	r, c, err := ingest.Open(path, opts)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	chunk := produceChunk
	if p.rate > 0 {
		// A hundred chunks a second keep the pace even, without a write
		// per event at high rates.
		chunk = int(min(max(p.rate/100, 1), produceChunk))
	}
	start := time.Now()
	for seen := 0; ; {
		rec, err := r.Next()
		if err != nil && !errors.Is(err, io.EOF) {
			return p.sent, r.Skipped(), err
		}
		if err == nil {
			if seen++; seen <= p.skip {
				continue
			}
			p.add(rec)
		}
		if len(p.ends)/2 == chunk || errors.Is(err, io.EOF) && len(p.ends) > 0 {
			if p.rate > 0 {
				// The chunk is due when the events before it have had their
				// share of time.
				due := start.Add(time.Duration(float64(p.sent) / p.rate * float64(time.Second)))
				if err := p.waitUntil(ctx, due); err != nil {
					return p.sent, r.Skipped(), err
				}
			}
			if err := p.flush(ctx); err != nil {
				return p.sent, r.Skipped(), err
			}
		}
		if errors.Is(err, io.EOF) {
			return p.sent, r.Skipped(), nil
		}
	}
}

// add appends rec to the chunk, keyed by its source vertex.
func (p *producer) add(rec ingest.Record) {
	p.buf = append(p.buf, rec.Src...)
	p.ends = append(p.ends, len(p.buf))
	p.buf = ingest.AppendEvent(p.buf, rec)
	p.ends = append(p.ends, len(p.buf))
	p.lines = append(p.lines, rec.Line)
}

// flush writes the chunk and waits for every broker to acknowledge it.
func (p *producer) flush(ctx context.Context) error {
	// The slices into buf are taken only now that buf has stopped growing.
	p.recs = p.recs[:0]
	start := 0
	for i := 0; i < len(p.ends); i += 2 {
		k, v := p.ends[i], p.ends[i+1]
		p.recs = append(p.recs, &kgo.Record{Key: p.buf[start:k:k], Value: p.buf[k:v:v]})
		start = v
	}
	// kgo times a record out only when it tries to send it, which a
	// cluster that is gone never lets it do, and ProduceSync waits for
	// every record: past produceGiveUp, or on an interrupt, closing the
	// client fails the records still out, and the run ends.
	done := make(chan kgo.ProduceResults, 1)
	go func() { done <- p.cl.ProduceSync(context.WithoutCancel(ctx), p.recs...) }()
	var res kgo.ProduceResults
	timer := time.NewTimer(produceGiveUp)
	defer timer.Stop()
	select {
	case res = <-done:
	case <-timer.C:
	case <-ctx.Done():
	}
	if res == nil {
		p.closeClient()
		res = <-done
		for i := range res {
			if res[i].Err != nil && ctx.Err() == nil {
				res[i].Err = fmt.Errorf("no acknowledgement in %v (is the cluster reachable?)", produceGiveUp)
			}
		}
	}
	if err := res.FirstErr(); err != nil {
		return p.failed(res)
	}
	p.sent += len(p.recs)
	p.bar.set(p.sent)
	// ProduceSync has waited for every record: the client holds no
	// reference now.
	clear(p.recs)
	p.buf, p.ends, p.lines = p.buf[:0], p.ends[:0], p.lines[:0]
	return nil
}

// failed counts the chunk's acknowledged prefix into p.sent after a
// ProduceSync that failed, and returns the error to report. Each record
// has its own error; they are nearly always one cause repeated, so only
// the first in the file's order is kept.
func (p *producer) failed(res kgo.ProduceResults) error {
	// Results come in the order the brokers answered, not the chunk's.
	at := make(map[*kgo.Record]int, len(p.recs))
	for i, r := range p.recs {
		at[r] = i
	}
	errs := make([]error, len(p.recs))
	for _, r := range res {
		errs[at[r.Record]] = r.Err
	}
	ok := 0
	for ok < len(errs) && errs[ok] == nil {
		ok++
	}
	var err error
	if ok < len(errs) {
		err = kafkaconn.Classify(errs[ok])
		for _, e := range errs[ok:] {
			if e == nil {
				p.ackedAfter++
			}
		}
	}
	p.sent += ok
	if ok > 0 {
		p.lastLine = p.lines[ok-1]
	}
	return err
}

// resumeError is the one error of a run that stopped after publishing part
// of the file: how much was acknowledged and the command that publishes
// the rest. The acknowledged events are a prefix of the file, so skipping
// them loses nothing; events of the failed chunk acknowledged after its
// first failure are published again, which at-least-once input allows.
func (p *producer) resumeError(cause error, args []string, f produceFlags, total int) error {
	acked := f.skip + p.sent
	if p.sent == 0 {
		// Nothing new is on the topic: the same command is the one to rerun.
		return fmt.Errorf("no event was acknowledged before publishing to %s failed: %w", f.topic, cause)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "acknowledged %d of %d events", acked, total)
	if p.lastLine > 0 {
		fmt.Fprintf(&b, " (through %s:%d)", f.updates, p.lastLine)
	}
	fmt.Fprintf(&b, " before publishing to %s failed: %v", f.topic, cause)
	if p.ackedAfter > 0 {
		fmt.Fprintf(&b, "; %d later events were acknowledged too and will be published again", p.ackedAfter)
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

// waitUntil sleeps until t or until ctx is done.
func (p *producer) waitUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
