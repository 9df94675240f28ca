package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/internal/kafkaconn"
)

// This file publishes files to an in-process Kafka cluster (kfake) and
// reads the topic back with kafka-go's Reader.

const producePartitions = 3

func produceCluster(t *testing.T) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(producePartitions))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// produceFileRecords reads path with ingest's file Reader.
func produceFileRecords(t *testing.T, path string, opts ingest.Options) []ingest.Record {
	t.Helper()
	r, c, err := ingest.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var recs []ingest.Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return recs
		}
		if err != nil {
			t.Fatal(err)
		}
		rec.Line = 0 // Decode's records have none
		recs = append(recs, rec)
	}
}

// producedEvent is one message read back, decoded.
type producedEvent struct {
	partition int
	key       string
	rec       ingest.Record
}

// produceReadTopic reads every message of every partition of topic.
func produceReadTopic(t *testing.T, broker, topic string) []producedEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []producedEvent
	d := ingest.Decoder{Keep: ingest.AllProps()}
	for p := range producePartitions {
		conn := kafkaconn.Plaintext(broker)
		first, last, err := ingest.Offsets(ctx, conn, topic, p)
		if errors.Is(err, kerr.UnknownTopicOrPartition) {
			return out // never created: nothing was published
		}
		if err != nil {
			t.Fatal(err)
		}
		if first == last {
			continue
		}
		err = ingest.ConsumePartition(ctx, conn, topic, int32(p), kgo.NewOffset().At(first), last, func(m *kgo.Record) error {
			rec, err := d.Decode(m.Value)
			if err != nil {
				return fmt.Errorf("partition %d offset %d: Decode(%s): %v", p, m.Offset, m.Value, err)
			}
			out = append(out, producedEvent{p, string(m.Key), rec})
			return nil
		})
		if err != nil {
			t.Fatalf("partition %d of [%d, %d): %v", p, first, last, err)
		}
	}
	return out
}

// produceCheckTopic checks that the topic holds exactly want: each record once,
// keyed by its source vertex (an edge set by its transfer id), all of one
// key on one partition, in the file's order.
func produceCheckTopic(t *testing.T, got []producedEvent, want []ingest.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("topic has %d events, the file %d", len(got), len(want))
	}
	key := func(rec ingest.Record) string {
		if rec.Op == graph.SetEdge {
			return rec.ID
		}
		return rec.Src
	}
	partition := map[string]int{}
	gotBySrc := map[string][]ingest.Record{}
	for _, c := range got {
		if c.key != key(c.rec) {
			t.Errorf("key %q on an event of %q", c.key, key(c.rec))
		}
		if p, ok := partition[c.key]; ok && p != c.partition {
			t.Errorf("key %q on partitions %d and %d", c.key, p, c.partition)
		}
		partition[c.key] = c.partition
		gotBySrc[c.key] = append(gotBySrc[c.key], c.rec)
	}
	wantBySrc := map[string][]ingest.Record{}
	for _, rec := range want {
		wantBySrc[key(rec)] = append(wantBySrc[key(rec)], rec)
	}
	for src, recs := range wantBySrc {
		if !slices.EqualFunc(gotBySrc[src], recs, func(a, b ingest.Record) bool { return reflect.DeepEqual(a, b) }) {
			t.Errorf("vertex %s:\n got %+v\nwant %+v", src, gotBySrc[src], recs)
		}
	}
	used := map[int]bool{}
	for _, p := range partition {
		used[p] = true
	}
	if len(partition) >= 10 && len(used) == 1 {
		t.Errorf("%d keys all on one partition: the key does not spread them", len(partition))
	}
}

var produceSummaryRE = regexp.MustCompile(`^produced (\d+) events to (\S+) in \d+\.\d\d s \(\d+ events/s\)\n$`)

func produceOK(t *testing.T, args ...string) (stdout, stderr string) {
	t.Helper()
	out, errs, code := gcsm(t, append([]string{"produce"}, args...)...)
	if code != 0 {
		t.Fatalf("gcsm produce %s: exit %d\nstderr:\n%s", strings.Join(args, " "), code, errs)
	}
	return out, errs
}

