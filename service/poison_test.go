package service

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gcsm/gcsm/output"
)

// poisonLimit is the output topic's max.message.bytes in these tests: a
// ring of 300-byte ids makes a 2.9 KB alert, over it; a ring of short ids
// makes a 0.5 KB one, under it with the sink's 640 bytes of margin.
const poisonLimit = 1200

// poisonCluster is cluster(t, 1, 1) with the output topic's limit lowered
// to poisonLimit; the dead-letter topic keeps Kafka's default.
func poisonCluster(t *testing.T) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(1),
		kfake.SeedTopics(1, "edges", "edges.dlq"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "matches", 1, 1
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "max.message.bytes", kmsg.StringPtr(strconv.Itoa(poisonLimit))
	rt.Configs = append(rt.Configs, cfg)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create matches: %v", err)
	}
	return c.ListenAddrs()
}

// ring is the three edges of a ring of the ids.
func ring(a, b, c string) [][]byte {
	e := func(s, d string) []byte { return []byte(`{"op":"+","src":"` + s + `","dst":"` + d + `"}`) }
	return [][]byte{e(a, b), e(b, c), e(c, a)}
}

// checkPoison requires that the dead-letter topic holds exactly the alerts
// of queries whose keys satisfy tooLarge, with reason alert_too_large and
// their query, key and batch; that the output topic holds no alert twice
// and none over the limit; and returns the dead letters.
func checkPoison(t *testing.T, r *running, out, dlq *consumer) []output.DeadLetter {
	t.Helper()
	waitFor(t, "the events", time.Minute, func() bool { return int64(out.count()) == r.s.Progress().Events })
	waitFor(t, "the dead letters", time.Minute, func() bool { return int64(dlq.count()) == r.s.Progress().DeadLetters })
	_, raw := out.snapshot(t)
	seen := map[string]bool{}
	for _, m := range raw {
		if seen[string(m.Value)] {
			t.Errorf("alert written twice: %s", m.Value)
		}
		seen[string(m.Value)] = true
		if len(m.Key)+len(m.Value) > poisonLimit {
			t.Errorf("an alert of %d bytes in a topic of %d", len(m.Key)+len(m.Value), poisonLimit)
		}
	}
	_, dead := dlq.snapshot(t)
	var letters []output.DeadLetter
	for _, m := range dead {
		var d output.DeadLetter
		if err := json.Unmarshal(m.Value, &d); err != nil {
			t.Fatal(err)
		}
		if d.Reason != output.ReasonAlertTooLarge || d.Query == "" || d.Key == "" || d.Key != string(m.Key) || d.Batch == 0 ||
			d.Limit != poisonLimit || d.Bytes <= poisonLimit-640 || d.Topic != "matches" {
			t.Errorf("dead letter %.300s", m.Value)
		}
		var ev outEvent
		if err := json.Unmarshal([]byte(d.Value), &ev); err != nil || ev.Key != d.Key || ev.Query != d.Query || ev.Batch != d.Batch {
			t.Errorf("dead letter's alert %.300s: %v", d.Value, err)
		}
		letters = append(letters, d)
	}
	return letters
}

// metric returns the value of a series of the service's /metrics.
func metric(t *testing.T, s *Service, series string) string {
	t.Helper()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			return v
		}
	}
	return ""
}

