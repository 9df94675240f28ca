// Package servicebench is gcsm bench service's harness: the service end to
// end through Kafka on a generated transfer stream (a backlog, a set rate
// or a soak), the engine alone on the same stream beside it, the broker's
// ceilings, and cluster members sharing the stream. It drives a whole
// service, so it lives apart from package bench, whose generators the
// service's own tests import.
package servicebench

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/output"
	"github.com/gcsm/gcsm/service"
)

// Engine is a matcher opened for one run and the memory its graph must
// live in.
type Engine struct {
	Matcher incremental.Matcher
	Alloc   hostmem.Allocator
	// Close releases the device the matcher holds.
	Close func()
	// Warn writes to w what the run leaves to warn about, such as a
	// placement that fell back; nil: nothing.
	Warn func(w io.Writer)
}

// Options are a run's settings, checked by the caller (cmd/gcsm's flags).
type Options struct {
	Name                     string // the mix as the results name it
	Queries                  []service.QueryConfig
	Updates, Accounts        int
	Batch, Workers           int
	Partitions               int
	Rate                     int           // updates per second while the service runs; 0: a backlog
	Duration, Window, Warmup time.Duration // a soak's length, event-time window and warm-up; Duration 0: no soak
	// Brokers names the brokers Connect reached, for the results; "" is
	// the embedded broker, whose topics go with it.
	Brokers               string
	Compression, Delivery string
	Seed                  uint64
	Head                  float64 // the stream's Zipf offset (Mix.Head)
	Transfers             bool    // the stream's events carry ids and amounts (Mix.Transfers)
	Sets                  float64 // the fraction of the stream's events that set properties (bench.WithSets); with Transfers
	Members               int     // RunMembers' members
	Log                   zerolog.Logger
	Stderr                io.Writer // warnings

	// Connect points cfg at the brokers and returns the connection, the
	// broker's data directory where known (for a soak's disk figure) and
	// what stops the broker; dir holds files of its own.
	Connect func(cfg *service.Config, dir string) (kafkaconn.Conn, string, func(), error)
	// Open opens the engine of a member (0 for Run), saying which device
	// on w in a line "device: ...".
	Open func(w io.Writer, member int) (*Engine, error)
	// Alone runs the stream through the engine alone (the service's core
	// without Kafka, baseline.go), for Run to compare.
	Alone bool
}

// stream is the backlog: the mix's transfers, with o.Sets of property sets
// among them.
func (o *Options) stream() []bench.TransferEvent {
	return bench.WithSets(bench.TransfersHead(o.Accounts, o.Updates, o.Seed, o.Head), o.Sets, o.Seed)
}

