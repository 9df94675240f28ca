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
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gcsm/gcsm/demo"
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
	withReturn(tailEvent("ring3", output.Disappeared, "acct:1", "acct:2", "acct:3"),
		output.Field{Name: "total", Value: []byte("25600")}, output.Field{Name: "span", Value: []byte(`"1h30m"`)},
		output.Field{Name: "note", Value: []byte(`"two words"`)}),
}

func withReturn(e output.Event, row ...output.Field) output.Event {
	e.Return = row
	return e
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
		`ring3|disappeared|a=acct:1 b=acct:2 c=acct:3 | total=25600 span=1h30m note="two words"|` + tailEvents[2].Key,
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
	if code != 0 || stdout != "" || !strings.Contains(stderr, "no match events in the last 0 messages of each partition of matches; --from-beginning reads it all") {
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
	waitFor(t, "the embedded broker", func() bool { _, err := output.ClusterID(ctx, listen); return err == nil })

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
	for _, m := range regexp.MustCompile(`(?m)^(?:ring3|layering|ring4|split|flagged)\s+(\d+)\s+(\d+)$`).FindAllStringSubmatch(out, -1) {
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
	if rows := tailRows(t, stdout, "TIME (UTC)|INPUT|ERROR|VALUE"); len(rows) != len(demo.Bad) || rows[2][2] != "not an event" {
		t.Fatalf("dead letters of the demo:\n%s", stdout)
	}
}

// TestTailLastQuery: --last N with --query prints the last N events of the
// chosen queries, however many events of other queries follow them, in
// each partition.
func TestTailLastQuery(t *testing.T) {
	c := tailCluster(t, 2)
	b := c.ListenAddrs()[0]
	ring := func(p, i int) output.Event {
		return tailEvent("ring3", output.Appeared, fmt.Sprintf("p%d", p), strconv.Itoa(i), "x")
	}
	var want []string
	for p := range 2 {
		// Three rings, then 37 splits: the window read back doubles five
		// times before it reaches the rings.
		var es []output.Event
		for i := range 3 {
			es = append(es, ring(p, i))
		}
		for i := range 37 {
			es = append(es, tailEvent("split", output.Appeared, fmt.Sprintf("p%d", p), strconv.Itoa(i), "y", "z"))
		}
		tailWrite(t, b, "matches", p, tailJSON(es...)...)
		want = append(want, tailJSON(ring(p, 1), ring(p, 2))...)
	}
	stdout := gcsmOK(t, "tail", "--brokers", b, "--format", "json", "--last", "2", "--query", "ring3")
	if got := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"); !sameLines(got, want) {
		t.Fatalf("--last 2 --query ring3:\ngot\n%s\nwant the last two rings of each partition\n%s", stdout, strings.Join(want, "\n"))
	}
	// More than there are: all of them, from each partition's start.
	stdout = gcsmOK(t, "tail", "--brokers", b, "--format", "json", "--last", "5", "--query", "ring3")
	if n := strings.Count(stdout, `"query":"ring3"`); n != 6 || strings.Count(stdout, "\n") != 6 {
		t.Fatalf("--last 5 --query ring3: %d rings, want all 6\n%s", n, stdout)
	}
	// Without --query the window is the partition's last messages.
	stdout = gcsmOK(t, "tail", "--brokers", b, "--format", "json", "--last", "1")
	if strings.Count(stdout, "\n") != 2 || strings.Count(stdout, `"query":"split"`) != 2 {
		t.Fatalf("--last 1: want the last split of each partition\n%s", stdout)
	}
}

// TestTailHints: when nothing prints, tail says why on stderr, and never
// suggests a flag that the command line already has.
func TestTailHints(t *testing.T) {
	c := tailCluster(t, 1)
	b := c.ListenAddrs()[0]
	tailWrite(t, b, "matches", 0, tailJSON(tailEvents...)...)
	flagRE := regexp.MustCompile(`--[a-z-]+`)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--from-beginning", "--query", "nosuch"}, "matches holds no match events of query nosuch; --follow waits for new ones"},
		{[]string{"--last", "3", "--query", "nosuch"}, "matches holds no match events of query nosuch; --follow waits for new ones"},
		{[]string{"--from-beginning", "--topic", "edges"}, "edges holds no match events; --follow waits for new ones"},
		{[]string{"--from-beginning", "--dlq"}, "edges.dlq holds no dead letters; --follow waits for new ones"},
		{[]string{"--last", "0"}, "no match events in the last 0 messages of each partition of matches; --from-beginning reads it all"},
	} {
		args := append([]string{"tail", "--brokers", b}, tt.args...)
		stdout, stderr, code := gcsm(t, args...)
		if code != 0 || stdout != "" || !strings.Contains(stderr, tt.want) {
			t.Errorf("gcsm %s: exit %d, stdout %q, stderr %q; want 0, nothing and %q", strings.Join(args, " "), code, stdout, stderr, tt.want)
		}
		for _, fl := range flagRE.FindAllString(stderr, -1) {
			if slices.Contains(args, fl) {
				t.Errorf("gcsm %s suggests %s, which it was given: %q", strings.Join(args, " "), fl, stderr)
			}
		}
	}

	// No broker log: the hint names only the flags not given. The
	// embedded broker's address is one that nothing serves.
	state := t.TempDir()
	cfg := writeFile(t, t.TempDir(), "gcsm.yaml", fmt.Sprintf("embedded: {listen: %q}\nstate: {dir: %q}\n", freeAddr(t), state))
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"tail", "--config", cfg, "--state", state, "--brokers", "embedded"}, "holds no broker log: start gcsm run\n"},
		{[]string{"tail", "--config", cfg}, "holds no broker log: start gcsm run, or give --brokers or --state\n"},
	} {
		args := tt.args
		_, stderr, code := gcsm(t, args...)
		if code != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("gcsm %s: exit %d, stderr %q", strings.Join(args, " "), code, stderr)
		}
		for _, fl := range flagRE.FindAllString(stderr, -1) {
			if slices.Contains(args, fl) {
				t.Errorf("gcsm %s suggests %s, which it was given: %q", strings.Join(args, " "), fl, stderr)
			}
		}
	}
}