// TestPoisonAlertFromInput is issue 42's poison pill through the input: a
// ring of long (but legal) ids makes an alert over the output topic's
// limit. It goes to the dead-letter topic, and so does its disappeared,
// while the rings before and after it are alerted, each once; after a
// restart the next long ring is dead-lettered too and the stream goes on.
func TestPoisonAlertFromInput(t *testing.T) {
	addrs := poisonCluster(t)
	long := func(c string) string { return strings.Repeat(c, 300) }
	var in [][]byte
	in = append(in, ring("a", "b", "c")...)
	in = append(in, ring(long("x"), long("y"), long("z"))...)
	in = append(in, ring("d", "e", "f")...)
	in = append(in, []byte(`{"op":"-","src":"`+long("x")+`","dst":"`+long("y")+`"}`))
	in = append(in, ring("g", "h", "i")...)
	produce(t, addrs, "edges", in)
	cfg := testConfig(t, addrs)
	cfg.Batch = BatchConfig{Size: 3, Linger: 5 * time.Millisecond} // a ring a batch
	out := consume(t, addrs, "matches", true)
	dlq := consume(t, addrs, "edges.dlq", false)
	r := start(t, cfg)
	waitFor(t, "the stream", time.Minute, func() bool { return r.s.Progress().Position[0] == int64(len(in)) })
	letters := checkPoison(t, r, out, dlq)
	if len(letters) != 2 || letters[0].Key != letters[1].Key || !strings.Contains(letters[0].Value, `"appeared"`) || !strings.Contains(letters[1].Value, `"disappeared"`) {
		t.Fatalf("%d dead letters, want the long ring's appeared and disappeared: %+v", len(letters), letters)
	}
	events, _ := out.snapshot(t)
	rings := map[string]bool{}
	for _, e := range events {
		rings[e.Match["a"]+e.Match["b"]+e.Match["c"]] = true
	}
	for _, want := range []string{"abc", "def", "ghi"} {
		found := false
		for k := range rings {
			found = found || (len(k) == 3 && strings.ContainsRune(k, rune(want[0])) && strings.ContainsRune(k, rune(want[1])))
		}
		if !found {
			t.Errorf("no alert of ring %s: %v", want, rings)
		}
	}
	if got := metric(t, r.s, `gcsm_rejects_total{reason="alert_too_large"}`); got != "2" {
		t.Errorf("rejects_total{alert_too_large} %q, want 2", got)
	}
	if got := metric(t, r.s, `gcsm_undelivered_total{reason="retries"}`); got != "0" {
		t.Errorf("undelivered_total{retries} %q, want 0", got)
	}

	// After a restart (from the checkpoint written at shutdown) nothing
	// blocks: another long ring is dead-lettered and the ring after it
	// alerted.
	r.shutdown(t)
	r = start(t, cfg)
	more := append(ring(long("p"), long("q"), long("r")), ring("j", "k", "l")...)
	produce(t, addrs, "edges", more)
	waitFor(t, "the stream after the restart", time.Minute, func() bool { return r.s.Progress().Position[0] == int64(len(in)+len(more)) })
	waitFor(t, "ring jkl", time.Minute, func() bool {
		events, _ := out.snapshot(t)
		for _, e := range events {
			if e.Match["a"] == "j" || e.Match["b"] == "j" || e.Match["c"] == "j" {
				return true
			}
		}
		return false
	})
	waitFor(t, "the long ring's dead letter", time.Minute, func() bool { return dlq.count() == 3 })
}

// TestPoisonAlertFromQuery is the poison pill through a query: one whose
// name (a legal 250 bytes) makes its alerts over the output topic's limit
// while another query's fit. Its initial and streamed alerts go to the
// dead-letter topic, the other query's flow, and DELETE of the query
// returns.
func TestPoisonAlertFromQuery(t *testing.T) {
	addrs := poisonCluster(t)
	produce(t, addrs, "edges", ring("a", "b", "c"))
	cfg := testConfig(t, addrs)
	cfg.Queries = cfg.Queries[:1] // ring3
	out := consume(t, addrs, "matches", true)
	dlq := consume(t, addrs, "edges.dlq", false)
	r := start(t, cfg)
	waitFor(t, "the first ring", time.Minute, func() bool { return r.s.Progress().Position[0] == 3 })
	srv := httptest.NewServer(r.s.Handler())
	defer srv.Close()

	name := "q" + strings.Repeat("n", 249)
	body := `{"name":"` + name + `","pattern":"(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a)","initial":true}`
	resp, err := http.Post(srv.URL+"/queries", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST /queries: %d %s", resp.StatusCode, b)
	}
	produce(t, addrs, "edges", ring("d", "e", "f"))
	waitFor(t, "the second ring", time.Minute, func() bool { return r.s.Progress().Position[0] == 6 })
	letters := checkPoison(t, r, out, dlq)
	if len(letters) != 2 {
		t.Fatalf("%d dead letters, want the long query's initial and streamed alerts", len(letters))
	}
	for _, d := range letters {
		if d.Query != name {
			t.Errorf("dead letter of query %.20s…", d.Query)
		}
	}
	events, _ := out.snapshot(t)
	ring3 := 0
	for _, e := range events {
		if e.Query == "ring3" {
			ring3++
		}
	}
	if ring3 != 2 {
		t.Errorf("%d ring3 alerts, want 2: %+v", ring3, events)
	}

	// Only against a hang: DELETE waits for delivery, which must not block.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "DELETE", srv.URL+"/queries/"+name, nil)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("DELETE of the query: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE of the query: %d", resp.StatusCode)
	}
	produce(t, addrs, "edges", ring("g", "h", "i"))
	waitFor(t, "a ring after the DELETE", time.Minute, func() bool { return r.s.Progress().Position[0] == 9 })
	checkPoison(t, r, out, dlq)
}
