package service

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/gcsm/gcsm/engine"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/internal/statedir"
	"github.com/gcsm/gcsm/output"
	"github.com/gcsm/gcsm/query"
)

// Options are what New needs beyond the configuration.
type Options struct {
	Config Config
	// Matcher runs the queries; nil means the CPU engine with
	// Config.Engine.Workers goroutines. cmd/gcsm picks the GPU here.
	Matcher incremental.Matcher
	// Alloc backs the graph's lists; nil means mmap'd memory. The GPU engine
	// passes pinned, device-mapped memory.
	Alloc hostmem.Allocator
	// Log receives the service's structured logs.
	Log zerolog.Logger
	// Registry receives the metrics; nil makes a fresh one, served on
	// /metrics either way.
	Registry *prometheus.Registry
	// Sink receives match events and dead letters; nil writes them to the
	// output topics of the brokers. Exactly-once delivery needs a sink that
	// is an output.Transactor; with another, delivery is at least once.
	Sink output.Sink
	// OnBatch, if set, is called by the run loop when a batch's output is
	// acknowledged, in batch order; it must return quickly. Benchmarks take their latencies from it.
	OnBatch func(BatchInfo)
	// Hold, if set, keeps a cluster member from reading the input until it
	// is closed; the member still joins the member group and takes its
	// shards. gcsm bench service --members holds every member until all of
	// them own shards, so that they start together on one backlog.
	Hold <-chan struct{}
	// keepVertices turns off the recycling of vertex ids (recycle.go), for
	// the tests that compare a service with it.
	keepVertices bool
}

// BatchInfo describes one processed batch.
type BatchInfo struct {
	Batch    uint64
	Messages int
	Events   int
	// Latency runs from the batch's cut to the acknowledgement of its
	// output, the time an update waits once its batch is full, queues
	// between the stages included.
	Latency time.Duration
}

// Service is gcsm run: one graph, its standing queries, and the loop that
// feeds it from Kafka. Create it with New, then call Run once.
type Service struct {
	cfg     Config
	log     zerolog.Logger
	reg     *prometheus.Registry
	met     *metrics
	matcher incremental.Matcher
	alloc   hostmem.Allocator
	sem     query.Semantics
	dir     *statedir.Dir
	kafka   kafkaconn.Conn // the configured brokers, or the embedded one's
	broker  *embedded      // nil with external brokers
	sink    output.Sink
	onBatch func(BatchInfo)
	hold    <-chan struct{}
	slabs   chan *eventSlab // of batches taken back (build.go)

	// core is the engine state (package engine). It belongs to the run
	// loop: HTTP handlers reach it only through ops, which the loop runs
	// between batches, or read the copies guarded by mu. The exception is
	// engine.Core.Intern, which the decoding stage runs (pipeline.go).
	core *engine.Core
	// overlapped is the batch whose match runs on beside the next batch's
	// graph stages (engine.Step), until the run loop completes it.
	overlapped *batchState
	// keep and keepTime are what the decoding stage keeps of events: the
	// properties the store keeps, and event times when a query reads them.
	keep     atomic.Pointer[ingest.PropFilter]
	keepTime atomic.Bool
	queries  []*standing
	batch    uint64        // batches processed, the id of the last one
	position map[int]int64 // partition → next offset to apply
	lastCkpt time.Time
	ckptPos  map[int]int64 // position as of the last checkpoint, which is what may be committed
	// uncommitted says that ckptPos is not known to be committed: a
	// checkpoint was written or loaded since the last commit, or the
	// commit was refused.
	uncommitted bool
	// txn, in exactly-once delivery, is the transactional sink of the
	// generation or member session that txnCommit commits the progress
	// of, while it runs (txn.go); exactly is the sink it is opened from,
	// nil in at-least-once delivery.
	txn       *output.Txn
	txnCommit txnCommit
	exactly   output.Transactor
	dec       ingest.Decoder // the settings every decoder copies
	// oddTimeWarned says that the run has warned of an odd event time
	// (warnOddTime); cluster members decode on their own goroutine.
	oddTimeWarned atomic.Bool
	seen          *graph.Catalog // the properties decoded, kept or not: what new queries are checked against (properties.go)
	// hostBytes is the GPU's cumulative count of list bytes read from
	// host memory, as of the last batch (countGPU).
	hostBytes uint64
	// batchLog, alone, records each batch's cut (batchlog.go); logNext
	// is its offset of the first record past the applied batches.
	batchLog *ingest.CutWriter
	logNext  int64
	// member is the state of a cluster member (cluster.go); nil alone.
	member *member
	// limit, while a member reloads an older state, makes checkpoints of
	// that batch or later unusable; 0 otherwise.
	limit uint64
	// ckptAt (lastCkpt in Unix nanoseconds, 0 for none), updates (updates
	// applied) and oldestOut (pipeline.handed's first, 0 for none) are
	// copies the watch reads (watch.go).
	ckptAt, updates, oldestOut atomic.Int64

	ops chan op

	// initialCtx ends the initial runs (initial.go) when Run returns;
	// initialDone hands the enumerated ones to the run loop.
	initialCtx  context.Context
	initialWG   sync.WaitGroup
	initialDone chan *initialRun
	// quit is closed when Run returns, so that a POST waiting for its
	// initial run returns too.
	quit chan struct{}

	mu       sync.Mutex // guards the fields below, which HTTP handlers read
	progress Progress
	ready    bool
	active   bool
	infos    []queryInfo
	stopped  bool
	// doneAt is when the last batch was acknowledged or the service became
	// active; unready is why /readyz fails, "" when it does not (watch.go).
	doneAt  time.Time
	unready string
}

