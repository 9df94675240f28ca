package service

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/output"
)

// memberCluster starts an in-process Kafka cluster whose input has
// partitions partitions and whose output topics have one each.
func memberCluster(t testing.TB, partitions int, outputs ...string) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1),
		kfake.SeedTopics(int32(partitions), "edges"), kfake.SeedTopics(1, append(outputs, "edges.dlq")...),
		kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// memberConfig is a member's configuration: shards shards, its group and
// output topic.
func memberConfig(t testing.TB, brokers []string, shards int, group, out string) Config {
	cfg := testConfig(t, brokers)
	cfg.Cluster = ClusterConfig{Shards: shards, Group: group, Topic: group + ".shards"}
	cfg.Output.Topic = out
	cfg.Input.SessionTimeout = 500 * time.Millisecond
	return cfg
}

// applied is the number of input records a service has applied.
func applied(s *Service) int64 {
	var n int64
	for _, o := range s.Progress().Position {
		n += o
	}
	return n
}

// eventID is an event as a set of events knows it: repeats of an event
// after a rebalance or a replay have the same key, change and batch.
type eventID struct {
	key, change string
	batch       uint64
}

func eventSet(events []outEvent) map[eventID]bool {
	set := map[eventID]bool{}
	for _, ev := range events {
		set[eventID{ev.Key, ev.Change, ev.Batch}] = true
	}
	return set
}

// finalByBatch is what a consumer of several members' output keeps: per
// key, the change of its event of the highest batch. The members write
// independently, so the output topic's order is not the batches' order.
func finalByBatch(t testing.TB, events []outEvent) map[string]bool {
	t.Helper()
	type last struct {
		batch  uint64
		change string
	}
	m := map[string]last{}
	for _, ev := range events {
		l, ok := m[ev.Key]
		if ok && l.batch == ev.Batch && l.change != ev.Change {
			t.Fatalf("key %s: both %s and %s in batch %d", ev.Key, l.change, ev.Change, ev.Batch)
		}
		if !ok || ev.Batch > l.batch {
			m[ev.Key] = last{ev.Batch, ev.Change}
		}
	}
	out := map[string]bool{}
	for k, l := range m {
		if l.change == output.Appeared {
			out[k] = true
		}
	}
	return out
}

// runMembers runs n members until they have applied records input
// records, and returns their output and the units each matched. Once all
// own shards, it calls feed, which may produce input.
func runMembers(t *testing.T, brokers []string, n, shards int, group, out string, records int64, configure func(*Config), feed func()) ([]outEvent, []int64) {
	t.Helper()
	c := consume(t, brokers, out, true)
	var rs []*running
	for range n {
		cfg := memberConfig(t, brokers, shards, group, out)
		configure(&cfg)
		rs = append(rs, start(t, cfg))
	}
	waitFor(t, "the shards to spread", time.Minute, func() bool {
		sum := 0
		for _, r := range rs {
			k := r.s.Progress().Shards
			if k == 0 {
				return false
			}
			sum += k
		}
		return sum == shards
	})
	feed()
	waitFor(t, "every member to apply the stream", 2*time.Minute, func() bool {
		for _, r := range rs {
			if applied(r.s) < records {
				return false
			}
		}
		return true
	})
	units := make([]int64, n)
	for i, r := range rs {
		r.shutdown(t)
		units[i] = r.s.Progress().Units
	}
	// Every event is written before its batch counts as applied.
	end := topicEnd(t, brokers, out)
	waitFor(t, "the output", time.Minute, func() bool { return c.reached(end) })
	events, _ := c.snapshot(t)
	return events, units
}

