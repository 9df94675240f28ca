// Package demo is gcsm demo: a generated money-transfer workload produced
// through a service with the fraud patterns as its queries, the alerts
// read back from the output topic and printed as they come, and with
// members, the union of several members' alerts checked against one
// member's. It also names the workload and its queries for replay --demo.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/bench/servicebench"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/service"
)

// The demo workload: a power-law stream of money transfers between accounts
// with planted rings and fan-ins, and the patterns a fraud team would watch.
const (
	Accounts = 20000
	Events   = 40000
	Seed     = 1
)

// Queries are the workload's patterns as -q arguments (replay --demo).
var Queries = []string{
	"ring3=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a)",
	"layering=" + layering + layeringReturn,
	"ring4=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(d:Account)-[:TRANSFER]->(a)",
	// Layering: money split over two paths and merged again.
	"split=(s:Account)-[:TRANSFER]->(a:Account)-[:TRANSFER]->(t:Account), (s)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(t)",
}

// layering is a ring of transfers that moves money on in time order,
// within an hour, from a large first transfer, each hop keeping at least
// 90% of the one before: layering, as the generator plants it.
const layering = "(a:Account)-[t1:TRANSFER]->(b:Account)-[t2:TRANSFER]->(c:Account)-[t3:TRANSFER]->(a)" +
	" WHERE t1.amount > 10000 AND t1.ts < t2.ts AND t2.ts < t3.ts AND t3.ts - t1.ts < 1h" +
	" AND t2.amount >= 0.9 * t1.amount AND t3.amount >= 0.9 * t2.amount"

// layeringReturn is what a layering alert tells the analyst: where the
// ring starts, the money it moved and how long it took.
const layeringReturn = " RETURN a, t1.amount + t2.amount + t3.amount AS total, t3.ts - t1.ts AS span"

// flagged watches transfers into an account whose status is flagged: the
// demo flags one mid-stream, and the transfers it already received alert
// in that batch.
const flagged = "(a:Account)-[t:TRANSFER]->(b:Account) WHERE b.status = 'flagged' RETURN a, b, t.amount AS amount"

// serviceQueries are gcsm demo's standing queries, those of replay
// --demo and flagged: rings of three and four accounts, layering through a
// ring of three (layering), money split over two paths that meet again,
// and transfers into a flagged account, which only the service demo's
// stream flags.
var serviceQueries = []service.QueryConfig{
	{Name: "ring3", Pattern: "(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a)"},
	{Name: "layering", Pattern: layering + layeringReturn},
	{Name: "ring4", Pattern: "(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(d:Account)-[:TRANSFER]->(a)"},
	{Name: "split", Pattern: "(s:Account)-[:TRANSFER]->(a:Account)-[:TRANSFER]->(t:Account), (s)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(t)"},
	{Name: "flagged", Pattern: flagged},
}

// Flag is the demo's mid-stream event: the account that received the most
// transfers in the stream's first half becomes flagged, halfway through.
func Flag(evs []bench.TransferEvent) (account string, at int, event []byte) {
	at = len(evs) / 2
	in := map[string]int{}
	for _, ev := range evs[:at] {
		if ev.Op == graph.Insert && ev.DstLabel == "Account" {
			in[ev.Dst]++
		}
	}
	for a, n := range in {
		if n > in[account] || (n == in[account] && a < account) {
			account = a
		}
	}
	rec := ingest.Record{Op: graph.SetVertex, Src: account, SrcProps: []graph.Prop{{Name: "status", Value: graph.StringValue("flagged")}}}
	return account, at, ingest.AppendEvent(nil, rec)
}

// Bad are malformed messages slipped into the demo stream, to show
// that they go to the dead-letter topic and that nothing else is lost.
var Bad = []string{
	`{"op":"+","src":"acct-1"}`,
	`{"op":"+","src":"acct-2","dst":"acct-2","label":"TRANSFER"}`,
	`not an event`,
}

// Options are a demo's settings, checked by the caller (gcsm demo's flags).
type Options struct {
	// Events transfers among Accounts are produced at Rate events a second
	// (0: as fast as the broker takes them), in batches of up to Batch;
	// Show alerts are printed per query and change, the rest counted.
	Events, Accounts, Show, Batch, Rate int
	// Members above 1 share the stream, and the union of their alerts is
	// checked against one member's.
	Members int
	// State is the service's state directory, new or empty (FreshState);
	// "" is a temporary one, removed at the end.
	State string
	Log   zerolog.Logger
	// Open opens an engine, writing which device it runs on to w.
	Open func(w io.Writer) (*servicebench.Engine, error)
}

