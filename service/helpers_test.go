package service

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/output"
	"github.com/gcsm/gcsm/query"
)

// childEnv, when set, makes the test binary run one service with the JSON
// configuration it holds instead of the tests: the crash tests start it as
// a process so they can SIGKILL it.
const childEnv = "GCSM_SERVICE_CHILD"

const childReady = "child ready"

func TestMain(m *testing.M) {
	if c := os.Getenv(childEnv); c != "" {
		os.Exit(runChild(c))
	}
	os.Exit(m.Run())
}

// startChild runs one service in a child process of this test binary, with
// the JSON configuration cfg and its stderr going to stderr. ready is closed
// once the child says SIGTERM is a clean stop; before that it would kill it.
func startChild(t *testing.T, cfg []byte, stderr io.Writer) (cmd *exec.Cmd, ready chan struct{}) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(cfg))
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready = make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == childReady {
				close(ready)
			}
		}
	}()
	return cmd, ready
}

func runChild(c string) int {
	var cfg Config
	if err := json.Unmarshal([]byte(c), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		return 2
	}
	log := zerolog.New(os.Stderr).Level(zerolog.DebugLevel).With().Timestamp().Str("pid", strconv.Itoa(os.Getpid())).Logger()
	s, err := New(Options{Config: cfg, Log: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// From here on SIGTERM is a clean stop; the crash test waits for this
	// line before it sends one.
	fmt.Println(childReady)
	if err := s.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

// cluster starts an in-process Kafka cluster with the test's topics.
func cluster(t testing.TB, brokers, partitions int) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(partitions),
		kfake.SeedTopics(int32(partitions), "edges"), kfake.SeedTopics(1, "matches", "edges.dlq"),
		// The crash tests kill members; the coordinator must drop them
		// within the tests' short session timeouts.
		kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// testConfig is a configuration for brokers with fast group timing.
func testConfig(t testing.TB, brokers []string) Config {
	cfg := DefaultConfig()
	cfg.Brokers = brokers
	cfg.State.Dir = t.TempDir()
	cfg.HTTP.Listen = ""
	cfg.Input.SessionTimeout = time.Second
	cfg.Batch = BatchConfig{Size: 256, Linger: 20 * time.Millisecond}
	cfg.State.CheckpointEvery = 100 * time.Millisecond
	cfg.Graph = GraphConfig{Directed: true, DefaultEdgeLabel: "TRANSFER", DefaultVertexLabel: "Account"}
	cfg.Queries = []QueryConfig{
		{Name: "ring3", Pattern: "(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a)"},
		{Name: "split", Pattern: "(s:Account)-[:TRANSFER]->(a:Account)-[:TRANSFER]->(t:Account), (s)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(t)"},
	}
	return cfg
}

// running is a service started by start.
type running struct {
	s    *Service
	stop context.CancelFunc
	done chan error
}

func start(t testing.TB, cfg Config) *running {
	t.Helper()
	return startOpts(t, Options{Config: cfg, Log: zerolog.New(io.Discard)})
}

// startOpts starts a service with opts and shuts it down at the test's end.
func startOpts(t testing.TB, opts Options) *running {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{s: s, stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- s.Run(ctx) }()
	t.Cleanup(func() { r.shutdown(t) })
	return r
}

func (r *running) shutdown(t testing.TB) {
	r.stop()
	select {
	case err, ok := <-r.done:
		if !ok {
			return // shut down before
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
		close(r.done)
	case <-time.After(30 * time.Second):
		t.Errorf("Run did not return within 30s of its context's end")
	}
}

// waitFor polls cond until it holds or the time runs out.
func waitFor(t testing.TB, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// transferStream is a seeded transfer stream as input messages.
func transferStream(n int, seed uint64) ([]ingest.Record, [][]byte) {
	return transferStreamAmong(200, n, seed)
}

// transferStreamAmong is transferStream among the given number of accounts.
func transferStreamAmong(accounts, n int, seed uint64) ([]ingest.Record, [][]byte) {
	var recs []ingest.Record
	var vals [][]byte
	for _, ev := range bench.Transfers(accounts, n, seed) {
		r := ingest.Record{Op: ev.Op, Src: ev.Src, Dst: ev.Dst, Label: ev.Label, SrcLabel: ev.SrcLabel, DstLabel: ev.DstLabel, Time: ev.Time}
		recs = append(recs, r)
		vals = append(vals, ingest.AppendEvent(nil, r))
	}
	return recs, vals
}

func produce(t testing.TB, brokers []string, topic string, vals [][]byte) {
	t.Helper()
	produceKeyed(t, brokers, topic, vals, nil)
}

// produceKeyed is produce with the messages keyed by keys, which choose
// their partitions by hash, unless keys is empty.
func produceKeyed(t testing.TB, brokers []string, topic string, vals, keys [][]byte) {
	t.Helper()
	part := kgo.RoundRobinPartitioner()
	if len(keys) > 0 {
		part = kgo.StickyKeyPartitioner(nil)
	}
	cl, err := kafkaconn.Plaintext(brokers...).NewClient(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(part),
		kgo.ProducerLinger(time.Millisecond), kgo.AllowAutoTopicCreation())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, len(vals))
	for i, v := range vals {
		recs[i] = &kgo.Record{Value: v}
		if len(keys) > 0 {
			recs[i].Key = keys[i]
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for lo := 0; lo < len(recs); lo += 1000 {
		if err := cl.ProduceSync(ctx, recs[lo:min(lo+1000, len(recs))]...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
}

// outEvent is an output event as a consumer decodes it.
type outEvent struct {
	Query     string            `json:"query"`
	Change    string            `json:"change"`
	Match     map[string]string `json:"match"`
	Edges     [][3]string       `json:"edges"`
	Transfers []output.Transfer `json:"transfers"`
	Return    map[string]any    `json:"return"`
	Batch     uint64            `json:"batch"`
	EventTime string            `json:"event_time"`
	Source    *output.Source    `json:"source"`
	Initial   bool              `json:"initial"`
	Key       string            `json:"key"`
	msgKey    string
}

// consumer reads a topic's partition 0 from its start in the background.
type consumer struct {
	mu     sync.Mutex
	events []outEvent
	raw    []*kgo.Record
	next   int64 // past the last record or marker read
	err    error
	cancel context.CancelFunc
	done   chan struct{}
}

func consume(t testing.TB, brokers []string, topic string, decode bool) *consumer {
	ctx, cancel := context.WithCancel(context.Background())
	c := &consumer{cancel: cancel, done: make(chan struct{})}
	cl, err := kafkaconn.Plaintext(brokers...).NewClient(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(50*time.Millisecond),
		// As the README tells consumers to read; the markers show how far
		// the reading has come (reached).
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.done)
		defer cl.Close()
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				return
			}
			c.mu.Lock()
			fs.EachError(func(_ string, _ int32, err error) {
				if c.err == nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
					c.err = err
				}
			})
			fs.EachRecord(func(m *kgo.Record) {
				c.next = m.Offset + 1
				if m.Attrs.IsControl() {
					return
				}
				c.raw = append(c.raw, m)
				if decode {
					var ev outEvent
					if err := json.Unmarshal(m.Value, &ev); err != nil {
						c.err = fmt.Errorf("offset %d: %v: %s", m.Offset, err, m.Value)
					}
					ev.msgKey = string(m.Key)
					c.events = append(c.events, ev)
				}
			})
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-c.done })
	return c
}

// reached says whether the reading has passed offset end-1, records and
// transaction markers alike.
func (c *consumer) reached(end int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next >= end
}

func (c *consumer) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.raw)
}

func (c *consumer) snapshot(t testing.TB) ([]outEvent, []*kgo.Record) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		t.Fatal(c.err)
	}
	return slices.Clone(c.events), slices.Clone(c.raw)
}

