package servicebench

import (
	"context"
	"crypto/rand"
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

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/service"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"
)

// MemberShards is the shard count of the members gcsm demo and gcsm bench
// service run: 64, as docs/operations.md suggests.
const MemberShards = 64

// Member is a member started by StartMembers.
type Member struct {
	Service *service.Service
	eng     *Engine
	stop    context.CancelFunc
	done    chan error
}

// StartMembers starts n members of cfg's cluster, member i with state
// under state/member-i; the first starts the embedded broker unless cfg
// names brokers. open gives member i its Engine; hold, if not nil, keeps
// the members from reading the input until it is closed.
func StartMembers(cfg service.Config, n int, log zerolog.Logger, hold <-chan struct{}, open func(i int) (*Engine, error)) ([]*Member, error) {
	var ms []*Member
	for i := range n {
		c := cfg
		c.State.Dir = filepath.Join(cfg.State.Dir, "member-"+strconv.Itoa(i))
		if i > 0 {
			c.Brokers = ms[0].Service.Brokers()
		}
		eng, err := open(i)
		if err != nil {
			StopMembers(ms)
			return nil, err
		}
		s, err := service.New(service.Options{Config: c, Matcher: eng.Matcher, Alloc: eng.Alloc,
			Log: log.With().Int("member", i).Logger(), Hold: hold})
		if err != nil {
			eng.Close()
			StopMembers(ms)
			return nil, fmt.Errorf("member %d: %w", i, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		m := &Member{Service: s, eng: eng, stop: cancel, done: make(chan error, 1)}
		go func() { m.done <- s.Run(ctx) }()
		ms = append(ms, m)
	}
	return ms, nil
}

// StopMembers stops members, the first (which may hold the embedded
// broker) last, and returns the first error.
func StopMembers(ms []*Member) error {
	var first error
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		m.stop()
		if err := <-m.done; err != nil && !errors.Is(err, context.Canceled) && first == nil {
			first = fmt.Errorf("member %d: %w", i, err)
		}
		m.eng.Close()
	}
	return first
}

// WaitMembers waits until every member owns shards (settled) or has
// applied n input records (applied), or a member stops.
func WaitMembers(ms []*Member, what string, limit time.Duration, cond func(service.Progress) bool) error {
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
			if !cond(m.Service.Progress()) {
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

// OwnsShards says that a member owns shards: WaitMembers' condition for a
// settled group.
func OwnsShards(p service.Progress) bool { return p.Shards > 0 }

// AppliedAll is WaitMembers' condition for a member that has applied n
// input records, all partitions together.
func AppliedAll(n int64) func(service.Progress) bool {
	return func(p service.Progress) bool {
		var a int64
		for _, o := range p.Position {
			a += o
		}
		return a >= n
	}
}

// ShareTable prints each member's shards and units matched.
func ShareTable(w io.Writer, ms []*Member) {
	var total int64
	for _, m := range ms {
		total += m.Service.Progress().Units
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "member\tshards\tunits matched\tshare")
	for i, m := range ms {
		p := m.Service.Progress()
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.1f%%\n", i, p.Shards, p.Units, 100*float64(p.Units)/float64(max(1, total)))
	}
	tw.Flush()
}

// MembersRun is one run of gcsm bench service --members: n members over
// the stream.
type MembersRun struct {
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
	Stages [][]StageShare `json:"stages"`
}

// MembersResult is gcsm bench service --members' JSON summary.
type MembersResult struct {
	Mix     string       `json:"mix"`
	Updates int          `json:"updates"`
	Batch   int          `json:"batch"`
	Shards  int          `json:"shards"`
	Device  string       `json:"device"`
	Runs    []MembersRun `json:"runs"`
	Speedup float64      `json:"speedup"` // the last run's throughput over the first's
}

// RunMembers runs the stream through one member, then through o.Members
// members, each run on topics of its own: the members first share the
// shards, the stream is then produced in full, and a run lasts from the
// members' first read to every member's applying all of it.
func RunMembers(o *Options, human io.Writer) (*MembersResult, error) {
	state, err := os.MkdirTemp("", "gcsm-bench-members-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(state)
	cfg := service.DefaultConfig()
	cfg.HTTP.Listen = ""
	cfg.Input.SessionTimeout = 6 * time.Second
	cfg.Batch = service.BatchConfig{Size: o.Batch, Linger: 10 * time.Millisecond}
	cfg.Graph = service.GraphConfig{Directed: true, DefaultEdgeLabel: "TRANSFER", DefaultVertexLabel: "Account"}
	cfg.Engine.Workers = o.Workers
	cfg.Queries = o.Queries
	cfg.Output.Compression = o.Compression
	conn, _, closeBroker, err := o.Connect(&cfg, state)
	if err != nil {
		return nil, err
	}
	defer closeBroker()
	stream := o.stream()
	res := &MembersResult{Mix: o.Name, Updates: len(stream), Batch: o.Batch, Shards: MemberShards}
	counts := []int{1}
	if o.Members > 1 {
		counts = append(counts, o.Members)
	}
	for _, n := range counts {
		r, device, err := o.membersRun(cfg, conn, filepath.Join(state, strconv.Itoa(n)), n, stream, human)
		if err != nil {
			return nil, err
		}
		res.Device = device
		res.Runs = append(res.Runs, r)
	}
	res.Speedup = res.Runs[len(res.Runs)-1].UpdatesPerSec / res.Runs[0].UpdatesPerSec
	fmt.Fprintf(human, "\n%d members against one: %.2fx\n", res.Runs[len(res.Runs)-1].Members, res.Speedup)
	return res, nil
}

// membersRun is one run of n members on topics of their own.
func (o *Options) membersRun(cfg service.Config, conn kafkaconn.Conn, state string, n int, stream []bench.TransferEvent, human io.Writer) (MembersRun, string, error) {
	run := strings.ToLower(rand.Text()[:8])
	cfg.State.Dir = state
	cfg.Input.Topic, cfg.Output.Topic, cfg.Output.DeadLetterTopic = "bench-"+run+"-edges", "bench-"+run+"-matches", "bench-"+run+"-dlq"
	cfg.Input.Group = "bench-" + run
	cfg.Cluster = service.ClusterConfig{Shards: MemberShards}
	cl, err := o.inputClient(conn, cfg, run, human)
	if err != nil {
		return MembersRun{}, "", err
	}
	defer cl.Close()
	ctx := context.Background()
	var devLine strings.Builder
	hold := make(chan struct{})
	ms, err := StartMembers(cfg, n, o.Log, hold, func(i int) (*Engine, error) { return o.Open(&devLine, i) })
	if err != nil {
		return MembersRun{}, "", err
	}
	device := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(devLine.String(), "\n", 2)[0], "device: "))
	if err := WaitMembers(ms, "the members to share the shards", time.Minute, OwnsShards); err != nil {
		StopMembers(ms)
		return MembersRun{}, "", err
	}
	// The whole stream is in the input before the members read any of it,
	// so that they are timed on a backlog, as gcsm bench service times one
	// member, and the broker does not take the producer's writes meanwhile.
	p := &streamProducer{cl: cl.Client, arr: newArrivals(o.Partitions, 0, false), transfers: o.Transfers}
	if err := p.produce(ctx, stream, 0); err != nil {
		StopMembers(ms)
		return MembersRun{}, "", err
	}
	t0 := time.Now()
	close(hold)
	if err := WaitMembers(ms, "the members to apply the stream", time.Hour, AppliedAll(int64(len(stream)))); err != nil {
		StopMembers(ms)
		return MembersRun{}, "", err
	}
	d := time.Since(t0)
	r := MembersRun{Members: n, Seconds: d.Seconds(), UpdatesPerSec: float64(len(stream)) / d.Seconds()}
	for _, m := range ms {
		pr := m.Service.Progress()
		r.Units, r.Shards, r.Events = append(r.Units, pr.Units), append(r.Shards, pr.Shards), r.Events+pr.Events
		var sr Result
		if err := gatherService(m.Service.Registry(), &sr); err != nil {
			StopMembers(ms)
			return MembersRun{}, "", err
		}
		r.Stages = append(r.Stages, sr.Stages)
	}
	fmt.Fprintf(human, "%d member(s), device %s: %d updates in %.2fs, %.0f updates/s, %d events\n", n, device, len(stream), d.Seconds(), r.UpdatesPerSec, r.Events)
	ShareTable(human, ms)
	for i, st := range r.Stages {
		var parts []string
		for _, x := range st {
			if x.Seconds > 0 {
				parts = append(parts, fmt.Sprintf("%s %.2fs", x.Stage, x.Seconds))
			}
		}
		fmt.Fprintf(human, "member %d stages: %s\n", i, strings.Join(parts, ", "))
	}
	if err := StopMembers(ms); err != nil {
		return MembersRun{}, "", err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	r.BrokerCeiling, err = membersCeiling(cctx, cfg, conn, o.Partitions, int64(len(stream)), r.Events, n, "bench-"+run+"-ceiling")
	if err != nil {
		return MembersRun{}, "", fmt.Errorf("broker ceiling: %w", err)
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
