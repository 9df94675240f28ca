package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/output"
	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/service"
)

// This file writes match events and dead letters to in-process Kafka
// clusters (kfake), standalone or persisting like gcsm run's embedded
// broker, and reads them back with gcsm tail.

// ring3Form is the key's pattern part of the ring3 the tests run.
func ring3Form(t *testing.T) string {
	p, err := query.Parse("ring3", "(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a)")
	if err != nil {
		t.Fatal(err)
	}
	return p.Form()
}

// tailEvent is the event of query q over the account ids.
func tailEvent(q, change string, ids ...string) output.Event {
	e := output.Event{Query: q, Change: change, Batch: 7}
	for i, id := range ids {
		e.Match = append(e.Match, output.Binding{Var: string(rune('a' + i)), ID: id})
		e.Edges = append(e.Edges, [3]string{id, ids[(i+1)%len(ids)], "TRANSFER"})
	}
	e.Key = output.Key(q, "", e.Match)
	return e
}

var tailEvents = []output.Event{
	tailEvent("ring3", output.Appeared, "acct:1", "acct:2", "acct:3"),
	tailEvent("split", output.Appeared, "acct:4", "acct 5", "x=y", "acct:7"),
	tailEvent("ring3", output.Disappeared, "acct:1", "acct:2", "acct:3"),
}

var tailDead = []output.DeadLetter{
	output.NewDeadLetter("missing field dst", "edges", 0, 17, []byte(`{"op":"+","src":"acct-1"}`)),
	output.NewDeadLetter("not JSON", "edges", 2, 90, []byte("\xff\x00")),
}

func tailJSON(es ...output.Event) []string {
	var v []string
	for i := range es {
		v = append(v, string(output.AppendJSON(nil, &es[i])))
	}
	return v
}

func tailDeadJSON(ds ...output.DeadLetter) []string {
	var v []string
	for _, d := range ds {
		v = append(v, fmt.Sprintf(`{"error":%q,"topic":%q,"partition":%d,"offset":%d,"value":%q`, d.Error, d.Topic, d.Partition, d.Offset, d.Value))
		if d.Encoding != "" {
			v[len(v)-1] += fmt.Sprintf(`,"value_encoding":%q`, d.Encoding)
		}
		v[len(v)-1] += "}"
	}
	return v
}

// tailCluster starts a cluster with topics of the given partitions.
func tailCluster(t *testing.T, partitions int32, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(),
		kfake.SeedTopics(partitions, "edges", "matches", "edges.dlq")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// tailWrite appends values to partition p of topic.
func tailWrite(t *testing.T, broker, topic string, p int, values ...string) {
	t.Helper()
	cl, err := kafkaconn.Plaintext(broker).NewClient(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte(v)})
	}
	if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// tailRows returns the table's rows without the header, each split in