// tailTxn writes values to partition 0 of topic in one transaction of the
// producer with id, committed or aborted; with neither it flushes them
// and leaves the transaction open, and returns the client to end it.
func tailTxn(t *testing.T, broker, id, topic, end string, values ...string) *kgo.Client {
	t.Helper()
	cl, err := kafkaconn.Plaintext(broker).NewClient(kgo.TransactionalID(id), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if end == "open" {
		t.Cleanup(cl.Close)
		return cl
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(end == "commit")); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	return nil
}

// TestTailReadCommitted: tail prints what committed transactions wrote,
// never what an aborted or a still open one did, stops at the end without
// waiting on the open one, and counts --last in messages, not in the
// offsets that transaction markers take.
func TestTailReadCommitted(t *testing.T) {
	c := tailCluster(t, 1)
	b := c.ListenAddrs()[0]
	tailTxn(t, b, "gcsm-a", "matches", "commit", tailJSON(tailEvents[0])...)
	tailTxn(t, b, "gcsm-b", "matches", "abort", tailJSON(tailEvent("aborted", output.Appeared, "q"))...)
	tailTxn(t, b, "gcsm-c", "matches", "commit", tailJSON(tailEvents[1])...)
	tailTxn(t, b, "gcsm-d", "matches", "commit", tailJSON(tailEvents[2])...)
	open := tailTxn(t, b, "gcsm-e", "matches", "open", tailJSON(tailEvent("open", output.Appeared, "o"))...)

	done := make(chan string, 1)
	go func() { done <- gcsmOK(t, "tail", "--brokers", b, "--from-beginning", "--format", "json") }()
	select {
	case stdout := <-done:
		tailEqual(t, "--from-beginning", strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"), tailJSON(tailEvents...))
	case <-time.After(30 * time.Second):
		t.Fatal("tail did not stop at the end of the committed records")
	}
	// Three events, each followed by its commit marker: the last two
	// messages are the last two events.
	stdout := gcsmOK(t, "tail", "--brokers", b, "--last", "2", "--format", "json")
	tailEqual(t, "--last 2", strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"), tailJSON(tailEvents[1:]...))

	// --follow prints the open transaction's event once it commits.
	var out, errb syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := tailFlags{follow: true, last: 1, format: "json", brokers: b}
	ended := make(chan error, 1)
	go func() { ended <- tail(ctx, &f, map[string]bool{"brokers": true, "last": true}, &out, &errb) }()
	waitFor(t, "the last committed event", func() bool { return out.String() != "" })
	if err := open.EndTransaction(context.Background(), kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the event of the transaction committed later", func() bool { return strings.Count(out.String(), "\n") == 2 })
	cancel()
	if err := <-ended; err != nil {
		t.Fatal(err)
	}
	tailEqual(t, "--follow", strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"), tailJSON(tailEvents[2], tailEvent("open", output.Appeared, "o")))
}
