package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The peer suites: real graphs and queries whose answers peer systems
// computed (see ../shared/datasets/README.md), replayed through the whole
// command line. They read the datasets in place and skip when the checkout
// has no ../shared beside it.

// datasetsDir is ../shared/datasets beside the checkout, from this package.
const datasetsDir = "../../../shared/datasets"

// dataset returns the directory of a suite, skipping the test without it.
func dataset(t *testing.T, suite string) string {
	t.Helper()
	dir := filepath.Join(datasetsDir, suite)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Skipf("dataset %s not present (a clone without ../shared): %v", dir, err)
	}
	return dir
}

// readAnswers reads a file of "name:count" lines.
func readAnswers(t *testing.T, path string) map[string]int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		name, count, ok := strings.Cut(line, ":")
		n, err := strconv.ParseInt(strings.TrimSpace(count), 10, 64)
		if !ok || err != nil {
			t.Fatalf("%s: bad answer line %q", path, line)
		}
		m[strings.TrimSpace(name)] = n
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// queryFiles returns dir/prefix{lo..hi}suffix.
func queryFiles(dir, prefix, suffix string, lo, hi int) (names, paths []string) {
	for i := lo; i <= hi; i++ {
		name := fmt.Sprintf("%s%d", prefix, i)
		names = append(names, name)
		paths = append(paths, filepath.Join(dir, name+suffix))
	}
	return names, paths
}

// checkNames fails unless the summary reports exactly names, in order.
func checkNames[Q any](t *testing.T, what string, got []Q, name func(Q) string, names []string) {
	t.Helper()
	if len(got) != len(names) {
		t.Fatalf("%s: %d queries reported, want %d", what, len(got), len(names))
	}
	for i, q := range got {
		if name(q) != names[i] {
			t.Fatalf("%s: query %d is %q, want %q", what, i, name(q), names[i])
		}
	}
}

func replayName(q replayQuery) string { return q.Name }
func matchName(q matchQuery) string   { return q.Name }

// TestHPRDStatic matches the 200 dense 16-vertex queries of the
// SubgraphMatching test suite on HPRD and compares the embedding counts with
// the suite's expected_output.res.
func TestHPRDStatic(t *testing.T) {
	dir := dataset(t, "static_hprd_subgraphmatching")
	data := filepath.Join(dir, "data_graph", "HPRD.graph")
	want := readAnswers(t, filepath.Join(dir, "expected_output.res"))
	if len(want) != 200 {
		t.Fatalf("expected_output.res has %d answers, want 200", len(want))
	}
	qdir := filepath.Join(dir, "query_graph")
	const per = 50 // queries per invocation, so that HPRD loads 4 times, not 200
	for lo := 1; lo <= 200; lo += per {
		names, paths := queryFiles(qdir, "query_dense_16_", ".graph", lo, lo+per-1)
		s := matchJSON(t, append([]string{"-d", data, "--count-only"}, queryArgs(paths...)...)...)
		checkNames(t, "match --count-only", s.Queries, matchName, names)
		for _, q := range s.Queries {
			w, ok := want[q.Name]
			if !ok {
				t.Errorf("%s: no expected answer", q.Name)
			} else if q.Matches != w {
				t.Errorf("%s: %d embeddings, want %d", q.Name, q.Matches, w)
			}
		}
	}

	// Enumeration, which walks the last query vertex too, counts the same.
	var names, paths []string
	for _, i := range []int{1, 42, 99, 150, 200} {
		n, p := queryFiles(qdir, "query_dense_16_", ".graph", i, i)
		names, paths = append(names, n...), append(paths, p...)
	}
	s := matchJSON(t, append([]string{"-d", data}, queryArgs(paths...)...)...)
	checkNames(t, "match (enumerate)", s.Queries, matchName, names)
	for _, q := range s.Queries {
		if q.Matches != want[q.Name] {
			t.Errorf("%s enumerated: %d embeddings, want %d", q.Name, q.Matches, want[q.Name])
		}
	}
}

