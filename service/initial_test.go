package service

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// denseGraph is n accounts with each ordered pair an edge with
// probability p, as input messages.
func denseGraph(n int, p float64) [][]byte {
	r := rand.New(rand.NewPCG(42, 1))
	var vals [][]byte
	for a := range n {
		for b := range n {
			if a != b && r.Float64() < p {
				vals = append(vals, fmt.Appendf(nil, `{"op":"+","src":"d%d","dst":"d%d"}`, a, b))
			}
		}
	}
	return vals
}

// clique is the pattern of a k-clique whose edges may point either way.
func clique(k int) string {
	var es []string
	for a := range k {
		for b := a + 1; b < k; b++ {
			es = append(es, fmt.Sprintf("(v%d)--(v%d)", a, b))
		}
	}
	return strings.Join(es, ", ")
}

// initialHarness is a service on a dense graph, with its API served.
type initialHarness struct {
	r     *running
	srv   *httptest.Server
	addrs []string
	out   *consumer
}

func newInitialHarness(t *testing.T, accounts int, density float64, tune func(*Config)) *initialHarness {
	addrs := cluster(t, 1, 1)
	vals := denseGraph(accounts, density)
	produce(t, addrs, "edges", vals)
	cfg := testConfig(t, addrs)
	cfg.Batch.Size = 4096
	if tune != nil {
		tune(&cfg)
	}
	h := &initialHarness{addrs: addrs, out: consume(t, addrs, "matches", true)}
	h.r = start(t, cfg)
	h.srv = httptest.NewServer(h.r.s.Handler())
	t.Cleanup(h.srv.Close)
	waitFor(t, "the dense graph to be applied", 2*time.Minute, func() bool { return h.r.s.Progress().Position[0] == int64(len(vals)) })
	return h
}

// post registers a query in the background; its answer comes on the
// channel (the status and body, or the client's error).
func (h *initialHarness) post(ctx context.Context, body string) <-chan string {
	ch := make(chan string, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", h.srv.URL+"/queries", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			ch <- "error: " + err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		ch <- strconv.Itoa(resp.StatusCode) + " " + string(b)
	}()
	return ch
}

// registered waits until name is a standing query: its initial run has
// started.
func (h *initialHarness) registered(t *testing.T, name string) {
	waitFor(t, name+" to be registered", time.Minute, func() bool {
		h.r.s.mu.Lock()
		defer h.r.s.mu.Unlock()
		for _, qi := range h.r.s.infos {
			if qi.Name == name {
				return true
			}
		}
		return false
	})
}

// ringAlerts produces a fresh 3-ring and waits for its alert.
func (h *initialHarness) ringAlerts(t *testing.T, tag string) {
	var vals [][]byte
	for i := range 3 {
		vals = append(vals, fmt.Appendf(nil, `{"op":"+","src":"%s%d","dst":"%s%d"}`, tag, i, tag, (i+1)%3))
	}
	produce(t, h.addrs, "edges", vals)
	waitFor(t, "the fresh ring's alert", time.Minute, func() bool {
		events, _ := h.out.snapshot(t)
		for _, ev := range events {
			if ev.Query == "ring3" && (ev.Match["a"] == tag+"0" || ev.Match["b"] == tag+"0" || ev.Match["c"] == tag+"0") {
				return true
			}
		}
		return false
	})
}

func initialResult(t *testing.T, answer string) (int, InitialResult) {
	t.Helper()
	code, body, _ := strings.Cut(answer, " ")
	var r registered
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.Initial == nil {
		t.Fatalf("answer %q: %v", answer, err)
	}
	c, _ := strconv.Atoi(code)
	return c, *r.Initial
}

// rss is the process's resident memory.
func rss(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm")
	}
	f := bytes.Fields(b)
	pages, _ := strconv.ParseInt(string(f[1]), 10, 64)
	return pages * int64(os.Getpagesize())
}

// onlyRing3 keeps the test's ring3 alone: split's matches on a dense graph
// would make each batch of the load slow.
func onlyRing3(cfg *Config) { cfg.Queries = cfg.Queries[:1] }

// TestInitialBesideStream: a 12-clique's initial run on a dense graph (200
// accounts, 11,900 edges; the search takes seconds on one core and finds
// nothing) runs beside the stream: a fresh ring alerts meanwhile, and a
// DELETE ends the run. Then a 5-path's, which has millions of matches,
// stops at the memory budget with RSS bounded, and the matches it reported
// are in the output. Before, the clique held the run loop, so the ring's
// alert waited for it, and the 5-path grew the process without end.
func TestInitialBesideStream(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a dense graph")
	}
	h := newInitialHarness(t, 200, 0.3, func(cfg *Config) {
		onlyRing3(cfg)
		cfg.Initial.MaxMatches = 1 << 40
		cfg.Initial.MaxMemory = 32 << 20
	})
	answer := h.post(context.Background(), `{"name":"clique","pattern":"`+clique(12)+`","initial":true,"max_time":"10m"}`)
	h.registered(t, "clique")
	h.ringAlerts(t, "fresh")
	req, _ := http.NewRequest("DELETE", h.srv.URL+"/queries/clique", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE during the initial run: %v %v", resp, err)
	}
	resp.Body.Close()
	if code, res := initialResult(t, <-answer); code != http.StatusCreated || res != (InitialResult{CutShort: true, Reason: "deleted"}) {
		t.Fatalf("clique answered %d %+v, want 201, cut short by the DELETE", code, res)
	}

	before := rss(t)
	code, res := initialResult(t, <-h.post(context.Background(), `{"name":"path5","pattern":"(a)-->(b)-->(c)-->(d)-->(e)","initial":true,"max_time":"10m"}`))
	grew := rss(t) - before
	t.Logf("path5: %+v; RSS grew by %d MiB", res, grew>>20)
	if code != http.StatusCreated || !res.CutShort || res.Reason != "max_memory" || res.Reported == 0 {
		t.Fatalf("path5 answered %d %+v, want 201, cut short by max_memory", code, res)
	}
	if grew > 256<<20 {
		t.Errorf("RSS grew by %d MiB over a 32 MiB budget", grew>>20)
	}
	waitFor(t, "path5's initial events", time.Minute, func() bool {
		events, _ := h.out.snapshot(t)
		n := 0
		for _, ev := range events {
			if ev.Query == "path5" && ev.Initial {
				n++
			}
			if ev.Query == "clique" {
				t.Fatalf("an event of the deleted clique: %+v", ev)
			}
		}
		return n == res.Reported
	})
}

// TestInitialStopsOnShutdown: SIGTERM (Run's context ending) during an
// initial run ends the run and the service promptly, and the POST says
// the run was cut short. Before, the run held the run loop to its end.
func TestInitialStopsOnShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a dense graph")
	}
	h := newInitialHarness(t, 200, 0.3, onlyRing3)
	answer := h.post(context.Background(), `{"name":"clique","pattern":"`+clique(12)+`","initial":true,"max_time":"10m"}`)
	h.registered(t, "clique")
	h.r.shutdown(t) // fails the test if Run takes over 30s
	if code, res := initialResult(t, <-answer); code != http.StatusCreated || res != (InitialResult{CutShort: true, Reason: "stopping"}) {
		t.Fatalf("clique answered %d %+v, want 201, cut short by the shutdown", code, res)
	}
}