// columns of two or more spaces, with the time column checked and dropped.
func tailRows(t *testing.T, stdout, header string) [][]string {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	if got := strings.Join(regexp.MustCompile(`  +`).Split(lines[0], -1), "|"); got != header {
		t.Fatalf("header %q, want %q\n%s", got, header, stdout)
	}
	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}$`)
	var rows [][]string
	for _, l := range lines[1:] {
		cols := regexp.MustCompile(`  +`).Split(l, -1)
		if !stamp.MatchString(cols[0]) {
			t.Fatalf("row %q: no time first", l)
		}
		rows = append(rows, cols[1:])
	}
	return rows
}

func tailEqual(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\ngot\n%s\nwant\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTail(t *testing.T) {
	c := tailCluster(t, 1)
	b := c.ListenAddrs()[0]
	tailWrite(t, b, "matches", 0, tailJSON(tailEvents...)...)
	tailWrite(t, b, "edges.dlq", 0, tailDeadJSON(tailDead...)...)

	stdout := gcsmOK(t, "tail", "--brokers", b, "--from-beginning")
	var got []string
	for _, r := range tailRows(t, stdout, "TIME (UTC)|QUERY|CHANGE|MATCH|KEY") {
		got = append(got, strings.Join(r, "|"))
	}
	tailEqual(t, "table", got, []string{
		"ring3|appeared|a=acct:1 b=acct:2 c=acct:3|" + tailEvents[0].Key,
		`split|appeared|a=acct:4 b="acct 5" c="x=y" d=acct:7|` + tailEvents[1].Key,
		"ring3|disappeared|a=acct:1 b=acct:2 c=acct:3|" + tailEvents[2].Key,
	})

	stdout = gcsmOK(t, "tail", "--brokers", b, "--from-beginning", "--format", "json")
	tailEqual(t, "json", strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"), tailJSON(tailEvents...))

	stdout = gcsmOK(t, "tail", "--brokers", b, "--from-beginning", "--format", "json", "--query", "ring3")
	tailEqual(t, "--query ring3", strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"), tailJSON(tailEvents[0], tailEvents[2]))

	stdout = gcsmOK(t, "tail", "--brokers", b, "--format", "json", "--last", "2")
	tailEqual(t, "--last 2", strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"), tailJSON(tailEvents[1:]...))

	stdout = gcsmOK(t, "tail", "--brokers", b, "--format", "json", "--from-beginning", "--limit", "2")
	tailEqual(t, "--limit 2", strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"), tailJSON(tailEvents[:2]...))

	stdout, stderr, code := gcsm(t, "tail", "--brokers", b, "--last", "0")
	if code != 0 || stdout != "" || !strings.Contains(stderr, "no match events in the part of matches read; --from-beginning reads it all") {
		t.Fatalf("--last 0: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	stdout = gcsmOK(t, "tail", "--brokers", b, "--dlq", "--from-beginning")
	got = nil
	for _, r := range tailRows(t, stdout, "TIME (UTC)|INPUT|ERROR|VALUE") {
		got = append(got, strings.Join(r, "|"))
	}
	tailEqual(t, "--dlq table", got, []string{
		`edges/0/17|missing field dst|{"op":"+","src":"acct-1"}`,
		"edges/2/90|not JSON|base64:/wA=",
	})
	stdout = gcsmOK(t, "tail", "--brokers", b, "--dlq", "--from-beginning", "--format", "json")
	tailEqual(t, "--dlq json", strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"), tailDeadJSON(tailDead...))
}

// TestTailPartitions reads every partition of the topic, --last counting
// in each.
func TestTailPartitions(t *testing.T) {
	c := tailCluster(t, 3)
	b := c.ListenAddrs()[0]
	for p := range 3 {
		var es []output.Event
		for i := range 3 {
			es = append(es, tailEvent("q", output.Appeared, fmt.Sprintf("p%d", p), strconv.Itoa(i)))
		}
		tailWrite(t, b, "matches", p, tailJSON(es...)...)
	}
	stdout := gcsmOK(t, "tail", "--brokers", b, "--last", "2", "--format", "json")
	for p := range 3 {
		for i := range 3 {
			line := tailJSON(tailEvent("q", output.Appeared, fmt.Sprintf("p%d", p), strconv.Itoa(i)))[0]
			if strings.Contains(stdout, line) != (i > 0) {
				t.Errorf("partition %d event %d: printed %v, want the last 2 of each partition:\n%s", p, i, !(i > 0), stdout)
			}
		}
	}
}

// TestTailBadMessage checks that a message that is not an event is
// reported by its place and that the events around it still print.
func TestTailBadMessage(t *testing.T) {
	c := tailCluster(t, 1)
	b := c.ListenAddrs()[0]
	tailWrite(t, b, "matches", 0, tailJSON(tailEvents[0])[0], `{"query":"q"}`, tailJSON(tailEvents[1])[0])
	stdout, stderr, code := gcsm(t, "tail", "--brokers", b, "--from-beginning", "--format", "json")
	tailEqual(t, "stdout", strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"), tailJSON(tailEvents[:2]...))
	if code != 1 || !strings.Contains(stderr, `gcsm tail: matches/0/1: not a match event: "change" must be`) ||
		!strings.Contains(stderr, "1 messages of matches could not be read") {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	_, stderr, code = gcsm(t, "tail", "--brokers", b, "--from-beginning", "--dlq", "--topic", "matches")
	if code != 1 || !strings.Contains(stderr, "gcsm tail: matches/0/0: not a dead letter") {
		t.Fatalf("matches read as dead letters: exit %d, stderr:\n%s", code, stderr)
	}
}

// syncBuffer is a bytes.Buffer that a test may read while tail writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls cond for up to 30 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestTailFollow checks that --follow prints what is written after it
// started, and stops at --limit or when its context ends.
func TestTailFollow(t *testing.T) {
	c := tailCluster(t, 1)
	b := c.ListenAddrs()[0]
	tailWrite(t, b, "matches", 0, tailJSON(tailEvents[0])...)

	f := tailFlags{follow: true, last: 10, format: "json", brokers: b}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan error, 1)
	go func() { done <- tail(ctx, &f, map[string]bool{"brokers": true}, &out, &errb) }()
	waitFor(t, "the event already there", func() bool { return out.String() != "" })
	tailWrite(t, b, "matches", 0, tailJSON(tailEvents[1:]...)...)
	waitFor(t, "the events written later", func() bool { return strings.Count(out.String(), "\n") == 3 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("tail ended by its context: %v", err)
	}
	tailEqual(t, "--follow", strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"), tailJSON(tailEvents...))

	// --limit ends a follow too; the fourth event is written after it started.
	ran := make(chan string, 1)
	go func() {
		ran <- gcsmOK(t, "tail", "--brokers", b, "--from-beginning", "--follow", "--limit", "4", "--format", "json")
	}()
	time.Sleep(200 * time.Millisecond)
	extra := tailEvent("late", output.Appeared, "x")
	tailWrite(t, b, "matches", 0, tailJSON(extra)...)
	select {
	case stdout := <-ran:
		tailEqual(t, "--follow --limit 4", strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"), tailJSON(append(tailEvents, extra)...))
	case <-time.After(30 * time.Second):
		t.Fatal("--follow --limit 4 did not stop after the fourth event")
	}
}

func TestTailUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--format", "xml"}, 1, `--format "xml": want table or json`},
		{[]string{"--last", "-1"}, 1, "--last must not be negative, got -1"},
		{[]string{"--limit", "-1"}, 1, "--limit must not be negative, got -1"},
		{[]string{"--last", "3", "--from-beginning"}, 1, "--from-beginning and --last choose the start twice"},
		{[]string{"--dlq", "--query", "ring3"}, 1, "dead letters belong to no query"},
		{[]string{"extra"}, 2, `unexpected argument "extra"`},
		{[]string{"--config", filepath.Join(t.TempDir(), "none.yaml")}, 1, "no such file"},
	} {
		_, stderr, code := gcsm(t, append([]string{"tail"}, tt.args...)...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("gcsm tail %s: exit %d, stderr %q; want %d and %q", strings.Join(tt.args, " "), code, stderr, tt.code, tt.want)
		}
	}
}

// freeAddr returns a loopback address that nothing listens on (until
// someone takes it).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// tailDirSums returns a checksum of every file under dir, by path.
func tailDirSums(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	sums := map[string][32]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		sums[path] = sha256.Sum256(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

// TestTailEmbedded runs gcsm run's service with its embedded broker and
// reads its alerts and dead letters: through the listener while it runs,
// and from a copy of the state directory, which it leaves as it was, once
// it has stopped.
func TestTailEmbedded(t *testing.T) {
	state := t.TempDir()
	listen := freeAddr(t)
	cfgPath := writeFile(t, t.TempDir(), "gcsm.yaml", fmt.Sprintf(`embedded: {listen: %q}