// TestEuCoreInsert replays the withheld 10% of email-Eu-core against the 30
// generated queries; RapidFlow, Graphflow, TurboFlux, SymBi and CaLiG agree
// on expected_insert.txt.
func TestEuCoreInsert(t *testing.T) {
	dir := dataset(t, "csm_eucore_generated")
	want := readAnswers(t, filepath.Join(dir, "expected_insert.txt"))
	names, paths := queryFiles(filepath.Join(dir, "query_graph"), "Q_", "", 1, 30)
	base := append([]string{"-d", filepath.Join(dir, "data.graph"), "-u", filepath.Join(dir, "insertion.graph")}, queryArgs(paths...)...)
	const updates = 1606
	for _, tc := range []struct {
		batch     int
		countOnly bool
	}{{1, true}, {1024, true}, {64, false}} {
		t.Run(fmt.Sprintf("batch%d,count-only=%v", tc.batch, tc.countOnly), func(t *testing.T) {
			args := slices.Concat(base, []string{"--batch", strconv.Itoa(tc.batch)})
			if tc.countOnly {
				args = append(args, "--count-only")
			}
			s := replayJSON(t, args...)
			if s.Updates != updates || s.Batches != (updates+tc.batch-1)/tc.batch {
				t.Errorf("%d updates in %d batches, want %d in %d", s.Updates, s.Batches, updates, (updates+tc.batch-1)/tc.batch)
			}
			checkNames(t, "replay", s.Queries, replayName, names)
			for _, q := range s.Queries {
				w, ok := want[q.Name]
				switch {
				case !ok:
					t.Errorf("%s: no expected answer", q.Name)
				case q.Positive != w || q.Negative != 0:
					t.Errorf("%s: +%d -%d, want +%d -0", q.Name, q.Positive, q.Negative, w)
				}
			}
		})
	}
}

// TestHumanHybridFlowDeletionMirrorsInsertion: deleting HybridFlow's 4314
// insertions from the full human graph, in reverse order, must remove
// exactly the embeddings that inserting them created.
func TestHumanHybridFlowDeletionMirrorsInsertion(t *testing.T) {
	dir := dataset(t, "csm_human_hybridflow")
	n := 100
	if testing.Short() {
		n = 20
	}
	qdir := filepath.Join(dir, "query_graph")
	insert := func(batch int, names, paths []string) replaySummary {
		t.Helper()
		s := replayJSON(t, append([]string{"-d", filepath.Join(dir, "data.graph"), "-u", filepath.Join(dir, "insertion.graph"),
			"--count-only", "--batch", strconv.Itoa(batch)}, queryArgs(paths...)...)...)
		checkNames(t, fmt.Sprintf("insertion, batch %d", batch), s.Queries, replayName, names)
		if s.Updates != 4314 {
			t.Errorf("insertion: %d updates, want 4314", s.Updates)
		}
		return s
	}
	remove := func(batch int, names, paths []string) replaySummary {
		t.Helper()
		s := replayJSON(t, append([]string{"-d", filepath.Join(dir, "data_full.graph"), "-u", filepath.Join(dir, "deletion.graph"),
			"--count-only", "--batch", strconv.Itoa(batch)}, queryArgs(paths...)...)...)
		checkNames(t, fmt.Sprintf("deletion, batch %d", batch), s.Queries, replayName, names)
		if s.Updates != 4314 {
			t.Errorf("deletion: %d updates, want 4314", s.Updates)
		}
		return s
	}
	mirror := func(batch int, ins, del replaySummary) {
		t.Helper()
		for i, q := range ins.Queries {
			d := del.Queries[i]
			if q.Negative != 0 || d.Positive != 0 || q.Positive != d.Negative {
				t.Errorf("batch %d, %s: insertion +%d -%d, deletion +%d -%d; want insertion +N -0, deletion +0 -N",
					batch, q.Name, q.Positive, q.Negative, d.Positive, d.Negative)
			}
			if q.Positive == 0 {
				// Every query has between 10 and 2.8e8 new embeddings.
				t.Errorf("batch %d, %s: no new embeddings", batch, q.Name)
			}
		}
	}

	names, paths := queryFiles(qdir, "Q_", "", 1, n)
	big := insert(4314, names, paths)
	mirror(4314, big, remove(4314, names, paths))

	// Smaller batches, down to the peers' one update at a time, on a subset:
	// the same counts as in one batch.
	sub := 20
	if testing.Short() {
		sub = 5
	}
	for _, tc := range []struct{ batch, queries int }{{64, sub}, {1, 5}} {
		names, paths := queryFiles(qdir, "Q_", "", 1, tc.queries)
		ins := insert(tc.batch, names, paths)
		mirror(tc.batch, ins, remove(tc.batch, names, paths))
		for i, q := range ins.Queries {
			if q != big.Queries[i] {
				t.Errorf("%s: batch %d gives %+v, batch 4314 %+v", q.Name, tc.batch, q, big.Queries[i])
			}
		}
	}
}

