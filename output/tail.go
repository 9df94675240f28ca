package output

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/internal/kafkaconn"
)

// TailOptions say what Tail prints of a topic, and how.
type TailOptions struct {
	Conn  kafkaconn.Conn
	Topic string
	// DeadLetters says that the topic holds dead letters, not events.
	DeadLetters bool
	// Queries, when not nil, are the queries whose events are printed.
	Queries map[string]bool
	// JSON prints each message's JSON object as the sink wrote it, one a
	// line, instead of table rows.
	JSON bool
	// FromBeginning starts at each partition's first message; else at the
	// Last-th last that Tail prints (of Queries, when set).
	FromBeginning bool
	Last          int
	// Follow keeps printing new messages until ctx is done; else Tail
	// stops at the end seen at the start.
	Follow bool
	Limit  int // stop after printing this many; 0: no limit
	// OnBad is told of each message that does not decode, which is not
	// printed.
	OnBad func(m *kgo.Record, err error)
}

// TailResult is what Tail printed.
type TailResult struct {
	Printed int
	Bad     int // messages that did not decode
	// Whole says that every partition was read from its first offset.
	Whole bool
	// What names the messages looked for: match events or dead letters.
	What string
}

// Tail prints the messages of o.Topic that o asks for to w, as rows of a
// table or JSON lines, reading the partitions at once, read_committed.
func Tail(ctx context.Context, o TailOptions, w io.Writer) (TailResult, error) {
	t := &tailer{TailOptions: o}
	err := t.run(ctx, w)
	return t.TailResult, err
}

// tailer reads the partitions of one topic and prints their messages.
type tailer struct {
	TailOptions
	TailResult
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
				errs <- fmt.Errorf("%s/%d: %w", t.Topic, r.partition, err)
				cancel()
			}
		}()
	}
	go func() { wg.Wait(); close(msgs) }()

	w := bufio.NewWriter(stdout)
	p := &tailPrinter{dlq: t.DeadLetters, json: t.JSON, w: w, tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.What = p.what()
	for m := range msgs {
		if t.Limit > 0 && t.Printed == t.Limit {
			continue // draining until the readers see the cancel
		}
		if err := p.print(m, t.Queries); err != nil {
			t.Bad++
			if t.OnBad != nil {
				t.OnBad(m, err)
			}
		} else if p.printedLast {
			t.Printed++
		}
		if t.Limit > 0 && t.Printed == t.Limit {
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
	return nil
}

// ranges lists the topic's partitions and the offsets to print of each.
// A partition ends at its last stable offset: under read_committed, what
// lies past it belongs to open transactions and may yet be aborted.
func (t *tailer) ranges(ctx context.Context) ([]tailRange, error) {
	brokers := strings.Join(t.Conn.Brokers, ",")
	n, err := ingest.Partitions(ctx, t.Conn, t.Topic)
	if err != nil {
		return nil, fmt.Errorf("topic %s on %s: %w", t.Topic, brokers, err)
	}
	parts := make([]int, n)
	for p := range parts {
		parts[p] = p
	}
	firsts, ends, err := ingest.StableOffsets(ctx, t.Conn, t.Topic, parts)
	if err != nil {
		return nil, fmt.Errorf("cannot list the offsets of %s on %s: %w", t.Topic, brokers, err)
	}
	var ranges []tailRange
	t.Whole = true
	for p := range n {
		first, end := firsts[p], ends[p]
		r := tailRange{partition: p, from: first, to: end}
		if !t.FromBeginning {
			if r.from, err = t.lastStart(ctx, p, first, end); err != nil {
				return nil, fmt.Errorf("%s/%d: %w", t.Topic, p, err)
			}
		}
		t.Whole = t.Whole && r.from <= first
		if t.Follow {
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
	need := t.Last
	if need == 0 || end <= first {
		return end, nil
	}
	var picked []int64
	for hi, w := end, int64(need); ; w *= 2 {
		lo := max(first, hi-w)
		picked = picked[:0]
		err := ingest.ConsumePartition(ctx, t.Conn, t.Topic, int32(p), kgo.NewOffset().At(lo), hi, func(m *kgo.Record) error {
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
	if t.Queries == nil {
		return true
	}
	var e struct {
		Query string `json:"query"`
	}
	return json.Unmarshal(m.Value, &e) == nil && t.Queries[e.Query]
}

// read sends the messages of r to msgs until r.to or until ctx is done.
func (t *tailer) read(ctx context.Context, r tailRange, msgs chan<- *kgo.Record) error {
	return ingest.ConsumePartition(ctx, t.Conn, t.Topic, int32(r.partition), kgo.NewOffset().At(r.from), r.to, func(m *kgo.Record) error {
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
		var d DeadLetter
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
		var e Event
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
			// A RETURN row follows the bindings, its strings unquoted as
			// the bindings' ids are.
			for i, f := range e.Return {
				if i == 0 {
					match.WriteString(" |")
				}
				v := string(f.Value)
				var str string
				if json.Unmarshal(f.Value, &str) == nil {
					v = str
				}
				match.WriteString(" " + tailCell(f.Name, 0, true) + "=" + tailCell(v, 0, true))
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
