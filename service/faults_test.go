package service

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/internal/kafkaconn"
)

// The fault tests run the service as a child process, as an operator
// would see it: from its /readyz, its /metrics and its log, and its exit.
// Their deadlines are generous and only catch hangs; what they wait for
// is a state, not a duration.

// child is a service started by startFaultChild.
type child struct {
	cmd  *exec.Cmd
	logs *syncBuilder
	url  string // its HTTP API, once known
}

// startFaultChild starts a child service on cfg, listening for HTTP on a
// port of its choice, which it names in its log.
func startFaultChild(t *testing.T, cfg Config, logs *syncBuilder) *child {
	t.Helper()
	cfg.HTTP.Listen = "127.0.0.1:0"
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := startChild(t, b, logs)
	c := &child{cmd: cmd, logs: logs}
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			c.cmd.Process.Kill()
			c.cmd.Wait()
		}
	})
	pid := strconv.Itoa(cmd.Process.Pid)
	waitFor(t, "the child's HTTP address", time.Minute, func() bool {
		for _, l := range logLines(logs.String()) {
			if l["pid"] == pid && l["message"] == "HTTP API and metrics" {
				c.url = "http://" + l["listen"].(string)
				return true
			}
		}
		return false
	})
	return c
}

// stop stops the child with SIGTERM, a clean stop.
func (c *child) stop(t *testing.T) {
	t.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("child: %v\n%s", err, c.logs.String())
	}
}