// edge is an undirected edge with u < v.
type edge struct{ u, v int }

func mkEdge(u, v int) edge {
	if u > v {
		u, v = v, u
	}
	return edge{u, v}
}

// readCSMEdges returns the vertex lines and the edges of a CSM file.
func readCSMEdges(t *testing.T, path string) (vertices []string, edges []edge) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case f[0] == "v":
			vertices = append(vertices, line)
		case f[0] == "e" && len(f) >= 3:
			u, err1 := strconv.Atoi(f[1])
			v, err2 := strconv.Atoi(f[2])
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: bad edge line %q", path, line)
			}
			edges = append(edges, mkEdge(u, v))
		}
	}
	return vertices, edges
}

// TestNetCountIndependentOfBatch replays a stream that mixes insertions and
// deletions, including edges that come and go and updates without effect,
// at several batch sizes. Batches may merge or cancel changes, so positives
// and negatives depend on the batch size, but their difference over the
// whole stream must not: it is the count on the final graph less the count
// on the initial one, which the static matcher gives independently.
func TestNetCountIndependentOfBatch(t *testing.T) {
	dir := dataset(t, "csm_eucore_generated")
	tmp := t.TempDir()
	vertices, initial := readCSMEdges(t, filepath.Join(dir, "data.graph"))
	_, inserts := readCSMEdges(t, filepath.Join(dir, "insertion.graph"))

	// Build the stream, simulating the edge set as it goes.
	present := map[edge]bool{}
	for _, e := range initial {
		present[e] = true
	}
	rng := rand.New(rand.NewPCG(20240601, 7))
	var lines []string
	emit := func(op string, e edge) {
		u, v := e.u, e.v
		if rng.IntN(2) == 0 {
			u, v = v, u // either orientation names the undirected edge
		}
		lines = append(lines, fmt.Sprintf("%s %d %d 0", op, u, v))
		present[e] = op == "e"
	}
	deletable := append([]edge(nil), initial...)
	rng.Shuffle(len(deletable), func(i, j int) { deletable[i], deletable[j] = deletable[j], deletable[i] })
	type later struct {
		at int
		op string
		e  edge
	}
	var pending []later
	for i, e := range inserts {
		emit("e", e)
		if i%2 == 1 && len(deletable) > 0 {
			d := deletable[0]
			deletable = deletable[1:]
			emit("-e", d)
			if i%10 == 3 {
				// Put it back a few lines later: within some batches, not others.
				pending = append(pending, later{len(lines) + 1 + rng.IntN(6), "e", d})
			}
		}
		if i%25 == 0 {
			pending = append(pending, later{len(lines) + 1 + rng.IntN(12), "-e", e})
		}
		if i%97 == 0 {
			emit("e", e)                   // a duplicate insertion: no effect when it stands alone
			emit("-e", mkEdge(1003, 1004)) // most likely absent
		}
		for k := 0; k < len(pending); {
			if pending[k].at <= len(lines) {
				emit(pending[k].op, pending[k].e)
				pending = append(pending[:k], pending[k+1:]...)
				continue
			}
			k++
		}
	}
	for _, p := range pending {
		emit(p.op, p.e)
	}
	stream := writeFile(t, tmp, "mixed.stream", strings.Join(lines, "\n")+"\n")

	// The final graph, for the static counts.
	var final strings.Builder
	for _, v := range vertices {
		final.WriteString(v + "\n")
	}
	nFinal := 0
	for e, ok := range present {
		if ok {
			fmt.Fprintf(&final, "e %d %d 0\n", e.u, e.v)
			nFinal++
		}
	}
	finalPath := writeFile(t, tmp, "final.graph", final.String())
	t.Logf("mixed stream: %d lines; %d edges before, %d after", len(lines), len(initial), nFinal)

	names, paths := queryFiles(filepath.Join(dir, "query_graph"), "Q_", "", 1, 30)
	pick := []int{1, 3, 7, 11, 16, 21, 26, 30} // paths, cycles and dense queries of 4 to 6 vertices
	var qNames, qPaths []string
	for _, i := range pick {
		qNames, qPaths = append(qNames, names[i-1]), append(qPaths, paths[i-1])
	}
	before := matchJSON(t, append([]string{"-d", filepath.Join(dir, "data.graph"), "--count-only"}, queryArgs(qPaths...)...)...)
	after := matchJSON(t, append([]string{"-d", finalPath, "--count-only"}, queryArgs(qPaths...)...)...)
	checkNames(t, "match before", before.Queries, matchName, qNames)
	checkNames(t, "match after", after.Queries, matchName, qNames)
	for i, q := range after.Queries {
		t.Logf("%s: %d embeddings before, %d after", q.Name, before.Queries[i].Matches, q.Matches)
	}

	for _, tc := range []struct {
		batch int
		extra []string
	}{
		{1, []string{"--count-only"}},
		{7, []string{"--count-only"}},
		{7, []string{"--count-only", "--workers", "1"}},
		{256, []string{"--count-only"}},
		{256, nil}, // enumerate
		{100000, []string{"--count-only"}},
	} {
		args := append([]string{"-d", filepath.Join(dir, "data.graph"), "-u", stream, "--batch", strconv.Itoa(tc.batch)}, tc.extra...)
		s := replayJSON(t, append(args, queryArgs(qPaths...)...)...)
		checkNames(t, "replay", s.Queries, replayName, qNames)
		if s.Updates != len(lines) {
			t.Errorf("batch %d: %d updates, want %d", tc.batch, s.Updates, len(lines))
		}
		for i, q := range s.Queries {
			if tc.batch == 1 && (q.Positive == 0 || q.Negative == 0) {
				t.Errorf("batch 1, %s: +%d -%d; the stream should both make and break matches", q.Name, q.Positive, q.Negative)
			}
			net := after.Queries[i].Matches - before.Queries[i].Matches
			if q.Positive-q.Negative != net {
				t.Errorf("batch %d %v, %s: +%d -%d = %d, want %d (%d after less %d before)",
					tc.batch, tc.extra, q.Name, q.Positive, q.Negative, q.Positive-q.Negative, net,
					after.Queries[i].Matches, before.Queries[i].Matches)
			}
		}
	}
}