state: {dir: %q}
http: {listen: ""}
batch: {size: 64, linger: 5ms}
graph: {directed: true, default_edge_label: TRANSFER, default_vertex_label: Account}
log: {level: error}
queries:
  - {name: ring3, pattern: "(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a)"}
`, listen, state))
	cfg, err := service.LoadConfig(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var dev deviceFlags
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	dev.register(fs)
	if err := fs.Parse([]string{"--device", "cpu"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- serve(ctx, cfg, &dev, zerolog.Nop()) }()
	waitFor(t, "the embedded broker", func() bool { _, err := clusterID(ctx, listen); return err == nil })

	// A ring of three transfers, and a message that is no event.
	tailWrite(t, listen, "edges", 0, `{"op":"+","src":"acct:1","dst":"acct:2"}`, `{"op":"+","src":"acct:2","dst":"acct:3"}`,
		`{"op":"+","src":"acct:3","dst":"acct:1"}`, "not an event")
	want := []string{"ring3|appeared|a=acct:1 b=acct:2 c=acct:3|" + output.Key("ring3", ring3Form(t), []output.Binding{{Var: "a", ID: "acct:1"}, {Var: "b", ID: "acct:2"}, {Var: "c", ID: "acct:3"}})}
	rows := func(stdout string) []string {
		var got []string
		for _, r := range tailRows(t, stdout, "TIME (UTC)|QUERY|CHANGE|MATCH|KEY") {
			got = append(got, strings.Join(r, "|"))
		}
		return got
	}
	tailEqual(t, "served", rows(gcsmOK(t, "tail", "--config", cfgPath, "--follow", "--limit", "1")), want)
	stdout := gcsmOK(t, "tail", "--config", cfgPath, "--dlq", "--follow", "--limit", "1", "--format", "json")
	if !strings.Contains(stdout, `"topic":"edges","partition":0,"offset":3,"value":"not an event"}`) {
		t.Fatalf("served dead letters:\n%s", stdout)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}

	// Not served: tail reads a copy, and changes nothing in the state.
	before := tailDirSums(t, state)
	tailEqual(t, "from the state directory", rows(gcsmOK(t, "tail", "--config", cfgPath, "--from-beginning")), want)
	tailEqual(t, "--state", rows(gcsmOK(t, "tail", "--state", state, "--brokers", "embedded", "--from-beginning")), want)
	after := tailDirSums(t, state)
	if len(after) != len(before) {
		t.Fatalf("tail changed the files of the state directory: %d before, %d after", len(before), len(after))
	}
	for path, sum := range before {
		if after[path] != sum {
			t.Fatalf("tail changed %s", path)
		}
	}

	_, stderr, code := gcsm(t, "tail", "--config", cfgPath, "--follow")
	if code != 1 || !strings.Contains(stderr, "--follow needs the running broker") {
		t.Fatalf("--follow without a broker: exit %d, stderr:\n%s", code, stderr)
	}
	_, stderr, code = gcsm(t, "tail", "--state", t.TempDir(), "--brokers", "embedded")
	if code != 1 || !strings.Contains(stderr, "holds no broker log") {
		t.Fatalf("an empty state directory: exit %d, stderr:\n%s", code, stderr)
	}

	// Another cluster on the listen address is not this state's broker.
	_, port, _ := net.SplitHostPort(listen)
	p, _ := strconv.Atoi(port)
	other := tailCluster(t, 1, kfake.Ports(p))
	tailWrite(t, listen, "matches", 0, tailJSON(tailEvent("other", output.Appeared, "z"))...)
	stdout, stderr, code = gcsm(t, "tail", "--config", cfgPath, "--from-beginning")
	if code != 0 || !strings.Contains(stderr, "the broker on "+listen+" is cluster kfake, not gcsm-") {
		t.Fatalf("another cluster on the address: exit %d, stderr:\n%s", code, stderr)
	}
	tailEqual(t, "another cluster on the address", rows(stdout), want)
	other.Close()
}

// TestTailDemo tails what gcsm demo --state leaves: every alert the demo
// counted, and its three dead letters.
func TestTailDemo(t *testing.T) {
	state := t.TempDir()
	out := gcsmOK(t, "demo", "--events", "4000", "--accounts", "400", "--rate", "0", "--show", "0", "--device", "cpu", "--state", state)
	total := 0
	for _, m := range regexp.MustCompile(`(?m)^(?:ring3|layering|ring4|split)\s+(\d+)\s+(\d+)$`).FindAllStringSubmatch(out, -1) {
		a, _ := strconv.Atoi(m[1])
		d, _ := strconv.Atoi(m[2])
		total += a + d
	}
	if total == 0 {
		t.Fatalf("no alerts counted:\n%s", out)
	}
	stdout := gcsmOK(t, "tail", "--state", state, "--from-beginning", "--format", "json")
	if n := strings.Count(stdout, "\n"); n != total {
		t.Fatalf("tail printed %d events, the demo counted %d", n, total)
	}
	stdout = gcsmOK(t, "tail", "--state", state, "--dlq", "--from-beginning")
	if rows := tailRows(t, stdout, "TIME (UTC)|INPUT|ERROR|VALUE"); len(rows) != len(demoBad) || rows[2][2] != "not an event" {
		t.Fatalf("dead letters of the demo:\n%s", stdout)
	}
}
