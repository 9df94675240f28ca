package service

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/output"
)

// TestSetDeadLetters runs a windowed service over a stream whose set events
// cannot be used: a set on a vertex no event has named, malformed sets, and
// a set of an id that only a later event names. Each becomes a dead letter
// with its reason (none of them for a missing ts: a set needs no time),
// while the edges of the same batches apply and close a ring.
func TestSetDeadLetters(t *testing.T) {
	addrs := cluster(t, 1, 1)
	vals := []string{
		`{"op":"+","src":"a","dst":"b","ts":1000}`,
		`{"op":"set","vertex":"acct:9","props":{"status":"flagged"}}`,
		`{"op":"+","src":"b","dst":"c","ts":1001}`,
		`{"op":"set","vertex":"a","edge":"tx-1","props":{}}`,
		`{"op":"set","vertex":"c","src":"c","props":{"status":"flagged"}}`,
		`{"op":"set","edge":"tx-1"}`,
		`{"op":"set","vertex":"a","props":{"risk":{"level":2}}}`,
		`{"op":"set","vertex":"d","ts":1002,"props":{"status":null}}`,
		`{"op":"+","src":"c","dst":"a","ts":1003}`,
		`{"op":"+","src":"c","dst":"d","ts":1004}`,
	}
	type letter struct{ reason, error string }
	want := map[int64]letter{
		1: {"unknown_vertex", `set on unknown vertex "acct:9"`},
		3: {"bad_set", `a set names a vertex ("vertex") or a transfer ("edge"), not both`},
		4: {"bad_set", `a set takes no field "src"`},
		5: {"missing_field", `missing field "props"`},
		6: {"bad_value", `field "props" key "risk" must be a number, a string, a boolean or null`},
		7: {"unknown_vertex", `set on unknown vertex "d"`},
	}
	msgs := make([][]byte, len(vals))
	for i, v := range vals {
		msgs[i] = []byte(v)
	}
	produce(t, addrs, "edges", msgs)
	cfg := testConfig(t, addrs)
	cfg.Window = WindowConfig{Size: time.Hour}
	dlq := consume(t, addrs, "edges.dlq", false)
	out := consume(t, addrs, "matches", true)
	r := start(t, cfg)
	waitFor(t, "the stream to be applied", time.Minute, func() bool { return r.s.Progress().Position[0] == int64(len(vals)) })
	waitFor(t, "the dead letters", time.Minute, func() bool { return int64(dlq.count()) == r.s.Progress().DeadLetters })
	waitFor(t, "the events", time.Minute, func() bool { return int64(out.count()) == r.s.Progress().Events })

	_, letters := dlq.snapshot(t)
	if len(letters) != len(want) {
		t.Errorf("%d dead letters, want %d", len(letters), len(want))
	}
	reasons := map[string]int{}
	for _, m := range letters {
		var dl output.DeadLetter
		if err := json.Unmarshal(m.Value, &dl); err != nil {
			t.Fatalf("dead letter: %v", err)
		}
		w, ok := want[dl.Offset]
		switch {
		case !ok:
			t.Errorf("message at offset %d dead-lettered: %s: %s", dl.Offset, dl.Reason, dl.Error)
		case dl.Reason != w.reason || !strings.Contains(dl.Error, w.error):
			t.Errorf("dead letter at %d: %s: %q, want %s: %q in it", dl.Offset, dl.Reason, dl.Error, w.reason, w.error)
		case dl.Value != vals[dl.Offset]:
			t.Errorf("dead letter at %d carries %q, want the message %q", dl.Offset, dl.Value, vals[dl.Offset])
		}
		reasons[dl.Reason]++
	}

	events, _ := out.snapshot(t)
	var ring bool
	for _, e := range events {
		ring = ring || e.Query == "ring3" && e.Change == output.Appeared
	}
	if !ring {
		t.Errorf("no ring3 appeared among the sets: %+v", events)
	}

	srv := httptest.NewServer(r.s.Handler())
	defer srv.Close()
	code, body := postQuery(t, srv.URL, "typo", "(a:Account)-[t:TRANSFER]->(b:Account) WHERE a.statis = 'flagged'")
	if w, ok := body["warnings"].([]any); code != http.StatusCreated || !ok || len(w) != 1 || !strings.Contains(fmt.Sprint(w[0]), "status") {
		t.Errorf("query of a typo: %d %v, want 201 with a warning naming status", code, body)
	}
	// The catalog took the vertex set's property, though the set was
	// refused later, as it takes an edge's refused as a self-loop.
	code, body = postQuery(t, srv.URL, "flagged", "(a:Account)-[t:TRANSFER]->(b:Account) WHERE a.status = 'flagged'")
	if w, ok := body["warnings"].([]any); code != http.StatusCreated || !ok || len(w) != 0 {
		t.Errorf("query of a property only a set gave: %d %v, want 201 without warnings", code, body)
	}
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, reason := range []string{"unknown_vertex", "bad_set", "missing_field", "bad_value", "unknown_transfer", "missing_time"} {
		series := fmt.Sprintf(`gcsm_rejects_total{reason=%q} %d`, reason, reasons[reason])
		if !strings.Contains(string(b), series+"\n") {
			t.Errorf("metrics lack %s:\n%s", series, grepLines(string(b), "gcsm_rejects_total"))
		}
	}
}

