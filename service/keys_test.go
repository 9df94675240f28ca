package service

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/output"
	"github.com/gcsm/gcsm/query"
)

// keysStream drives a running service one step at a time: each step's
// records are one or more batches, applied and their events read back
// before the next step.
type keysStream struct {
	t     *testing.T
	addrs []string
	r     *running
	out   *consumer
	sent  int
	base  int // events read before r started: Progress counts r's own
}

// start starts a service on cfg to drive.
func (ks *keysStream) start(cfg Config) {
	ks.base = ks.out.count()
	ks.r = start(ks.t, cfg)
}

func (ks *keysStream) step(what string, recs ...ingest.Record) {
	ks.t.Helper()
	var vals [][]byte
	for _, rec := range recs {
		rec.Label = "TRANSFER"
		vals = append(vals, ingest.AppendEvent(nil, rec))
	}
	produce(ks.t, ks.addrs, "edges", vals)
	ks.sent += len(vals)
	ks.wait(what)
}

// wait waits until every record sent is applied and every event written
// is read back.
func (ks *keysStream) wait(what string) {
	ks.t.Helper()
	waitFor(ks.t, what, time.Minute, func() bool { return ks.r.s.Progress().Position[0] == int64(ks.sent) })
	waitFor(ks.t, what+": its events", time.Minute, func() bool { return int64(ks.out.count()-ks.base) == ks.r.s.Progress().Events })
}

func transferIns(src, dst, id string, amount float64) ingest.Record {
	r := ingest.Record{Op: graph.Insert, Src: src, Dst: dst, ID: id}
	if amount != 0 {
		r.Props = []graph.Prop{{Name: "amount", Value: graph.NumberValue(amount)}}
	}
	return r
}

func transferDel(src, dst, id string) ingest.Record {
	return ingest.Record{Op: graph.Delete, Src: src, Dst: dst, ID: id}
}

