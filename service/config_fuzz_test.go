package service

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzParseByteSize: any text either parses to a size that reads back the
// same from its plain digits, or is refused with an error naming it.
func FuzzParseByteSize(f *testing.F) {
	for _, s := range []string{"0", "1048576", "1GiB", "512 MiB", "64KiB", "1TiB", "10B", "1GB", "-5", "+5", "", " ", "9223372036854775807", "8388608TiB", "1.5GiB", "GiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseByteSize(s)
		if err != nil {
			if n != 0 || !strings.Contains(err.Error(), strconv.Quote(s)) {
				t.Fatalf("%q: %d, %v", s, n, err)
			}
			return
		}
		if n < 0 {
			t.Fatalf("%q parsed to %d", s, n)
		}
		if m, err := parseByteSize(strconv.FormatInt(int64(n), 10)); err != nil || m != n {
			t.Fatalf("%q parsed to %d, which reads back as %d, %v", s, n, m, err)
		}
	})
}

// FuzzParseConfig: any file either loads into a configuration that
// validates, or is refused with an error that names the file.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{"", "batch: {size: 10}\n", "cluster: {shards: 64}\n", "cluster: {shards: 8, group: g, topic: t, cuts_topic: c}\n",
		"cluster: {shards: -1}\n", "cluster: {group: g}\n", "cluster: {shards: 8}\nstate: {keep: 1}\n", "cluster: [1]\n",
		"queries:\n  - {name: q, pattern: \"(a)-[]->(b)\", initial: true}\ncluster: {shards: 2}\n", "embedded: {retention_bytes: 1GiB}\n", "{{",
		"http: {max_queries: 5, max_pattern_bytes: 100, max_pattern_vertices: 3, max_pattern_edges: 2}\n", "http: {max_queries: 0}\n",
		"initial: {max_matches: 10, max_time: 1s, max_memory: 64MiB}\n", "initial: {max_memory: 1KiB}\n", "initial: {max_time: -1s}\n",
		"queries:\n  - {name: \"\\u202e\", pattern: \"(a)-[]->(b)\"}\n",
		"input: {max_id_bytes: 64}\n", "input: {ts_unit: s}\n", "input: {ts_unit: ns}\n", "input: {ts_unit: sec}\n", "input: {ts_unit: \"\"}\n", "input: {max_id_bytes: 0}\n", "input: {max_id_bytes: 1KiB}\n",
		"brokers: [b:1]\ntls: {ca_file: x, server_name: y}\nsasl: {mechanism: PLAIN, username: u}\n", "sasl: {mechanism: SCRAM-SHA-1}\n",
		"health: {stall_after: 5s}\n", "health: {stall_after: 0s}\n", "health: {stall_after: -1m}\n", "health: {stall_after: 999ms}\n", "health: {stall: 5s}\n",
		"state: {accept_input_loss: true}\n", "state: {accept_input_loss: true}\ncluster: {shards: 4}\n", "state: {accept_input_loss: yes please}\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		cfg, err := parseConfig("c.yaml", b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "c.yaml: ") {
				t.Fatalf("%q: error %v does not name the file", b, err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%q loaded but does not validate: %v", b, err)
		}
	})
}
