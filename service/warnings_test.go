package service

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// postQuery POSTs pattern under name and returns the status and the
// decoded body: the query's fields and warnings, or an error.
func postQuery(t *testing.T, url, name, pattern string) (int, map[string]any) {
	t.Helper()
	req, err := json.Marshal(QueryConfig{Name: name, Pattern: pattern})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url+"/queries", "application/json", bytes.NewReader(req))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("POST %s: %v", name, err)
	}
	return resp.StatusCode, body
}

// TestUnknownLabelWarnings: a query naming a label the graph has not seen
// matches nothing until a message carries it, which is legal (it may come)
// but worth a word: POST /queries answers with warnings, one per unseen
// label, and an empty list when there is none.
func TestUnknownLabelWarnings(t *testing.T) {
	addrs := cluster(t, 1, 1)
	_, vals := transferStream(200, 3)
	// A second edge label makes the graph keep labels per edge.
	vals = append(vals, []byte(`{"op":"+","src":"acct-1","dst":"acct-2","label":"PAYS"}`))
	produce(t, addrs, "edges", vals)
	r := start(t, testConfig(t, addrs))
	srv := httptest.NewServer(r.s.Handler())
	defer srv.Close()
	waitFor(t, "the stream to be applied", time.Minute, func() bool { return r.s.Progress().Position[0] == int64(len(vals)) })

	code, body := postQuery(t, srv.URL, "known", "(a:Account)-[:TRANSFER]->(b:Account)")
	if w, ok := body["warnings"].([]any); code != http.StatusCreated || !ok || len(w) != 0 {
		t.Fatalf("query of seen labels: %d %v, want 201 with warnings []", code, body)
	}
	code, body = postQuery(t, srv.URL, "unknown", "(a:Acount)-[:PAYS]->(b:Merchnt)-[:REFUND]->(c:Acount)")
	checkWarnings(t, code, body, `vertex of the graph has label "Acount"`, `vertex of the graph has label "Merchnt"`, `edge of the graph has label "REFUND"`)
	// A vertex label is not an edge label, nor the other way round.
	code, body = postQuery(t, srv.URL, "swapped", "(a:TRANSFER)-[:Account]->(b:Account)")
	checkWarnings(t, code, body, `vertex of the graph has label "TRANSFER"`, `edge of the graph has label "Account"`)
	if body["name"] != "swapped" || body["vertices"] != 2.0 {
		t.Errorf("the answer lost the query's fields: %v", body)
	}
}

// checkWarnings checks that a POST /queries succeeded with warnings that
// hold wants, in order.
func checkWarnings(t *testing.T, code int, body map[string]any, wants ...string) {
	t.Helper()
	w, _ := body["warnings"].([]any)
	if code != http.StatusCreated || len(w) != len(wants) {
		t.Fatalf("POST: %d %v, want 201 with %d warnings", code, body, len(wants))
	}
	for i, want := range wants {
		if s, _ := w[i].(string); !strings.Contains(s, want) || !strings.Contains(s, "matches nothing") {
			t.Errorf("warning %d is %q, want one saying %s", i, s, want)
		}
	}
}

// TestConfiguredUnknownLabelLogged: a configured query's unseen labels are
// logged at start, one line per label, naming query and label. An empty
// graph has seen no label, so it warns about none.
func TestConfiguredUnknownLabelLogged(t *testing.T) {
	addrs := cluster(t, 1, 1)
	cfg := testConfig(t, addrs)
	cfg.Queries = append(cfg.Queries, QueryConfig{Name: "typo", Pattern: "(a:Acount)-[:TRANSFER]->(b:Acount)"})
	if w := registerLogged(t, cfg); len(w) != 0 {
		t.Fatalf("warnings on an empty graph: %q", w)
	}
	_, vals := transferStream(200, 3)
	produce(t, addrs, "edges", vals)
	r := start(t, cfg)
	waitFor(t, "the stream to be applied", time.Minute, func() bool { return r.s.Progress().Position[0] == int64(len(vals)) })
	r.shutdown(t)

	// Restarted from its checkpoint, the service knows the stream's labels.
	cfg.Queries = append(cfg.Queries, QueryConfig{Name: "typo2", Pattern: "(a:Account)-[:TRANSFR]->(b:Acount)"})
	w := registerLogged(t, cfg)
	want := []string{`typo2: no vertex of the graph has label "Acount"`, `typo2: no edge of the graph has label "TRANSFR"`}
	if len(w) != len(want) || !strings.HasPrefix(w[0], want[0]) || !strings.HasPrefix(w[1], want[1]) {
		t.Fatalf("warnings logged: %q, want %q", w, want)
	}
}