// TestRejectReasonSet maps the graph's refusals of sets, wrapped as the
// graph wraps them, to their dead-letter reasons.
func TestRejectReasonSet(t *testing.T) {
	for err, want := range map[error]string{
		fmt.Errorf("set on transfer %q: %w", "tx-9", graph.ErrUnknownTransfer): "unknown_transfer",
		fmt.Errorf("set on vertex %d: %w", 7, graph.ErrUnknownVertex):          "unknown_vertex",
		fmt.Errorf("edge 1-1: %w", dyngraph.ErrSelfLoop):                       "self_loop",
	} {
		if got := rejectReason(err); got != want {
			t.Errorf("rejectReason(%v) = %s, want %s", err, got, want)
		}
	}
}

// TestSetAfterRestart flags an account, changes a transfer's amount, raises
// an account's risk twice and clears the flag, each in a batch of its own, after
// a restart from a checkpoint: the matches whose WHERE the sets turn appear
// and disappear in those batches, a changed amount replaces the row of the
// match that returns it, and a disappearance returns what the match had
// when it appeared. A set of an unknown transfer id is a dead letter.
func TestSetAfterRestart(t *testing.T) {
	addrs := cluster(t, 1, 1)
	cfg := testConfig(t, addrs)
	cfg.Queries = []QueryConfig{
		{Name: "flaggedin", Pattern: "(a:Account)-[t:TRANSFER]->(b:Account) WHERE b.status = 'flagged' RETURN a, t.amount AS amount"},
		{Name: "risky", Pattern: "(a:Account)-[:TRANSFER]->(b:Account) WHERE a.risk > 5 RETURN a, a.risk AS risk"},
	}
	out := consume(t, addrs, "matches", true)
	dlq := consume(t, addrs, "edges.dlq", false)
	r := start(t, cfg)
	step := func(r *running, vals ...string) {
		t.Helper()
		msgs := make([][]byte, len(vals))
		for i, v := range vals {
			msgs[i] = []byte(v)
		}
		at := r.s.Progress().Position[0]
		produce(t, addrs, "edges", msgs)
		waitFor(t, "the step", time.Minute, func() bool { return r.s.Progress().Position[0] == at+int64(len(vals)) })
		waitFor(t, "its events", time.Minute, func() bool { return int64(out.count()) == r.s.Progress().Events })
	}
	step(r,
		`{"op":"+","src":"a","dst":"b","id":"tx-1","ts":1000,"props":{"amount":100},"src_props":{"risk":3}}`,
		`{"op":"+","src":"c","dst":"b","id":"tx-2","ts":1001,"props":{"amount":200}}`,
	)
	r.shutdown(t)
	r = start(t, cfg)
	sets := []string{
		`{"op":"set","vertex":"b","props":{"status":"flagged"}}`,
		`{"op":"set","edge":"tx-1","props":{"amount":150}}`,
		`{"op":"set","vertex":"a","props":{"risk":7}}`,
		`{"op":"set","vertex":"a","props":{"risk":9}}`,
		`{"op":"set","vertex":"b","props":{"status":"cleared"}}`,
		`{"op":"set","edge":"tx-99","props":{"amount":1}}`,
	}
	for _, s := range sets {
		step(r, s)
	}
	r.shutdown(t)
	events, _ := out.snapshot(t)
	var got []string
	for _, e := range events {
		got = append(got, fmt.Sprintf("%s %s %v %v", e.Query, e.Change, e.Transfers, e.Return))
		// Each batch is one set: the event's source is its message.
		if e.Source == nil || e.Source.FromOffset != e.Source.ToOffset {
			t.Errorf("%s %s: source %+v, want the set's message", e.Query, e.Change, e.Source)
		}
	}
	want := []string{
		"flaggedin appeared [{t tx-1 1970-01-01T00:00:01.000Z}] map[a:a amount:100]",
		"flaggedin appeared [{t tx-2 1970-01-01T00:00:01.001Z}] map[a:c amount:200]",
		"flaggedin disappeared [{t tx-1 1970-01-01T00:00:01.000Z}] map[a:a amount:100]",
		"flaggedin appeared [{t tx-1 1970-01-01T00:00:01.000Z}] map[a:a amount:150]",
		"risky appeared [] map[a:a risk:7]",
		"risky disappeared [] map[a:a risk:7]",
		"risky appeared [] map[a:a risk:9]",
		"flaggedin disappeared [{t tx-1 1970-01-01T00:00:01.000Z}] map[a:a amount:150]",
		"flaggedin disappeared [{t tx-2 1970-01-01T00:00:01.001Z}] map[a:c amount:200]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	_, letters := dlq.snapshot(t)
	if len(letters) != 1 {
		t.Fatalf("%d dead letters, want the set of tx-99", len(letters))
	}
	var dl output.DeadLetter
	if err := json.Unmarshal(letters[0].Value, &dl); err != nil || dl.Reason != "unknown_transfer" || !strings.Contains(dl.Error, `"tx-99"`) {
		t.Errorf("dead letter %+v (%v), want unknown_transfer naming tx-99", dl, err)
	}
}
