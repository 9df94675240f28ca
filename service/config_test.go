package service

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConfigFiles loads the deployment's configuration and checks that
// mistakes are refused with a message that names them.
func TestConfigFiles(t *testing.T) {
	cfg, err := LoadConfig("../deploy/gcsm.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Brokers) == 0 || len(cfg.Queries) == 0 || cfg.Window.Size == 0 {
		t.Fatalf("deploy/gcsm.yaml loaded as %+v", cfg)
	}
	for _, q := range cfg.Queries {
		if err := q.validate(); err != nil {
			t.Errorf("query %s: %v", q.Name, err)
		}
	}

	dir := t.TempDir()
	write := func(text string) string {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty, err := LoadConfig(write(""))
	if err != nil || empty.Input.Topic != "edges" || empty.Batch.Linger != 50*time.Millisecond {
		t.Fatalf("an empty file must give the defaults: %+v, %v", empty, err)
	}
	for _, tc := range []struct{ text, want string }{
		{"batch:\n  sise: 10\n", "sise"},
		{"batch: {size: 0}\n", "batch.size"},
		{"batch: {linger: soon}\n", "soon"},
		{"input: {topic: matches}\n", "must differ"},
		{"engine: {semantics: all}\n", "semantics"},
		{"engine: {workers: -3}\n", "engine.workers -3: want 0 (every core) or more"},
		{"queries:\n  - {name: a b, pattern: \"(a)-[]->(b)\"}\n", "no slashes or spaces"},
		{"queries:\n  - {name: q, pattern: \"(a)-[]->(b)\"}\n  - {name: q, pattern: \"(a)-[]->(b)\"}\n", "second query"},
		{"state: {keep: 0}\n", "state.keep"},
		{"output: {client: sarama}\n", `output.client "sarama": want franz-go or kafka-go`},
		{"output: {compression: brotli}\n", `output.compression "brotli"`},
	} {
		_, err := LoadConfig(write(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one mentioning %q", tc.text, err, tc.want)
		}
	}
}

// TestBadQueryRefusedAtStart: a configured query that does not parse stops
// the start with the query's name and the position of the mistake.
func TestBadQueryRefusedAtStart(t *testing.T) {
	addrs := cluster(t, 1, 1)
	cfg := testConfig(t, addrs)
	cfg.Queries = append(cfg.Queries, QueryConfig{Name: "bad", Pattern: "(a)-[:T]->(b"})
	s, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	err = s.registerConfigured(t.Context())
	if err == nil || !strings.Contains(err.Error(), `query "bad"`) || !strings.Contains(err.Error(), "1:") {
		t.Fatalf("error %v", err)
	}
}