func TestProduce(t *testing.T) {
	broker := produceCluster(t)

	var csm strings.Builder
	csm.WriteString("t 40 100\n# a CSM stream\nv 1 7\nv 2 8\n")
	for i := range 150 {
		// Repeated sources, so that order within a key means something.
		fmt.Fprintf(&csm, "e %d %d %d\n", i%17, i%17+1+i%5, i%3)
		if i%4 == 0 {
			fmt.Fprintf(&csm, "-e %d %d\n", i%17, i%17+1+i%5)
		}
	}
	json := `{"op":"+","src":"acct:17","dst":"acct:42","label":"TRANSFER","src_label":"Account","dst_label":"Account","ts":"2026-11-21T10:00:00Z"}
{"op":"vertex","id":"acct:9","label":"Account","ts":1795255200001}
{"op":"delete","src":"acct:17","dst":"acct:42","label":"TRANSFER","ts":"2026-11-21T10:00:00.5+01:00"}
{"op":"insert","src":5,"dst":"acct:\"q\"\u00e9","label":3}
{"op":"-","src":"acct:9","dst":"acct:17"}
{"op":"+","src":"acct:1","dst":"acct:2","label":"TRANSFER","id":"tx-981","ts":"2026-11-20T10:00:00Z","props":{"amount":12000.5,"currency":"EUR","flagged":false},"src_props":{"country":"DE"}}
{"op":"vertex","id":"acct:3","label":"Account","props":{"country":"FR","since":2019}}
{"op":"set","vertex":"acct:3","props":{"country":null,"risk":0.93,"status":"flagged"}}
{"op":"set","edge":981,"ts":1795255200002,"props":{"amount":12500}}
{"op":"set","edge":"tx-981","props":{}}
`
	csv := "src,dst,time\na,b,60\nb,c,61\na,c,62\n"
	for _, tt := range []struct {
		name, file, content string
		format              string
	}{
		{"csm", "stream.csm", csm.String(), "auto"},
		{"json", "stream.json", json, "json"},
		{"csv", "stream.csv", csv, "csv"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), tt.file, tt.content)
			topic := "edges-" + tt.name
			// Every property is published, whatever a query will read.
			want := produceFileRecords(t, path, ingest.Options{Keep: ingest.AllProps()})
			stdout, _ := produceOK(t, "-u", path, "--topic", topic, "--brokers", broker, "--format", tt.format)
			m := produceSummaryRE.FindStringSubmatch(stdout)
			if m == nil || m[1] != fmt.Sprint(len(want)) || m[2] != topic {
				t.Fatalf("stdout %q, want a summary of %d events to %s", stdout, len(want), topic)
			}
			produceCheckTopic(t, produceReadTopic(t, broker, topic), want)
		})
	}
}

func TestProduceBadLine(t *testing.T) {
	broker := produceCluster(t)
	path := writeFile(t, t.TempDir(), "bad.csm", "e 1 2\ne 2 3\ne x 4\ne 3 4\n")

	_, stderr, code := gcsm(t, "produce", "-u", path, "--topic", "bad", "--brokers", broker)
	if code != 1 || !strings.Contains(stderr, path+`:3: vertex id "x" is not a non-negative integer`) {
		t.Fatalf("exit %d, stderr %q; want 1 and the bad line's place", code, stderr)
	}
	// Nothing was published: a bad line fails the run before the first event.
	if got := produceReadTopic(t, broker, "bad"); len(got) != 0 {
		t.Fatalf("a failed run published %d events", len(got))
	}

	stdout, stderr := produceOK(t, "-u", path, "--topic", "skip", "--brokers", broker, "--skip-bad")
	if !strings.HasPrefix(stdout, "produced 3 events to skip") || !strings.Contains(stderr, "skipped 1 bad lines") {
		t.Fatalf("--skip-bad: stdout %q, stderr %q", stdout, stderr)
	}
	produceCheckTopic(t, produceReadTopic(t, broker, "skip"), produceFileRecords(t, path, ingest.Options{SkipBad: true}))
}

// TestProduceRate checks that --rate holds publishing back. Only the lower
// bound is checked: sleeping guarantees it, while an upper bound would
// fail on a slow machine.
func TestProduceRate(t *testing.T) {
	broker := produceCluster(t)
	path := writeFile(t, t.TempDir(), "s.csm", strings.Repeat("e 1 2\n", 21))
	start := time.Now()
	produceOK(t, "-u", path, "--topic", "paced", "--brokers", broker, "--rate", "100")
	// The 21st event is due 20/100 s after the first.
	if elapsed := time.Since(start); elapsed < 200*time.Millisecond {
		t.Fatalf("21 events at 100/s took %v", elapsed)
	}
	if got := produceReadTopic(t, broker, "paced"); len(got) != 21 {
		t.Fatalf("%d events on the topic, want 21", len(got))
	}
}

func TestProduceUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-u", "x.csm"}, 2, "need -u STREAM and --topic TOPIC"},
		{[]string{"--topic", "t"}, 2, "need -u STREAM and --topic TOPIC"},
		{[]string{"-u", "x.csm", "--topic", "t", "--format", "xml"}, 2, `--format "xml": want auto, csm, snap, csv or json`},
		{[]string{"-u", "x.csm", "--topic", "t", "--rate", "-1"}, 2, "--rate -1: want a number of 0 or more"},
		{[]string{"-u", "x.csm", "--topic", "t", "--brokers", " , "}, 1, "--brokers names no broker"},
		{[]string{"-u", "x.csm", "--topic", "t", "--skip", "-1"}, 1, "--skip must not be negative, got -1"},
		{[]string{"-u", writeFile(t, t.TempDir(), "one.csm", "e 1 2\n"), "--topic", "t", "--brokers", freeAddr(t)}, 1, "connection refused"},
		{[]string{"-u", writeFile(t, t.TempDir(), "two.csm", "e 1 2\ne 2 3\n"), "--topic", "t", "--skip", "3"}, 1, "two.csm has only 2 events"},
		{[]string{"-u", filepath.Join(t.TempDir(), "none.csm"), "--topic", "t"}, 1, "no such file"},
	} {
		_, stderr, code := gcsm(t, append([]string{"produce"}, tt.args...)...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("gcsm produce %s: exit %d, stderr %q; want %d and %q", strings.Join(tt.args, " "), code, stderr, tt.code, tt.want)
		}
	}
}

// TestProduceBrokerGone closes the cluster while gcsm produce publishes to
// it. The run must fail with one line that says how many events of the
// file were acknowledged and how to resume; the cluster, reopened from its
// data directory, must hold that prefix, and the resume command, run
// against a fresh cluster, must publish exactly the rest.
func TestProduceBrokerGone(t *testing.T) {
	dataDir := t.TempDir()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(producePartitions), kfake.DataDir(dataDir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	broker := c.ListenAddrs()[0]

	var csm strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&csm, "e %d %d\n", i%97, i%89+100)
	}
	path := writeFile(t, t.TempDir(), "s.csm", csm.String())
	want := produceFileRecords(t, path, ingest.Options{})

	// Close the cluster after a few produce requests, from outside the
	// control function (Close waits for the cluster's loop).
	var requests atomic.Int32
	gone := make(chan struct{})
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		if requests.Add(1) == 10 {
			close(gone)
		}
		return nil, nil, false
	})
	go func() { <-gone; c.Close() }()

	// 3000 events at 2000/s take 1.5 s: the cluster goes within the first tenth.
	_, stderr, code := gcsm(t, "produce", "-u", path, "--topic", "gone", "--brokers", broker, "--rate", "2000")
	<-gone
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
	}
	if n := strings.Count(stderr, "\n"); n != 1 {
		t.Fatalf("stderr has %d lines, want one:\n%s", n, stderr)
	}
	m := regexp.MustCompile(`acknowledged (\d+) of 3000 events .*resume with: gcsm (produce .* --skip (\d+))\n$`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("stderr does not give the acknowledged count and the resume command:\n%s", stderr)
	}
	t.Log(stderr)
	acked, _ := strconv.Atoi(m[1])
	if skip, _ := strconv.Atoi(m[3]); skip != acked || acked == 0 || acked == len(want) {
		t.Fatalf("acknowledged %d, --skip %s: want the same count, strictly between 0 and %d", acked, m[3], len(want))
	}

	// The reopened cluster holds the acknowledged prefix (and perhaps more:
	// requests in flight when it closed).
	c2, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DataDir(dataDir))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	// Records hold property lists, so their events stand for them as keys.
	kept := map[string]int{}
	for _, e := range produceReadTopic(t, c2.ListenAddrs()[0], "gone") {
		kept[string(ingest.AppendEvent(nil, e.rec))]++
	}
	for i, rec := range want[:acked] {
		ev := string(ingest.AppendEvent(nil, rec))
		if kept[ev] == 0 {
			t.Fatalf("event %d of the acknowledged %d (%+v) is not on the topic", i, acked, rec)
		}
		kept[ev]--
	}

	// The resume command publishes exactly the rest.
	fresh := produceCluster(t)
	args := strings.Fields(strings.Replace(m[2], broker, fresh, 1))[1:] // without "produce"
	produceOK(t, args...)
	produceCheckTopic(t, produceReadTopic(t, fresh, "gone"), want[acked:])
}

func TestProduceResumeCommand(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-u", "s.csm", "--topic", "t"}, "gcsm produce -u s.csm --topic t --skip 7"},
		{[]string{"-u", "s.csm", "--skip", "3", "--topic", "t"}, "gcsm produce -u s.csm --topic t --skip 7"},
		{[]string{"--skip=3", "-u", "s.csm", "-skip", "4", "--topic", "t"}, "gcsm produce -u s.csm --topic t --skip 7"},
		{[]string{"-u", "my file's.csm", "--topic", "a;b", "--brokers", "h:9092,k:9092"}, `gcsm produce -u 'my file'\''s.csm' --topic 'a;b' --brokers h:9092,k:9092 --skip 7`},
	} {
		if got := resumeCommand(tt.args, 7); got != tt.want {
			t.Errorf("resumeCommand(%q) = %s, want %s", tt.args, got, tt.want)
		}
	}
}
