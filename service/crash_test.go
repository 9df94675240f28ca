package service

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/output"
)

func newTestLogger(w io.Writer) zerolog.Logger { return zerolog.New(w) }

// TestCrashRestart kills the service with SIGKILL at seeded random moments
// and restarts it on the same state directory until it has consumed the
// whole stream. No match may be lost: the output, read in order, must end
// with exactly the final graph's matches (duplicates from re-reading after
// a crash are allowed; they carry the same keys).
func TestCrashRestart(t *testing.T) {
	eachTrial(t, 20, func(t *testing.T, trial int) {
		recs, vals := transferStream(2500, uint64(100+trial))
		crashTrial(t, uint64(trial), 1, vals, nil, func(cfg *Config) {}, func(cfg Config) map[string]bool { return finalMatches(t, cfg, recs) })
	})
}

// TestCrashRestartAtLeastOnce is TestCrashRestart with output.delivery
// at-least-once: repeats are allowed, losses are not.
func TestCrashRestartAtLeastOnce(t *testing.T) {
	eachTrial(t, 6, func(t *testing.T, trial int) {
		recs, vals := transferStream(2500, uint64(400+trial))
		crashTrial(t, uint64(trial), 1, vals, nil, func(cfg *Config) { cfg.Output.Delivery = AtLeastOnce },
			func(cfg Config) map[string]bool { return finalMatches(t, cfg, recs) })
	})
}

// eachTrial runs trial as n subtests, seeded 0 to n-1; one under -short.
func eachTrial(t *testing.T, n int, trial func(t *testing.T, trial int)) {
	if testing.Short() {
		n = 1
	}
	for i := range n {
		t.Run(fmt.Sprint("trial=", i), func(t *testing.T) { trial(t, i) })
	}
}

// TestCrashRestartPartitions is TestCrashRestart over three input
// partitions, whose records reach a batch interleaved: a restart must
// re-form the logged batches partition by partition.
func TestCrashRestartPartitions(t *testing.T) {
	eachTrial(t, 6, func(t *testing.T, trial int) {
		recs, vals := transferStream(2500, uint64(300+trial))
		// Keyed by edge, so that each edge's updates keep their order on
		// one partition and the final graph is the reference's.
		keys := make([][]byte, len(recs))
		for i, r := range recs {
			keys[i] = []byte(r.Src + ">" + r.Dst)
		}
		crashTrial(t, uint64(trial), 3, vals, keys, func(cfg *Config) {}, func(cfg Config) map[string]bool { return finalMatches(t, cfg, recs) })
	})
}

// TestCrashRestartTransfers is TestCrashRestart over parallel transfers
// with predicates: the bundles a checkpoint holds must agree with its graph
// and offsets, whatever the moment of the kill.
func TestCrashRestartTransfers(t *testing.T) {
	eachTrial(t, 6, func(t *testing.T, trial int) {
		recs, vals := transferRecords(1500, uint64(200+trial))
		crashTrial(t, uint64(trial), 1, vals, nil, func(cfg *Config) {
			cfg.Engine.Semantics = "embeddings"
			cfg.Queries = transferQueries[:2]
		}, func(cfg Config) map[string]bool { return finalTransferKeys(t, cfg, recs) })
	})
}

// crashTrial runs the service as a child process over vals (keyed by keys
// unless nil) on the input's partitions, SIGKILLs it one
// to three times at random moments while half the stream arrives, lets a
// last run finish, and checks that the events' net effect is want's keys.
func crashTrial(t *testing.T, seed uint64, partitions int, vals, keys [][]byte, configure func(*Config), want func(Config) map[string]bool) {
	rng := rand.New(rand.NewPCG(seed, 99))
	addrs := cluster(t, 1, partitions)
	cfg := testConfig(t, addrs)
	cfg.Batch = BatchConfig{Size: 64, Linger: 5 * time.Millisecond}
	cfg.State.CheckpointEvery = time.Duration(50+rng.IntN(200)) * time.Millisecond
	configure(&cfg)
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := consume(t, addrs, "matches", true)
	// Half the stream waits; the rest arrives while the service runs.
	half := len(vals) / 2
	produceKeyed(t, addrs, "edges", vals[:half], keys[:min(half, len(keys))])
	produced := make(chan struct{})
	delay := time.Duration(rng.IntN(500)) * time.Millisecond
	go func() {
		defer close(produced)
		time.Sleep(delay)
		produceKeyed(t, addrs, "edges", vals[half:], keys[min(half, len(keys)):])
	}()
	var stderr syncBuilder
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("children's logs:\n%s", stderr.String())
		}
	})
	kills := 1 + rng.IntN(3)
	for run := 0; ; run++ {
		cmd, ready := startChild(t, cfgJSON, &stderr)
		if run < kills {
			time.Sleep(time.Duration(300+rng.IntN(1500)) * time.Millisecond)
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			continue
		}
		<-produced
		select {
		case <-ready:
		case <-time.After(time.Minute):
			t.Fatalf("the last run did not start\n%s", stderr.String())
		}
		// The last run goes on until the group's committed offset,
		// which only a checkpoint moves, covers the whole stream.
		waitFor(t, "the stream to be committed", 2*time.Minute, func() bool {
			return committed(t, addrs, cfg.Input.Group, partitions) == int64(len(vals))
		})
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("last run: %v\n%s", err, stderr.String())
		}
		break
	}
	// Every event written before the final checkpoint is readable once the
	// output topic's end is reached.
	end := topicEnd(t, addrs, "matches")
	waitFor(t, "the output", time.Minute, func() bool { return out.reached(end) })
	events, _ := out.snapshot(t)
	checkNet(t, events, want(cfg))
	if cfg.Output.Delivery == ExactlyOnce {
		checkOnce(t, events)
	}
	t.Logf("%d kills, %d events for %d messages", kills, len(events), len(vals))
}

// checkOnce fails unless each key's events, read committed and ordered by
// batch (members write at once), alternate appeared and disappeared from
// an appeared: a repeat after a crash would show as the same change twice
// in a row.
func checkOnce(t testing.TB, events []outEvent) {
	t.Helper()
	events = slices.Clone(events)
	slices.SortStableFunc(events, func(a, b outEvent) int { return cmp.Compare(a.Batch, b.Batch) })
	last := map[string]string{}
	repeats := 0
	for i, ev := range events {
		want := output.Appeared
		if last[ev.Key] == output.Appeared {
			want = output.Disappeared
		}
		if ev.Change != want {
			if repeats < 5 {
				t.Errorf("event %d (batch %d): key %s %s after %q", i, ev.Batch, ev.Key, ev.Change, last[ev.Key])
			}
			repeats++
		}
		last[ev.Key] = ev.Change
	}
	if repeats > 0 {
		t.Fatalf("%d of %d events break their key's alternation: delivered more than once", repeats, len(events))
	}
}

// syncBuilder is a strings.Builder that the children's stderr copiers may
// share.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// committed is the group's committed offset of partition 0, or -1.
func committed(t testing.TB, brokers []string, group string, partitions int) int64 {
	parts := make([]int, partitions)
	for i := range parts {
		parts[i] = i
	}
	offs, ok := groupOffsets(brokers, group, "edges", parts)
	if !ok || len(offs) != partitions {
		return -1
	}
	var total int64
	for _, o := range offs {
		total += o
	}
	return total
}

// topicEnd is the end offset of partition 0 of topic.
func topicEnd(t testing.TB, brokers []string, topic string) int64 {
	t.Helper()
	_, end, err := ingest.Offsets(context.Background(), kafkaconn.Plaintext(brokers...), topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	return end
}
