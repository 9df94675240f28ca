package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gcsm/gcsm/bench/servicebench"
)

// benchServiceJSON runs gcsm bench service with --json and returns its
// summary, checking that stdout is that one line.
func benchServiceJSON(t *testing.T, args ...string) servicebench.Result {
	t.Helper()
	out := gcsmOK(t, append([]string{"bench", "service", "--json", "--device", "cpu"}, args...)...)
	if n := len(jsonLines(t, out)); n != 1 {
		t.Fatalf("--json: want one line of JSON on stdout, got %d:\n%s", n, out)
	}
	return lastJSON[servicebench.Result](t, out)
}

// checkAgainstEngine checks a run's figures against each other: every
// update applied, every match found delivered as an event, and each
// query's net count the engine's alone.
func checkAgainstEngine(t *testing.T, r servicebench.Result, updates int) {
	t.Helper()
	if r.Updates != updates || r.Batches == 0 || r.UpdatesPerSec <= 0 {
		t.Errorf("updates %d in %d batches at %.0f/s, want %d updates", r.Updates, r.Batches, r.UpdatesPerSec, updates)
	}
	var found int64
	for _, m := range r.Matches {
		found += m.Appeared + m.Disappeared
	}
	if found != r.Events {
		t.Errorf("the service found %d matches but delivered %d events", found, r.Events)
	}
	if r.Engine == nil {
		t.Fatal("no engine-alone figures")
	}
	if len(r.Engine.Matches) != len(r.Matches) {
		t.Fatalf("engine alone reports %d queries, the service %d", len(r.Engine.Matches), len(r.Matches))
	}
	for i, m := range r.Matches {
		e := r.Engine.Matches[i]
		if e.Query != m.Query || e.Appeared-e.Disappeared != m.Appeared-m.Disappeared {
			t.Errorf("query %s: service %+v, engine alone %+v: the net counts differ", m.Query, m, e)
		}
		// --device cpu: every batch of every query on the CPU.
		if m.CPUBatches == 0 || m.CPUBatches > int64(r.Batches) || m.GPUBatches != 0 || e.CPUBatches == 0 || e.GPUBatches != 0 {
			t.Errorf("query %s: service ran %d batches on the cpu and %d on the gpu (of %d), the engine alone %d and %d; want all on the cpu",
				m.Query, m.CPUBatches, m.GPUBatches, r.Batches, e.CPUBatches, e.GPUBatches)
		}
	}
	if !r.Engine.Consistent {
		t.Error("the command says the service and the engine disagree")
	}
	var share float64
	for _, s := range r.Stages {
		share += s.Share
	}
	if share < 0.999 || share > 1.001 {
		t.Errorf("stage shares sum to %v, want 1: %+v", share, r.Stages)
	}
	if r.Ratio <= 0 {
		t.Errorf("service/engine ratio %v", r.Ratio)
	}
}

