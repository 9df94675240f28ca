package service

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gcsm/gcsm/output"
)

// TestInvalidUTF8DeadLetters: messages whose ids or labels are not UTF-8
// reach the dead-letter topic under the reason invalid_utf8, with the
// field named and the value intact, and never enter the graph. Before,
// "a\xff" and "a\xfe" both became "a\ufffd", which closed a ring.
func TestInvalidUTF8DeadLetters(t *testing.T) {
	addrs := cluster(t, 1, 1)
	vals := []string{
		"{\"op\":\"+\",\"src\":\"a\xff\",\"dst\":\"b\"}",
		`{"op":"+","src":"b","dst":"c"}`,
		"{\"op\":\"+\",\"src\":\"c\",\"dst\":\"a\xfe\"}",
		`{"op":"+","src":"x\ud800","dst":"y"}`,
		"e 1 2 \xff",
		`{"op":"+","src":"p","dst":"q","label":"TRANSFER"}`,
	}
	// The dead letters by offset: a fragment of the error and whether the
	// value is base64, as docs/operations.md has it for values that are not UTF-8.
	want := map[int64]struct {
		frag   string
		base64 bool
	}{
		0: {`field "src" is not valid UTF-8 at byte 1`, true},
		2: {`field "dst" is not valid UTF-8 at byte 1`, true},
		3: {`field "src" is not valid UTF-8: \ud800 is half of a surrogate pair`, false},
		4: {`edge label is not valid UTF-8 at byte 0`, true},
	}
	msgs := make([][]byte, len(vals))
	for i, v := range vals {
		msgs[i] = []byte(v)
	}
	produce(t, addrs, "edges", msgs)
	cfg := testConfig(t, addrs)
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
			t.Fatalf("dead letter %s: %v", m.Value, err)
		}
		w, ok := want[dl.Offset]
		if !ok {
			t.Errorf("valid message at offset %d dead-lettered: %s", dl.Offset, dl.Error)
			continue
		}
		value := dl.Value
		if dl.Encoding == "base64" {
			b, err := base64.StdEncoding.DecodeString(dl.Value)
			if err != nil {
				t.Fatal(err)
			}
			value = string(b)
		}
		if value != vals[dl.Offset] || (dl.Encoding == "base64") != w.base64 || !strings.Contains(dl.Error, w.frag) {
			t.Errorf("dead letter at %d: %+v, want the value %q and an error with %q", dl.Offset, dl, vals[dl.Offset], w.frag)
		}
	}

	// a-b-c-a would be a ring had the two a's been merged.
	events, _ := out.snapshot(t)
	for _, e := range events {
		t.Errorf("unexpected event %+v", e)
	}

	srv := httptest.NewServer(r.s.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if series := `gcsm_rejects_total{reason="invalid_utf8"} 4`; !strings.Contains(string(b), series+"\n") {
		t.Errorf("metrics lack %s:\n%s", series, grepLines(string(b), "gcsm_rejects_total"))
	}
}

// grepLines returns the lines of text that contain s.
func grepLines(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
