package main

import (
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/service"
)

// TestDemo runs gcsm demo on a small stream: the whole service through its
// embedded broker. The summary must count every message (the transfers, the
// three malformed ones as dead letters, and the flag), some rings, and
// alerts that the flag raised, with their RETURN rows.
func TestDemo(t *testing.T) {
	out, errOut, code := gcsm(t, "demo", "--events", "4000", "--accounts", "400", "--rate", "0", "--show", "1", "--device", "cpu")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "summary: 4004 messages in") || !strings.Contains(out, "; 3 dead letters") {
		t.Fatalf("summary:\n%s", out)
	}
	m := regexp.MustCompile(`(?m)^ring3\s+(\d+)\s+(\d+)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no ring3 line:\n%s", out)
	}
	if n, _ := strconv.Atoi(m[1]); n == 0 {
		t.Fatalf("no ring3 appeared:\n%s", out)
	}
	// The layering ring names its transfers.
	if !regexp.MustCompile(`ALERT layering appeared    a=\S+ b=\S+ c=\S+ via tx-\d+,tx-\d+,tx-\d+`).MatchString(out) {
		t.Fatalf("no layering alert with its transfers:\n%s", out)
	}
	if !strings.Contains(out, "ALERT ring3    appeared") {
		t.Fatalf("no alert printed:\n%s", out)
	}
	if !regexp.MustCompile(`ALERT layering appeared .* return \{"a":"acct-\d+","total":[0-9.]+,"span":"[0-9a-z]+"\}`).MatchString(out) {
		t.Fatalf("no layering alert with its total and span:\n%s", out)
	}
	if !regexp.MustCompile(`ALERT flagged  appeared    a=acct-\d+ b=(acct-\d+) return \{"a":"acct-\d+","b":"acct-\d+","amount":[0-9.]+\} \(by the flag\)`).MatchString(out) {
		t.Fatalf("no alert raised by the flag:\n%s", out)
	}
}

// TestRunFlags checks that flags override the file's settings and that
// "embedded" drops configured brokers.
func TestRunFlags(t *testing.T) {
	cfg := service.DefaultConfig()
	cfg.Brokers = []string{"kafka:9092"}
	f := runFlags{brokers: "embedded", state: "/tmp/s", http: "off", workers: 3, queries: queryFlags{"r=(a)-[]->(b)"}}
	f.dev.device = "cpu"
	set := map[string]bool{"brokers": true, "state": true, "http": true, "workers": true, "device": true}
	if err := f.apply(&cfg, set); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Brokers) != 0 || cfg.State.Dir != "/tmp/s" || cfg.HTTP.Listen != "" || cfg.Engine.Workers != 3 ||
		cfg.Engine.Device != "cpu" || len(cfg.Queries) != 1 || cfg.Queries[0].Name != "r" {
		t.Fatalf("after the flags: %+v", cfg)
	}
	f = runFlags{brokers: "a:1, b:2"}
	if err := f.apply(&cfg, map[string]bool{"brokers": true}); err != nil || strings.Join(cfg.Brokers, ",") != "a:1,b:2" {
		t.Fatalf("brokers %v, %v", cfg.Brokers, err)
	}
	f = runFlags{queries: queryFlags{"(a)-[]->(b)"}}
	if err := f.apply(&cfg, nil); err == nil {
		t.Fatal("a -q without a name was accepted")
	}
	cfg = service.DefaultConfig()
	f = runFlags{pprof: true}
	if err := f.apply(&cfg, map[string]bool{"pprof": true}); err != nil || !cfg.HTTP.Pprof || cfg.Validate() != nil {
		t.Fatalf("--pprof on the default address: pprof %v, %v, %v", cfg.HTTP.Pprof, err, cfg.Validate())
	}
	f = runFlags{acceptInputLoss: true}
	if err := f.apply(&cfg, map[string]bool{"accept-input-loss": true}); err != nil || !cfg.State.AcceptInputLoss {
		t.Fatalf("--accept-input-loss: state.accept_input_loss %v, %v", cfg.State.AcceptInputLoss, err)
	}
	if cfg.Input.TSUnit != "ms" {
		t.Fatalf("input.ts_unit %q without --ts-unit, want the default ms", cfg.Input.TSUnit)
	}
	f = runFlags{tsUnit: "us"}
	if err := f.apply(&cfg, map[string]bool{"ts-unit": true}); err != nil || cfg.Input.TSUnit != "us" || cfg.Validate() != nil {
		t.Fatalf("--ts-unit us: input.ts_unit %q, %v, %v", cfg.Input.TSUnit, err, cfg.Validate())
	}
	// Refused before anything starts, naming the setting.
	err := runRun([]string{"--pprof", "--http", "0.0.0.0:1", "--state", t.TempDir()}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "http.pprof") || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("--pprof --http 0.0.0.0:1: %v", err)
	}
}
