package service

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gcsm/gcsm/output"
)

// TestLongIDDeadLetters is issue 42's poison pill: events whose ids or
// labels are over input.max_id_bytes, among them two with 460 KB account
// ids that would make an alert larger than the broker's message limit, go
// to the dead-letter topic under id_too_long, with the field and its length
// named, while the valid events of the same batch apply and close a ring.
func TestLongIDDeadLetters(t *testing.T) {
	addrs := cluster(t, 1, 1)
	huge := "acct-" + strings.Repeat("9", 460<<10)
	vals := []string{
		`{"op":"+","src":"a","dst":"b"}`,
		`{"op":"+","src":"` + huge + `","dst":"a"}`,
		`{"op":"+","src":"b","dst":"c"}`,
		`{"op":"+","src":"c","dst":"x","id":"` + strings.Repeat("t", 2000) + `"}`,
		`{"op":"+","src":"c","dst":"a"}`,
		`{"op":"vertex","id":"v","label":"` + strings.Repeat("L", 1025) + `"}`,
		"e 1 2 " + strings.Repeat("7", 1500),
		`{"op":"+","src":"b","dst":"` + huge + `"}`,
	}
	want := map[int64]string{
		1: `field "src" is 471045 bytes, over the limit of 1024`,
		3: `field "id" is 2000 bytes, over the limit of 1024`,
		5: `field "label" is 1025 bytes, over the limit of 1024`,
		6: `field "label" is 1500 bytes, over the limit of 1024`,
		7: `field "dst" is 471045 bytes, over the limit of 1024`,
	}
	msgs := make([][]byte, len(vals))
	for i, v := range vals {
		msgs[i] = []byte(v)
	}
	produce(t, addrs, "edges", msgs)
	cfg := testConfig(t, addrs)
	if cfg.Input.MaxIDBytes != 1024 {
		t.Fatalf("default input.max_id_bytes %d, the docs say 1024", cfg.Input.MaxIDBytes)
	}
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
	for _, m := range letters {
		var dl output.DeadLetter
		if err := json.Unmarshal(m.Value, &dl); err != nil {
			t.Fatalf("dead letter: %v", err)
		}
		frag, ok := want[dl.Offset]
		if !ok {
			t.Errorf("valid message at offset %d dead-lettered: %s", dl.Offset, dl.Error)
			continue
		}
		if !strings.Contains(dl.Error, frag) {
			t.Errorf("dead letter at %d: %q, want %q in it", dl.Offset, dl.Error, frag)
		}
	}

	// The ring a-b-c closes at offset 4, in the batch that also held the
	// long edge id at 3.
	events, raw := out.snapshot(t)
	var ring bool
	for _, e := range events {
		if e.Query == "ring3" && e.Change == output.Appeared && e.Source != nil && e.Source.FromOffset <= 3 && e.Source.ToOffset >= 4 {
			ring = true
		}
	}
	if !ring {
		t.Errorf("no ring3 appeared in the batch of offsets 3 and 4: %+v", events)
	}
	for _, m := range raw {
		if len(m.Value) > 64<<10 {
			t.Errorf("an alert of %d bytes", len(m.Value))
		}
	}

	srv := httptest.NewServer(r.s.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if series := `gcsm_rejects_total{reason="id_too_long"} 5`; !strings.Contains(string(b), series+"\n") {
		t.Errorf("metrics lack %s:\n%s", series, grepLines(string(b), "gcsm_rejects_total"))
	}
}