// registerLogged opens the service of cfg, registers its configured
// queries and returns the warnings logged, as "query: message".
func registerLogged(t *testing.T, cfg Config) []string {
	t.Helper()
	var log bytes.Buffer
	s, err := New(Options{Config: cfg, Log: zerolog.New(&log)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if err := s.registerConfigured(t.Context()); err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var e struct{ Level, Query, Message string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if e.Level == "warn" {
			warned = append(warned, e.Query+": "+e.Message)
		}
	}
	return warned
}

// TestUndirectedRefusesArrows: on a deployment with graph.directed false, a
// query that draws an arrow would match edges either way; it is refused,
// configured or posted, with a message naming the setting, while one
// without arrows is taken.
func TestUndirectedRefusesArrows(t *testing.T) {
	addrs := cluster(t, 1, 1)
	cfg := testConfig(t, addrs)
	cfg.Graph.Directed = false
	s, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	err = s.registerConfigured(t.Context())
	s.close()
	if err == nil || !strings.Contains(err.Error(), `query "ring3"`) || !strings.Contains(err.Error(), "graph.directed") ||
		!strings.Contains(err.Error(), "ring3:1:") {
		t.Fatalf("arrows configured on an undirected graph: %v, want a refusal naming the query, position and graph.directed", err)
	}

	cfg = testConfig(t, addrs)
	cfg.Graph.Directed = false
	cfg.Queries = []QueryConfig{{Name: "tri", Pattern: "(a:Account)--(b:Account)--(c:Account)--(a)"}}
	r := start(t, cfg)
	srv := httptest.NewServer(r.s.Handler())
	defer srv.Close()
	code, body := postQuery(t, srv.URL, "path", "(a)-[:TRANSFER]->(b)<-[:TRANSFER]-(c)")
	if msg, _ := body["error"].(string); code != http.StatusBadRequest || !strings.Contains(msg, "graph.directed") || !strings.Contains(msg, "(a)->(b)") {
		t.Fatalf("POST of arrows on an undirected graph: %d %v, want 400 naming graph.directed", code, body)
	}
	if code, body := postQuery(t, srv.URL, "path", "(a)-[:TRANSFER]-(b)-[:TRANSFER]-(c)"); code != http.StatusCreated {
		t.Fatalf("POST without arrows: %d %v", code, body)
	}
	r.s.mu.Lock()
	names := []string{}
	for _, q := range r.s.infos {
		names = append(names, q.Name)
	}
	r.s.mu.Unlock()
	if !slices.Equal(names, []string{"tri", "path"}) {
		t.Errorf("registered %q, want tri and path", names)
	}
}

// propertyStream is transfers among accounts that carry an amount and a
// currency, and accounts with a country, as JSON events.
func propertyStream(n int) [][]byte {
	var vals [][]byte
	for i := range n {
		vals = append(vals, fmt.Appendf(nil, `{"op":"+","src":"acct-%d","dst":"acct-%d","label":"TRANSFER","src_label":"Account","dst_label":"Account","id":"tx-%d","props":{"amount":%d,"currency":"EUR"},"src_props":{"country":"DE"}}`,
			i%20, (i+1)%20, i, 100*i))
	}
	return vals
}

// TestPropertyWarnings: POST /queries checks the properties a WHERE reads
// against those the stream has given: a misspelled one, and a literal of
// another kind than the property's values, each get a warning in the
// answer; a query of what the stream gave gets none. A fresh service with
// an empty graph warns about nothing, and a restart keeps what was seen.
func TestPropertyWarnings(t *testing.T) {
	addrs := cluster(t, 1, 1)
	cfg := testConfig(t, addrs)
	cfg.Queries = append(cfg.Queries, QueryConfig{Name: "early", Pattern: "(a:Account)-[t:TRANSFER]->(b:Account) WHERE t.amont > 10000"})
	if w := registerLogged(t, cfg); len(w) != 0 {
		t.Fatalf("warnings on an empty graph: %q", w)
	}
	vals := propertyStream(60)
	produce(t, addrs, "edges", vals)
	r := start(t, cfg)
	srv := httptest.NewServer(r.s.Handler())
	defer srv.Close()
	waitFor(t, "the stream to be applied", time.Minute, func() bool { return r.s.Progress().Position[0] == int64(len(vals)) })

	code, body := postQuery(t, srv.URL, "good", "(a:Account)-[t:TRANSFER]->(b:Account) WHERE t.amount > 1000 AND t.currency = 'EUR' AND a.country = 'DE' AND t.ts > t.ts - 1h")
	if w, ok := body["warnings"].([]any); code != http.StatusCreated || !ok || len(w) != 0 {
		t.Fatalf("query of seen properties: %d %v, want 201 with warnings []", code, body)
	}
	code, body = postQuery(t, srv.URL, "typo", "(a:Account)-[t1:TRANSFER]->(b:Account) WHERE t1.amont > 10000 AND b.contry = 'DE'")
	wantWarnings(t, code, body,
		"property t1.amont never seen on TRANSFER edges; known: amount, currency, id, ts (did you mean amount?)",
		"property b.contry never seen on Account vertices; known: country (did you mean country?)")
	code, body = postQuery(t, srv.URL, "kind", `(a:Account)-[t1:TRANSFER]->(b:Account) WHERE t1.amount > "10000"`)
	wantWarnings(t, code, body,
		`t1.amount > "10000" is never true: t1.amount has carried only numbers on TRANSFER edges, and "10000" is a string`)
	// A label the graph lacks is warned about once, as a label.
	code, body = postQuery(t, srv.URL, "label", "(a:Account)-[t:TRANSFR]->(b:Account) WHERE t.amount > 1")
	if w, _ := body["warnings"].([]any); code != http.StatusCreated || len(w) != 1 || !strings.Contains(w[0].(string), `label "TRANSFR"`) {
		t.Fatalf("query of an unseen label: %d %v, want one warning about the label", code, body)
	}
	r.shutdown(t)

	// Restarted from its checkpoint, the service knows what it had seen.
	// (A query restored from it, such as early, was judged when it was
	// registered, as for labels.)
	cfg.Queries = append(cfg.Queries, QueryConfig{Name: "typo2", Pattern: "(a:Account)-[t:TRANSFER]->(b:Account) WHERE t.currenc = 'EUR'"})
	w := registerLogged(t, cfg)
	want := []string{
		"typo2: property t.currenc never seen on TRANSFER edges; known: amount, currency, id, ts (did you mean currency?)",
	}
	if !slices.Equal(w, want) {
		t.Fatalf("warnings logged after a restart:\n got %q\nwant %q", w, want)
	}
}

// wantWarnings checks that a POST /queries succeeded with exactly wants.
func wantWarnings(t *testing.T, code int, body map[string]any, wants ...string) {
	t.Helper()
	var got []string
	w, _ := body["warnings"].([]any)
	for _, s := range w {
		got = append(got, s.(string))
	}
	if code != http.StatusCreated || !slices.Equal(got, wants) {
		t.Fatalf("POST: %d %v\nwant 201 with warnings %q", code, body, wants)
	}
}
