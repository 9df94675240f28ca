package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gcsm/gcsm/ingest"
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

	t := &tailer{f: f, topic: topic, conn: conn, stderr: stderr}
	if len(f.queries) > 0 {
		t.queries = map[string]bool{}
		for _, q := range f.queries {
			t.queries[q] = true
		}
	}
	return t.run(ctx, stdout)
}

// tailBrokers returns the brokers that hold topic, and a function that
// releases what it started. With no brokers configured it reads the embedded
// broker: through the listener of the gcsm that serves it when one does,
// else from a copy of its log in the state directory (see embeddedCopy).
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
	addr := dialAddr(cfg.Embedded.Listen)
	want, idErr := embeddedClusterID(dir)
	running, err := clusterID(ctx, addr)
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
	return embeddedCopy(dir, topic)
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

// dialAddr is the address to dial for a listen address: an unspecified
// host (":9092", "0.0.0.0:9092") is served on loopback too.
func dialAddr(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// embeddedClusterID reads the cluster id that kfake records in meta.json
// of its data directory.
func embeddedClusterID(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s holds no broker log", dir)
	}
	if err != nil {
		return "", err
	}
	var meta struct {
		ClusterID string `json:"cluster_id"`
	}
	if err := json.Unmarshal(b, &meta); err != nil || meta.ClusterID == "" {
		return "", fmt.Errorf("%s: no cluster_id (%v)", filepath.Join(dir, "meta.json"), err)
	}
	return meta.ClusterID, nil
}

// clusterID asks the broker at addr for its cluster id. A second is ample
// on loopback and short for a user waiting on nothing.
func clusterID(ctx context.Context, addr string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	cl, err := kafkaconn.Plaintext(addr).NewClient()
	if err != nil {
		return "", err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	md, err := req.RequestWith(ctx, cl)
	if err != nil {
		return "", err
	}
	if md.ClusterID == nil {
		return "", nil
	}
	return *md.ClusterID, nil
}

// embeddedCopy serves a copy of the embedded broker's log of topic from a
// temporary kfake on a free loopback port. kfake takes no lock on its data
// directory and rewrites files in it (on load, compaction and close), so
// opening the directory itself could corrupt the log of a gcsm that starts
// meanwhile, or lose its newest writes when the copy closes. Only the
// cluster's metadata and topic's partitions are copied, not the input
// topic's log.
func embeddedCopy(dir, topic string) (kafkaconn.Conn, func(), error) {
	tmp, err := os.MkdirTemp("", "gcsm-tail-")
	if err != nil {
		return kafkaconn.Conn{}, nil, err
	}
	fail := func(err error) (kafkaconn.Conn, func(), error) {
		os.RemoveAll(tmp)
		return kafkaconn.Conn{}, nil, fmt.Errorf("cannot copy the broker log of %s: %w", dir, err)
	}
	for _, name := range []string{"meta.json", "topics.json", "broker_configs.json"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(tmp, name), b, 0o600)
		}
		if err != nil {
			return fail(err)
		}
	}
	// kfake keeps partition p of a topic in partitions/<url.PathEscape(topic)>-<p>.
	parts, err := os.ReadDir(filepath.Join(dir, "partitions"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fail(err)
	}
	prefix := url.PathEscape(topic) + "-"
	for _, e := range parts {
		p, ok := strings.CutPrefix(e.Name(), prefix)
		if _, err := strconv.ParseUint(p, 10, 31); !ok || err != nil || !e.IsDir() {
			continue
		}
		rel := filepath.Join("partitions", e.Name())
		if err := os.CopyFS(filepath.Join(tmp, rel), os.DirFS(filepath.Join(dir, rel))); err != nil {
			return fail(err)
		}
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(tmp))
	if err != nil {
		return fail(err)
	}
	return kafkaconn.Plaintext(c.ListenAddrs()...), func() { c.Close(); os.RemoveAll(tmp) }, nil
}

// tailer reads the partitions of one topic and prints their messages.
type tailer struct {
	f       *tailFlags
	topic   string
	conn    kafkaconn.Conn
	queries map[string]bool // nil prints every query's events
	stderr  io.Writer

	bad, printed int
	whole        bool // every partition is read from its first offset
}

// tailRange is the offsets of one partition to print: [from, to), to < 0
// for no end.
type tailRange struct {
	partition int
	from, to  int64
}

