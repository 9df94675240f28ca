package service

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gcsm/gcsm/output"
)

// TestTSUnit: with input.ts_unit s, events in epoch seconds carry their
// times into the alerts; a negative ts is a dead letter (ts_out_of_range)
// while the rest of its batch applies; and times in milliseconds, which
// land after 2100 when read as seconds, are warned about once, naming
// --ts-unit, and applied all the same.
func TestTSUnit(t *testing.T) {
	addrs := cluster(t, 1, 1)
	vals := [][]byte{
		[]byte(`{"op":"+","src":"a","dst":"b","ts":1795255200}`),
		[]byte(`{"op":"+","src":"b","dst":"c","ts":-1}`),
		[]byte(`{"op":"+","src":"b","dst":"c","ts":1795255260}`),
		[]byte(`{"op":"+","src":"x","dst":"y","ts":1795255200000}`),
		[]byte(`{"op":"+","src":"y","dst":"z","ts":1795255200001}`),
		[]byte(`{"op":"+","src":"c","dst":"a","ts":1795255320}`),
	}
	produce(t, addrs, "edges", vals)
	cfg := testConfig(t, addrs)
	if cfg.Input.TSUnit != "ms" {
		t.Fatalf("default input.ts_unit %q, the docs say ms", cfg.Input.TSUnit)
	}
	cfg.Input.TSUnit = "s"
	dlq := consume(t, addrs, "edges.dlq", false)
	out := consume(t, addrs, "matches", true)
	var logs syncBuilder
	r := startOpts(t, Options{Config: cfg, Log: zerolog.New(&logs).Level(zerolog.WarnLevel)})
	waitFor(t, "the stream to be applied", time.Minute, func() bool { return r.s.Progress().Position[0] == int64(len(vals)) })
	waitFor(t, "the dead letter", time.Minute, func() bool { return dlq.count() == 1 })
	waitFor(t, "the events", time.Minute, func() bool { return int64(out.count()) == r.s.Progress().Events })

	_, letters := dlq.snapshot(t)
	var dl output.DeadLetter
	if err := json.Unmarshal(letters[0].Value, &dl); err != nil {
		t.Fatal(err)
	}
	if want := `field "ts" is negative (-1): a numeric ts counts seconds since 1970`; dl.Offset != 1 || !strings.Contains(dl.Error, want) {
		t.Errorf("dead letter %+v, want offset 1 saying %s", dl, want)
	}
	events, _ := out.snapshot(t)
	if len(events) != 1 || events[0].Query != "ring3" || events[0].EventTime != "2026-11-21T10:02:00.000Z" {
		t.Errorf("events %+v, want ring3 at 2026-11-21T10:02:00.000Z, the time of offset 5 in seconds", events)
	}

	var warned []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var e struct{ Level, Message string }
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if strings.Contains(e.Message, "input event times look wrong") {
			warned = append(warned, e.Message)
		}
	}
	want := "numeric ts 1795255200000 read as seconds is 58859-"
	if len(warned) != 1 || !strings.Contains(warned[0], want) || !strings.Contains(warned[0], "give --ts-unit ms (input.ts_unit in the configuration)") {
		t.Errorf("warnings %q, want one saying %q and naming --ts-unit ms", warned, want)
	}

	srv := httptest.NewServer(r.s.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if series := `gcsm_rejects_total{reason="ts_out_of_range"} 1`; !strings.Contains(string(b), series+"\n") {
		t.Errorf("metrics lack %s:\n%s", series, grepLines(string(b), "gcsm_rejects_total"))
	}
}

// TestTSUnitConfig: input.ts_unit takes s, ms, us and ns, and refuses
// anything else with an error that names the key and the units.
func TestTSUnitConfig(t *testing.T) {
	for _, u := range []string{"s", "ms", "us", "ns"} {
		if _, err := parseConfig("c.yaml", []byte("input: {ts_unit: "+u+"}\n")); err != nil {
			t.Errorf("ts_unit %s: %v", u, err)
		}
	}
	for _, u := range []string{"sec", `""`, "MS", "1000"} {
		_, err := parseConfig("c.yaml", []byte("input: {ts_unit: "+u+"}\n"))
		if err == nil || !strings.Contains(err.Error(), "c.yaml: ") || !strings.Contains(err.Error(), "input.ts_unit") || !strings.Contains(err.Error(), "want s, ms, us or ns") {
			t.Errorf("ts_unit %s: %v, want an error naming the file, the key and the units", u, err)
		}
	}
}