// postRaw posts body to srv's /queries and returns the status and body.
func postRaw(t *testing.T, srv *httptest.Server, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(srv.URL+"/queries", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// vertexKey is the key the service gives ev when it keys by vertices alone.
func vertexKey(t *testing.T, ev outEvent, c QueryConfig) string {
	t.Helper()
	p, err := query.Parse(c.Name, c.Pattern)
	if err != nil {
		t.Fatal(err)
	}
	var b []output.Binding
	for v, id := range ev.Match {
		b = append(b, output.Binding{Var: v, ID: id})
	}
	return output.Key(ev.Query, p.Form(), b)
}

// ringOf names a ring3 event by its vertex set.
func ringOf(ev outEvent) string {
	var ids []string
	for _, id := range ev.Match {
		ids = append(ids, id)
	}
	if len(ids) != 3 {
		return ""
	}
	// The three accounts of a ring, whatever the automorphic map.
	for i := range ids {
		for j := i + 1; j < len(ids); j++ {
			if ids[j] < ids[i] {
				ids[i], ids[j] = ids[j], ids[i]
			}
		}
	}
	return strings.Join(ids, " ")
}

// TestKeysStable is issue 43's case: a ring appears; an unrelated query
// over transfers is registered through the API, which makes the service
// keep parallel transfers; the ring breaks. Its appeared and disappeared
// alerts must share one key, the key of its vertices. A ring that forms
// once transfers are kept, with two transfers on one pair, must appear
// once, stay silent while one of them goes, and disappear once with the
// last.
func TestKeysStable(t *testing.T) {
	addrs := cluster(t, 1, 1)
	cfg := testConfig(t, addrs)
	cfg.Queries = cfg.Queries[:1] // ring3, which names no transfer
	ks := &keysStream{t: t, addrs: addrs, out: consume(t, addrs, "matches", true)}
	ks.start(cfg)
	srv := httptest.NewServer(ks.r.s.Handler())
	defer srv.Close()

	ks.step("the ring", transferIns("acct:1", "acct:2", "", 0), transferIns("acct:2", "acct:3", "", 0), transferIns("acct:3", "acct:1", "", 0))
	if ks.r.s.core.Store() != nil {
		t.Fatal("transfers kept before anything asked for them: the case is not exercised")
	}
	code, body := postRaw(t, srv, `{"name":"big","pattern":"(a:Account)-[t:TRANSFER]->(b:Account) WHERE t.amount > 10000"}`)
	if code != http.StatusCreated {
		t.Fatalf("registering big: %d %s", code, body)
	}
	if ks.r.s.core.Store() == nil {
		t.Fatal("registering a query over transfers did not start keeping them")
	}
	ks.step("parallel transfers",
		transferIns("acct:1", "acct:2", "tx-1", 20000), transferIns("acct:1", "acct:2", "tx-2", 5),
		transferIns("acct:4", "acct:5", "tx-3", 1), transferIns("acct:4", "acct:5", "tx-4", 2),
		transferIns("acct:5", "acct:6", "tx-5", 3), transferIns("acct:6", "acct:4", "tx-6", 4))
	ks.step("a parallel transfer of each ring goes", transferDel("acct:1", "acct:2", "tx-2"), transferDel("acct:4", "acct:5", "tx-3"))
	ks.step("the rings break", transferDel("acct:3", "acct:1", ""), transferDel("acct:4", "acct:5", "tx-4"))

	events, _ := ks.out.snapshot(t)
	type seen struct{ appeared, disappeared []string }
	rings := map[string]*seen{}
	bigs := 0
	for _, ev := range events {
		switch ev.Query {
		case "big":
			if len(ev.Transfers) != 1 || ev.Transfers[0].ID != "tx-1" {
				t.Errorf("big: %+v, want tx-1's alert", ev)
			}
			bigs++
			continue
		case "ring3":
		default:
			t.Fatalf("event of query %q", ev.Query)
		}
		if len(ev.Transfers) != 0 {
			t.Errorf("ring3 names no transfer variable, yet its event names transfers: %+v", ev)
		}
		if want := vertexKey(t, ev, cfg.Queries[0]); ev.Key != want {
			t.Errorf("ring3 %s %v: key %s, want %s, its vertices' key", ev.Change, ev.Match, ev.Key, want)
		}
		s := rings[ringOf(ev)]
		if s == nil {
			s = &seen{}
			rings[ringOf(ev)] = s
		}
		if ev.Change == output.Appeared {
			s.appeared = append(s.appeared, ev.Key)
		} else {
			s.disappeared = append(s.disappeared, ev.Key)
		}
	}
	if bigs != 1 {
		t.Errorf("%d alerts of big, want 1", bigs)
	}
	for _, ring := range []string{"acct:1 acct:2 acct:3", "acct:4 acct:5 acct:6"} {
		s := rings[ring]
		if s == nil || len(s.appeared) != 1 || len(s.disappeared) != 1 || s.appeared[0] != s.disappeared[0] {
			t.Errorf("ring %s: %+v, want one appeared and one disappeared of one key", ring, s)
		}
	}
	if len(rings) != 2 {
		t.Errorf("rings %v, want the two", rings)
	}
}

// TestQueryReplace: registering a standing name again is refused without
// "replace", and names the query; with it, the same pattern written
// otherwise keeps the query and its keys, while another pattern first
// retracts each standing match of the old one under its old key, then
// registers the new one, whose keys are other.
func TestQueryReplace(t *testing.T) {
	addrs := cluster(t, 1, 1)
	cfg := testConfig(t, addrs)
	cfg.Queries = cfg.Queries[:1]
	ks := &keysStream{t: t, addrs: addrs, out: consume(t, addrs, "matches", true)}
	ks.start(cfg)
	srv := httptest.NewServer(ks.r.s.Handler())
	defer srv.Close()
	ks.step("two rings", transferIns("acct:1", "acct:2", "", 0), transferIns("acct:2", "acct:3", "", 0), transferIns("acct:3", "acct:1", "", 0),
		transferIns("acct:4", "acct:5", "", 0), transferIns("acct:5", "acct:6", "", 0), transferIns("acct:6", "acct:4", "", 0))
	before, _ := ks.out.snapshot(t)
	if len(before) != 2 {
		t.Fatalf("%d events for two rings: %+v", len(before), before)
	}
	appeared := map[string]bool{before[0].Key: true, before[1].Key: true}

	const path = "(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)"
	code, body := postRaw(t, srv, `{"name":"ring3","pattern":"`+path+`"}`)
	if code != http.StatusConflict || !strings.Contains(body, `\"ring3\"`) || !strings.Contains(body, "replace") {
		t.Fatalf("registering ring3 again without replace: %d %s, want 409 naming it and replace", code, body)
	}
	// The same pattern, spaced otherwise: no retraction, the same keys.
	code, body = postRaw(t, srv, `{"name":"ring3","replace":true,"max_matches_per_batch":1000,`+
		`"pattern":"(a:Account) -[:TRANSFER]-> (b:Account) -[:TRANSFER]-> (c:Account) -[:TRANSFER]-> (a)"}`)
	if code != http.StatusCreated || strings.Contains(body, "retracted") {
		t.Fatalf("replacing ring3 by itself: %d %s", code, body)
	}
	if qs := ks.r.s.queries; len(qs) != 1 || qs[0].cfg.MaxMatchesPerBatch != 1000 {
		t.Fatalf("replacing ring3 by itself did not take its limits: %+v", qs[0].cfg)
	}
	ks.step("a third ring", transferIns("acct:7", "acct:8", "", 0), transferIns("acct:8", "acct:9", "", 0), transferIns("acct:9", "acct:7", "", 0))
	evs, _ := ks.out.snapshot(t)
	if len(evs) != 3 || evs[2].Change != output.Appeared {
		t.Fatalf("events after replacing ring3 by itself: %+v", evs)
	}
	if want := vertexKey(t, evs[2], cfg.Queries[0]); evs[2].Key != want {
		t.Fatalf("the third ring's key %s, want %s: replacing by the same pattern changed the keys", evs[2].Key, want)
	}
	appeared[evs[2].Key] = true

	code, body = postRaw(t, srv, `{"name":"ring3","replace":true,"initial":true,"pattern":"`+path+`"}`)
	if code != http.StatusCreated || !strings.Contains(body, `"retracted": 3,`) {
		t.Fatalf("replacing ring3 by a path: %d %s, want 201 with 3 retracted", code, body)
	}
	ks.wait("the retraction and the initial paths")
	evs, _ = ks.out.snapshot(t)
	evs = evs[3:]
	// Three disappeared of the old keys, then the paths' initial matches:
	// 3 per ring, a→b→c in either rotation.
	if len(evs) != 3+9 {
		t.Fatalf("%d events after the replace, want 3 retractions and 9 paths: %+v", len(evs), evs)
	}
	for i, ev := range evs[:3] {
		if ev.Change != output.Disappeared || !appeared[ev.Key] || ev.Query != "ring3" {
			t.Errorf("event %d after the replace: %+v, want a disappeared of an old ring key", i, ev)
		}
		delete(appeared, ev.Key)
	}
	if len(appeared) != 0 {
		t.Errorf("old keys not retracted: %v", appeared)
	}
	for _, ev := range evs[3:] {
		if ev.Change != output.Appeared || !ev.Initial {
			t.Errorf("after the retractions: %+v, want the paths' initial matches", ev)
		}
		if want := vertexKey(t, ev, QueryConfig{Name: "ring3", Pattern: path}); ev.Key != want {
			t.Errorf("path %v: key %s, want %s", ev.Match, ev.Key, want)
		}
	}
	// The old pattern is gone: breaking a ring changes only paths.
	ks.step("a ring breaks", transferDel("acct:3", "acct:1", ""))
	evs, _ = ks.out.snapshot(t)
	for _, ev := range evs[15:] {
		if ev.Change != output.Disappeared || len(ev.Match) != 3 || ev.Match["c"] == "" || ev.Initial {
			t.Errorf("after the break: %+v, want paths that disappeared", ev)
		}
	}
	if len(evs) != 15+2 {
		t.Errorf("%d events after the break, want the 2 paths through acct:3→acct:1", len(evs)-15)
	}
}

// TestQueryPatternChangedAtRestart: a restart whose configuration keeps a
// query's pattern, written otherwise, retracts nothing; one that changes it
// retracts the checkpointed query's standing matches under their keys
// before it registers the new pattern.
func TestQueryPatternChangedAtRestart(t *testing.T) {
	addrs := cluster(t, 1, 1)
	cfg := testConfig(t, addrs)
	cfg.Queries = cfg.Queries[:1]
	ks := &keysStream{t: t, addrs: addrs, out: consume(t, addrs, "matches", true)}
	ks.start(cfg)
	ks.step("a ring", transferIns("acct:1", "acct:2", "", 0), transferIns("acct:2", "acct:3", "", 0), transferIns("acct:3", "acct:1", "", 0))
	ks.r.shutdown(t)
	evs, _ := ks.out.snapshot(t)
	if len(evs) != 1 || evs[0].Change != output.Appeared {
		t.Fatalf("events of the ring: %+v", evs)
	}
	ringKey := evs[0].Key

	cfg.Queries = []QueryConfig{{Name: "ring3", Pattern: "(a:Account)-[:TRANSFER]->(b:Account)  -[:TRANSFER]->(c:Account)-[:TRANSFER]->(a)"}}
	ks.start(cfg)
	ks.step("an edge after a restart with the pattern respaced", transferIns("acct:9", "acct:8", "", 0))
	ks.r.shutdown(t)
	if evs, _ := ks.out.snapshot(t); len(evs) != 1 {
		t.Fatalf("a respaced pattern at a restart wrote %+v", evs[1:])
	}

	cfg.Queries = []QueryConfig{{Name: "ring3", Pattern: "(a:Account)-[:TRANSFER]->(b:Account)"}}
	ks.start(cfg)
	ks.step("an edge after a restart with another pattern", transferIns("acct:7", "acct:8", "", 0))
	evs, _ = ks.out.snapshot(t)
	if len(evs) != 3 {
		t.Fatalf("events after the pattern changed at a restart: %+v, want the ring's retraction and the new edge", evs[1:])
	}
	if ev := evs[1]; ev.Change != output.Disappeared || ev.Key != ringKey {
		t.Errorf("first event after the pattern changed: %+v, want the ring's disappeared under %s", ev, ringKey)
	}
	if ev := evs[2]; ev.Change != output.Appeared || ev.Match["a"] != "acct:7" || ev.Key != vertexKey(t, ev, cfg.Queries[0]) {
		t.Errorf("the new pattern's event: %+v", ev)
	}
}
