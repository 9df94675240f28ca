package service

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/output"
	"github.com/gcsm/gcsm/query"
	dto "github.com/prometheus/client_model/go"
)

// transferRecords is a stream of transfers with ids, amounts and times
// among few accounts, with replacements (an id sent again with another
// amount), deletions by id and id-less transfers, so that pairs carry
// several transfers and change them.
func transferRecords(n int, seed uint64) ([]ingest.Record, [][]byte) {
	rng := rand.New(rand.NewPCG(seed, 24))
	var recs []ingest.Record
	var vals [][]byte
	ms := int64(1_700_000_000_000)
	for i := range n {
		a, b := rng.IntN(8), rng.IntN(8)
		if a == b {
			b = (b + 1) % 8
		}
		ms += int64(rng.IntN(2000))
		r := ingest.Record{Op: graph.Insert, Src: fmt.Sprintf("acct:%d", a), Dst: fmt.Sprintf("acct:%d", b),
			Label: "TRANSFER", Time: ms, Line: i + 1}
		if rng.IntN(6) != 0 {
			r.ID = fmt.Sprintf("tx-%d", rng.IntN(n/2))
		}
		r.Props = []graph.Prop{{Name: "amount", Value: graph.NumberValue(float64(rng.IntN(200)))}}
		if rng.IntN(8) == 0 {
			r.Op, r.Props = graph.Delete, nil
		}
		recs = append(recs, r)
		vals = append(vals, ingest.AppendEvent(nil, r))
	}
	return recs, vals
}

var transferQueries = []QueryConfig{
	{Name: "ring3w", Pattern: "(a:Account)-[t1:TRANSFER]->(b:Account)-[t2:TRANSFER]->(c:Account)-[t3:TRANSFER]->(a) " +
		"WHERE t1.amount > 100 AND t1.ts < t2.ts AND t2.ts < t3.ts AND t2.amount >= 0.5 * t1.amount"},
	{Name: "twice", Pattern: "(a:Account)-[t1:TRANSFER]->(b:Account), (a)-[t2:TRANSFER]->(b) WHERE t1.amount < t2.amount WITHIN 10s"},
	{Name: "path", Pattern: "(a:Account)-[x:TRANSFER]->(b:Account)-[y:TRANSFER]->(c:Account)"},
}

// describeTransfers is an event's identity without its batch: query,
// vertices and transfer ids.
func describeTransfers(query string, match map[string]string, tx []string) string {
	vars := make([]string, 0, len(match))
	for v, id := range match {
		vars = append(vars, v+"="+id)
	}
	slices.Sort(vars)
	return fmt.Sprintf("%s %s %s", query, strings.Join(vars, ","), strings.Join(tx, ","))
}