// op is work the HTTP API hands to the run loop.
type op struct {
	run  func(ctx context.Context) (any, error)
	done chan opResult
}

type opResult struct {
	v   any
	err error
}

// New prepares the service: it opens the state directory, loads the newest
// valid checkpoint (or starts empty), registers the configured queries and
// starts the embedded broker when no brokers are configured. Nothing is
// consumed before Run.
func New(opts Options) (*Service, error) {
	cfg := opts.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sem, err := query.ParseSemantics(cfg.Engine.Semantics)
	if err != nil {
		return nil, err
	}
	s := &Service{
		cfg: cfg, log: opts.Log, reg: opts.Registry, matcher: opts.Matcher, alloc: opts.Alloc, sem: sem,
		sink: opts.Sink, onBatch: opts.OnBatch, hold: opts.Hold, slabs: make(chan *eventSlab, maxInflight+1), ops: make(chan op), initialDone: make(chan *initialRun), quit: make(chan struct{}), position: map[int]int64{}, ckptPos: map[int]int64{},
	}
	if s.reg == nil {
		s.reg = prometheus.NewRegistry()
	}
	s.met = newMetrics(s.reg)
	if s.matcher == nil {
		s.matcher = &incremental.CPU{Workers: cfg.Engine.Workers}
	}
	if s.alloc == nil {
		s.alloc = hostmem.Mmap{}
	}
	format := map[string]ingest.Format{"auto": ingest.FormatAuto, "json": ingest.FormatJSON, "csm": ingest.FormatCSM}[cfg.Input.Format]
	unit, err := ingest.ParseTimeUnit(cfg.Input.TSUnit)
	if err != nil {
		return nil, fmt.Errorf("input.ts_unit: %w", err) // Validate checked it
	}
	s.seen = &graph.Catalog{DefaultEdgeLabel: cfg.Graph.DefaultEdgeLabel}
	s.dec = ingest.Decoder{Format: format, MaxBytes: cfg.Input.MaxMessageBytes, MaxIDBytes: cfg.Input.MaxIDBytes, TSUnit: unit, Seen: s.seen}

	if s.dir, err = statedir.Open(cfg.State.Dir, cfg.State.Keep); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	if s.core, err = engine.New(engine.Config{Directed: cfg.Graph.Directed,
		DefaultVertexLabel: cfg.Graph.DefaultVertexLabel, DefaultEdgeLabel: cfg.Graph.DefaultEdgeLabel,
		Window:  engine.Window{Size: cfg.Window.Size, Lateness: cfg.Window.Lateness},
		Recycle: !opts.keepVertices, Alloc: s.alloc, Matcher: s.matcher,
		// A query that names no transfer keeps vertex-level keys whatever
		// else turns transfers on (transfers.go).
		VertexMatches: true, OnTransfers: s.transfersKept}); err != nil {
		s.dir.Close()
		return nil, err
	}
	if err := s.restore(); err != nil {
		s.dir.Close() // the lock: a failed New leaves the directory to the next process
		return nil, err
	}
	s.publishPosition()
	ok := false
	defer func() {
		if !ok {
			s.close()
		}
	}()
	if s.kafka, err = kafkaconn.Build(cfg.Brokers, cfg.TLS, cfg.SASL, os.Getenv); err != nil {
		return nil, err
	}
	if len(cfg.Brokers) == 0 {
		if s.broker, err = startEmbedded(cfg, BrokerSecurity{}); err != nil {
			return nil, err
		}
		s.kafka = kafkaconn.Plaintext(s.broker.addrs...)
		s.log.Info().Strs("brokers", s.broker.addrs).Str("data", s.broker.dir).Msg("embedded Kafka broker started")
	}
	if s.sink == nil {
		k, err := output.NewKafka(output.KafkaConfig{Conn: s.kafka, Topic: cfg.Output.Topic,
			DeadTopic: cfg.Output.DeadLetterTopic, Compression: cfg.Output.Compression})
		if err != nil {
			return nil, err
		}
		s.sink = k
	}
	if t, ok := s.sink.(output.Transactor); ok && cfg.Output.Delivery == ExactlyOnce {
		s.exactly = t
	}
	ok = true
	return s, nil
}