// TestMembersEqualOne: 1 to 4 members, joining while the stream is
// consumed, emit together exactly the events of one member over the same
// batches (a set of key, change and batch: repeats after a rebalance are
// allowed), and over one partition their final matches, each key's event
// of the highest batch, are the final graph's.
func TestMembersEqualOne(t *testing.T) {
	type trial struct {
		seed                       uint64
		batch, members, partitions int
		queries                    []QueryConfig
	}
	ring := testConfig(t, nil).Queries
	trials := []trial{{1, 64, 3, 1, ring}, {2, 200, 2, 3, ring[:1]}, {3, 31, 4, 2, ring[1:]}, {4, 128, 1, 3, ring}, {5, 97, 3, 1, ring}}
	if testing.Short() {
		trials = trials[:1]
	}
	for _, tr := range trials {
		t.Run(fmt.Sprintf("seed=%d,batch=%d,members=%d,partitions=%d", tr.seed, tr.batch, tr.members, tr.partitions), func(t *testing.T) {
			brokers := memberCluster(t, tr.partitions, "one", "many")
			recs, vals := transferStream(3000, tr.seed)
			configure := func(cfg *Config) {
				cfg.Batch = BatchConfig{Size: tr.batch, Linger: 5 * time.Millisecond}
				cfg.Queries = tr.queries
			}
			// The members cut the batches as the stream arrives; one member
			// follows their cuts afterwards.
			many, units := runMembers(t, brokers, tr.members, 8, "many", "many", int64(len(vals)), configure, func() {
				produce(t, brokers, "edges", vals)
			})
			one, _ := runMembers(t, brokers, 1, 8, "one", "one", int64(len(vals)), configure, func() {})
			want, got := eventSet(one), eventSet(many)
			if len(want) == 0 {
				t.Fatal("no events: the trial tests nothing")
			}
			for e := range want {
				if !got[e] {
					t.Errorf("missing %v", e)
				}
			}
			for e := range got {
				if !want[e] {
					t.Errorf("extra %v", e)
				}
			}
			if t.Failed() {
				t.FailNow()
			}
			// Several partitions have no order between them, so only one
			// has a final graph to compare with.
			if tr.partitions == 1 {
				cfg := testConfig(t, brokers)
				configure(&cfg)
				truth := finalMatches(t, cfg, recs)
				if f := finalByBatch(t, many); !maps.Equal(f, truth) {
					t.Fatalf("final matches: %d, want %d", len(f), len(truth))
				}
			}
			t.Logf("%d events (%d with repeats), units per member %v", len(want), len(many), units)
			if slices.Contains(units, 0) && tr.members > 1 {
				t.Errorf("a member matched nothing: %v", units)
			}
		})
	}
}

// shardsDone says whether every shard's committed next batch is past the
// last cut, and the cuts cover records input records: then every batch's
// output is acknowledged for every shard.
func shardsDone(t testing.TB, brokers []string, cfg Config, records int64) bool {
	group, topic, cutsTopic := cfg.clusterNames()
	conn := kafkaconn.Plaintext(brokers...)
	first, end, err := ingest.Offsets(context.Background(), conn, cutsTopic, 0)
	if err != nil || end == 0 {
		return false
	}
	cl, err := conn.NewClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{cutsTopic: {0: kgo.NewOffset().At(first)}}),
		kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	covered := map[int]int64{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for o := first; o < end; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil || fs.Err() != nil {
			return false
		}
		var bad error
		fs.EachRecord(func(m *kgo.Record) {
			o = m.Offset + 1
			_, ends, err := ingest.ParseCut(m.Value)
			if err != nil && bad == nil {
				bad = fmt.Errorf("cut %d: %v", m.Offset, err)
			}
			for p, e := range ends {
				covered[p] = max(covered[p], e)
			}
		})
		if bad != nil {
			t.Fatal(bad)
		}
	}
	var n int64
	for _, e := range covered {
		n += e
	}
	if n < records {
		return false
	}
	parts := make([]int, cfg.Cluster.Shards)
	for i := range parts {
		parts[i] = i
	}
	offs, ok := groupOffsets(brokers, group, topic, parts)
	if !ok {
		return false
	}
	done := 0
	for _, o := range offs {
		if o == end+1 {
			done++
		}
	}
	return done == cfg.Cluster.Shards
}

// TestMembersKill runs three members as child processes, SIGKILLs one to
// three of them at seeded random moments while the stream arrives, starts
// each again on its state directory after a while, and checks the final
// state of every match (the event of the highest batch per key, across all
// members' output) against the final graph: their shards moved to the
// others, and nothing was lost or left stale.
func TestMembersKill(t *testing.T) {
	eachTrial(t, 6, func(t *testing.T, trial int) { membersKillTrial(t, uint64(trial)) })
}

