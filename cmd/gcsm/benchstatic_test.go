package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/kernels"
)

// snuGraph is a labeled_snu file ("t 0 N", "v id label", "e a b label")
// read with none of gcsm's parsers, for bruteCount.
type snuGraph struct {
	label []int
	adj   []map[int]int // neighbour -> edge label
}

func readSNU(t *testing.T, path string) *snuGraph {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g := &snuGraph{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var a, b, l int
		switch line := sc.Text(); {
		case strings.HasPrefix(line, "v "):
			if _, err := fmt.Sscan(line[2:], &a, &l); err != nil || a != len(g.label) {
				t.Fatalf("%s: vertex line %q", path, line)
			}
			g.label = append(g.label, l)
			g.adj = append(g.adj, map[int]int{})
		case strings.HasPrefix(line, "e "):
			if _, err := fmt.Sscan(line[2:], &a, &b, &l); err != nil || a >= len(g.adj) || b >= len(g.adj) {
				t.Fatalf("%s: edge line %q", path, line)
			}
			g.adj[a][b], g.adj[b][a] = l, l
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return g
}

// bruteCount is the test's oracle: it counts the embeddings (injective,
// label-preserving maps that keep every query edge) of connected query q in
// g by plain backtracking, query vertices in breadth-first order, each
// placed among the neighbours of its first placed neighbour and checked
// against every placed one. No filter, no plan: nothing of the engine's.
func bruteCount(q, g *snuGraph) int64 {
	n := len(q.label)
	order, parent, seen := []int{0}, []int{-1}, map[int]bool{0: true}
	for i := 0; i < len(order); i++ {
		for u := 0; u < n; u++ {
			if _, ok := q.adj[order[i]][u]; ok && !seen[u] {
				seen[u] = true
				order, parent = append(order, u), append(parent, order[i])
			}
		}
	}
	if len(order) != n {
		panic("bruteCount: query not connected")
	}
	m := make([]int, n)
	used := map[int]bool{}
	var count int64
	var place func(k int)
	fits := func(u, v int) bool {
		if used[v] || g.label[v] != q.label[u] {
			return false
		}
		for _, w := range order[:slices.Index(order, u)] {
			if l, ok := q.adj[u][w]; ok {
				if dl, ok := g.adj[v][m[w]]; !ok || dl != l {
					return false
				}
			}
		}
		return true
	}
	place = func(k int) {
		if k == n {
			count++
			return
		}
		u := order[k]
		try := func(v int) {
			if fits(u, v) {
				m[u], used[v] = v, true
				place(k + 1)
				delete(used, v)
			}
		}
		if k == 0 {
			for v := range g.label {
				try(v)
			}
			return
		}
		for v := range g.adj[m[parent[k]]] {
			try(v)
		}
	}
	place(0)
	return count
}

// yeastQueries are small yeast queries of labeled_snu that the oracle
// counts in under a tenth of a second each.
var yeastQueries = []string{"query_dense_16_4", "query_dense_16_5", "query_dense_16_6", "query_dense_16_7"}

// yeastAnswers writes an answers file of the oracle's counts of names.
func yeastAnswers(t *testing.T, dir string, names []string) (data, answers string, want map[string]graph.Count) {
	t.Helper()
	data = filepath.Join(dir, "data_graph", "yeast.graph")
	g := readSNU(t, data)
	want = map[string]graph.Count{}
	var b strings.Builder
	b.WriteString("# labeled_snu yeast, counted by the test's brute-force oracle\n")
	for _, n := range names {
		want[n] = graph.CountOf(uint64(bruteCount(readSNU(t, filepath.Join(dir, "query_graph", n+".graph")), g)))
		fmt.Fprintf(&b, "%s %d\n", n, want[n])
	}
	return data, writeFile(t, t.TempDir(), "yeast.answers", b.String()), want
}

func benchStaticJSON(t *testing.T, args ...string) bench.StaticSummary {
	t.Helper()
	return lastJSON[bench.StaticSummary](t, gcsmOK(t, append([]string{"bench", "static", "--json"}, args...)...))
}

// TestBenchStaticYeast: bench static's counts agree with the oracle's, on a
// --queries glob, with and without --count-only, on 1 and 2 workers.
func TestBenchStaticYeast(t *testing.T) {
	dir := dataset(t, "labeled_snu/yeast")
	data, answers, want := yeastAnswers(t, dir, yeastQueries)
	glob := filepath.Join(dir, "query_graph", "query_dense_16_[4-7].graph")
	for _, args := range [][]string{{"--workers", "1"}, {"--workers", "2", "--count-only"}} {
		s := benchStaticJSON(t, append([]string{"-d", data, "--queries", glob, "--answers", answers}, args...)...)
		if len(s.Queries) != len(yeastQueries) || s.Checked != len(yeastQueries) || s.Mismatches != 0 {
			t.Fatalf("%v: %d queries, %d checked, %d mismatches; want %d checked, none wrong: %+v", args, len(s.Queries), s.Checked, s.Mismatches, len(yeastQueries), s.Queries)
		}
		for i, q := range s.Queries {
			r := q.Engines["cpu"]
			if q.Name != yeastQueries[i] || q.Check != "ok" || r.Count != want[q.Name] || r.TimedOut || r.Seconds <= 0 {
				t.Errorf("%v: row %d %+v, want %s with %d matches, checked ok", args, i, q, yeastQueries[i], want[yeastQueries[i]])
			}
			if q.Answer == nil || *q.Answer != want[q.Name] {
				t.Errorf("%v: %s's answer %v, want %d", args, q.Name, q.Answer, want[q.Name])
			}
		}
		if len(s.HeavyHalf.Queries) != 2 || s.Total["cpu"] <= 0 || s.GeoMean["cpu"] <= 0 || s.HeavyHalf.Seconds["cpu"] > s.Total["cpu"] {
			t.Errorf("%v: totals %+v, geomean %+v, heavy half %+v", args, s.Total, s.GeoMean, s.HeavyHalf)
		}
	}
}

// TestBenchStaticTimeout: a query that cannot finish in 50 ms (SubgraphMatching
// takes over 10 s on it) is stopped, counted at the limit and marked, and
// the next query still runs to its full count.
func TestBenchStaticTimeout(t *testing.T) {
	dir := dataset(t, "labeled_snu/yeast")
	data, answers, want := yeastAnswers(t, dir, yeastQueries[:1])
	heavy := filepath.Join(dir, "query_graph", "query_sparse_24_3.graph")
	light := filepath.Join(dir, "query_graph", yeastQueries[0]+".graph")
	out := gcsmOK(t, "bench", "static", "--json", "-d", data, "-q", heavy, "-q", light, "--answers", answers, "--timeout", "50ms", "--workers", "1")
	s := lastJSON[bench.StaticSummary](t, out)
	if len(s.Queries) != 2 {
		t.Fatalf("%d queries reported, want 2", len(s.Queries))
	}
	h, l := s.Queries[0], s.Queries[1]
	if r := h.Engines["cpu"]; !r.TimedOut || r.Seconds != 0.05 || h.Check != "timed out" {
		t.Errorf("heavy query %+v: want timed out, counted at 0.05 s", h)
	}
	if r := l.Engines["cpu"]; r.TimedOut || r.Count != want[l.Name] || l.Check != "ok" {
		t.Errorf("light query after the timeout %+v: want its %d matches, checked ok", l, want[l.Name])
	}
	if s.TimedOut["cpu"] != 1 || s.Total["cpu"] < 0.05 || s.HeavyHalf.Queries[0] != "query_sparse_24_3" {
		t.Errorf("summary: timed out %v, total %v, heavy half %v", s.TimedOut, s.Total, s.HeavyHalf)
	}
	_, errs, _ := gcsm(t, "bench", "static", "--json", "-d", data, "-q", heavy, "--timeout", "50ms", "--workers", "1")
	if !strings.Contains(errs, ">0.050") || !strings.Contains(errs, "timed out: cpu 1 of 1, each counted at 50ms") {
		t.Errorf("table does not mark the timeout:\n%s", errs)
	}
}

// TestBenchStaticWrongAnswer: a count that differs from the answers file is
// an error in the table and the exit code, and the JSON line still comes.
func TestBenchStaticWrongAnswer(t *testing.T) {
	dir := dataset(t, "labeled_snu/yeast")
	data, _, want := yeastAnswers(t, dir, yeastQueries[:2])
	answers := writeFile(t, t.TempDir(), "bad.answers", fmt.Sprintf("%s %d\n%s %d\n", yeastQueries[0], want[yeastQueries[0]].AddUint64(1), yeastQueries[1], want[yeastQueries[1]]))
	args := []string{"bench", "static", "-d", data, "--answers", answers, "--workers", "1"}
	for _, n := range yeastQueries[:2] {
		args = append(args, "-q", filepath.Join(dir, "query_graph", n+".graph"))
	}
	out, errs := wantFailure(t, 1, args, "1 of 2 queries have counts that differ from the answers")
	row := tableRows(out, "query")[yeastQueries[0]]
	if len(row) != 4 || row[3] != fmt.Sprintf("WRONG(want=%d)", want[yeastQueries[0]].AddUint64(1)) {
		t.Errorf("row %q does not flag the wrong count:\n%s\n%s", row, out, errs)
	}
	if row := tableRows(out, "query")[yeastQueries[1]]; len(row) != 4 || row[3] != "ok" {
		t.Errorf("row %q of the right count:\n%s", row, out)
	}
	out, _ = wantFailure(t, 1, append(args, "--json"))
	s := lastJSON[bench.StaticSummary](t, out)
	if s.Mismatches != 1 || s.Checked != 1 || s.Queries[0].Check != "wrong" {
		t.Errorf("JSON: %d mismatches, %d checked, %+v", s.Mismatches, s.Checked, s.Queries)
	}
}

func TestBenchStaticErrors(t *testing.T) {
	dir, data, _ := tinyFiles(t)
	q := writeFile(t, dir, "tri.graph", "t 3 3\nv 0 0\nv 1 0\nv 2 0\ne 0 1 0\ne 1 2 0\ne 0 2 0\n")
	wantFailure(t, 2, []string{"bench", "static", "-d", data, "-q", q, "--engines", "cpu,tpu"}, `--engines: unknown engine "tpu" (want cpu or gpu)`)
	wantFailure(t, 2, []string{"bench", "static", "-d", data, "-q", q, "--engines", "cpu,cpu"}, "--engines: cpu given twice")
	wantFailure(t, 2, []string{"bench", "static", "-d", data, "-q", q, "--timeout", "-1s"}, "--timeout -1s: want 0 (no limit) or more")
	wantFailure(t, 2, []string{"bench", "static", "-d", data}, "no query: give -q QUERY or --queries DIR_OR_GLOB")
	wantFailure(t, 2, []string{"bench", "static", "-q", q}, "need -d DATA")
	empty := t.TempDir()
	wantFailure(t, 1, []string{"bench", "static", "-d", data, "--queries", empty}, fmt.Sprintf("--queries %q: no query files there", empty))
	wantFailure(t, 1, []string{"bench", "static", "-d", data, "--queries", filepath.Join(empty, "*.graph")}, "no query files there")
	bad := writeFile(t, dir, "bad.answers", "# ok\ntri 6\ntri six\n")
	wantFailure(t, 1, []string{"bench", "static", "-d", data, "-q", q, "--answers", bad}, bad+`:3: count "six" of tri is not a non-negative integer`)
	if x, err := kernels.Open(kernels.Options{}); err == nil {
		x.Close()
	} else {
		wantFailure(t, 1, []string{"bench", "static", "-d", data, "-q", q, "--engines", "cpu,gpu"}, "--engines gpu: "+err.Error())
	}

	// A directory of query files: each is a query, named after its file.
	s := benchStaticJSON(t, "-d", data, "--queries", dir+"/tri.graph", "--workers", "1")
	if len(s.Queries) != 1 || s.Queries[0].Name != "tri" || s.Queries[0].Check != "unchecked" {
		t.Errorf("one query file: %+v", s.Queries)
	}
	qdir := filepath.Join(dir, "q")
	if err := os.Mkdir(qdir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, qdir, "a.graph", "t 2 1\nv 0 0\nv 1 0\ne 0 1 0\n")
	writeFile(t, qdir, "b.graph", "t 3 3\nv 0 0\nv 1 0\nv 2 0\ne 0 1 0\ne 1 2 0\ne 0 2 0\n")
	s = benchStaticJSON(t, "-d", data, "--queries", qdir, "--workers", "1")
	if len(s.Queries) != 2 || s.Queries[0].Name != "a" || s.Queries[1].Name != "b" {
		t.Errorf("a directory of two queries: %+v", s.Queries)
	}
}