// reference is the engine driven directly, without the service: the
// graph, dictionaries and compiled queries that the tests' expectations
// come from.
type reference struct {
	ids *graph.IDs
	g   *dyngraph.Graph
	res *ingest.Resolver
	qs  []*query.Query
}

func newReference(t testing.TB, cfg Config) *reference {
	t.Helper()
	labels := graph.NewDict()
	opts := dyngraph.DefaultOptions()
	opts.Directed = cfg.Graph.Directed
	opts.DefaultVertexLabel = labels.Intern(cfg.Graph.DefaultVertexLabel)
	g, err := dyngraph.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	r := &reference{ids: graph.NewIDs(), g: g}
	r.res = &ingest.Resolver{IDs: r.ids, Labels: labels, DefaultEdgeLabel: cfg.Graph.DefaultEdgeLabel}
	sem, _ := query.ParseSemantics(cfg.Engine.Semantics)
	for _, qc := range cfg.Queries {
		p, err := query.Parse(qc.Name, qc.Pattern)
		if err != nil {
			t.Fatal(err)
		}
		p.Name = qc.Name
		q, err := query.Compile(p, labels, cfg.Graph.Directed, sem)
		if err != nil {
			t.Fatal(err)
		}
		r.qs = append(r.qs, q)
	}
	return r
}

