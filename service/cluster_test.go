package service

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

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
	waitFor(t, "the output", time.Minute, func() bool { return int64(c.count()) >= end })
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