// Run runs the demo, writing to out what it shows.
func Run(out io.Writer, o Options) error {
	if o.State != "" {
		if err := FreshState(o.State); err != nil {
			return err
		}
	} else {
		dir, err := os.MkdirTemp("", "gcsm-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.State = dir
	}
	cfg := demoConfig(o.State, o.Batch)
	if o.Members > 1 {
		return runMembers(out, o.Log, cfg, o.Open, o.Members, bench.Transfers(o.Accounts, o.Events, Seed), o.Rate)
	}
	var devLine strings.Builder
	eng, err := o.Open(&devLine)
	if err != nil {
		return err
	}
	defer eng.Close()
	s, err := service.New(service.Options{Config: cfg, Matcher: eng.Matcher, Alloc: eng.Alloc, Log: o.Log})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "gcsm demo: embedded Kafka broker on %s, %s", s.Brokers()[0], devLine.String())
	for _, q := range cfg.Queries {
		fmt.Fprintf(out, "  query %-8s %s\n", q.Name, q.Pattern)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()

	d := &demo{out: out, show: o.Show, seen: map[string]int{}, totals: map[string]int{}}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	watched := make(chan error, 1)
	go func() { watched <- d.watch(watchCtx, s.Brokers(), cfg.Output.Topic) }()

	t0 := time.Now()
	n, err := d.produce(ctx, s.Brokers(), cfg.Input.Topic, bench.Transfers(o.Accounts, o.Events, Seed), o.Rate)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "produced %d events (%d malformed) in %.2fs\n", n, len(Bad), time.Since(t0).Seconds())

	if err := waitDemo(s, d, ran, n); err != nil {
		return err
	}
	elapsed := time.Since(t0)
	stopWatch()
	<-watched
	cancel()
	if err := <-ran; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	d.summary(s.Progress(), cfg.Queries, n, elapsed)
	return nil
}

// demoConfig is the demo's service: the embedded broker on any free port,
// so that the demo does not clash with a running gcsm, and the transfer
// queries.
func demoConfig(state string, batch int) service.Config {
	cfg := service.DefaultConfig()
	cfg.Embedded.Listen = "127.0.0.1:0"
	cfg.State.Dir = state
	cfg.HTTP.Listen = ""
	cfg.Batch = service.BatchConfig{Size: batch, Linger: 20 * time.Millisecond}
	cfg.Graph = service.GraphConfig{Directed: true, DefaultEdgeLabel: "TRANSFER", DefaultVertexLabel: "Account"}
	cfg.Input.SessionTimeout = 6 * time.Second
	cfg.Queries = serviceQueries
	return cfg
}

// waitDemo waits until the service has applied the n messages and the
// watcher has read every event it wrote, or the service stops, or two
// minutes pass.
func waitDemo(s *service.Service, d *demo, ran <-chan error, n int) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p := s.Progress()
		if p.Position[0] >= int64(n) && d.read() >= p.Events {
			return nil
		}
		select {
		case err := <-ran:
			return fmt.Errorf("service stopped: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out: the service applied %v of %d messages", p.Position, n)
		}
	}
}

// summary writes the demo's last lines: the throughput, each query's
// alerts and their latency.
func (d *demo) summary(p service.Progress, queries []service.QueryConfig, n int, elapsed time.Duration) {
	fmt.Fprintf(d.out, "\nsummary: %d messages in %d batches, %.2fs end to end (%.0f messages/s); %d dead letters\n",
		n, p.Batches, elapsed.Seconds(), float64(n)/elapsed.Seconds(), p.DeadLetters)
	tw := tabwriter.NewWriter(d.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "query\tappeared\tdisappeared")
	for _, q := range queries {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", q.Name, d.totals[q.Name+"/appeared"], d.totals[q.Name+"/disappeared"])
	}
	tw.Flush()
	if lat := d.latencies(); len(lat) > 0 {
		fmt.Fprintf(d.out, "alert latency (event acknowledged by the broker → alert read from the output topic): p50 %v, p99 %v over %d alerts\n",
			lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*99/100].Round(time.Millisecond), len(lat))
	}
}

// FreshState refuses a state directory that holds anything, such as an
// earlier demo's checkpoint and broker log: the service would resume that
// graph and its offsets, the watcher would count that run's alerts, and the
// summary would mix the two runs. Starting afresh is the remedy, and
// deleting a directory the user named is not the demo's to do.
func FreshState(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--state %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("--state %s is not empty (it holds %s, from an earlier run?): the demo reports one run on a fresh stream; remove the directory (rm -r %s) or name a new one",
			dir, entries[0].Name(), dir)
	}
	return nil
}

// demo produces the stream and prints the alerts that come back.
type demo struct {
	out  io.Writer
	show int

	mu      sync.Mutex
	sentAt  []time.Time // per input offset: when its write was acknowledged
	seen    map[string]int
	totals  map[string]int
	events  int64
	latency []time.Duration
	flagAt  int // the input offset of the flag's set event
}

func (d *demo) read() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.events
}