// Progress is a snapshot of what the service has done since it started.
type Progress struct {
	Batches     uint64        // id of the last batch, counted across restarts
	Position    map[int]int64 // partition → next offset to apply
	Events      int64         // match events delivered
	DeadLetters int64         // input messages dead-lettered
	// Units counts the work units (update edges with their delta terms)
	// matched; a cluster member matches only its shards'.
	Units int64
	// Shards is how many shards a cluster member owns now.
	Shards int
}

// Progress returns a snapshot; it is safe to call from any goroutine.
func (s *Service) Progress() Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.progress
	p.Position = maps.Clone(p.Position)
	return p
}

// Brokers are the Kafka brokers the service uses: the configured ones or
// the embedded broker's address.
func (s *Service) Brokers() []string { return s.kafka.Brokers }

// Registry is where the service's metrics are registered.
func (s *Service) Registry() *prometheus.Registry { return s.reg }

// Run consumes until ctx is done or a fatal error occurs (the graph cannot
// grow, a checkpoint cannot be written, the output cannot be delivered for
// long). On the way out it writes a final checkpoint, commits, and leaves
// the group, so a standby takes over at once.
func (s *Service) Run(ctx context.Context) error {
	defer s.close()
	ictx, stopInitial := context.WithCancel(ctx)
	defer stopInitial()
	s.initialCtx = ictx
	var srv *http.Server
	if s.cfg.HTTP.Listen != "" {
		ln, err := net.Listen("tcp", s.cfg.HTTP.Listen)
		if err != nil {
			return fmt.Errorf("http: %w", err)
		}
		srv = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go srv.Serve(ln)
		s.log.Info().Str("listen", ln.Addr().String()).Msg("HTTP API and metrics")
		// A warning, not a refusal: the shipped compose files listen on
		// 0.0.0.0 inside a container network with no token, which is safe
		// there, and the service cannot tell that network from a host's.
		if s.cfg.HTTP.Token == "" && loopback(ln.Addr().String()) != nil {
			s.log.Warn().Str("listen", ln.Addr().String()).
				Msg("the query API listens beyond this machine with no http.token: anyone who reaches it can register and delete queries")
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv.Shutdown(sctx)
		}()
	}
	// Before the server's shutdown, which waits for the handlers: a POST
	// waiting for an initial run returns once the run is ended.
	defer func() {
		stopInitial()
		s.initialWG.Wait()
		close(s.quit)
	}()
	// A wrong password or an untrusted certificate fails here, within
	// kafkaconn.CheckTimeout and in one line, not as a topic that cannot be
	// created or records that time out.
	if err := s.kafka.Check(ctx); err != nil {
		return err
	}
	if err := s.registerConfigured(ctx); err != nil {
		return err
	}
	wctx, stopWatch := context.WithCancel(ctx)
	watching := make(chan struct{})
	go func() { defer close(watching); s.watch(wctx) }()
	defer func() { stopWatch(); <-watching }()
	if s.cfg.Cluster.Shards > 0 {
		// A member refuses lost input itself (cluster.go), checkpoint or
		// not: members must agree on the graph, so nothing accepts a loss.
		return s.runCluster(ctx)
	}
	if err := s.checkInput(ctx); err != nil {
		return err
	}
	if err := s.openBatchLog(ctx); err != nil {
		return err
	}
	cons, err := ingest.NewConsumer(ingest.ConsumerConfig{
		Conn: s.kafka, Topic: s.cfg.Input.Topic, Group: s.cfg.Input.Group,
		SessionTimeout: s.cfg.Input.SessionTimeout,
		Logf: func(format string, args ...any) {
			s.log.Trace().Msgf(format, args...)
		},
		Skipped: func(p int, from, to int64) {
			s.log.Warn().Str("topic", s.cfg.Input.Topic).Int("partition", p).Int64("from", from).Int64("to", to).
				Msg("input records [from, to) are gone from the broker (retention) and were never applied; going on from 'to'")
		},
	})
	if err != nil {
		return err
	}
	defer cons.Close()
	s.setReady(true)
	defer s.setReady(false)
	for ctx.Err() == nil {
		gen, err := await(ctx, s, cons.Next)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			s.log.Warn().Err(err).Msg("consumer group; retrying")
			continue
		}
		if len(gen.Partitions) == 0 {
			s.setActive(false)
			s.log.Info().Int32("generation", gen.ID).Msg("standby: another member holds the input")
			s.serveOps(ctx, gen)
			continue
		}
		s.setActive(true)
		s.log.Info().Int32("generation", gen.ID).Ints("partitions", gen.Partitions).Interface("from", s.position).Msg("active: consuming")
		if err := s.consume(ctx, gen); err != nil {
			return err
		}
	}
	return s.shutdown()
}

