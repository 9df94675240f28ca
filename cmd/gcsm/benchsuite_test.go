package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestBenchSuiteExact: on a suite written from email-Eu-core, replaying the
// stream one update at a time finds, for every query, positive minus
// negative matches equal to the static count on the final graph less the
// static count on the initial one; and every query matches the full graph,
// from which it was sampled.
func TestBenchSuiteExact(t *testing.T) {
	snap := filepath.Join(dataset(t, "snap"), "email-Eu-core.txt")
	queries, fraction := "10", "0.05"
	if testing.Short() {
		queries, fraction = "4", "0.01"
	}
	dir := filepath.Join(t.TempDir(), "suite")
	gcsmOK(t, "bench", "suite", "--graph", snap, "--out", dir, "--queries", queries, "--sizes", "4-6", "--fraction", fraction, "--seed", "7")
	n, _ := strconv.Atoi(queries)
	var qs []string
	for i := 1; i <= n; i++ {
		qs = append(qs, "-q", filepath.Join(dir, "query_graph", "Q_"+strconv.Itoa(i)))
	}
	data := filepath.Join(dir, "data.graph")
	final, full := applyStream(t, dir)

	r := replayJSON(t, append([]string{"-d", data, "-u", filepath.Join(dir, "stream.graph"), "--batch", "1", "--count-only"}, qs...)...)
	before := matchJSON(t, append([]string{"-d", data, "--count-only"}, qs...)...)
	after := matchJSON(t, append([]string{"-d", final, "--count-only"}, qs...)...)
	whole := matchJSON(t, append([]string{"-d", full, "--count-only"}, qs...)...)
	if len(r.Queries) != n || len(before.Queries) != n || len(after.Queries) != n || len(whole.Queries) != n {
		t.Fatalf("%d, %d, %d and %d queries reported, want %d", len(r.Queries), len(before.Queries), len(after.Queries), len(whole.Queries), n)
	}
	changed := 0
	for i, q := range r.Queries {
		delta := after.Queries[i].Matches - before.Queries[i].Matches
		if q.Positive-q.Negative != delta {
			t.Errorf("%s: +%d -%d replayed, but the static counts go from %d to %d", q.Name, q.Positive, q.Negative, before.Queries[i].Matches, after.Queries[i].Matches)
		}
		if whole.Queries[i].Matches == 0 {
			t.Errorf("%s has no match in the full graph it was sampled from", q.Name)
		}
		if q.Positive+q.Negative > 0 {
			changed++
		}
	}
	if changed == 0 {
		t.Errorf("no query's matches changed: the test checks nothing")
	}
}

// applyStream writes dir's data graph after its stream (final.graph) and
// with the stream's insertions but not its deletions (full.graph: the graph
// the edge list gave), in CSM form without degrees.
func applyStream(t *testing.T, dir string) (final, full string) {
	t.Helper()
	read := func(name string) []string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	var vertices []string
	edges := map[string]bool{} // "u v", as written
	var order []string
	for _, line := range read("data.graph") {
		f := strings.Fields(line)
		switch f[0] {
		case "v":
			vertices = append(vertices, fmt.Sprintf("v %s %s", f[1], f[2]))
		case "e":
			edges[f[1]+" "+f[2]] = true
			order = append(order, f[1]+" "+f[2])
		}
	}
	deleted := map[string]bool{}
	for _, line := range read("stream.graph") {
		f := strings.Fields(line)
		e := f[1] + " " + f[2]
		if f[0] == "-e" {
			deleted[e] = true
		} else {
			order = append(order, e)
		}
	}
	write := func(name string, keep func(e string) bool) string {
		var b strings.Builder
		for _, v := range vertices {
			b.WriteString(v + "\n")
		}
		for _, e := range order {
			if keep(e) {
				b.WriteString("e " + e + " 0\n")
			}
		}
		return writeFile(t, t.TempDir(), name, b.String())
	}
	final = write("final.graph", func(e string) bool { return !deleted[e] })
	full = write("full.graph", func(string) bool { return true })
	return final, full
}

// TestBenchSuiteFlags: bad flags are refused with exit 2, naming the flag.
func TestBenchSuiteFlags(t *testing.T) {
	dir := t.TempDir()
	g := writeFile(t, dir, "g.txt", "1 2\n2 3\n3 1\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--out", dir}, "--graph"},
		{[]string{"--graph", g, "--out", dir, "--sizes", "8-4"}, `--sizes "8-4": want LO-HI`},
		{[]string{"--graph", g, "--out", dir, "--labels", "0"}, "--labels"},
		{[]string{"--graph", g, "--out", dir, "--label-skew", "0.5"}, "--label-skew"},
		{[]string{"--graph", g, "--out", dir, "--fraction", "0"}, "--fraction 0: want"},
	} {
		_, errs, code := gcsm(t, append([]string{"bench", "suite"}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("bench suite %v: exit %d, %q; want 2 naming %s", c.args, code, errs, c.want)
		}
	}
	out := filepath.Join(dir, "s")
	stdout := gcsmOK(t, "bench", "suite", "--graph", g, "--out", out, "--queries", "2", "--sizes", "3")
	if !strings.Contains(stdout, "3 vertices, 3 undirected edges") {
		t.Errorf("report: %s", stdout)
	}
	if _, errs, code := gcsm(t, "bench", "suite", "--graph", g, "--out", out); code != 1 || !strings.Contains(errs, "not empty") {
		t.Errorf("a suite over another: exit %d, %s", code, errs)
	}
}