// produce writes the transfers as JSON events, with Bad spread among
// them, in chunks so that alerts show while the stream still flows.
func (d *demo) produce(ctx context.Context, brokers []string, topic string, evs []bench.TransferEvent, rate int) (int, error) {
	cl, err := kafkaconn.Plaintext(brokers...).NewClient(kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(time.Millisecond))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	var msgs []*kgo.Record
	flag, at, set := Flag(evs)
	for i, ev := range evs {
		if i == at {
			msgs = append(msgs, &kgo.Record{Value: set})
			d.mu.Lock() // watch reads it
			d.flagAt = len(msgs) - 1
			d.mu.Unlock()
		}
		v := ingest.AppendEvent(nil, ev.Record())
		msgs = append(msgs, &kgo.Record{Value: v})
		if k := (i + 1) * len(Bad) / len(evs); k > 0 && (i+1)*len(Bad)%len(evs) < len(Bad) {
			msgs = append(msgs, &kgo.Record{Value: []byte(Bad[k-1])})
		}
	}
	// Chunks of a fiftieth of a second at the rate keep the pace smooth.
	chunk := 1000
	if rate > 0 {
		chunk = max(1, rate/50)
	}
	start := time.Now()
	for lo := 0; lo < len(msgs); lo += chunk {
		hi := min(lo+chunk, len(msgs))
		if rate > 0 {
			due := start.Add(time.Duration(float64(lo) / float64(rate) * float64(time.Second)))
			time.Sleep(time.Until(due))
		}
		if err := cl.ProduceSync(ctx, msgs[lo:hi]...).FirstErr(); err != nil {
			return lo, fmt.Errorf("produce: %w", err)
		}
		now := time.Now()
		d.mu.Lock()
		if lo <= d.flagAt && d.flagAt < hi {
			fmt.Fprintf(d.out, "FLAG  %s status=flagged (message %d): the transfers it received alert now\n", flag, d.flagAt)
		}
		for range msgs[lo:hi] {
			d.sentAt = append(d.sentAt, now)
		}
		d.mu.Unlock()
	}
	return len(msgs), nil
}

// demoEvent is the part of an output event the demo prints.
type demoEvent struct {
	Query  string            `json:"query"`
	Change string            `json:"change"`
	Match  map[string]string `json:"match"`
	// Transfers are the bound transfers of a query over transfers.
	Transfers []struct {
		ID string `json:"id"`
	} `json:"transfers"`
	Return json.RawMessage `json:"return"`
	Batch  uint64          `json:"batch"`
	Source *struct {
		FromOffset int64 `json:"from_offset"`
		ToOffset   int64 `json:"to_offset"`
	} `json:"source"`
}

// watch reads the output topic from its start and prints alerts.
func (d *demo) watch(ctx context.Context, brokers []string, topic string) error {
	return ingest.ConsumePartition(ctx, kafkaconn.Plaintext(brokers...), topic, 0, kgo.NewOffset().AtStart(), -1, func(m *kgo.Record) error {
		var ev demoEvent
		if err := json.Unmarshal(m.Value, &ev); err != nil {
			return fmt.Errorf("output offset %d: %w", m.Offset, err)
		}
		now := time.Now()
		d.mu.Lock()
		d.events++
		k := ev.Query + "/" + ev.Change
		d.totals[k]++
		if ev.Source != nil && ev.Source.ToOffset < int64(len(d.sentAt)) {
			d.latency = append(d.latency, now.Sub(d.sentAt[ev.Source.ToOffset]))
		}
		d.seen[k]++
		if d.seen[k] <= d.show {
			vars := slices.Sorted(maps.Keys(ev.Match))
			var b strings.Builder
			for _, v := range vars {
				fmt.Fprintf(&b, " %s=%s", v, ev.Match[v])
			}
			if len(ev.Transfers) > 0 && ev.Query == "layering" {
				// The predicated ring is about which transfers: name them.
				ids := make([]string, len(ev.Transfers))
				for i, t := range ev.Transfers {
					ids[i] = t.ID
				}
				fmt.Fprintf(&b, " via %s", strings.Join(ids, ","))
			}
			if ev.Return != nil {
				fmt.Fprintf(&b, " return %s", ev.Return)
			}
			if ev.Query == "flagged" && ev.Source != nil && ev.Source.FromOffset <= int64(d.flagAt) && int64(d.flagAt) <= ev.Source.ToOffset {
				b.WriteString(" (by the flag)")
			}
			fmt.Fprintf(d.out, "ALERT %-8s %-11s%s  (batch %d)\n", ev.Query, ev.Change, b.String(), ev.Batch)
			if d.seen[k] == d.show {
				fmt.Fprintf(d.out, "      (further %s %s alerts are counted, not shown)\n", ev.Query, ev.Change)
			}
		}
		d.mu.Unlock()
		return nil
	})
}

func (d *demo) latencies() []time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := slices.Clone(d.latency)
	slices.Sort(l)
	return l
}
