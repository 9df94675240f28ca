package service

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/output"
)

// TestEndToEnd runs the service on a transfer stream through a one- and a
// three-broker cluster and requires exactly the events that replaying the
// same batches through the engine gives, and the final graph's matches as
// their net effect.
func TestEndToEnd(t *testing.T) {
	// With and without compression.
	for _, tc := range []struct {
		brokers     int
		compression string
	}{{1, "none"}, {3, "lz4"}, {3, "zstd"}} {
		brokers := tc.brokers
		t.Run(fmt.Sprintf("brokers=%d/compression=%s", brokers, tc.compression), func(t *testing.T) {
			addrs := cluster(t, brokers, 1)
			cfg := testConfig(t, addrs)
			cfg.Output.Compression = tc.compression
			// A whole number of batches, all waiting before the start: every
			// batch fills to Size, so the batches are known (those of a
			// replay) and none waits out the linger.
			recs, vals := transferStream(12*cfg.Batch.Size, uint64(brokers))
			produce(t, addrs, "edges", vals)
			cfg.Batch.Linger = 10 * time.Second
			out := consume(t, addrs, "matches", true)
			r := start(t, cfg)
			waitFor(t, "the stream to be applied", time.Minute, func() bool { return r.s.Progress().Position[0] == int64(len(vals)) })
			waitFor(t, "the events to be read", time.Minute, func() bool { return int64(out.count()) == r.s.Progress().Events })
			events, _ := out.snapshot(t)
			if len(events) == 0 {
				t.Fatal("no events")
			}
			want := replayEvents(t, cfg, recs)
			got := make([]string, len(events))
			for i, ev := range events {
				got[i] = describe(ev)
				if ev.Source == nil || ev.Source.Topic != "edges" || ev.Source.FromOffset > ev.Source.ToOffset || ev.EventTime == "" {
					t.Fatalf("event %d has no proper source or time: %+v", i, ev)
				}
				if len(ev.Edges) == 0 || ev.Edges[0][2] != "TRANSFER" {
					t.Fatalf("event %d edges %v", i, ev.Edges)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("service events differ from the replay's: got %d, want %d\nfirst got  %v\nfirst want %v", len(got), len(want), head(got), head(want))
			}
			checkNet(t, events, finalMatches(t, cfg, recs))
		})
	}
}

func head(s []string) []string { return s[:min(5, len(s))] }

// describe is an event's identity for comparisons: batch, query, change and
// the sorted bindings.
func describe(ev outEvent) string {
	vars := make([]string, 0, len(ev.Match))
	for v, id := range ev.Match {
		vars = append(vars, v+"="+id)
	}
	slices.Sort(vars)
	return fmt.Sprintf("%d %s %s %s", ev.Batch, ev.Query, ev.Change, strings.Join(vars, ","))
}

// replayEvents is the reference: the stream applied in batches of
// cfg.Batch.Size by dyngraph and the CPU engine directly, as gcsm replay
// does, each match described as describe does.
func replayEvents(t *testing.T, cfg Config, recs []ingest.Record) []string {
	t.Helper()
	r := newReference(t, cfg)
	g, res, ids, qs := r.g, r.res, r.ids, r.qs
	var out []string
	m := &incremental.CPU{Workers: 1}
	for lo, batch := 0, uint64(1); lo < len(recs); lo, batch = lo+cfg.Batch.Size, batch+1 {
		var ups []graph.Update
		for _, r := range recs[lo:min(lo+cfg.Batch.Size, len(recs))] {
			u, err := res.Resolve(r)
			if err != nil {
				t.Fatal(err)
			}
			ups = append(ups, u)
		}
		delta, _, _, err := g.Apply(ups)
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Match(g, delta, qs, incremental.Enumerate, func(_, qi int, sign graph.Sign, mv []graph.VertexID) {
			change := output.Appeared
			if sign < 0 {
				change = output.Disappeared
			}
			ev := outEvent{Batch: batch, Query: qs[qi].Name, Change: change, Match: map[string]string{}}
			for _, b := range canonicalMatch(qs[qi], mv, ids) {
				ev.Match[b.Var] = b.ID
			}
			out = append(out, describe(ev))
		})
		if err != nil {
			t.Fatal(err)
		}
		g.Reorganize()
	}
	slices.Sort(out)
	return out
}

// TestPartitions reads a three-partition topic: the order across partitions
// is Kafka's to choose, so only the net effect is fixed.
func TestPartitions(t *testing.T) {
	addrs := cluster(t, 3, 3)
	recs, vals := transferStream(2000, 7)
	// Reversals must follow their transfers, which only one partition
	// guarantees: keep the inserts here.
	var ins []ingest.Record
	var insVals [][]byte
	for i, r := range recs {
		if r.Op == graph.Insert {
			ins, insVals = append(ins, r), append(insVals, vals[i])
		}
	}
	produce(t, addrs, "edges", insVals)
	cfg := testConfig(t, addrs)
	out := consume(t, addrs, "matches", true)
	r := start(t, cfg)
	waitFor(t, "the stream to be applied", time.Minute, func() bool {
		p := r.s.Progress()
		return p.Position[0]+p.Position[1]+p.Position[2] == int64(len(insVals))
	})
	waitFor(t, "the events to be read", time.Minute, func() bool { return int64(out.count()) == r.s.Progress().Events })
	events, _ := out.snapshot(t)
	checkNet(t, events, finalMatches(t, cfg, ins))
}

// TestDeadLetters mixes every kind of bad message, and seeded random
// bytes, into a valid stream: each bad one must reach the dead-letter topic
// with its place, its value and its reason, and nothing valid may be lost.
func TestDeadLetters(t *testing.T) {
	addrs := cluster(t, 1, 1)
	recs, vals := transferStream(500, 3)
	bad := map[string]string{ // value → a fragment the reason must contain
		`{"op":"+","src":"acct-1"`:                                                "JSON",
		`{"op":"+","src":"acct-1"}`:                                               `dst`,
		`{"op":"move","src":"a","dst":"b"}`:                                       "op",
		`{"op":"+","src":"acct-9","dst":"acct-9"}`:                                "self-loop",
		`{"op":"+","src":"acct-1","dst":"x","src_label":"Merchant"}`:              "label",
		`{"op":"+","src":"a","dst":"b","ts":"yesterday"}`:                         "ts",
		`{"op":"+","src":"a","dst":"b","pad":"` + strings.Repeat("x", 600) + `"}`: "limit",
		"":             "blank",
		"e 1":          "",
		"\xff\xfe\x00": "",
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		b := make([]byte, 1+rng.IntN(40))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		if _, err := (&ingest.Decoder{}).Decode(b); err != nil {
			bad[string(b)] = ""
		}
	}
	// Interleave: bad messages at seeded places among the valid ones.
	var all [][]byte
	wantBad := map[int64]string{}
	badVals := slices.Sorted(func(yield func(string) bool) {
		for v := range bad {
			if !yield(v) {
				return
			}
		}
	})
	valid := slices.Clone(vals)
	for _, v := range badVals {
		at := rng.IntN(len(valid) + 1)
		valid = slices.Insert(valid, at, []byte("\x00BAD"+v))
	}
	for _, v := range valid {
		if s, ok := strings.CutPrefix(string(v), "\x00BAD"); ok {
			wantBad[int64(len(all))] = s
			all = append(all, []byte(s))
			continue
		}
		all = append(all, v)
	}
	produce(t, addrs, "edges", all)
	cfg := testConfig(t, addrs)
	cfg.Input.MaxMessageBytes = 512
	dlq := consume(t, addrs, "edges.dlq", false)
	out := consume(t, addrs, "matches", true)
	r := start(t, cfg)
	waitFor(t, "the stream to be applied", time.Minute, func() bool { return r.s.Progress().Position[0] == int64(len(all)) })
	waitFor(t, "the dead letters", time.Minute, func() bool { return int64(dlq.count()) == r.s.Progress().DeadLetters })
	waitFor(t, "the events", time.Minute, func() bool { return int64(out.count()) == r.s.Progress().Events })
	_, letters := dlq.snapshot(t)
	got := map[int64]bool{}
	for _, m := range letters {
		var dl output.DeadLetter
		if err := json.Unmarshal(m.Value, &dl); err != nil {
			t.Fatalf("dead letter %s: %v", m.Value, err)
		}
		v, ok := wantBad[dl.Offset]
		if !ok {
			t.Errorf("valid message at offset %d dead-lettered: %s", dl.Offset, dl.Error)
			continue
		}
		got[dl.Offset] = true
		value := dl.Value
		if dl.Encoding == "base64" {
			b, err := base64.StdEncoding.DecodeString(dl.Value)
			if err != nil {
				t.Fatal(err)
			}
			value = string(b)
		}
		if value != v || dl.Topic != "edges" || dl.Partition != 0 {
			t.Errorf("dead letter at %d: %+v, want value %q", dl.Offset, dl, v)
		}
		if frag := bad[v]; !strings.Contains(strings.ToLower(dl.Error), strings.ToLower(frag)) {
			t.Errorf("dead letter for %q says %q, want it to mention %q", v, dl.Error, frag)
		}
	}
	for off, v := range wantBad {
		if !got[off] {
			t.Errorf("bad message %q at offset %d has no dead letter", v, off)
		}
	}
	events, _ := out.snapshot(t)
	checkNet(t, events, finalMatches(t, cfg, recs))
}

// TestWindow lets a ring age out of a one-hour window: it must disappear,
// with no input message as its source, and an event older than the window
// must be refused as late.
func TestWindow(t *testing.T) {
	addrs := cluster(t, 1, 1)
	cfg := testConfig(t, addrs)
	cfg.Window = WindowConfig{Size: time.Hour}
	cfg.Batch.Linger = 5 * time.Millisecond
	out := consume(t, addrs, "matches", true)
	dlq := consume(t, addrs, "edges.dlq", false)
	r := start(t, cfg)
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC).UnixMilli()
	ev := func(src, dst string, ms int64) []byte {
		return ingest.AppendEvent(nil, ingest.Record{Op: graph.Insert, Src: src, Dst: dst, Time: ms})
	}
	sent := 0
	step := func(vals ...[]byte) {
		produce(t, addrs, "edges", vals)
		sent += len(vals)
		waitFor(t, "a batch", 30*time.Second, func() bool { return r.s.Progress().Position[0] == int64(sent) })
	}
	step(ev("a", "b", t0), ev("b", "c", t0+1000), ev("c", "a", t0+2000))
	step(ev("x", "y", t0+30*60*1000))  // half an hour later: the ring stays
	step(ev("y", "z", t0+2*3600*1000)) // two hours later: the watermark passes the ring
	step(ev("z", "w", t0+2*3600*1000+1))
	step(ev("p", "q", t0)) // late
	waitFor(t, "events", 30*time.Second, func() bool { return int64(out.count()) == r.s.Progress().Events })
	events, _ := out.snapshot(t)
	var changes []string
	for _, e := range events {
		if e.Query != "ring3" {
			continue
		}
		changes = append(changes, e.Change)
		if e.Change == output.Disappeared && e.Source != nil {
			t.Errorf("expired ring has source %+v, want none", e.Source)
		}
	}
	if !slices.Equal(changes, []string{output.Appeared, output.Disappeared}) {
		t.Fatalf("ring3 events %v, want appeared then disappeared", changes)
	}
	waitFor(t, "the late event's dead letter", 30*time.Second, func() bool { return dlq.count() == 1 })
	_, letters := dlq.snapshot(t)
	if !strings.Contains(string(letters[0].Value), "older than the window") {
		t.Fatalf("dead letter %s", letters[0].Value)
	}
}