func membersKillTrial(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 23))
	brokers := memberCluster(t, 1, "matches")
	recs, vals := transferStream(2500, 300+seed)
	cfg := memberConfig(t, brokers, 8, "kill", "matches")
	cfg.Batch = BatchConfig{Size: 64, Linger: 5 * time.Millisecond}
	cfg.State.CheckpointEvery = time.Duration(50+rng.IntN(200)) * time.Millisecond
	out := consume(t, brokers, "matches", true)
	var stderr syncBuilder
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("children's logs:\n%s", stderr.String())
		}
	})
	const n = 3
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	procs := make([]*exec.Cmd, n)
	ready := make([]chan struct{}, n) // closed when child i says SIGTERM is a clean stop
	startChild := func(i int) {
		c := cfg
		c.State.Dir = dirs[i]
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		procs[i], ready[i] = startChild(t, b, &stderr)
	}
	for i := range n {
		startChild(i)
	}
	t.Cleanup(func() {
		for _, p := range procs {
			if p != nil && p.ProcessState == nil {
				p.Process.Kill()
				p.Wait()
			}
		}
	})
	produce(t, brokers, "edges", vals[:len(vals)/2])
	produced := make(chan struct{})
	delay := time.Duration(rng.IntN(500)) * time.Millisecond
	go func() {
		defer close(produced)
		time.Sleep(delay)
		produce(t, brokers, "edges", vals[len(vals)/2:])
	}()
	kills := 1 + rng.IntN(3)
	for range kills {
		time.Sleep(time.Duration(200+rng.IntN(1000)) * time.Millisecond)
		i := rng.IntN(n)
		procs[i].Process.Signal(syscall.SIGKILL)
		procs[i].Wait()
		// The others take its shards once its session times out; it comes
		// back a little later, from its checkpoint.
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		startChild(i)
	}
	<-produced
	waitFor(t, "every shard's output to be acknowledged", 2*time.Minute, func() bool {
		return shardsDone(t, brokers, cfg, int64(len(vals)))
	})
	for i, p := range procs {
		// A member restarted late may still be starting, when SIGTERM
		// would kill it rather than stop it.
		select {
		case <-ready[i]:
		case <-time.After(time.Minute):
			t.Fatalf("member %d never said it was ready", i)
		}
		p.Process.Signal(syscall.SIGTERM)
		if err := p.Wait(); err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
	}
	end := topicEnd(t, brokers, "matches")
	waitFor(t, "the output", time.Minute, func() bool { return out.reached(end) })
	events, _ := out.snapshot(t)
	truth := finalMatches(t, cfg, recs)
	got := finalByBatch(t, events)
	missing, extra := 0, 0
	for k := range truth {
		if !got[k] {
			missing++
		}
	}
	for k := range got {
		if !truth[k] {
			extra++
		}
	}
	if missing+extra > 0 {
		t.Fatalf("%d matches missing, %d left over, of %d in the final graph (%d events, %d kills)", missing, extra, len(truth), len(events), kills)
	}
	checkOnce(t, events)
	t.Logf("%d kills, %d events, %d final matches", kills, len(events), len(truth))
}

// TestMemberJoins: a second member joins after the first has applied half
// the stream. It catches up from the log, takes its shards, and emits them
// from their committed batches on: the union of both members' output is
// one member's over the same batches, with the final graph's matches.
func TestMemberJoins(t *testing.T) {
	brokers := memberCluster(t, 2, "one", "two")
	_, vals := transferStream(3000, 41)
	half := int64(len(vals) / 2)
	c := consume(t, brokers, "two", true)
	configure := func(cfg *Config) { cfg.Batch = BatchConfig{Size: 50, Linger: 5 * time.Millisecond} }
	cfg := memberConfig(t, brokers, 8, "two", "two")
	configure(&cfg)
	first := start(t, cfg)
	produce(t, brokers, "edges", vals[:half])
	waitFor(t, "the first member to apply half the stream", time.Minute, func() bool { return applied(first.s) >= half })
	cfg2 := memberConfig(t, brokers, 8, "two", "two")
	configure(&cfg2)
	second := start(t, cfg2)
	waitFor(t, "the second member to take shards", time.Minute, func() bool {
		return second.s.Progress().Shards > 0 && first.s.Progress().Shards+second.s.Progress().Shards == 8
	})
	produce(t, brokers, "edges", vals[half:])
	waitFor(t, "both members to apply the stream", time.Minute, func() bool {
		return applied(first.s) >= int64(len(vals)) && applied(second.s) >= int64(len(vals))
	})
	first.shutdown(t)
	second.shutdown(t)
	if second.s.Progress().Units == 0 {
		t.Fatal("the second member matched nothing")
	}
	end := topicEnd(t, brokers, "two")
	waitFor(t, "the output", time.Minute, func() bool { return c.reached(end) })
	two, _ := c.snapshot(t)
	one, _ := runMembers(t, brokers, 1, 8, "one", "one", int64(len(vals)), configure, func() {})
	if want, got := eventSet(one), eventSet(two); !maps.Equal(want, got) {
		t.Fatalf("two members' events differ from one's: %d distinct, want %d", len(got), len(want))
	}
}