func (t *tailer) run(ctx context.Context, stdout io.Writer) error {
	ranges, err := t.ranges(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs := make(chan *kgo.Record, 256)
	errs := make(chan error, len(ranges))
	var wg sync.WaitGroup
	for _, r := range ranges {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := t.read(ctx, r, msgs); err != nil && ctx.Err() == nil {
				errs <- fmt.Errorf("%s/%d: %w", t.topic, r.partition, err)
				cancel()
			}
		}()
	}
	go func() { wg.Wait(); close(msgs) }()

	w := bufio.NewWriter(stdout)
	p := &tailPrinter{dlq: t.f.dlq, json: t.f.format == "json", w: w, tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	for m := range msgs {
		if t.f.limit > 0 && t.printed == t.f.limit {
			continue // draining until the readers see the cancel
		}
		if err := p.print(m, t.queries); err != nil {
			t.bad++
			fmt.Fprintf(t.stderr, "gcsm tail: %s/%d/%d: %v\n", m.Topic, m.Partition, m.Offset, err)
		} else if p.printedLast {
			t.printed++
		}
		if t.f.limit > 0 && t.printed == t.f.limit {
			cancel()
		}
		// Print a burst at once, aligned, then show it while waiting.
		if len(msgs) == 0 {
			if err := p.flush(); err != nil {
				return err
			}
		}
	}
	if err := p.flush(); err != nil {
		return err
	}
	select {
	case err := <-errs:
		return err
	default:
	}
	if t.printed == 0 && !t.f.follow && !p.json {
		t.hint(p.what())
	}
	if t.bad > 0 {
		return fmt.Errorf("%d messages of %s could not be read (reported above)", t.bad, t.topic)
	}
	return nil
}

// hint says on stderr why nothing was printed, suggesting only flags not
// given: --from-beginning when part of the topic went unread, else
// --follow (tail prints hints only without it).
func (t *tailer) hint(what string) {
	if t.queries != nil {
		what += " of query " + strings.Join(t.f.queries, ", ")
	}
	if t.whole {
		fmt.Fprintf(t.stderr, "gcsm tail: %s holds no %s; --follow waits for new ones\n", t.topic, what)
		return
	}
	fmt.Fprintf(t.stderr, "gcsm tail: no %s in the last %d messages of each partition of %s; --from-beginning reads it all\n", what, t.f.last, t.topic)
}

// ranges lists the topic's partitions and the offsets to print of each.
// A partition ends at its last stable offset: under read_committed, what
// lies past it belongs to open transactions and may yet be aborted.
func (t *tailer) ranges(ctx context.Context) ([]tailRange, error) {
	brokers := strings.Join(t.conn.Brokers, ",")
	n, err := ingest.Partitions(ctx, t.conn, t.topic)
	if err != nil {
		return nil, fmt.Errorf("topic %s on %s: %w", t.topic, brokers, err)
	}
	parts := make([]int, n)
	for p := range parts {
		parts[p] = p
	}
	firsts, ends, err := ingest.StableOffsets(ctx, t.conn, t.topic, parts)
	if err != nil {
		return nil, fmt.Errorf("cannot list the offsets of %s on %s: %w", t.topic, brokers, err)
	}
	var ranges []tailRange
	t.whole = true
	for p := range n {
		first, end := firsts[p], ends[p]
		r := tailRange{partition: p, from: first, to: end}
		if !t.f.fromBeginning {
			if r.from, err = t.lastStart(ctx, p, first, end); err != nil {
				return nil, fmt.Errorf("%s/%d: %w", t.topic, p, err)
			}
		}
		t.whole = t.whole && r.from <= first
		if t.f.follow {
			r.to = -1
		}
		if r.to < 0 || r.from < r.to {
			ranges = append(ranges, r)
		}
	}
	slices.SortFunc(ranges, func(a, b tailRange) int { return a.partition - b.partition })
	return ranges, nil
}

// lastStart is the offset of partition p from which on its last --last
// messages that tail prints lie, in [first, end): first if it has fewer.
// The counting skips transaction markers and, under --query, the events of
// other queries, so the offsets alone do not tell: it reads windows back
// from end, each twice the one before, until they hold enough. Reading the
// whole partition instead would cost the topic's length for ten alerts.
func (t *tailer) lastStart(ctx context.Context, p int, first, end int64) (int64, error) {
	need := t.f.last
	if need == 0 || end <= first {
		return end, nil
	}
	var picked []int64
	for hi, w := end, int64(need); ; w *= 2 {
		lo := max(first, hi-w)
		picked = picked[:0]
		err := consumePartition(ctx, t.conn, t.topic, int32(p), kgo.NewOffset().At(lo), hi, func(m *kgo.Record) error {
			if t.counts(m) {
				picked = append(picked, m.Offset)
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		if len(picked) >= need {
			return picked[len(picked)-need], nil
		}
		if lo == first {
			return first, nil
		}
		need -= len(picked)
		hi = lo
	}
}

// counts says whether m counts toward --last: every message does, but
// under --query only the events of those queries.
func (t *tailer) counts(m *kgo.Record) bool {
	if t.queries == nil {
		return true
	}
	var e struct {
		Query string `json:"query"`
	}
	return json.Unmarshal(m.Value, &e) == nil && t.queries[e.Query]
}

// read sends the messages of r to msgs until r.to or until ctx is done.
func (t *tailer) read(ctx context.Context, r tailRange, msgs chan<- *kgo.Record) error {
	return consumePartition(ctx, t.conn, t.topic, int32(r.partition), kgo.NewOffset().At(r.from), r.to, func(m *kgo.Record) error {
		select {
		case msgs <- m:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

// tailPrinter writes messages as table rows or JSON lines.
type tailPrinter struct {
	dlq, json   bool
	w           *bufio.Writer
	tw          *tabwriter.Writer
	header      bool
	printedLast bool // whether the last print printed, rather than filtered out
	line        []byte
}

func (p *tailPrinter) what() string {
	if p.dlq {
		return "dead letters"
	}
	return "match events"
}

// print decodes m and prints it unless queries filters it out. A message
// that does not decode is an error, and nothing is printed.
func (p *tailPrinter) print(m *kgo.Record, queries map[string]bool) error {
	p.printedLast = false
	var row string
	if p.dlq {
		var d output.DeadLetter
		if err := json.Unmarshal(m.Value, &d); err != nil || d.Error == "" || d.Topic == "" {
			return fmt.Errorf("not a dead letter (an object with error, topic, partition, offset and value): %.200q", m.Value)
		}
		if !p.json {
			value := d.Value
			if d.Encoding != "" {
				value = d.Encoding + ":" + value
			}
			row = fmt.Sprintf("%s\t%s/%d/%d\t%s\t%s", tailTime(m.Timestamp), d.Topic, d.Partition, d.Offset, tailCell(d.Error, 80, false), tailCell(value, 80, false))
		}
	} else {
		var e output.Event
		if err := json.Unmarshal(m.Value, &e); err != nil {
			return fmt.Errorf("not a match event: %v", err)
		}
		if queries != nil && !queries[e.Query] {
			return nil
		}
		if !p.json {
			var match strings.Builder
			for i, b := range e.Match {
				if i > 0 {
					match.WriteByte(' ')
				}
				match.WriteString(tailCell(b.Var, 0, true) + "=" + tailCell(b.ID, 0, true))
			}
			row = fmt.Sprintf("%s\t%s\t%s\t%s\t%s", tailTime(m.Timestamp), tailCell(e.Query, 0, true), e.Change, match.String(), tailCell(e.Key, 0, true))
		}
	}
	p.printedLast = true
	if p.json {
		// The value as gcsm wrote it: valid JSON on one line, since it decoded
		// and AppendJSON writes no raw newlines.
		p.line = append(append(p.line[:0], m.Value...), '\n')
		_, err := p.w.Write(p.line)
		return err
	}
	if !p.header {
		p.header = true
		if p.dlq {
			fmt.Fprintln(p.tw, "TIME (UTC)\tINPUT\tERROR\tVALUE")
		} else {
			fmt.Fprintln(p.tw, "TIME (UTC)\tQUERY\tCHANGE\tMATCH\tKEY")
		}
	}
	_, err := fmt.Fprintln(p.tw, row)
	return err
}

func (p *tailPrinter) flush() error {
	if err := p.tw.Flush(); err != nil {
		return err
	}
	return p.w.Flush()
}

// tailTime is the time Kafka records for a message: when gcsm wrote it.
func tailTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000") }

// tailCell makes s one table cell, cut to n runes when n > 0. It is quoted
// when it has characters that would break the row (tabs, newlines, any not
// printable) and, when words is set, also when it is empty or has spaces,
// '=' or '"', which would blur the words of a "var=id var=id" cell.
func tailCell(s string, n int, words bool) string {
	cut := false
	if n > 0 && utf8.RuneCountInString(s) > n {
		s, cut = string([]rune(s)[:n]), true
	}
	breaks := func(r rune) bool {
		return r != ' ' && !unicode.IsGraphic(r) || words && (r == '=' || r == '"' || unicode.IsSpace(r))
	}
	if words && s == "" || strings.ContainsFunc(s, breaks) {
		s = strconv.Quote(s)
	}
	if cut {
		s += "…"
	}
	return s
}