// TestSNAPTriangles counts the triangles of the SNAP graphs in
// ../shared/datasets/snap and compares them with the triangle counts that
// SNAP publishes for them. Directed lists are read as undirected graphs with
// reciprocal edges merged, as SNAP counts them; self-loops are skipped.
func TestSNAPTriangles(t *testing.T) {
	dir := dataset(t, "snap")
	for _, tc := range []struct {
		file      string
		triangles int64
	}{
		{"facebook_combined.txt", 1612010},
		{"email-Eu-core.txt", 105461},
		{"CA-GrQc.countheader.txt", 48260},
		{"Wiki-Vote.txt", 608389},
		{"Email-Enron.txt", 727044},
		{"p2p-Gnutella08.txt", 2383},
		{"p2p-Gnutella31.txt", 2024},
	} {
		s := matchJSON(t, "-d", filepath.Join(dir, tc.file), "-q", "tri=(a)--(b)--(c)--(a)", "--semantics", "instances", "--count-only", "--skip-bad")
		if len(s.Queries) != 1 || s.Queries[0].Matches != tc.triangles {
			t.Errorf("%s: %+v, want %d triangles", tc.file, s.Queries, tc.triangles)
		}
	}
	// As embeddings, each triangle counts 6 times.
	s := matchJSON(t, "-d", filepath.Join(dir, "facebook_combined.txt"), "-q", "tri=(a)--(b)--(c)--(a)", "--count-only")
	if len(s.Queries) != 1 || s.Queries[0].Matches != 6*1612010 {
		t.Errorf("facebook_combined.txt embeddings: %+v, want %d", s.Queries, 6*1612010)
	}
}