// TestMemberHolds: members started on a backlog with Options.Hold read
// none of it while they join, so the one started first does not match the
// backlog alone; once Hold is closed both apply all of it and share the
// units.
func TestMemberHolds(t *testing.T) {
	brokers := memberCluster(t, 2, "held")
	_, vals := transferStream(3000, 43)
	produce(t, brokers, "edges", vals)
	hold := make(chan struct{})
	var rs []*running
	for range 2 {
		cfg := memberConfig(t, brokers, 8, "held", "held")
		cfg.Batch = BatchConfig{Size: 50, Linger: 5 * time.Millisecond}
		rs = append(rs, startOpts(t, Options{Config: cfg, Log: zerolog.New(io.Discard), Hold: hold}))
		// Time for the first to read the backlog, were it not held.
		time.Sleep(500 * time.Millisecond)
	}
	waitFor(t, "the shards to spread", time.Minute, func() bool {
		a, b := rs[0].s.Progress().Shards, rs[1].s.Progress().Shards
		return a > 0 && b > 0 && a+b == 8
	})
	for i, r := range rs {
		if n := applied(r.s); n != 0 {
			t.Fatalf("member %d applied %d records while held", i, n)
		}
	}
	close(hold)
	waitFor(t, "both members to apply the stream", time.Minute, func() bool {
		return applied(rs[0].s) >= int64(len(vals)) && applied(rs[1].s) >= int64(len(vals))
	})
	a, b := rs[0].s.Progress().Units, rs[1].s.Progress().Units
	if a == 0 || b == 0 || min(a, b)*4 < a+b {
		t.Fatalf("the members matched %d and %d units: want each a quarter or more", a, b)
	}
}

// TestMemberReplays: a member restarts on its state, past batch k, and
// finds its shards' committed next batch rewound to c <= k, as when the
// member that emitted them died before committing. It must emit every
// shard's output from c on again, exactly the events of batches c.. of its
// first run, from an older checkpoint (keep 100) or, with none left that
// old, from the logs' beginning (keep 2).
func TestMemberReplays(t *testing.T) {
	for _, keep := range []int{2, 100} {
		t.Run(fmt.Sprint("keep=", keep), func(t *testing.T) { memberReplays(t, keep) })
	}
}

func memberReplays(t *testing.T, keep int) {
	brokers := memberCluster(t, 2, "first", "second")
	_, vals := transferStream(3000, 77)
	cfg := memberConfig(t, brokers, 8, "replay", "first")
	cfg.Batch = BatchConfig{Size: 40, Linger: 5 * time.Millisecond}
	cfg.State.CheckpointEvery = 20 * time.Millisecond
	cfg.State.Keep = keep
	first := consume(t, brokers, "first", true)
	r := start(t, cfg)
	produce(t, brokers, "edges", vals)
	waitFor(t, "the member to apply the stream", time.Minute, func() bool { return applied(r.s) >= int64(len(vals)) })
	r.shutdown(t)
	k := r.s.Progress().Batches
	end := topicEnd(t, brokers, "first")
	waitFor(t, "the output", time.Minute, func() bool { return first.reached(end) })
	before, _ := first.snapshot(t)

	c := k / 2
	group, topic, _ := cfg.clusterNames()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = group, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for i := range cfg.Cluster.Shards {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = int32(i), int64(c), -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	// v10 names topics by id alone (see ingest's group).
	vers := kversion.Stable()
	vers.SetMaxKeyVersion(int16(kmsg.OffsetCommit), 9)
	cl, err := kafkaconn.Plaintext(brokers...).NewClient(kgo.MaxVersions(vers))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		for _, p := range rt.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				t.Fatalf("rewinding shard %d: %v", p.Partition, err)
			}
		}
	}

	second := consume(t, brokers, "second", true)
	cfg.Output.Topic = "second"
	r = start(t, cfg)
	waitFor(t, "every shard to be acknowledged again", time.Minute, func() bool { return shardsDone(t, brokers, cfg, int64(len(vals))) })
	r.shutdown(t)
	end = topicEnd(t, brokers, "second")
	waitFor(t, "the output", time.Minute, func() bool { return second.reached(end) })
	after, _ := second.snapshot(t)
	want := map[eventID]bool{}
	for e := range eventSet(before) {
		if e.batch >= c {
			want[e] = true
		}
	}
	if len(want) == 0 {
		t.Fatal("no events from batch c on: the test tests nothing")
	}
	if got := eventSet(after); !maps.Equal(got, want) {
		t.Fatalf("after the rewind to batch %d of %d: %d distinct events, want %d", c, k, len(got), len(want))
	}
}

// TestMemberRefusesGap: a member whose state needs input records that
// retention dropped stops with an error naming the topic, the partition
// and both offsets, instead of matching another graph than the others.
func TestMemberRefusesGap(t *testing.T) {
	brokers := memberCluster(t, 1, "matches")
	_, vals := transferStream(100, 5)
	produce(t, brokers, "edges", vals)
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDeleteRecordsRequest()
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = "edges"
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 50
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 5000
	if _, err := req.RequestWith(context.Background(), cl); err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{Config: memberConfig(t, brokers, 4, "gap", "matches"), Log: zerolog.New(io.Discard)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = s.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), `goes on from offset 0 of topic "edges" partition 0, but the topic starts at offset 50 now`) {
		t.Fatalf("Run: %v", err)
	}
}