// Run runs the service over the stream and, if o.Alone and unless the
// run is a soak, the engine alone, writing progress to human.
func Run(o *Options, human io.Writer) (*Result, error) {
	state, err := os.MkdirTemp("", "gcsm-bench-service-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(state)
	res := o.newResult()
	// Topics and group of their own, so that runs against one broker do
	// not read each other's records.
	run := strings.ToLower(rand.Text()[:8])
	cfg := o.serviceConfig(state, run)
	conn, brokerDir, closeBroker, err := o.Connect(&cfg, state)
	if err != nil {
		return nil, err
	}
	defer closeBroker()
	res.Security = security(conn)
	cl, err := o.inputClient(conn, cfg, run, human)
	if err != nil {
		return nil, err
	}
	defer cl.Close()

	var devLine strings.Builder
	eng, err := o.Open(&devLine, 0)
	if err != nil {
		return nil, err
	}
	// The engine alone opens its own executor; this one is closed first so
	// the two never hold the GPU at once.
	closeEngine := sync.OnceFunc(eng.Close)
	defer closeEngine()
	res.Device = strings.TrimSpace(strings.TrimPrefix(devLine.String(), "device: "))
	o.describe(res, human)

	arr := newArrivals(o.Partitions, o.Rate, o.Duration > 0)
	ts, out, err := timedOutput(conn, cfg, arr)
	if err != nil {
		return nil, err
	}
	ob := &batchLog{}
	reg := prometheus.NewRegistry()
	s, err := service.New(service.Options{Config: cfg, Matcher: eng.Matcher, Alloc: eng.Alloc, Log: o.Log, Registry: reg, Sink: out, OnBatch: ob.add})
	if err != nil {
		ts.Sink.Close()
		return nil, err
	}
	p := &streamProducer{cl: cl.Client, arr: arr, transfers: o.Transfers}
	var stream []bench.TransferEvent
	if o.Duration == 0 {
		stream = o.stream()
		res.Updates = len(stream)
	}
	if err := o.loadBacklog(conn, p, cfg.Input.Topic, stream, res, human); err != nil {
		return nil, err
	}
	soak, err := o.serve(s, p, stream, brokerDir)
	if err != nil {
		return nil, err
	}
	if err := o.summarize(res, p, ob, ts, reg, soak); err != nil {
		return nil, err
	}
	if err := o.ceiling(conn, cfg.Output.Topic, run, res); err != nil {
		return nil, err
	}
	if eng.Warn != nil {
		eng.Warn(o.Stderr)
	}
	closeEngine()
	if err := o.alone(res, stream); err != nil {
		return nil, err
	}
	return res, nil
}

// newResult is the result's description of the run, before it runs.
func (o *Options) newResult() *Result {
	res := &Result{Mix: o.Name, Mode: "backlog", Updates: o.Updates, Accounts: o.Accounts, Batch: o.Batch, Rate: o.Rate,
		Security: "plaintext", Compression: o.Compression, Delivery: o.Delivery, Transfers: o.Transfers, Sets: o.Sets}
	if o.Rate > 0 {
		res.Mode = "rate"
	}
	if o.Duration > 0 {
		res.Mode = "soak"
	}
	for _, q := range o.Queries {
		res.Queries = append(res.Queries, q.Name+"="+q.Pattern)
	}
	res.Broker = "in-process"
	if o.Brokers != "" {
		res.Broker = o.Brokers
	}
	return res
}

// serviceConfig is the service's configuration for the run named run,
// with its state under state.
func (o *Options) serviceConfig(state, run string) service.Config {
	cfg := service.DefaultConfig()
	cfg.State.Dir = state
	cfg.HTTP.Listen = ""
	cfg.Input.Topic, cfg.Output.Topic, cfg.Output.DeadLetterTopic = "bench-"+run+"-edges", "bench-"+run+"-matches", "bench-"+run+"-dlq"
	cfg.Input.Group = "bench-" + run
	cfg.Input.SessionTimeout = 6 * time.Second
	cfg.Batch = service.BatchConfig{Size: o.Batch, Linger: 10 * time.Millisecond}
	cfg.Graph = service.GraphConfig{Directed: true, DefaultEdgeLabel: "TRANSFER", DefaultVertexLabel: "Account"}
	cfg.Engine.Workers = o.Workers
	cfg.Queries = o.Queries
	if o.Duration > 0 {
		cfg.Window.Size = o.Window
	}
	cfg.Output.Compression = o.Compression
	cfg.Output.Delivery = o.Delivery
	return cfg
}

// security names conn's security: plaintext, or TLS with the SASL
// mechanism.
func security(conn kafkaconn.Conn) string {
	switch {
	case conn.TLS != nil && conn.SASL != nil:
		return "TLS+" + conn.SASL.Name()
	case conn.TLS != nil:
		return "TLS"
	case conn.SASL != nil:
		return conn.SASL.Name()
	}
	return "plaintext"
}

// inputClient is the client that produces the stream, once the run's
// topics exist; on brokers the bench did not start, closing it first
// deletes them.
func (o *Options) inputClient(conn kafkaconn.Conn, cfg service.Config, run string, human io.Writer) (*runClient, error) {
	cl, err := conn.NewClient(kgo.DefaultProduceTopic(cfg.Input.Topic),
		kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(1<<20))
	if err != nil {
		return nil, err
	}
	if err := createTopics(context.Background(), cl, o.Partitions, cfg.Input.Topic, cfg.Output.Topic, cfg.Output.DeadLetterTopic); err != nil {
		cl.Close()
		return nil, err
	}
	rc := &runClient{Client: cl}
	if o.Brokers != "" {
		rc.drop = func() { dropRunTopics(cl, "bench-"+run+"-", human) }
	}
	return rc, nil
}

// runClient is a client of the run's, which drops the run's topics before
// it closes where they are to be dropped.
type runClient struct {
	*kgo.Client
	drop func() // nil: the topics stay
}

// Close drops the run's topics, where they are to be dropped, and closes
// the client.
func (c *runClient) Close() {
	if c.drop != nil {
		c.drop()
	}
	c.Client.Close()
}

// describe writes the run's first line.
func (o *Options) describe(res *Result, human io.Writer) {
	size := fmt.Sprintf("%d updates", o.Updates)
	if o.Duration > 0 {
		size = fmt.Sprintf("%d updates/s for %v", o.Rate, o.Duration)
	}
	fmt.Fprintf(human, "gcsm bench service: %s, %s among %d accounts, batches of %d, broker %s (%s), device %s, compression %s, %s\n",
		res.Mix, size, o.Accounts, o.Batch, res.Broker, res.Security, res.Device, o.Compression, o.Delivery)
}

// timedOutput is the service's sink, timed: a timedSender where the Kafka
// sink is an output.Sender, so the service still pipelines its delivery.
func timedOutput(conn kafkaconn.Conn, cfg service.Config, arr *arrivals) (*timedSink, output.Sink, error) {
	sink, err := output.NewKafka(output.KafkaConfig{Conn: conn, Topic: cfg.Output.Topic,
		DeadTopic: cfg.Output.DeadLetterTopic, Compression: cfg.Output.Compression})
	if err != nil {
		return nil, nil, err
	}
	ts := &timedSink{Sink: sink, arr: arr}
	var out output.Sink = ts
	if sender, ok := sink.(output.Sender); ok {
		out = timedSender{ts, sender}
	}
	return ts, out, nil
}

// loadBacklog fills the input topic with the whole stream before the
// service starts, when no rate is set, and measures how fast the producer
// filled it and a bare consumer reads it back.
func (o *Options) loadBacklog(conn kafkaconn.Conn, p *streamProducer, topic string, stream []bench.TransferEvent, res *Result, human io.Writer) error {
	if o.Rate != 0 {
		return nil
	}
	ctx := context.Background()
	t0 := time.Now()
	if err := p.produce(ctx, stream, 0); err != nil {
		return err
	}
	res.LoadPerSec = float64(len(stream)) / time.Since(t0).Seconds()
	fmt.Fprintf(human, "loaded the stream into %s in %.2fs (%.0f updates/s)\n", topic, time.Since(t0).Seconds(), res.LoadPerSec)
	var err error
	if res.ReadPerSec, err = readAll(ctx, conn, topic, int64(len(stream))); err != nil {
		return err
	}
	fmt.Fprintf(human, "a bare consumer reads it back at %.0f updates/s\n", res.ReadPerSec)
	return nil
}

// serve runs s while p produces the stream (at o.Rate, or a soak's
// stream for o.Duration, or nothing more after a backlog) until the
// producer has finished and s has applied every record it wrote; then it
// stops s. It returns the soak's sampler, nil outside a soak.
func (o *Options) serve(s *service.Service, p *streamProducer, stream []bench.TransferEvent, brokerDir string) (*soaker, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	// The label lets --cpuprofile's readers keep to the service's goroutines
	// (pprof -tagfocus phase=service); the ones they start inherit it.
	go pprof.Do(ctx, pprof.Labels("phase", "service"), func(ctx context.Context) { ran <- s.Run(ctx) })
	produced := make(chan error, 1)
	var soak *soaker
	switch {
	case o.Duration > 0:
		soak = &soaker{s: s, p: p, brokerDir: brokerDir}
		go func() { produced <- p.soak(ctx, o.Accounts, o.Seed, o.Head, o.Rate, o.Duration) }()
		go soak.run(ctx)
	case o.Rate > 0:
		go func() { produced <- p.produce(ctx, stream, o.Rate) }()
	default:
		produced <- nil
	}
	prodDone := false
	for !prodDone || applied(s.Progress()) < p.count() {
		select {
		case err := <-ran:
			return nil, fmt.Errorf("the service stopped: %v", err)
		case err := <-produced:
			if err != nil {
				return nil, err
			}
			prodDone = true
		case <-time.After(20 * time.Millisecond):
		}
	}
	if soak != nil {
		soak.stop()
	}
	cancel()
	if err := <-ran; err != nil && !errors.Is(err, context.Canceled) {
		return nil, err
	}
	return soak, nil
}

// summarize fills res from what the run's hooks, sink, metrics and soak
// sampler noted.
func (o *Options) summarize(res *Result, p *streamProducer, ob *batchLog, ts *timedSink, reg *prometheus.Registry, soak *soaker) error {
	if o.Duration > 0 {
		res.Updates = int(p.count())
	}
	ob.summarize(res)
	ts.summarize(res)
	if err := gatherService(reg, res); err != nil {
		return err
	}
	if soak != nil {
		res.Soak = soak.result(o.Duration, o.Warmup)
	}
	return nil
}

// ceiling measures, after a backlog with alerts, what the broker takes of
// the service's output with nothing else running (eventCeiling).
func (o *Options) ceiling(conn kafkaconn.Conn, alerts, run string, res *Result) error {
	if res.Mode != "backlog" || res.Events == 0 {
		return nil
	}
	c := eventCeiling{conn: conn, from: alerts, to: "bench-" + run + "-ceiling",
		partitions: o.Partitions, compression: o.Compression, have: res.Events, n: max(res.Events, minCeilingRecords)}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var err error
	res.EventCeiling, res.EventBytes, err = c.measure(ctx)
	if err != nil {
		return fmt.Errorf("events' ceiling: %w", err)
	}
	return nil
}

// alone runs the stream through the engine alone, outside a soak, and
// sets its figures beside the service's.
func (o *Options) alone(res *Result, stream []bench.TransferEvent) error {
	if !o.Alone || o.Duration > 0 {
		return nil
	}
	var e *EngineResult
	var err error
	pprof.Do(context.Background(), pprof.Labels("phase", "engine"), func(context.Context) { e, err = o.baseline(stream) })
	if err != nil {
		return fmt.Errorf("engine alone: %w", err)
	}
	e.Consistent = slices.EqualFunc(e.Matches, res.Matches, func(a, b QueryMatches) bool {
		return a.Query == b.Query && a.Appeared-a.Disappeared == b.Appeared-b.Disappeared
	})
	res.Engine = e
	if e.UpdatesPerSec > 0 {
		res.Ratio = res.UpdatesPerSec / e.UpdatesPerSec
	}
	return nil
}