// await runs next while still serving the HTTP API's operations, so that a
// query can be registered while a group forms.
func await[T any](ctx context.Context, s *Service, next func(context.Context) (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := next(ctx)
		ch <- result{v, err}
	}()
	for {
		select {
		case r := <-ch:
			return r.v, r.err
		case o := <-s.ops:
			s.runOp(ctx, o)
		case run := <-s.initialDone:
			if err := s.deliverInitial(ctx, run); err != nil {
				s.log.Warn().Err(err).Str("query", run.st.cfg.Name).Msg("initial matches not delivered")
			}
		}
	}
}

// serveOps runs HTTP operations while this member is a standby.
func (s *Service) serveOps(ctx context.Context, gen *ingest.Generation) {
	ended := make(chan struct{})
	go func() { gen.Wait(ctx); close(ended) }()
	for {
		select {
		case <-ended:
			return
		case o := <-s.ops:
			s.runOp(ctx, o)
		case run := <-s.initialDone:
			if err := s.deliverInitial(ctx, run); err != nil {
				s.log.Warn().Err(err).Str("query", run.st.cfg.Name).Msg("initial matches not delivered")
			}
		}
	}
}

func (s *Service) runOp(ctx context.Context, o op) {
	v, err := o.run(ctx)
	o.done <- opResult{v, err}
}