// TestQueryAPI registers, lists and removes queries over HTTP, with the
// bearer token, and checks that a query's initial matches come first.
func TestQueryAPI(t *testing.T) {
	addrs := cluster(t, 1, 1)
	recs, vals := transferStream(1500, 5)
	produce(t, addrs, "edges", vals)
	cfg := testConfig(t, addrs)
	cfg.HTTP.Token = "s3cret"
	out := consume(t, addrs, "matches", true)
	r := start(t, cfg)
	srv := httptest.NewServer(r.s.Handler())
	defer srv.Close()
	waitFor(t, "the stream to be applied", time.Minute, func() bool { return r.s.Progress().Position[0] == int64(len(vals)) })

	call := func(method, path, body, token string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if strings.HasPrefix(body, "{") {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := call("GET", "/queries", "", ""); code != http.StatusUnauthorized {
		t.Fatalf("GET without token: %d", code)
	}
	if code, _ := call("GET", "/queries", "", "wrong"); code != http.StatusUnauthorized {
		t.Fatalf("GET with a wrong token: %d", code)
	}
	ring4 := "(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(d:Account)-[:TRANSFER]->(a)"
	code, body := call("POST", "/queries", `{"name":"ring4","pattern":"`+ring4+`","initial":true,"max_time":"10s"}`, "s3cret")
	if code != http.StatusCreated {
		t.Fatalf("POST: %d %s", code, body)
	}
	if code, body := call("POST", "/queries", `{"name":"ring4","pattern":"`+ring4+`"}`, "s3cret"); code != http.StatusConflict {
		t.Fatalf("second POST of ring4: %d %s", code, body)
	}
	if code, body := call("POST", "/queries", `{"name":"broken","pattern":"(a)-[:T]->(b"}`, "s3cret"); code != http.StatusBadRequest || !strings.Contains(body, "1:") {
		t.Fatalf("POST of a broken pattern: %d %s, want 400 naming the position", code, body)
	}
	if code, body := call("POST", "/queries", `{"name":"pair","pattern":"(a:Account)-[:TRANSFER]->(b:Merchant)"}`, "s3cret"); code != http.StatusCreated {
		t.Fatalf("POST: %d %s", code, body)
	}
	code, body = call("GET", "/queries", "", "s3cret")
	var infos []queryInfo
	if err := json.Unmarshal([]byte(body), &infos); code != http.StatusOK || err != nil {
		t.Fatalf("GET: %d %s %v", code, body, err)
	}
	var names []string
	for _, q := range infos {
		names = append(names, q.Name)
	}
	if !slices.Equal(names, []string{"ring3", "split", "ring4", "pair"}) {
		t.Fatalf("GET lists %v", names)
	}
	if code, _ := call("DELETE", "/queries/pair", "", "s3cret"); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	if code, _ := call("DELETE", "/queries/pair", "", "s3cret"); code != http.StatusNotFound {
		t.Fatalf("second DELETE: %d", code)
	}

	waitFor(t, "events", 30*time.Second, func() bool { return int64(out.count()) == r.s.Progress().Events })
	events, _ := out.snapshot(t)
	ref := cfg
	ref.Queries = []QueryConfig{{Name: "ring4", Pattern: ring4}}
	want := finalMatches(t, ref, recs)
	got := map[string]bool{}
	for _, ev := range events {
		if ev.Query == "ring4" {
			if !ev.Initial || ev.Change != output.Appeared || ev.Source != nil {
				t.Fatalf("ring4 event %+v is not an initial match", ev)
			}
			got[ev.Key] = true
		}
	}
	if len(got) != len(want) || len(want) == 0 {
		t.Fatalf("%d initial ring4 matches, want %d", len(got), len(want))
	}
	for k := range want {
		if !got[k] {
			t.Fatalf("initial match %s missing", k)
		}
	}

	// The registration survives a restart: it is in the checkpoint.
	r.shutdown(t)
	s2, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.close()
	if i := s2.queryIndex("ring4"); i < 0 {
		t.Fatal("ring4 lost across a restart")
	}
	if i := s2.queryIndex("pair"); i >= 0 {
		t.Fatal("deleted query pair back after a restart")
	}
}

// TestMetrics scrapes /metrics while the service works.
func TestMetrics(t *testing.T) {
	addrs := cluster(t, 1, 1)
	_, vals := transferStream(1000, 9)
	cfg := testConfig(t, addrs)
	r := start(t, cfg)
	srv := httptest.NewServer(r.s.Handler())
	defer srv.Close()
	scrape := func() string {
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	value := func(text, series string) float64 {
		for _, line := range strings.Split(text, "\n") {
			if rest, ok := strings.CutPrefix(line, series+" "); ok {
				var v float64
				fmt.Sscan(rest, &v)
				return v
			}
		}
		return -1
	}
	produce(t, addrs, "edges", vals[:500])
	waitFor(t, "half the stream", time.Minute, func() bool { return r.s.Progress().Position[0] == 500 })
	m1 := scrape()
	produce(t, addrs, "edges", vals[500:])
	waitFor(t, "the stream", time.Minute, func() bool { return r.s.Progress().Position[0] == 1000 })
	m2 := scrape()
	for _, name := range []string{"gcsm_updates_total", "gcsm_rejects_total", "gcsm_matches_total", "gcsm_batches_total",
		"gcsm_zero_copy_bytes_total", "gcsm_batch_seconds", "gcsm_batch_wait_seconds", "gcsm_run_loop_idle_seconds_total", "gcsm_checkpoint_seconds", "gcsm_graph_vertices", "gcsm_graph_edges",
		"gcsm_gpu_cache_bytes", "gcsm_gpu_cache_hit_ratio", "gcsm_consumer_lag", "gcsm_checkpoint_age_seconds", "gcsm_queries"} {
		if !strings.Contains(m2, "# TYPE "+name+" ") {
			t.Errorf("metric %s missing", name)
		}
	}
	for _, series := range []string{"gcsm_batches_total", "gcsm_graph_edges", `gcsm_matches_total{change="appeared",query="ring3"}`,
		`gcsm_batch_seconds_count{stage="match"}`, `gcsm_batch_wait_seconds_count{queue="output"}`, `gcsm_updates_total{op="insert",result="applied"}`,
		"gcsm_run_loop_idle_seconds_total"} {
		a, b := value(m1, series), value(m2, series)
		if a <= 0 || b <= a {
			t.Errorf("%s: %v then %v, want positive and growing", series, a, b)
		}
	}
	if v := value(m2, "gcsm_queries"); v != 2 {
		t.Errorf("gcsm_queries = %v, want 2", v)
	}
	resp, err := http.Get(srv.URL + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("readyz: %v %v", resp, err)
	}
}

// TestRebalance runs two members of one group: the second waits as a
// standby while the first works, takes over when the first leaves, and the
// output still ends with exactly the final graph's matches.
func TestRebalance(t *testing.T) {
	addrs := cluster(t, 1, 1)
	recs, vals := transferStream(2000, 11)
	cfgA := testConfig(t, addrs)
	cfgB := testConfig(t, addrs) // its own state directory: it replays from the start
	out := consume(t, addrs, "matches", true)
	a := start(t, cfgA)
	produce(t, addrs, "edges", vals[:1000])
	waitFor(t, "A to apply the first half", time.Minute, func() bool { return a.s.Progress().Position[0] == 1000 })
	b := start(t, cfgB)
	// B joins: the group rebalances, and A must keep the input.
	waitFor(t, "B to be a standby", time.Minute, func() bool {
		b.s.mu.Lock()
		defer b.s.mu.Unlock()
		return b.s.ready && !b.s.active
	})
	produce(t, addrs, "edges", vals[1000:])
	waitFor(t, "A to apply the rest", time.Minute, func() bool { return a.s.Progress().Position[0] == 2000 })
	if p := b.s.Progress(); p.Batches != 0 {
		t.Fatalf("the standby processed %d batches while the active member lived", p.Batches)
	}
	a.shutdown(t)
	waitFor(t, "B to take over and catch up", time.Minute, func() bool { return b.s.Progress().Position[0] == 2000 })
	waitFor(t, "events", time.Minute, func() bool {
		return int64(out.count()) == a.s.Progress().Events+b.s.Progress().Events
	})
	events, _ := out.snapshot(t)
	checkNet(t, events, finalMatches(t, cfgA, recs))
}

// TestRestartResumes stops the service cleanly and starts it again on the
// same state: it must resume from its checkpoint, not re-read the topic,
// and fall back to the previous checkpoint when the newest is corrupt.
func TestRestartResumes(t *testing.T) {
	addrs := cluster(t, 1, 1)
	recs, vals := transferStream(1500, 13)
	cfg := testConfig(t, addrs)
	cfg.State.CheckpointEvery = time.Hour // only the final one, at shutdown
	out := consume(t, addrs, "matches", true)
	r := start(t, cfg)
	produce(t, addrs, "edges", vals[:1000])
	waitFor(t, "the first part", time.Minute, func() bool { return r.s.Progress().Position[0] == 1000 })
	first := r.s.Progress()
	r.shutdown(t)

	r2 := start(t, cfg)
	if p := r2.s.Progress(); p.Batches != 0 {
		t.Fatalf("fresh progress %+v", p)
	}
	if r2.s.batch != first.Batches || r2.s.position[0] != 1000 {
		t.Fatalf("restored batch %d position %v, want %d and 1000", r2.s.batch, r2.s.position, first.Batches)
	}
	produce(t, addrs, "edges", vals[1000:])
	waitFor(t, "the rest", time.Minute, func() bool { return r2.s.Progress().Position[0] == 1500 })
	waitFor(t, "events", time.Minute, func() bool { return int64(out.count()) == first.Events+r2.s.Progress().Events })
	r2.shutdown(t)
	events, _ := out.snapshot(t)
	checkNet(t, events, finalMatches(t, cfg, recs))

	// Corrupt the newest checkpoint: the previous one (position 1000) is
	// loaded instead, and the log says so.
	files, _ := filepath.Glob(filepath.Join(cfg.State.Dir, "ckpt-*"))
	slices.Sort(files)
	if len(files) < 2 {
		t.Fatalf("checkpoints %v, want at least 2", files)
	}
	newest := files[len(files)-1]
	b, err := os.ReadFile(newest)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(newest, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	s3, err := New(Options{Config: cfg, Log: newTestLogger(&logged)})
	if err != nil {
		t.Fatal(err)
	}
	defer s3.close()
	if s3.position[0] >= 1500 || !strings.Contains(logged.String(), "checkpoint unusable") {
		t.Fatalf("after corrupting %s: position %v, log %q", newest, s3.position, logged.String())
	}
}

// TestQueryLimits gives a busy query a cap of five events per batch: no
// batch may emit more, every hit must be counted and shown, and the metrics
// must still count every match.
func TestQueryLimits(t *testing.T) {
	addrs := cluster(t, 1, 1)
	_, vals := transferStream(1500, 17)
	produce(t, addrs, "edges", vals)
	cfg := testConfig(t, addrs)
	cfg.Queries[1].MaxMatchesPerBatch = 5    // split: hundreds of matches per batch
	cfg.Queries[0].MaxTime = time.Nanosecond // ring3: over its time before it starts
	out := consume(t, addrs, "matches", true)
	r := start(t, cfg)
	srv := httptest.NewServer(r.s.Handler())
	defer srv.Close()
	waitFor(t, "the stream", time.Minute, func() bool { return r.s.Progress().Position[0] == int64(len(vals)) })
	waitFor(t, "the events", time.Minute, func() bool { return int64(out.count()) == r.s.Progress().Events })
	events, _ := out.snapshot(t)
	perBatch := map[uint64]int{}
	for _, ev := range events {
		if ev.Query == "split" {
			perBatch[ev.Batch]++
		}
	}
	emitted := 0
	for b, n := range perBatch {
		if n > 5 {
			t.Fatalf("batch %d emitted %d split events, over the cap of 5", b, n)
		}
		emitted += n
	}
	resp, err := http.Get(srv.URL + "/queries")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var infos []queryInfo
	if err := json.NewDecoder(resp.Body).Decode(&infos); err != nil {
		t.Fatal(err)
	}
	split := infos[1]
	if split.LimitHits == 0 || !strings.Contains(split.LastLimit, "max_matches_per_batch") {
		t.Fatalf("split's limit was hit but GET /queries says %+v", split)
	}
	if total := split.Appeared + split.Disappeared; total <= int64(emitted) {
		t.Fatalf("split found %d matches and emitted %d: the cap withheld nothing", total, emitted)
	}
	ring := infos[0]
	if ring.LimitHits == 0 || !strings.Contains(ring.LastLimit, "max_time") || ring.Appeared > 0 {
		t.Fatalf("ring3 had no time at all but GET /queries says %+v", ring)
	}
}

// TestLoadedCheckpointCommitted: a member that starts from a checkpoint
// commits the offsets it covers even when no new input arrives. A group
// the checkpoint's writer never committed to stands for a writer killed
// between its checkpoint and its commit (TestCrashRestart met that case
// only at random).
func TestLoadedCheckpointCommitted(t *testing.T) {
	addrs := cluster(t, 1, 1)
	_, vals := transferStream(500, 17)
	cfg := testConfig(t, addrs)
	produce(t, addrs, "edges", vals)
	r := start(t, cfg)
	waitFor(t, "the stream to be committed", time.Minute, func() bool { return committed(t, addrs, cfg.Input.Group, 1) == int64(len(vals)) })
	r.shutdown(t)

	cfg.Input.Group += "-other"
	if got := committed(t, addrs, cfg.Input.Group, 1); got >= 0 {
		t.Fatalf("a new group has offset %d committed", got)
	}
	r2 := start(t, cfg)
	if r2.s.position[0] != int64(len(vals)) {
		t.Fatalf("restored position %v, want %d", r2.s.position, len(vals))
	}
	waitFor(t, "the loaded checkpoint to be committed", time.Minute, func() bool { return committed(t, addrs, cfg.Input.Group, 1) == int64(len(vals)) })
}
