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
		{"output: {client: sarama}\n", `output.client "sarama": want franz-go`},
		{"output: {client: kafka-go}\n", `output.client kafka-go: removed`},
		{"tls: {ca_file: x}\n", `tls and sasl secure the connections to brokers`},
		{"brokers: [b:1]\nsasl: {mechanism: GSSAPI, username: u}\n", `sasl.mechanism "GSSAPI"`},
		{"brokers: [b:1]\nsasl: {username: u}\n", `need a mechanism`},
		{"brokers: [b:1]\nsasl: {password: p}\n", `field password not found`},
		{"output: {compression: brotli}\n", `output.compression "brotli"`},
		{"embedded: {retention: -1h}\n", "embedded.retention -1h0m0s"},
		{"embedded: {retention: 10ms}\n", "embedded.retention 10ms: want 0 (keep forever) or at least 1s"},
		{"embedded: {retention_bytes: 1000}\n", "embedded.retention_bytes 1000: want 0 (no cap) or at least 1048576"},
		{"embedded: {retention_bytes: 1GB}\n", `line 1: size "1GB"`},
		{"embedded: {retention_bytes: -5}\n", `size "-5"`},
		{"embedded: {retention_bytes: 99999999999TiB}\n", "too large"},
		{"http: {pprof: true, listen: \"0.0.0.0:8080\"}\n", `http.pprof: profiles are served only on a loopback address, and http.listen "0.0.0.0:8080" is not one`},
		{"http: {pprof: true, listen: \":8080\"}\n", "loopback"},
		{"http: {pprof: true, listen: \"10.1.2.3:8080\"}\n", "loopback"},
		{"http: {pprof: true, listen: \"\"}\n", "http.pprof: needs http.listen"},
		{"cluster: {shards: -1}\n", "cluster.shards -1: want 0 (no cluster) to 4096"},
		{"cluster: {shards: 5000}\n", "cluster.shards 5000"},
		{"cluster: {group: g}\n", "need cluster.shards"},
		{"cluster: {shards: 8, group: gcsm}\n", `cluster.group "gcsm" must differ from input.group`},
		{"cluster: {shards: 8, topic: x, cuts_topic: x}\n", `cluster.topic and cluster.cuts_topic are both "x"`},
		{"cluster: {shards: 8, topic: edges}\n", `cluster topic "edges" must differ`},
		{"cluster: {shards: 8, cuts_topic: matches}\n", `cluster topic "matches" must differ`},
		{"cluster: {shards: 8}\nstate: {keep: 1}\n", "state.keep 1: cluster.shards needs at least 2"},
		{"cluster: {shards: 8}\nqueries:\n  - {name: q, pattern: \"(a)-[]->(b)\", initial: true}\n", "queries[0]: initial is not available with cluster.shards"},
		{"cluster: {shards: 8, members: 3}\n", "members"},
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

// TestRetentionAndPprofSettings: the defaults bound the embedded broker's
// log, sizes take binary units, and pprof is off unless asked for, then
// allowed on every loopback form.
func TestRetentionAndPprofSettings(t *testing.T) {
	d := DefaultConfig()
	if d.Embedded.Retention != time.Hour || d.Embedded.RetentionBytes != 1<<30 || d.HTTP.Pprof {
		t.Fatalf("defaults: retention %v, retention_bytes %d, pprof %v", d.Embedded.Retention, d.Embedded.RetentionBytes, d.HTTP.Pprof)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "c.yaml")
	for _, tc := range []struct {
		text      string
		retention time.Duration
		bytes     ByteSize
	}{
		{"embedded: {retention: 0s, retention_bytes: 0}\n", 0, 0},
		{"embedded: {retention: 90m, retention_bytes: 512MiB}\n", 90 * time.Minute, 512 << 20},
		{"embedded: {retention_bytes: 2 GiB}\n", time.Hour, 2 << 30},
		{"embedded: {retention_bytes: 1048576}\n", time.Hour, 1 << 20},
		{"embedded: {retention_bytes: 1048576B}\n", time.Hour, 1 << 20},
	} {
		if err := os.WriteFile(p, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := LoadConfig(p)
		if err != nil || c.Embedded.Retention != tc.retention || c.Embedded.RetentionBytes != tc.bytes {
			t.Errorf("%q: retention %v, retention_bytes %d, %v; want %v, %d", tc.text, c.Embedded.Retention, c.Embedded.RetentionBytes, err, tc.retention, tc.bytes)
		}
	}
	for _, listen := range []string{"127.0.0.1:8080", "127.9.9.9:0", "[::1]:8080", "localhost:8080"} {
		c := DefaultConfig()
		c.HTTP.Pprof, c.HTTP.Listen = true, listen
		if err := c.Validate(); err != nil {
			t.Errorf("pprof on %s: %v", listen, err)
		}
	}
}