// finalMatches is the reference for the net effect of a stream: the key of
// every match of every query in the graph the whole stream leaves, found by
// the static matcher.
func finalMatches(t testing.TB, cfg Config, recs []ingest.Record) map[string]bool {
	t.Helper()
	r := newReference(t, cfg)
	// One update per batch: the graph each event leaves, as Kafka orders them.
	for _, rec := range recs {
		u, err := r.res.Resolve(rec)
		if err != nil {
			continue // dead letters
		}
		if _, _, _, err := r.g.Apply([]graph.Update{u}); err != nil {
			t.Fatal(err)
		}
		r.g.Reorganize()
	}
	keys := map[string]bool{}
	for _, q := range r.qs {
		var mu sync.Mutex
		_, err := (&incremental.CPU{}).Static(r.g, []*query.Query{q}, incremental.Enumerate, func(_, _ int, _ graph.Sign, m []graph.VertexID) {
			b := canonicalMatch(q, m, r.ids)
			mu.Lock()
			keys[output.Key(q.Name, q.Pattern.Form(), b)] = true
			mu.Unlock()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// canonicalMatch is the bindings of m that the service reports: under
// Instances semantics, of all the automorphic images of m the one whose
// external ids are smallest in query-vertex order.
func canonicalMatch(q *query.Query, m []graph.VertexID, ids *graph.IDs) []output.Binding {
	auts := [][]int{nil}
	if q.Semantics == query.Instances {
		auts = q.AutomorphismList(5040)
	}
	var best []output.Binding
	for _, a := range auts {
		b := make([]output.Binding, len(m))
		for u := range m {
			img := u
			if a != nil {
				img = a[u]
			}
			b[u] = output.Binding{Var: q.Pattern.Vertices[u].Name, ID: ids.Name(m[img])}
		}
		if best == nil || slices.CompareFunc(b, best, func(x, y output.Binding) int { return strings.Compare(x.ID, y.ID) }) < 0 {
			best = b
		}
	}
	return best
}

// checkNet checks that events, read in order, leave exactly the matches of
// want: the last event of every key in want says appeared, and every other
// key's last event says disappeared. That is what a consumer keeping the
// current matches by key ends with, duplicates from restarts included.
func checkNet(t testing.TB, events []outEvent, want map[string]bool) {
	t.Helper()
	last := map[string]string{}
	for _, ev := range events {
		if ev.Key != ev.msgKey {
			t.Fatalf("event key %q but message key %q", ev.Key, ev.msgKey)
		}
		last[ev.Key] = ev.Change
	}
	missing, extra := 0, 0
	for k := range want {
		if last[k] != output.Appeared {
			if missing < 5 {
				t.Errorf("match %s: last event %q, want appeared", k, last[k])
			}
			missing++
		}
	}
	for k, c := range last {
		if c == output.Appeared && !want[k] {
			if extra < 5 {
				t.Errorf("match %s: still appeared at the end, but it is not in the final graph", k)
			}
			extra++
		}
	}
	if missing+extra > 0 {
		t.Fatalf("%d matches missing, %d left over, of %d in the final graph (%d events)", missing, extra, len(want), len(events))
	}
}

// groupOffsets are group's committed offsets of topic's partitions; ok is
// false when they cannot be read or one has none.
func groupOffsets(brokers []string, group, topic string, parts []int) (map[int]int64, bool) {
	cl, err := kafkaconn.Plaintext(brokers...).NewClient()
	if err != nil {
		return nil, false
	}
	defer cl.Close()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = topic
	for _, p := range parts {
		rt.Partitions = append(rt.Partitions, int32(p))
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 {
		return nil, false
	}
	out := map[int]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 || p.Offset < 0 {
				return nil, false
			}
			out[int(p.Partition)] = p.Offset
		}
	}
	return out, true
}