// do hands f to the run loop and waits for its result.
func (s *Service) do(ctx context.Context, f func(ctx context.Context) (any, error)) (any, error) {
	o := op{run: f, done: make(chan opResult, 1)}
	select {
	case s.ops <- o:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r := <-o.done
	return r.v, r.err
}

// consume runs one generation: reads the partitions from the service's
// positions and runs batches through the pipeline until the generation
// ends. It returns with every batch it matched acknowledged or, with an
// error, abandoned.
func (s *Service) consume(ctx context.Context, gen *ingest.Generation) error {
	msgs := make(chan []ingest.Message, max(4, 4*s.cfg.Batch.Size/ingest.MaxChunk))
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reading := gen.Read(gctx, s.position, msgs)
	defer reading.Release()
	// Output already matched is delivered even after ctx ends, so that a
	// shutdown can commit everything it applied; only a delivery still
	// unacknowledged shutdownGrace after that is abandoned.
	dctx, dcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer dcancel()
	defer context.AfterFunc(ctx, func() { time.AfterFunc(shutdownGrace, dcancel) })()
	// The last generation's decoder may have released ids for batches that
	// were never applied; this one re-interns those batches.
	if err := s.core.ForgetOutstanding(); err != nil {
		return err
	}
	if s.exactly != nil {
		// Before the batch log is read: opening the id aborts the killed
		// run's open transaction, whose batches then count as never sent.
		tx, err := s.openTxn(ctx, s.exactly, s.cfg.transactionalID())
		if err != nil {
			return nil // ctx ended: Run shuts down
		}
		s.txn, s.txnCommit = tx, s.commitInput(gen)
		// What is applied and delivered, where the group's offsets are
		// behind it: a new group, a checkpoint whose writer died before
		// its first transaction, or a batch whose transaction committed
		// after the last generation ended, without its offsets (txnCommit).
		// No transaction of this generation is open yet, and the next
		// moves them on.
		if err := gen.CommitForward(maps.Clone(s.position)); err != nil {
			s.log.Warn().Err(err).Msg("offset commit refused; the next transaction commits them")
		} else {
			s.uncommitted = false
		}
		defer func() {
			tx.Close()
			s.txn, s.txnCommit = nil, nil
		}()
	}
	logged, err := s.readLogPatiently(ctx)
	if err != nil {
		return nil // ctx ended: Run shuts down
	}
	pos := maps.Clone(s.position)
	p := s.startPipelineWith(gctx, dctx, func(ctx context.Context, p *pipeline) { s.prepare(ctx, msgs, pos, logged, p) })
	err = s.loop(ctx, gen, p)
	if err != nil {
		cancel()
		dcancel()
	}
	p.stop()
	rerr := reading.Wait()
	if err != nil {
		return err
	}
	if rerr != nil {
		s.log.Warn().Err(rerr).Msg("input read stopped; rejoining the group")
	}
	if ctx.Err() != nil {
		return s.finish(gen, p)
	}
	return nil
}

// shutdownGrace is how long a shutdown waits for output already matched to
// be acknowledged before it gives up on it (compose gives a stop 30 s).
const shutdownGrace = 10 * time.Second

// shutdown writes the final checkpoint unless the last one covers
// everything; an active member has written and committed it already
// (finish). Without a generation the offsets it covers are committed by
// the next active member, which loads it (maybeCheckpoint), or by this one
// on restart.
func (s *Service) shutdown() error {
	if s.lastCkpt.IsZero() || !s.positionsEqual() {
		if err := s.checkpoint(); err != nil {
			return err
		}
	}
	s.log.Info().Uint64("batch", s.batch).Interface("position", s.position).Msg("stopped; the last checkpoint covers everything applied")
	return nil
}

func (s *Service) positionsEqual() bool {
	if len(s.position) != len(s.ckptPos) {
		return false
	}
	for p, o := range s.position {
		if s.ckptPos[p] != o {
			return false
		}
	}
	return true
}

func (s *Service) close() {
	s.mu.Lock()
	stopped := s.stopped
	s.stopped = true
	s.mu.Unlock()
	if stopped {
		return
	}
	if s.sink != nil {
		s.sink.Close()
	}
	if s.batchLog != nil {
		s.batchLog.Close()
	}
	if s.broker != nil {
		s.broker.close()
	}
	if s.core.Graph() != nil {
		s.core.Graph().Close()
	}
	// Last: the directory is another process's to take once this one
	// writes nothing more.
	s.dir.Close()
}

func (s *Service) setReady(v bool) {
	s.mu.Lock()
	s.ready = v
	s.mu.Unlock()
}

func (s *Service) setActive(v bool) {
	s.mu.Lock()
	if v && !s.active {
		s.doneAt = time.Now() // a stall is counted from here, not from a batch of an earlier term
	}
	s.active = v
	s.mu.Unlock()
}

// publishPosition copies the run loop's position to Progress, where the
// watch reads it, before a batch has been acknowledged.
func (s *Service) publishPosition() {
	s.mu.Lock()
	s.progress.Position = maps.Clone(s.position)
	s.mu.Unlock()
}

// publishQueries refreshes the copy of the query list that GET /queries
// reads.
func (s *Service) publishQueries() {
	infos := make([]queryInfo, len(s.queries))
	for i, st := range s.queries {
		infos[i] = st.info()
	}
	s.mu.Lock()
	s.infos = infos
	s.mu.Unlock()
	s.met.queries.Set(float64(len(s.queries)))
}

// registerConfigured registers the configuration's queries that the
// checkpoint does not already hold with the same pattern (query.Pattern.Form). A
// checkpointed query whose pattern the configuration changed has its
// standing matches retracted first (replaceQuery), as a POST with
// "replace": true would.
func (s *Service) registerConfigured(ctx context.Context) error {
	for _, c := range s.cfg.Queries {
		if i := s.queryIndex(c.Name); i >= 0 {
			if _, _, _, err := s.replaceQuery(ctx, i, c); err != nil {
				return fmt.Errorf("query %q: %w", c.Name, err)
			}
			continue
		}
		if _, err := s.addQuery(c); err != nil {
			return fmt.Errorf("query %q: %w", c.Name, err)
		}
	}
	s.publishQueries()
	return nil
}

func (s *Service) queryIndex(name string) int {
	for i, st := range s.queries {
		if st.cfg.Name == name {
			return i
		}
	}
	return -1
}

func (s *Service) removeQuery(i int) {
	if run := s.queries[i].initial.Load(); run != nil {
		run.cancel(errInitialDeleted)
	}
	s.queries = append(s.queries[:i], s.queries[i+1:]...)
	s.publishQueries()
}

// addQuery compiles and registers c and, when c asks for its initial
// matches, starts their run (initial.go), which it returns; the run is
// nil otherwise. It runs on the loop, between batches.
func (s *Service) addQuery(c QueryConfig) (*initialRun, error) {
	if s.queryIndex(c.Name) >= 0 {
		return nil, fmt.Errorf("%w: %q", errQueryExists, c.Name)
	}
	st, err := s.compileQuery(c, true)
	if err != nil {
		return nil, err
	}
	if s.core.Store() != nil || needsTransfers(st.q) {
		s.keepTransfers(st.q)
	}
	for _, w := range st.warnings {
		s.log.Warn().Str("query", c.Name).Msg(w)
	}
	var run *initialRun
	if c.Initial {
		if s.core.Graph().NumEdges() == 0 {
			run = &initialRun{st: st, done: make(chan struct{})}
			run.finish(0, "")
		} else if run, err = s.startInitial(st); err != nil {
			return nil, err
		}
	}
	s.queries = append(s.queries, st)
	s.publishQueries()
	s.log.Info().Str("query", c.Name).Int("vertices", st.q.N()).Int("edges", len(st.q.Edges)).Msg("query registered")
	return run, nil
}

var (
	errQueryExists  = errors.New("a query of that name exists")
	errQueryMissing = errors.New("no query of that name")
	// errTooManyQueries refuses a registration past http.max_queries.
	errTooManyQueries = errors.New("too many queries")
)