func TestBenchServiceMixes(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	sparse := benchServiceJSON(t, "--mix", "alert-sparse", "--updates", "20000", "--accounts", "20000", "--batch", "2048", "--cpuprofile", prof)
	checkAgainstEngine(t, sparse, 20000)
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Errorf("--cpuprofile wrote no profile: %v", err)
	}
	if sparse.LoadPerSec <= 0 || sparse.ReadPerSec <= 0 || sparse.EventCeiling <= 0 {
		t.Errorf("broker ceiling: produce %v, read %v updates/s, produce %v events/s", sparse.LoadPerSec, sparse.ReadPerSec, sparse.EventCeiling)
	}
	if sparse.Security != "plaintext" || sparse.Compression != "none" {
		t.Errorf("default security %s, compression %s; want plaintext, none", sparse.Security, sparse.Compression)
	}
	if sparse.Events == 0 || sparse.EventsPerUpdate >= 0.01 {
		t.Errorf("alert-sparse: %d events, %.4f per update; want some, under 0.01 per update", sparse.Events, sparse.EventsPerUpdate)
	}
	// Without --json the table comes first on stdout and the summary is
	// its last line.
	// Three partitions, which the senders' keys fill unevenly; every connection over TLS and SCRAM,
	// compressing.
	out := gcsmOK(t, "bench", "service", "--device", "cpu", "--mix", "alert-heavy", "--updates", "20000", "--accounts", "300", "--batch", "2048", "--partitions", "3",
		"--secure", "--compression", "lz4")
	if !strings.Contains(out, "service / engine") || !strings.Contains(out, "query  appeared") {
		t.Errorf("no table on stdout:\n%s", out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	heavy := lastJSON[servicebench.Result](t, lines[len(lines)-1]+"\n")
	checkAgainstEngine(t, heavy, 20000)
	if heavy.Security != "TLS+SCRAM-SHA-512" || heavy.Compression != "lz4" {
		t.Errorf("security %s, compression %s; want TLS+SCRAM-SHA-512, lz4", heavy.Security, heavy.Compression)
	}
	// The broker's ceiling for events: as many records as alerts, copies of them, which are JSON objects
	// of a few hundred bytes with their keys.
	if heavy.EventCeiling <= 0 || heavy.EventBytes < 100 || !strings.Contains(out, "event ceiling") {
		t.Errorf("event ceiling %v events/s of %v bytes; table:\n%s", heavy.EventCeiling, heavy.EventBytes, out)
	}
	if heavy.EventsPerUpdate <= 1 {
		t.Errorf("alert-heavy: %.4f events per update, want more than 1", heavy.EventsPerUpdate)
	}
	if heavy.AlertLatency.Count != heavy.Events || heavy.AlertLatency.P50 <= 0 || heavy.AlertLatency.P50 > heavy.AlertLatency.P99 || heavy.AlertLatency.P99 > heavy.AlertLatency.Max {
		t.Errorf("alert latency %+v over %d events", heavy.AlertLatency, heavy.Events)
	}
}

// TestBenchServiceRate produces while the service runs, over partitions
// that the senders' keys fill unevenly: every alert's latency is known, and at a rate the service keeps up with, an alert
// waits for a batch or two, not for the whole stream.
func TestBenchServiceRate(t *testing.T) {
	r := benchServiceJSON(t, "--mix", "alert-heavy", "--updates", "6000", "--accounts", "200", "--batch", "256", "--rate", "3000", "--partitions", "3",
		"-q", "ring3=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a)")
	checkAgainstEngine(t, r, 6000)
	if r.Mode != "rate" || r.Mix != "custom" {
		t.Errorf("mode %q, mix %q", r.Mode, r.Mix)
	}
	if r.Events == 0 || r.AlertLatency.Count != r.Events {
		t.Errorf("%d events, latency known for %d", r.Events, r.AlertLatency.Count)
	}
	// The stream takes 2 s to produce; latencies near that would mean
	// they were taken from the start of the stream.
	if r.AlertLatency.P50 >= 1500 {
		t.Errorf("alert latency p50 %.1f ms at a rate the service keeps up with", r.AlertLatency.P50)
	}
}

func TestBenchServiceSoak(t *testing.T) {
	r := benchServiceJSON(t, "--mix", "alert-sparse", "--accounts", "5000", "--rate", "2000", "--duration", "4s", "--warmup", "2s")
	if r.Soak == nil || len(r.Soak.Samples) < 3 {
		t.Fatalf("soak: %+v", r.Soak)
	}
	if r.Soak.Warmup != 2 || r.Soak.First.T != 2 {
		t.Errorf("soak with --warmup 2s: warm-up %vs, first window from %vs", r.Soak.Warmup, r.Soak.First.T)
	}
	if r.Engine != nil {
		t.Error("a soak runs no engine-alone pass")
	}
	for _, s := range r.Soak.Samples {
		if s.RSS <= 0 || s.Heap <= 0 || s.DiskBytes <= 0 {
			t.Errorf("sample %+v: want RSS, heap and the broker's disk", s)
		}
	}
	if !r.Soak.DiskSampled {
		t.Error("the embedded broker's disk is sampled, but the soak says not")
	}
	if r.Soak.First.RSS <= 0 || r.Soak.Last.RSS <= 0 || r.Soak.Drift["rss"] == nil {
		t.Errorf("drift windows: first %+v, last %+v, drift %v", r.Soak.First, r.Soak.Last, r.Soak.Drift)
	}
	if r.Updates < 4000 || r.Updates > 10000 {
		t.Errorf("%d updates in 4s at 2000/s", r.Updates)
	}
}

func TestBenchServiceFlags(t *testing.T) {
	help := gcsmOK(t, "bench", "service", "-h")
	if !strings.Contains(help, "Usage: gcsm bench service [flags]") || !strings.Contains(help, "-mix") || !strings.Contains(help, "GPU tuning flags (--gpu-*) are not shown") {
		t.Errorf("gcsm bench service -h:\n%s", help)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--mix", "alert-medium"}, `--mix "alert-medium": want alert-sparse, alert-heavy, rings-where or five`},
		{[]string{"--mix", "rings-where", "--select", "ring3,ring5"}, `--select "ring3,ring5": mix rings-where has no query "ring5"; its queries are ring3, ring3w, ring4, ring4w`},
		{[]string{"--mix", "rings-where", "--select", "ring3", "-q", "(a)-[:X]->(b)"}, "--select picks among the mix's queries; -q replaces them"},
		{[]string{"--duration", "10s"}, "--duration 10s needs --rate"},
		{[]string{"--broker-dir", "."}, "--broker-dir . needs --brokers and --duration"},
		{[]string{"--warmup", "1m"}, "--warmup needs --duration"},
		{[]string{"--rate", "10", "--duration", "5m", "--warmup", "4m30s"}, "--warmup 4m30s leaves less than the 1m0s window to compare in a soak of 5m0s"},
		{[]string{"--brokers", "127.0.0.1:1", "--rate", "10", "--duration", "1s", "--broker-dir", "no-such-dir"}, "--broker-dir no-such-dir: not a directory"},
		{[]string{"--batch", "0"}, "--batch 0: want 1"},
		{[]string{"--config", "gcsm.yaml"}, "--config gcsm.yaml secures --brokers"},
		{[]string{"--compression", "brotli"}, `--compression "brotli": want none, gzip, snappy, lz4 or zstd`},
		{[]string{"-q", "(a)-[:X]->("}, `-q "(a)-[:X]->("`},
	} {
		_, errs, code := gcsm(t, append([]string{"bench", "service"}, tc.args...)...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error with %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestBenchServiceRingsWhere runs the predicated ring mix: the stream's
// transfers carry ids and amounts, the service and the engine alone agree,
// and the layering rings find exactly the planted rings, which the bare
// rings find among others.
func TestBenchServiceRingsWhere(t *testing.T) {
	const updates = 20000
	out := gcsmOK(t, "bench", "service", "--device", "cpu", "--mix", "rings-where", "--updates", "20000", "--accounts", "3000", "--batch", "2048")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	r := lastJSON[servicebench.Result](t, lines[len(lines)-1]+"\n")
	checkAgainstEngine(t, r, updates)
	if !r.Transfers || r.Mix != "rings-where" {
		t.Errorf("mix %q with transfers %v, want rings-where with transfers", r.Mix, r.Transfers)
	}
	// bench.Transfers plants a 3-ring for every 200 events and a 4-ring
	// for every 400, one more of each.
	planted := map[string]int64{"ring3w": updates/200 + 1, "ring4w": updates/400 + 1}
	if len(r.Pairs) != 2 {
		t.Fatalf("pairs %+v, want ring3 beside ring3w and ring4 beside ring4w", r.Pairs)
	}
	for _, p := range r.Pairs {
		if p.Where != p.Bare+"w" || p.WhereAppeared != planted[p.Where] || p.BareAppeared <= p.WhereAppeared ||
			p.Kept != float64(p.WhereAppeared)/float64(p.BareAppeared) {
			t.Errorf("pair %+v: want the predicated ring to find the %d planted rings, the bare one more", p, planted[p.Where])
		}
	}
	if !strings.Contains(out, "bare   appeared  predicated  appeared  kept") {
		t.Errorf("no table of bare beside predicated rings:\n%s", out)
	}

	// --select runs some of the mix's queries on the same stream.
	w := benchServiceJSON(t, "--mix", "rings-where", "--updates", "20000", "--accounts", "3000", "--batch", "2048", "--select", "ring4w, ring3w")
	checkAgainstEngine(t, w, updates)
	if w.Mix != "rings-where (ring4w, ring3w)" || len(w.Matches) != 2 || w.Matches[0].Query != "ring3w" || w.Matches[1].Query != "ring4w" || len(w.Pairs) != 0 {
		t.Errorf("--select ring4w, ring3w: mix %q, matches %+v, pairs %+v", w.Mix, w.Matches, w.Pairs)
	}
	for i, m := range w.Matches {
		if m.Appeared != r.Matches[2*i+1].Appeared {
			t.Errorf("%s alone found %d, with the whole mix %d", m.Query, m.Appeared, r.Matches[2*i+1].Appeared)
		}
	}
}

// TestBenchServiceFive runs the 5-account mix, small and sparser than its
// standard sizes: every query finds matches, reversals take some back,
// and the service and the engine alone agree.
func TestBenchServiceFive(t *testing.T) {
	const updates = 10000
	out := gcsmOK(t, "bench", "service", "--device", "cpu", "--mix", "five", "--updates", "10000", "--accounts", "2000", "--batch", "1024")
	if !strings.Contains(out, "mix five: patterns of 5 accounts") {
		t.Errorf("no summary line of the mix:\n%s", out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	r := lastJSON[servicebench.Result](t, lines[len(lines)-1]+"\n")
	checkAgainstEngine(t, r, updates)
	if r.Mix != "five" || r.Transfers || len(r.Matches) != 3 {
		t.Fatalf("mix %q, transfers %v, %d queries; want five over bare pairs, with 3 queries", r.Mix, r.Transfers, len(r.Matches))
	}
	var disappeared int64
	for i, want := range []string{"ring5", "house", "mule"} {
		m := r.Matches[i]
		if m.Query != want || m.Appeared == 0 {
			t.Errorf("query %d: %+v, want %s with matches", i, m, want)
		}
		disappeared += m.Disappeared
	}
	if disappeared == 0 {
		t.Error("no match disappeared: the stream's reversals took none back")
	}
	if r.EventsPerUpdate <= 0.1 || r.EventsPerUpdate >= 5 {
		t.Errorf("%.4f events per update, want 0.1 to 5", r.EventsPerUpdate)
	}
}

// produceConsume writes values to topic through the broker at addr and
// reads them back.
func produceConsume(t *testing.T, addr, topic string, values ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, v := range values {
		if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce to %s on %s: %v", topic, addr, err)
		}
	}
	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []string
	for len(got) < len(values) {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %q of %q: %v", got, values, err)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, values) {
		t.Errorf("consumed %q, produced %q", got, values)
	}
}

// TestBroker runs gcsm broker in-process: it serves on the address it
// prints, with gcsm's topics and the --topics ones seeded, and keeps its
// log in --data.
func TestBroker(t *testing.T) {
	data := t.TempDir()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var errb strings.Builder
	go func() {
		done <- serveBroker(ctx, []string{"--listen", "127.0.0.1:0", "--data", data, "--topics", "extra", "--partitions", "2"}, pw, &errb)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("no address: %v", err)
	}
	go io.Copy(io.Discard, pr)
	addr := strings.TrimSpace(line)
	produceConsume(t, addr, "extra", "a", "b", "c")
	produceConsume(t, addr, "edges", `{"op":"+","src":"x","dst":"y"}`)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(data + "/kafka"); err != nil || !fi.IsDir() {
		t.Errorf("no log under --data: %v", err)
	}
}

// TestBrokerProcess runs gcsm broker as a child process (this test binary,
// re-entered through TestChildGcsm), runs gcsm bench service against it
// with --brokers, and stops it with SIGTERM.
func TestBrokerProcess(t *testing.T) {
	cmd, addr, errb := startBroker(t)
	produceConsume(t, addr, "edges", "one", "two")
	r := benchServiceJSON(t, "--brokers", addr, "--mix", "alert-sparse", "--updates", "5000", "--accounts", "5000")
	checkAgainstEngine(t, r, 5000)
	if r.Broker != addr {
		t.Errorf("broker %q, want %q", r.Broker, addr)
	}
	// The run's topics are gone from the broker it did not start.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range meta.Topics {
		if tp.Topic != nil && strings.HasPrefix(*tp.Topic, "bench-") {
			t.Errorf("topic %s left on the broker after the run", *tp.Topic)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("broker process after SIGTERM: %v; stderr:\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "gcsm broker: stopped") {
		t.Errorf("stderr:\n%s", errb.String())
	}
}

// startBroker starts gcsm broker in a child process with args added to
// its listen address and returns it, its address and its stderr so far.
func startBroker(t *testing.T, args ...string) (*exec.Cmd, string, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildGcsm$")
	cmd.Env = append(os.Environ(), childArgsEnv+"="+strings.Join(append([]string{"broker", "--listen", "127.0.0.1:0"}, args...), "\n"))
	errb := &strings.Builder{}
	cmd.Stderr = errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("no address from the broker process: %v; stderr:\n%s", err, errb.String())
	}
	go io.Copy(io.Discard, out)
	return cmd, strings.TrimSpace(line), errb
}

// TestSoakBrokerDir: a soak against a broker in another process samples
// its disk only through --broker-dir, and says so when it cannot.
func TestSoakBrokerDir(t *testing.T) {
	if testing.Short() {
		t.Skip("two soaks of 3 s")
	}
	dir := t.TempDir()
	_, addr, _ := startBroker(t, "--data", dir)
	soak := []string{"--brokers", addr, "--mix", "alert-sparse", "--accounts", "5000", "--rate", "2000", "--duration", "3s"}
	r := benchServiceJSON(t, append(soak, "--broker-dir", dir)...)
	if r.Soak == nil || !r.Soak.DiskSampled || r.Soak.Last.DiskBytes <= 0 {
		t.Fatalf("soak with --broker-dir: %+v", r.Soak)
	}
	out, errs, code := gcsm(t, append([]string{"bench", "service", "--json"}, soak...)...)
	if code != 0 {
		t.Fatalf("soak without --broker-dir: exit %d, stderr:\n%s", code, errs)
	}
	if !strings.Contains(errs, "broker disk: not sampled, the broker runs in another process") {
		t.Errorf("stderr does not say the disk was not sampled:\n%s", errs)
	}
	if !strings.Contains(out, `"broker_disk_sampled":false`) {
		t.Errorf("JSON does not say the disk was not sampled:\n%s", out)
	}
}

// TestBrokerRetentionFlags: gcsm broker's retention flags are checked as
// the configuration keys they set are, and refused before it serves.
func TestBrokerRetentionFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--retention", "10ms"}, "embedded.retention 10ms"},
		{[]string{"--retention-bytes", "1KiB"}, "embedded.retention_bytes 1024"},
		{[]string{"--retention-bytes", "ten"}, `size "ten"`},
	} {
		var out, errb strings.Builder
		err := serveBroker(context.Background(), append([]string{"--listen", "127.0.0.1:0"}, c.args...), &out, &errb)
		if err == nil || !strings.Contains(err.Error()+errb.String(), c.want) {
			t.Errorf("%q: err %v, stderr %q; want %q", c.args, err, errb.String(), c.want)
		}
		if out.Len() != 0 {
			t.Errorf("%q: served on %q", c.args, out.String())
		}
	}
}

// TestBenchServiceSetsFlag: --sets takes a fraction up to one half, on a
// mix whose transfers have ids, outside a soak.
func TestBenchServiceSetsFlag(t *testing.T) {
	for _, c := range []struct {
		sets float64
		mix  string
		d    time.Duration
		ok   bool
	}{
		{0, "alert-sparse", 0, true},
		{0.1, "rings-where", 0, true},
		{0.5, "rings-where", 0, true},
		{0.6, "rings-where", 0, false},
		{-0.1, "rings-where", 0, false},
		{0.1, "alert-heavy", 0, false},
		{0.1, "rings-where", time.Minute, false},
	} {
		if err := setsFlag(c.sets, c.mix, c.d); (err == nil) != c.ok {
			t.Errorf("--sets %v --mix %s --duration %v: %v", c.sets, c.mix, c.d, err)
		}
	}
}