// readyz is the child's /readyz status and body; 0 while it cannot be
// reached.
func (c *child) readyz() (int, string) {
	resp, err := http.Get(c.url + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// metric is the value of the child's series name (with its labels, as
// /metrics writes them), or NaN-like -1 when absent.
func (c *child) metric(t *testing.T, name string) float64 {
	t.Helper()
	resp, err := http.Get(c.url + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return f
		}
	}
	return -1
}

// waitReady waits until /readyz answers want (a prefix) with code.
func (c *child) waitReady(t *testing.T, code int, want string) string {
	t.Helper()
	var got string
	waitFor(t, fmt.Sprintf("/readyz %d %q", code, want), 90*time.Second, func() bool {
		var n int
		n, got = c.readyz()
		return n == code && strings.HasPrefix(got, want)
	})
	return got
}

// logLines decodes JSON log lines; other lines are skipped.
func logLines(s string) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(s, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// logged says whether a line of level whose message starts with msg was
// logged.
func logged(logs *syncBuilder, level, msg string) bool {
	for _, l := range logLines(logs.String()) {
		if m, _ := l["message"].(string); l["level"] == level && strings.HasPrefix(m, msg) {
			return true
		}
	}
	return false
}

// checkpointed says whether the child logged a checkpoint at position n
// of partition 0: the input up to n is applied and its output
// acknowledged.
func (c *child) checkpointed(n int) bool {
	pid := fmt.Sprintf(`"pid":"%d"`, c.cmd.Process.Pid)
	want := fmt.Sprintf(`"position":{"0":%d}`, n)
	for _, line := range strings.Split(c.logs.String(), "\n") {
		if strings.Contains(line, pid) && strings.Contains(line, `"message":"checkpoint written"`) && strings.Contains(line, want) {
			return true
		}
	}
	return false
}

// freePort is a TCP port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestFaultBrokerRestarted: the broker dies under a running service and
// comes back on the same port with its data. While it is gone /readyz
// fails naming it, gcsm_broker_reachable and gcsm_ready read 0, and one
// warning is logged; once it is back the service is ready again, says
// after how long, and applies new input, which its info line reports.
func TestFaultBrokerRestarted(t *testing.T) {
	port, data := freePort(t), t.TempDir()
	open := func() *kfake.Cluster {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.DataDir(data), kfake.AllowAutoTopicCreation(),
			kfake.SeedTopics(1, "edges", "matches", "edges.dlq"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	kc := open()
	defer func() { kc.Close() }()
	addrs := kc.ListenAddrs()
	_, vals := transferStream(400, 7)
	produce(t, addrs, "edges", vals[:200])
	cfg := testConfig(t, addrs)
	var logs syncBuilder
	defer func() {
		if t.Failed() {
			t.Logf("child's log:\n%s", logs.String())
		}
	}()
	c := startFaultChild(t, cfg, &logs)
	c.waitReady(t, 200, "ready: active")
	waitFor(t, "the input to be applied", time.Minute, func() bool { return c.checkpointed(200) })
	if v := c.metric(t, "gcsm_broker_reachable"); v != 1 {
		t.Fatalf("gcsm_broker_reachable %v with the broker up", v)
	}

	kc.Close()
	reason := c.waitReady(t, 503, "broker unreachable since ")
	if c.metric(t, "gcsm_broker_reachable") != 0 || c.metric(t, "gcsm_ready") != 0 {
		t.Errorf("broker down: gcsm_broker_reachable %v, gcsm_ready %v, want 0 and 0", c.metric(t, "gcsm_broker_reachable"), c.metric(t, "gcsm_ready"))
	}
	if !logged(&logs, "warn", "broker unreachable") {
		t.Errorf("no warning of the broker's outage")
	}
	t.Logf("/readyz while the broker is down: %s", reason)

	kc = open()
	c.waitReady(t, 200, "ready: active")
	waitFor(t, "the warning that the broker is back", time.Minute, func() bool { return logged(&logs, "warn", "broker reachable again") })
	produce(t, addrs, "edges", vals[200:])
	waitFor(t, "the new input to be applied and reported", 2*time.Minute, func() bool {
		return c.checkpointed(400) && logged(&logs, "info", "working: ")
	})
	if c.metric(t, "gcsm_broker_reachable") != 1 || c.metric(t, "gcsm_ready") != 1 {
		t.Errorf("broker back: gcsm_broker_reachable %v, gcsm_ready %v, want 1 and 1", c.metric(t, "gcsm_broker_reachable"), c.metric(t, "gcsm_ready"))
	}
	c.stop(t)
}

// applyAndStop runs a child over vals until they are applied and stops it
// cleanly, so that its last checkpoint holds position len(vals).
func applyAndStop(t *testing.T, cfg Config, logs *syncBuilder, n int) {
	t.Helper()
	c := startFaultChild(t, cfg, logs)
	c.waitReady(t, 200, "ready: active")
	waitFor(t, "the input to be applied", time.Minute, func() bool { return c.checkpointed(n) })
	c.stop(t)
	if !strings.Contains(logs.String(), fmt.Sprintf(`"position":{"0":%d}`, n)) {
		t.Fatalf("the child stopped short of position %d:\n%s", n, logs.String())
	}
}

// refused runs a child on cfg and returns its log once it has exited; it
// must exit with status 1.
func refused(t *testing.T, cfg Config) string {
	t.Helper()
	var logs syncBuilder
	cfg.HTTP.Listen = "127.0.0.1:0"
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := startChild(t, b, &logs)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("child ended with %v, want exit status 1:\n%s", err, logs.String())
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the child did not refuse to start:\n%s", logs.String())
	}
	return logs.String()
}

// TestFaultTopicRecreated: the input topic is deleted and created anew,
// empty but for 10 records, behind a checkpoint at 300. A restart refuses,
// naming topic, partition, the broker's end and the checkpoint's position;
// with state.accept_input_loss it starts, says so loudly, reads the new
// topic from its start and is ready.
func TestFaultTopicRecreated(t *testing.T) {
	addrs := cluster(t, 1, 1)
	_, vals := transferStream(300, 11)
	produce(t, addrs, "edges", vals)
	cfg := testConfig(t, addrs)
	var logs syncBuilder
	defer func() {
		if t.Failed() {
			t.Logf("children's log:\n%s", logs.String())
		}
	}()
	applyAndStop(t, cfg, &logs, len(vals))

	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.TimeoutMillis = 10_000
	del.TopicNames = []string{"edges"}
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = kmsg.StringPtr("edges")
	del.Topics = append(del.Topics, dt)
	if _, err := del.RequestWith(t.Context(), cl); err != nil {
		t.Fatal(err)
	}
	if err := ingest.EnsureTopic(t.Context(), kafkaconn.Plaintext(addrs...), "edges", 1, nil); err != nil {
		t.Fatal(err)
	}
	produce(t, addrs, "edges", vals[:10])

	out := refused(t, cfg)
	want := `input lost: input topic "edges": partition 0 ends at offset 10, before the checkpoint's position 300`
	if !strings.Contains(out, want) || !strings.Contains(out, "accept_input_loss") {
		t.Fatalf("refusal does not name the offsets and the remedy; want %q in:\n%s", want, out)
	}

	cfg.State.AcceptInputLoss = true
	c := startFaultChild(t, cfg, &logs)
	c.waitReady(t, 200, "ready: active")
	if !logged(&logs, "warn", "INPUT LOSS ACCEPTED: "+strings.TrimPrefix(want, "input lost: ")) {
		t.Fatalf("no loud warning of the accepted loss")
	}
	waitFor(t, "the new topic to be applied", time.Minute, func() bool { return c.checkpointed(10) })
	c.stop(t)
}

// TestFaultCheckpointsUnusableRetention: every checkpoint is corrupt and
// retention has removed the input's first 100 records, so a restart could
// only build a partial graph. It refuses, naming the lost range; with
// state.accept_input_loss it starts from offset 100 and says what it lost.
func TestFaultCheckpointsUnusableRetention(t *testing.T) {
	addrs := cluster(t, 1, 1)
	_, vals := transferStream(300, 13)
	produce(t, addrs, "edges", vals)
	cfg := testConfig(t, addrs)
	var logs syncBuilder
	defer func() {
		if t.Failed() {
			t.Logf("children's log:\n%s", logs.String())
		}
	}()
	applyAndStop(t, cfg, &logs, len(vals))

	ckpts, err := filepath.Glob(filepath.Join(cfg.State.Dir, "ckpt-*"))
	if err != nil || len(ckpts) == 0 {
		t.Fatalf("no checkpoints in %s: %v", cfg.State.Dir, err)
	}
	for _, p := range ckpts {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0xff
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	dr := kmsg.NewPtrDeleteRecordsRequest()
	dr.TimeoutMillis = 10_000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = "edges"
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = 0, 100
	rt.Partitions = append(rt.Partitions, rp)
	dr.Topics = append(dr.Topics, rt)
	if _, err := dr.RequestWith(t.Context(), cl); err != nil {
		t.Fatal(err)
	}

	out := refused(t, cfg)
	want := `input lost: input topic "edges": partition 0 starts at offset 100: records [0, 100) are gone (retention) and no usable checkpoint holds them`
	if !strings.Contains(out, want) || !strings.Contains(out, "checkpoint unusable") {
		t.Fatalf("refusal does not name the lost range; want %q and the unusable checkpoints in:\n%s", want, out)
	}

	cfg.State.AcceptInputLoss = true
	c := startFaultChild(t, cfg, &logs)
	c.waitReady(t, 200, "ready: active")
	if !logged(&logs, "warn", "INPUT LOSS ACCEPTED: "+strings.TrimPrefix(want, "input lost: ")) {
		t.Fatalf("no loud warning of the accepted loss")
	}
	waitFor(t, "the rest of the input to be applied", time.Minute, func() bool { return c.checkpointed(300) })
	c.stop(t)
}

// TestFaultOutputStuck: the output topic does not exist and cannot be
// created, so no batch's events are acknowledged. /readyz fails naming the
// output, gcsm_ready reads 0 and "not ready" is logged, while /healthz
// stays ok; once the topic exists the batches go out and the service is
// ready again. In process: the output is what is at fault, not the
// process, and an in-process service is cheaper on a 2-core machine.
func TestFaultOutputStuck(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "edges", "edges.dlq"),
		kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	addrs := kc.ListenAddrs()
	_, vals := transferStream(2000, 5)
	produce(t, addrs, "edges", vals)
	cfg := testConfig(t, addrs)
	cfg.Health.StallAfter = 2 * time.Second
	var logs syncBuilder
	r := startOpts(t, Options{Config: cfg, Log: zerolog.New(&logs)})
	srv := httptest.NewServer(r.s.Handler())
	defer srv.Close()
	c := &child{logs: &logs, url: srv.URL}
	defer func() {
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	}()
	reason := c.waitReady(t, 503, "output undeliverable: the oldest matched batch has waited ")
	t.Logf("/readyz: %s", reason)
	if c.metric(t, "gcsm_ready") != 0 || !logged(&logs, "warn", "not ready") {
		t.Errorf("gcsm_ready %v, warning logged %v; want 0 and a warning", c.metric(t, "gcsm_ready"), logged(&logs, "warn", "not ready"))
	}
	if resp, err := http.Get(srv.URL + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz: %v %v, want 200: liveness does not depend on the output", resp, err)
	}
	if err := ingest.EnsureTopic(t.Context(), kafkaconn.Plaintext(addrs...), "matches", 1, nil); err != nil {
		t.Fatal(err)
	}
	c.waitReady(t, 200, "ready: active")
	waitFor(t, "the input to be applied", 2*time.Minute, func() bool { return r.s.Progress().Position[0] == int64(len(vals)) })
	if !logged(&logs, "info", "ready again") {
		t.Errorf("no line says the service is ready again")
	}
}