// finalTransferMatches is the reference: the records applied one by one to
// a graph with bundles, then every query's matches found by the static
// matcher over transfers.
func finalTransferMatches(t *testing.T, cfg Config, recs []ingest.Record) map[string]bool {
	r := newReference(t, cfg)
	store := bundle.New(cfg.Graph.Directed)
	b := &incremental.Binder{Matcher: &incremental.CPU{}, Store: store}
	b.Register(r.qs)
	r.res.KeepTime = true
	for _, rec := range recs {
		u, err := r.res.Resolve(rec)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := r.g.ApplyFolded([]graph.Update{u}, store); err != nil {
			t.Fatal(err)
		}
		store.Settle()
		r.g.Reorganize()
	}
	want := map[string]bool{}
	var mu sync.Mutex
	_, err := b.Static(r.g, r.qs, incremental.Enumerate, func(_, qi int, _ graph.Sign, m []graph.VertexID, tx []bundle.Tx) {
		match := map[string]string{}
		for i, v := range r.qs[qi].Pattern.Vertices {
			match[v.Name] = r.ids.Name(m[i])
		}
		var ids []string
		for _, x := range tx {
			ids = append(ids, store.ID(x))
		}
		mu.Lock()
		want[describeTransfers(r.qs[qi].Name, match, ids)] = true
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	return want
}

// finalTransferKeys is finalTransferMatches as the events' keys: the
// query, the vertices and the transfers' ids (embeddings semantics, so the
// map is the one the engine found).
func finalTransferKeys(t *testing.T, cfg Config, recs []ingest.Record) map[string]bool {
	keys := map[string]bool{}
	forms := map[string]string{}
	for _, c := range cfg.Queries {
		p, err := query.Parse(c.Name, c.Pattern)
		if err != nil {
			t.Fatal(err)
		}
		forms[c.Name] = p.Form()
	}
	for d := range finalTransferMatches(t, cfg, recs) {
		f := strings.Fields(d) // query, var=id,..., tx,tx,...
		var b []output.Binding
		for _, kv := range strings.Split(f[1], ",") {
			v, id, _ := strings.Cut(kv, "=")
			b = append(b, output.Binding{Var: v, ID: id})
		}
		tx := ""
		if len(f) > 2 {
			tx = f[2]
		}
		for _, id := range strings.Split(tx, ",") {
			b = append(b, output.Binding{Var: "-", ID: id})
		}
		keys[output.Key(f[0], forms[f[0]], b)] = true
	}
	return keys
}

// TestTransfers runs queries over parallel transfers with predicates
// through the service, across a restart from a checkpoint: the events'
// net effect must be exactly the matches of the graph the stream leaves,
// each event must name its transfers, and an appeared and a disappeared
// event of one match must share a key.
func TestTransfers(t *testing.T) {
	addrs := cluster(t, 1, 1)
	cfg := testConfig(t, addrs)
	cfg.Engine.Semantics = "embeddings"
	cfg.Queries = transferQueries
	cfg.State.CheckpointEvery = time.Hour
	recs, vals := transferRecords(900, 3)
	out := consume(t, addrs, "matches", true)
	r := start(t, cfg)
	produce(t, addrs, "edges", vals[:500])
	waitFor(t, "the first part", time.Minute, func() bool { return r.s.Progress().Position[0] == 500 })
	first := r.s.Progress()
	r.shutdown(t)

	r2 := start(t, cfg)
	if r2.s.core.Store() == nil || r2.s.core.Store().Len() == 0 {
		t.Fatal("the restart did not restore the transfers")
	}
	produce(t, addrs, "edges", vals[500:])
	waitFor(t, "the rest", time.Minute, func() bool { return r2.s.Progress().Position[0] == int64(len(vals)) })
	waitFor(t, "events", time.Minute, func() bool { return int64(out.count()) == first.Events+r2.s.Progress().Events })
	r2.shutdown(t)
	events, _ := out.snapshot(t)

	net := map[string]int{}
	keyOf := map[string]string{}
	for _, ev := range events {
		var ids []string
		for _, x := range ev.Transfers {
			ids = append(ids, x.ID)
		}
		if len(ids) == 0 {
			t.Fatalf("event without transfers: %+v", ev)
		}
		d := describeTransfers(ev.Query, ev.Match, ids)
		if k, ok := keyOf[d]; ok && k != ev.Key {
			t.Fatalf("match %s has keys %s and %s", d, k, ev.Key)
		}
		keyOf[d] = ev.Key
		if ev.Change == "appeared" {
			net[d]++
		} else {
			net[d]--
		}
	}
	want := finalTransferMatches(t, cfg, recs)
	perQuery := map[string]int{}
	for d, n := range net {
		if n != 0 && (n != 1 || !want[d]) {
			t.Errorf("net %d of %s", n, d)
		}
	}
	for d := range want {
		perQuery[strings.Fields(d)[0]]++
		if net[d] != 1 {
			t.Errorf("match %s of the final graph has net %d events", d, net[d])
		}
	}
	for _, q := range transferQueries {
		if perQuery[q.Name] == 0 {
			t.Errorf("query %s has no match in the final graph: the test does not exercise it", q.Name)
		}
	}
	t.Logf("%d events; final matches per query %v", len(events), perQuery)
	var moved dto.Metric
	if err := r2.s.met.rejects.WithLabelValues("transfer_moved").Write(&moved); err != nil || moved.GetCounter().GetValue() == 0 {
		t.Error("no transfer id was refused for naming another pair; the stream reuses ids across pairs")
	}
}

// TestTransfersWindow checks that a window expires parallel transfers one
// by one: a pair that keeps receiving transfers must not keep the old ones.
func TestTransfersWindow(t *testing.T) {
	addrs := cluster(t, 1, 1)
	cfg := testConfig(t, addrs)
	cfg.Queries = transferQueries[:1]
	cfg.Window = WindowConfig{Size: 20 * time.Second}
	recs, vals := transferRecords(900, 5)
	r := start(t, cfg)
	produce(t, addrs, "edges", vals)
	waitFor(t, "the stream", time.Minute, func() bool { return r.s.Progress().Position[0] == int64(len(vals)) })
	// Expiry runs at the start of a batch, with the watermark of the
	// batches before: one more message, a dead letter, starts one.
	produce(t, addrs, "edges", [][]byte{[]byte("not an event")})
	waitFor(t, "the last batch", time.Minute, func() bool { return r.s.Progress().Position[0] == int64(len(vals))+1 })
	r.shutdown(t)
	ids := map[string]bool{}
	for _, rec := range recs {
		ids[rec.ID] = true
	}
	cut, ok := r.s.core.Expiry().Cutoff()
	if !ok {
		t.Fatal("no cutoff")
	}
	if left := r.s.core.Store().Expire(cut, nil); len(left) != 0 {
		t.Fatalf("%d transfers older than the window are still held", len(left))
	}
	// The stream spans about 15 minutes; a 20 s window holds a few dozen.
	if n := r.s.core.Store().Len(); n == 0 || n > 100 {
		t.Fatalf("%d transfers held of %d ids sent", n, len(ids))
	}
}

// TestTransfersQueryAPI registers a query with predicates over the HTTP API
// on a running service that keeps no transfers yet: it starts keeping them,
// and the query's alerts name their transfers and pass its predicates. A
// malformed WHERE is refused with its line and column.
func TestTransfersQueryAPI(t *testing.T) {
	addrs := cluster(t, 1, 1)
	cfg := testConfig(t, addrs)
	cfg.Queries = nil
	_, vals := transferRecords(600, 7)
	out := consume(t, addrs, "matches", true)
	r := start(t, cfg)
	srv := httptest.NewServer(r.s.Handler())
	defer srv.Close()
	post := func(body string) (int, string) {
		resp, err := http.Post(srv.URL+"/queries", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := post(`{"name":"bad","pattern":"(a)-[t:TRANSFER]->(b) WHERE t.amount >"}`)
	if code != http.StatusBadRequest || !strings.Contains(body, "1:") {
		t.Fatalf("a malformed WHERE: %d %s", code, body)
	}
	code, body = post(`{"name":"big","pattern":"(a:Account)-[t:TRANSFER]->(b:Account) WHERE t.amount >= 190"}`)
	if code/100 != 2 {
		t.Fatalf("registering: %d %s", code, body)
	}
	if r.s.core.Store() == nil {
		t.Fatal("registering a query with a WHERE did not start keeping transfers")
	}
	produce(t, addrs, "edges", vals)
	waitFor(t, "the stream", time.Minute, func() bool { return r.s.Progress().Position[0] == int64(len(vals)) })
	waitFor(t, "events", time.Minute, func() bool { return int64(out.count()) == r.s.Progress().Events })
	events, _ := out.snapshot(t)
	if len(events) == 0 {
		t.Fatal("no alerts")
	}
	// Each alert's transfer must have been sent with an amount of at least
	// 190 at some point (its id may come again with other amounts later).
	best := map[string]float64{}
	for _, v := range vals {
		var ev struct {
			ID    string             `json:"id"`
			Props map[string]float64 `json:"props"`
		}
		if err := json.Unmarshal(v, &ev); err != nil {
			t.Fatal(err)
		}
		if a, ok := ev.Props["amount"]; ok && ev.ID != "" {
			best[ev.ID] = max(best[ev.ID], a)
		}
	}
	checked := 0
	for _, ev := range events {
		if len(ev.Transfers) != 1 || ev.Transfers[0].Var != "t" {
			t.Fatalf("alert %+v does not name its one transfer", ev)
		}
		if id := ev.Transfers[0].ID; id != "" && ev.Change == "appeared" {
			checked++
			if best[id] < 190 {
				t.Fatalf("alert %+v: transfer %s never had an amount of 190 or more", ev, id)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no alert with a transfer id to check")
	}
}
