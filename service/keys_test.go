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
	waitFor(ks.t, what+": its events", time.Minute, func() bool { return int64(ks.out.count()) == ks.r.s.Progress().Events })
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
	return output.Key(ev.Query, patternForm(p), b)
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
	ks.r = start(t, cfg)
	srv := httptest.NewServer(ks.r.s.Handler())
	defer srv.Close()

	ks.step("the ring", transferIns("acct:1", "acct:2", "", 0), transferIns("acct:2", "acct:3", "", 0), transferIns("acct:3", "acct:1", "", 0))
	if ks.r.s.bundles != nil {
		t.Fatal("transfers kept before anything asked for them: the case is not exercised")
	}
	code, body := postRaw(t, srv, `{"name":"big","pattern":"(a:Account)-[t:TRANSFER]->(b:Account) WHERE t.amount > 10000"}`)
	if code != http.StatusCreated {
		t.Fatalf("registering big: %d %s", code, body)
	}
	if ks.r.s.bundles == nil {
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
