package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/service"
)

// memberShards is the shard count of the members gcsm demo and gcsm bench
// service run: 64, as docs/operations.md suggests.
const memberShards = 64

// memberRun is a member started by startMembers.
type memberRun struct {
	s    *service.Service
	eng  *executor
	stop context.CancelFunc
	done chan error
}

// startMembers starts n members of cfg's cluster, member i with state
// under state/member-i; the first starts the embedded broker unless cfg
// names brokers. open gives member i its engine; hold, if not nil, keeps
// the members from reading the input until it is closed.
func startMembers(cfg service.Config, n int, log zerolog.Logger, hold <-chan struct{}, open func(i int) (*executor, error)) ([]*memberRun, error) {
	var ms []*memberRun
	for i := range n {
		c := cfg
		c.State.Dir = filepath.Join(cfg.State.Dir, "member-"+strconv.Itoa(i))
		if i > 0 {
			c.Brokers = ms[0].s.Brokers()
		}
		eng, err := open(i)
		if err != nil {
			stopMembers(ms)
			return nil, err
		}
		s, err := service.New(service.Options{Config: c, Matcher: eng.matcher, Alloc: eng.alloc,
			Log: log.With().Int("member", i).Logger(), Hold: hold})
		if err != nil {
			eng.close()
			stopMembers(ms)
			return nil, fmt.Errorf("member %d: %w", i, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		m := &memberRun{s: s, eng: eng, stop: cancel, done: make(chan error, 1)}
		go func() { m.done <- s.Run(ctx) }()
		ms = append(ms, m)
	}
	return ms, nil
}

// stopMembers stops members, the first (which may hold the embedded
// broker) last, and returns the first error.
func stopMembers(ms []*memberRun) error {
	var first error
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		m.stop()
		if err := <-m.done; err != nil && !errors.Is(err, context.Canceled) && first == nil {
			first = fmt.Errorf("member %d: %w", i, err)
		}
		m.eng.close()
	}
	return first
}

// waitMembers waits until every member owns shards (settled) or has
// applied n input records (applied), or a member stops.
func waitMembers(ms []*memberRun, what string, limit time.Duration, cond func(service.Progress) bool) error {
	deadline := time.Now().Add(limit)
	for {
		ok := true
		for i, m := range ms {
			select {
			case err := <-m.done:
				m.done <- err
				return fmt.Errorf("member %d stopped: %v", i, err)
			default:
			}
			if !cond(m.s.Progress()) {
				ok = false
			}
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func ownsShards(p service.Progress) bool { return p.Shards > 0 }

func appliedAll(n int64) func(service.Progress) bool {
	return func(p service.Progress) bool {
		var a int64
		for _, o := range p.Position {
			a += o
		}
		return a >= n
	}
}

// memberEvent is what the members' comparison reads of an event: repeats
// after a rebalance have the same key, change and batch.
type memberEvent struct {
	Key    string `json:"key"`
	Change string `json:"change"`
	Batch  uint64 `json:"batch"`
}

// readEvents reads topic's partition 0 to its end.
func readEvents(ctx context.Context, brokers []string, topic string) ([]memberEvent, error) {
	conn := kafkaconn.Plaintext(brokers...)
	first, end, err := ingest.Offsets(ctx, conn, topic, 0)
	if err != nil || first == end {
		return nil, err
	}
	var out []memberEvent
	err = consumePartition(ctx, conn, topic, 0, kgo.NewOffset().AtStart(), end, func(m *kgo.Record) error {
		var ev memberEvent
		if err := json.Unmarshal(m.Value, &ev); err != nil {
			return fmt.Errorf("topic %q offset %d: %w", topic, m.Offset, err)
		}
		out = append(out, ev)
		return nil
	})
	return out, err
}

// union is a set of events, and the final state per key: the change of
// the key's event of the highest batch.
type union struct {
	events map[memberEvent]bool
	final  map[string]memberEvent
}

func unionOf(evs []memberEvent) union {
	u := union{events: map[memberEvent]bool{}, final: map[string]memberEvent{}}
	for _, e := range evs {
		u.events[e] = true
		if f, ok := u.final[e.Key]; !ok || e.Batch > f.Batch {
			u.final[e.Key] = e
		}
	}
	return u
}

func (u union) appeared() int {
	n := 0
	for _, e := range u.final {
		if e.Change == "appeared" {
			n++
		}
	}
	return n
}

func (u union) equal(v union) bool {
	if len(u.events) != len(v.events) {
		return false
	}
	for e := range u.events {
		if !v.events[e] {
			return false
		}
	}
	return true
}

// shareTable prints each member's shards and units matched.
func shareTable(w io.Writer, ms []*memberRun) {
	var total int64
	for _, m := range ms {
		total += m.s.Progress().Units
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "member\tshards\tunits matched\tshare")
	for i, m := range ms {
		p := m.s.Progress()
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.1f%%\n", i, p.Shards, p.Units, 100*float64(p.Units)/float64(max(1, total)))
	}
	tw.Flush()
}

// demoMembers is gcsm demo --members n: n members on the embedded broker
// share the stream; then one member follows the same batches alone, and
// the union of the members' alerts is compared with its alerts.
func demoMembers(stdout io.Writer, log zerolog.Logger, cfg service.Config, dev *deviceFlags, n int, evs []bench.TransferEvent, rate int) error {
	cfg.Cluster = service.ClusterConfig{Shards: memberShards, Group: "gcsm-demo-members"}
	var devLine strings.Builder
	open := func(int) (*executor, error) { return dev.open(&devLine, 0) }
	ms, err := startMembers(cfg, n, log, nil, open)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "gcsm demo: %d members, %d shards, embedded Kafka broker on %s, %s", n, memberShards, ms[0].s.Brokers()[0],
		strings.SplitN(devLine.String(), "\n", 2)[0]+"\n")
	brokers := ms[0].s.Brokers()
	// Each member must own its shards before the stream flows, or the
	// first would match it all before the others join.
	if err := waitMembers(ms, "the members to share the shards", time.Minute, ownsShards); err != nil {
		stopMembers(ms)
		return err
	}
	ctx := context.Background()
	d := &demo{out: io.Discard, seen: map[string]int{}, totals: map[string]int{}}
	t0 := time.Now()
	sent, err := d.produce(ctx, brokers, cfg.Input.Topic, evs, rate)
	if err != nil {
		stopMembers(ms)
		return err
	}
	if err := waitMembers(ms, "the members to apply the stream", 5*time.Minute, appliedAll(int64(sent))); err != nil {
		stopMembers(ms)
		return err
	}
	elapsed := time.Since(t0)
	fmt.Fprintf(stdout, "produced %d events; the members applied them all in %.2fs\n\n", sent, elapsed.Seconds())
	shareTable(stdout, ms)
	many, err := readEvents(ctx, brokers, cfg.Output.Topic)
	if err != nil {
		stopMembers(ms)
		return err
	}

	// One member alone, on its own group and output topic, follows the
	// batches the members cut.
	one := cfg
	one.Cluster.Group = "gcsm-demo-one"
	one.Output.Topic = cfg.Output.Topic + "-one"
	one.Brokers = brokers
	one.State.Dir = filepath.Join(cfg.State.Dir, "one")
	solo, err := startMembers(one, 1, log, nil, open)
	if err != nil {
		stopMembers(ms)
		return err
	}
	err = waitMembers(solo, "one member to apply the stream", 5*time.Minute, appliedAll(int64(sent)))
	if serr := stopMembers(solo); err == nil {
		err = serr
	}
	var single []memberEvent
	if err == nil {
		single, err = readEvents(ctx, brokers, one.Output.Topic)
	}
	if serr := stopMembers(ms); err == nil {
		err = serr
	}
	if err != nil {
		return err
	}
	u, v := unionOf(many), unionOf(single)
	same := u.equal(v)
	verdict := "yes"
	if !same {
		verdict = "NO"
	}
	fmt.Fprintf(stdout, "\nunion of the members' alerts: %d distinct events (%d written, repeats after rebalances included), %d matches standing at the end\n",
		len(u.events), len(many), u.appeared())
	fmt.Fprintf(stdout, "one member over the same batches: %d events, %d matches standing at the end\n", len(v.events), v.appeared())
	fmt.Fprintf(stdout, "the union equals one member's output: %s\n", verdict)
	if !same {
		return errors.New("the members' union differs from one member's output")
	}
	return nil
}

// membersFlag refuses --members with the modes it does not run.
func membersFlag(members, rate int, d time.Duration) error {
	if members > 0 && (rate > 0 || d > 0) {
		return errors.New("--members measures a backlog's throughput: leave out --rate and --duration")
	}
	return nil
}

// membersRun is one run of gcsm bench service --members: n members over
// the stream.
type membersRun struct {
	Members       int     `json:"members"`
	Seconds       float64 `json:"seconds"`
	UpdatesPerSec float64 `json:"updates_per_sec"`
	Units         []int64 `json:"units"`  // per member
	Shards        []int   `json:"shards"` // per member
	Events        int64   `json:"events"` // written, repeats included
	// BrokerCeiling is the updates per second of the broker alone under
	// the same traffic (membersCeiling).
	BrokerCeiling float64 `json:"broker_ceiling_updates_per_sec"`
	// Stages are each member's seconds per stage, summed over its
	// batches: a stage that does not shrink with more members is what
	// every member repeats.
	Stages [][]stageShare `json:"stages"`
}

// membersResult is gcsm bench service --members' JSON summary.
type membersResult struct {
	Mix     string       `json:"mix"`
	Updates int          `json:"updates"`
	Batch   int          `json:"batch"`
	Shards  int          `json:"shards"`
	Device  string       `json:"device"`
	Runs    []membersRun `json:"runs"`
	Speedup float64      `json:"speedup"` // the last run's throughput over the first's
}

// benchMembers runs the stream through one member, then through
// f.members members, each run on topics of its own: the members first
// share the shards, the stream is then produced in full, and a run lasts
// from the members' first read to every member's applying all of it.
func benchMembers(f *benchServiceFlags, mix string, qcfg []service.QueryConfig, human, stdout, stderr io.Writer) error {
	state, err := os.MkdirTemp("", "gcsm-bench-members-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	log, err := newLogger(stderr, service.LogConfig{Level: "warn", Format: "console"})
	if err != nil {
		return err
	}
	cfg := service.DefaultConfig()
	cfg.HTTP.Listen = ""
	cfg.Input.SessionTimeout = 6 * time.Second
	cfg.Batch = service.BatchConfig{Size: f.batch, Linger: 10 * time.Millisecond}
	cfg.Graph = service.GraphConfig{Directed: true, DefaultEdgeLabel: "TRANSFER", DefaultVertexLabel: "Account"}
	cfg.Engine.Workers = f.workers
	cfg.Queries = qcfg
	cfg.Output.Compression = f.compression
	conn, _, closeBroker, err := benchBroker(f, &cfg, state)
	if err != nil {
		return err
	}
	defer closeBroker()
	stream := bench.TransfersHead(f.accounts, f.updates, f.seed, f.head)
	res := &membersResult{Mix: mix, Updates: len(stream), Batch: f.batch, Shards: memberShards}
	counts := []int{1}
	if f.members > 1 {
		counts = append(counts, f.members)
	}
	for _, n := range counts {
		r, device, err := benchMembersRun(f, cfg, conn, filepath.Join(state, strconv.Itoa(n)), n, stream, log, human)
		if err != nil {
			return err
		}
		res.Device = device
		res.Runs = append(res.Runs, r)
	}
	res.Speedup = res.Runs[len(res.Runs)-1].UpdatesPerSec / res.Runs[0].UpdatesPerSec
	fmt.Fprintf(human, "\n%d members against one: %.2fx\n", res.Runs[len(res.Runs)-1].Members, res.Speedup)
	js, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, string(js))
	return nil
}

// benchMembersRun is one run of n members on topics of their own.
func benchMembersRun(f *benchServiceFlags, cfg service.Config, conn kafkaconn.Conn, state string, n int, stream []bench.TransferEvent, log zerolog.Logger, human io.Writer) (membersRun, string, error) {
	run := strings.ToLower(rand.Text()[:8])
	cfg.State.Dir = state
	cfg.Input.Topic, cfg.Output.Topic, cfg.Output.DeadLetterTopic = "bench-"+run+"-edges", "bench-"+run+"-matches", "bench-"+run+"-dlq"
	cfg.Input.Group = "bench-" + run
	cfg.Cluster = service.ClusterConfig{Shards: memberShards}
	cl, err := conn.NewClient(kgo.DefaultProduceTopic(cfg.Input.Topic),
		kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(1<<20))
	if err != nil {
		return membersRun{}, "", err
	}
	defer cl.Close()
	ctx := context.Background()
	if err := createTopics(ctx, cl, f.partitions, cfg.Input.Topic, cfg.Output.Topic, cfg.Output.DeadLetterTopic); err != nil {
		return membersRun{}, "", err
	}
	if f.brokers != "" {
		defer dropRunTopics(cl, "bench-"+run+"-", human)
	}
	var devLine strings.Builder
	hold := make(chan struct{})
	ms, err := startMembers(cfg, n, log, hold, func(i int) (*executor, error) {
		d := f.dev
		if d.device == "gpu" {
			d.first = i * max(1, d.gpus)
		}
		return d.open(&devLine, f.workers)
	})
	if err != nil {
		return membersRun{}, "", err
	}
	device := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(devLine.String(), "\n", 2)[0], "device: "))
	if err := waitMembers(ms, "the members to share the shards", time.Minute, ownsShards); err != nil {
		stopMembers(ms)
		return membersRun{}, "", err
	}
	// The whole stream is in the input before the members read any of it,
	// so that they are timed on a backlog, as gcsm bench service times one
	// member, and the broker does not take the producer's writes meanwhile.
	p := &streamProducer{cl: cl, arr: newArrivals(f.partitions, 0, false), transfers: f.transfers}
	if err := p.produce(ctx, stream, 0); err != nil {
		stopMembers(ms)
		return membersRun{}, "", err
	}
	t0 := time.Now()
	close(hold)
	if err := waitMembers(ms, "the members to apply the stream", time.Hour, appliedAll(int64(len(stream)))); err != nil {
		stopMembers(ms)
		return membersRun{}, "", err
	}
	d := time.Since(t0)
	r := membersRun{Members: n, Seconds: d.Seconds(), UpdatesPerSec: float64(len(stream)) / d.Seconds()}
	for _, m := range ms {
		pr := m.s.Progress()
		r.Units, r.Shards, r.Events = append(r.Units, pr.Units), append(r.Shards, pr.Shards), r.Events+pr.Events
		var sr serviceResult
		if err := gatherService(m.s.Registry(), &sr); err != nil {
			stopMembers(ms)
			return membersRun{}, "", err
		}
		r.Stages = append(r.Stages, sr.Stages)
	}
	fmt.Fprintf(human, "%d member(s), device %s: %d updates in %.2fs, %.0f updates/s, %d events\n", n, device, len(stream), d.Seconds(), r.UpdatesPerSec, r.Events)
	shareTable(human, ms)
	for i, st := range r.Stages {
		var parts []string
		for _, x := range st {
			if x.Seconds > 0 {
				parts = append(parts, fmt.Sprintf("%s %.2fs", x.Stage, x.Seconds))
			}
		}
		fmt.Fprintf(human, "member %d stages: %s\n", i, strings.Join(parts, ", "))
	}
	if err := stopMembers(ms); err != nil {
		return membersRun{}, "", err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	r.BrokerCeiling, err = membersCeiling(cctx, cfg, conn, f.partitions, int64(len(stream)), r.Events, n, "bench-"+run+"-ceiling")
	if err != nil {
		return membersRun{}, "", fmt.Errorf("broker ceiling: %w", err)
	}
	fmt.Fprintf(human, "the broker alone, with %d client(s) reading the stream and producing copies of the alerts as the members did: %.0f updates/s; the members at %.2f of it\n",
		n, r.BrokerCeiling, r.UpdatesPerSec/r.BrokerCeiling)
	return r, device, nil
}

// membersCeiling measures what the broker takes of n members' traffic with
// nothing else running: n clients at once, each reading all of cfg's input
// topic (updates records) as a member does, and producing its share of
// events copies of the run's alerts to a topic of its own, to. It returns
// updates per second: the most the members could reach through this
// broker. The cuts, the batch log and the commits are left out; they are a
// record or two a batch.
func membersCeiling(ctx context.Context, cfg service.Config, conn kafkaconn.Conn, partitions int, updates, events int64, n int, to string) (float64, error) {
	var sample []*kgo.Record
	if events > 0 {
		var err error
		if sample, _, err = sampleAlerts(ctx, conn, cfg.Output.Topic, events); err != nil {
			return 0, err
		}
	}
	copiers := make([]*kgo.Client, n)
	for i := range copiers {
		pr, err := newCopier(ctx, conn, to, partitions, cfg.Output.Compression)
		if err != nil {
			return 0, err
		}
		defer pr.Close()
		copiers[i] = pr
	}
	errs := make([]error, 2*n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i, pr := range copiers {
		wg.Go(func() {
			_, errs[2*i] = readAll(ctx, conn, cfg.Input.Topic, updates)
		})
		// Client i produces the i-th share of the events, the first
		// events%n shares one more than the rest.
		share := events / int64(n)
		if int64(i) < events%int64(n) {
			share++
		}
		if share > 0 {
			wg.Go(func() { errs[2*i+1] = produceCopies(ctx, pr, sample, int64(i)*(events/int64(n)), share) })
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return float64(updates) / time.Since(t0).Seconds(), nil
}
