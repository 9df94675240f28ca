package bench_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
)

// snapFile writes an R-MAT graph as a SNAP edge list, each edge once in
// each direction as a directed list gives it, with CRLF ends, a comment and
// a self-loop, and returns its path and its distinct undirected edges.
func snapFile(t *testing.T, scale int) (string, int) {
	t.Helper()
	var b strings.Builder
	b.WriteString("# FromNodeId\tToNodeId\r\n7\t7\r\n")
	edges := 0
	err := bench.RMAT{Scale: scale, Edges: int64(8) << scale, Seed: 3}.Generate(func(u, v, _ uint32) error {
		fmt.Fprintf(&b, "%d\t%d\r\n%d\t%d\r\n", u+100, v+100, v+100, u+100)
		edges++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "g.txt")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, edges
}

func smallSuite() bench.Suite {
	s := bench.DefaultSuite()
	s.Queries, s.MinSize, s.MaxSize = 8, 3, 6
	return s
}

func TestReadEdgeList(t *testing.T) {
	p, edges := snapFile(t, 8)
	el, err := bench.ReadEdgeList(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(el.Edges) != edges || el.Duplicates != edges || el.SelfLoops != 1 {
		t.Fatalf("%d edges, %d duplicates, %d self-loops; want %d, %d, 1", len(el.Edges), el.Duplicates, el.SelfLoops, edges, edges)
	}
	for _, e := range el.Edges {
		if e.Src >= e.Dst || int(e.Dst) >= el.Vertices {
			t.Fatalf("edge %v is not (lower, higher) among %d vertices", e, el.Vertices)
		}
	}

	bad := filepath.Join(t.TempDir(), "bad.txt")
	if err := os.WriteFile(bad, []byte("1 2\n3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var le *ingest.LineError
	if _, err := bench.ReadEdgeList(bad); !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), bad) {
		t.Fatalf("a line of one field: %v, want a LineError naming %s line 2", err, bad)
	}
}

// TestReadEdgeListWikiVote: the directed list with CRLF ends reads as the
// undirected graph the datasets' README describes.
func TestReadEdgeListWikiVote(t *testing.T) {
	p := filepath.Join(datasets, "snap", "Wiki-Vote.txt")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no %s (a clone without ../shared): %v", p, err)
	}
	el, err := bench.ReadEdgeList(p)
	if err != nil {
		t.Fatal(err)
	}
	if el.Vertices != 7115 || len(el.Edges)+el.Duplicates+el.SelfLoops != 103689 {
		t.Fatalf("%d vertices, %d+%d+%d lines; want 7115 and 103689", el.Vertices, len(el.Edges), el.Duplicates, el.SelfLoops)
	}
}

// datasets is ../shared/datasets beside the checkout, from this package.
const datasets = "../../shared/datasets"

func TestSuiteDeterministic(t *testing.T) {
	p, _ := snapFile(t, 8)
	el, err := bench.ReadEdgeList(p)
	if err != nil {
		t.Fatal(err)
	}
	write := func(seed uint64) string {
		s := smallSuite()
		s.Seed = seed
		dir := filepath.Join(t.TempDir(), "suite")
		if _, err := bench.WriteSuite(dir, el, s); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	a, b, c := write(5), write(5), write(6)
	files := []string{"data.graph", "stream.graph"}
	for i := 1; i <= smallSuite().Queries; i++ {
		files = append(files, filepath.Join("query_graph", "Q_"+strconv.Itoa(i)))
	}
	differ := 0
	for _, f := range files {
		fa, fb, fc := readBytes(t, filepath.Join(a, f)), readBytes(t, filepath.Join(b, f)), readBytes(t, filepath.Join(c, f))
		if !bytes.Equal(fa, fb) {
			t.Errorf("%s differs between two runs of one seed", f)
		}
		if !bytes.Equal(fa, fc) {
			differ++
		}
	}
	if differ != len(files) {
		t.Errorf("only %d of %d files differ between seeds 5 and 6", differ, len(files))
	}
	if _, err := bench.WriteSuite(a, el, smallSuite()); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("a suite over another: %v, want a refusal", err)
	}
}

func readBytes(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSuiteFiles reads a suite back with gcsm's reader: the data graph
// holds every vertex with its degree, the stream inserts only edges the
// data graph lacks and deletes only edges it has, and the two make the
// full graph; the queries are connected, of the sizes asked, trees and
// cyclic in turn.
func TestSuiteFiles(t *testing.T) {
	p, _ := snapFile(t, 8)
	el, err := bench.ReadEdgeList(p)
	if err != nil {
		t.Fatal(err)
	}
	s := smallSuite()
	dir := t.TempDir()
	rep, err := bench.WriteSuite(dir, el, s)
	if err != nil {
		t.Fatal(err)
	}
	full := map[[2]string]bool{}
	for _, e := range el.Edges {
		full[pair(strconv.Itoa(int(e.Src)), strconv.Itoa(int(e.Dst)))] = true
	}
	data := readCSM(t, filepath.Join(dir, "data.graph"), s.Labels)
	if len(data.labels) != el.Vertices || rep.Initial != len(data.edges) {
		t.Fatalf("data.graph: %d vertices, %d edges; want %d and %d", len(data.labels), len(data.edges), el.Vertices, rep.Initial)
	}
	stream := readCSM(t, filepath.Join(dir, "stream.graph"), s.Labels)
	want := int(math.Round(s.Fraction * float64(len(el.Edges))))
	if len(stream.ops) != want || rep.Inserts != want-want/2 || rep.Deletes != want/2 {
		t.Fatalf("stream: %d updates (report: %d+, %d-), want %d, half of them deletions", len(stream.ops), rep.Inserts, rep.Deletes, want)
	}
	after := map[[2]string]bool{}
	for e := range data.edges {
		if !full[e] {
			t.Fatalf("data.graph has %v, which the edge list lacks", e)
		}
		after[e] = true
	}
	inserted := map[[2]string]bool{}
	for i, e := range stream.order {
		switch {
		case stream.ops[i] == graph.Insert && (data.edges[e] || !full[e] || inserted[e]):
			t.Fatalf("stream line %d inserts %v, which is in data.graph, not in the edge list or inserted before", i+1, e)
		case stream.ops[i] == graph.Delete && (!data.edges[e] || !after[e]):
			t.Fatalf("stream line %d deletes %v, which data.graph lacks or was deleted before", i+1, e)
		}
		inserted[e] = stream.ops[i] == graph.Insert
		after[e] = stream.ops[i] == graph.Insert
	}
	if len(data.edges)+rep.Inserts != len(full) {
		t.Fatalf("data.graph and the insertions have %d edges, the edge list %d", len(data.edges)+rep.Inserts, len(full))
	}
	checkQueries(t, dir, s)
}

func checkQueries(t *testing.T, dir string, s bench.Suite) {
	t.Helper()
	for i := range s.Queries {
		q := readCSM(t, filepath.Join(dir, "query_graph", "Q_"+strconv.Itoa(i+1)), s.Labels)
		n, m := len(q.labels), len(q.edges)
		if want := s.MinSize + i%(s.MaxSize-s.MinSize+1); n != want {
			t.Errorf("Q_%d has %d vertices, want %d", i+1, n, want)
		}
		if cyclic := i%2 == 1; cyclic != (m >= n) || m < n-1 {
			t.Errorf("Q_%d: %d vertices and %d edges, want cyclic %v", i+1, n, m, cyclic)
		}
		if !connected(q) {
			t.Errorf("Q_%d is not connected", i+1)
		}
	}
}

// csmFile is a CSM file as read by ingest's reader, with the headers and
// degrees that the reader skips checked by hand.
type csmFile struct {
	labels map[string]string
	edges  map[[2]string]bool
	order  [][2]string // edge lines in order
	ops    []graph.Op  // their ops
}

// pair is an undirected edge of numeric ids, the lower first.
func pair(u, v string) [2]string {
	a, _ := strconv.Atoi(u)
	b, _ := strconv.Atoi(v)
	if a > b {
		u, v = v, u
	}
	return [2]string{u, v}
}

func readCSM(t *testing.T, path string, labels int) csmFile {
	t.Helper()
	r, c, err := ingest.Open(path, ingest.Options{Format: ingest.FormatCSM})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := csmFile{labels: map[string]string{}, edges: map[[2]string]bool{}}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec.Op == graph.AddVertex {
			if l, err := strconv.Atoi(rec.SrcLabel); err != nil || l < 0 || l >= labels {
				t.Fatalf("%s:%d: label %q is not one of %d", path, rec.Line, rec.SrcLabel, labels)
			}
			f.labels[rec.Src] = rec.SrcLabel
			continue
		}
		if rec.Label != "0" {
			t.Fatalf("%s:%d: edge label %q, want 0", path, rec.Line, rec.Label)
		}
		e := pair(rec.Src, rec.Dst)
		if rec.Op == graph.Insert && f.edges[e] && len(f.labels) > 0 {
			t.Fatalf("%s:%d: edge %v given twice", path, rec.Line, e)
		}
		f.edges[e] = true
		f.order, f.ops = append(f.order, e), append(f.ops, rec.Op)
	}
	if len(f.labels) > 0 {
		checkHeader(t, path, f)
	}
	return f
}

// checkHeader checks a graph file's "t N M" and degrees, which the reader
// skips.
func checkHeader(t *testing.T, path string, f csmFile) {
	t.Helper()
	deg := map[string]int{}
	for e := range f.edges {
		deg[e[0]]++
		deg[e[1]]++
	}
	for i, line := range strings.Split(strings.TrimSpace(string(readBytes(t, path))), "\n") {
		fs := strings.Fields(line)
		switch {
		case i == 0 && line != fmt.Sprintf("t %d %d", len(f.labels), len(f.edges)):
			t.Fatalf("%s: header %q, want t %d %d", path, line, len(f.labels), len(f.edges))
		case fs[0] == "v" && (len(fs) != 4 || fs[3] != strconv.Itoa(deg[fs[1]])):
			t.Fatalf("%s:%d: %q, want degree %d", path, i+1, line, deg[fs[1]])
		}
	}
}

func connected(q csmFile) bool {
	adj := map[string][]string{}
	for e := range q.edges {
		adj[e[0]] = append(adj[e[0]], e[1])
		adj[e[1]] = append(adj[e[1]], e[0])
	}
	seen := map[string]bool{"0": true}
	for stack := []string{"0"}; len(stack) > 0; {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, w := range adj[v] {
			if !seen[w] {
				seen[w] = true
				stack = append(stack, w)
			}
		}
	}
	return len(seen) == len(q.labels)
}

func TestSuiteValidate(t *testing.T) {
	for _, mut := range []func(*bench.Suite){
		func(s *bench.Suite) { s.Labels = 0 },
		func(s *bench.Suite) { s.LabelSkew = 0.5 },
		func(s *bench.Suite) { s.Fraction = 0 },
		func(s *bench.Suite) { s.Fraction = math.NaN() },
		func(s *bench.Suite) { s.Queries = 0 },
		func(s *bench.Suite) { s.MinSize, s.MaxSize = 5, 4 },
		func(s *bench.Suite) { s.MinSize = 1 },
	} {
		s := bench.DefaultSuite()
		mut(&s)
		if s.Validate() == nil {
			t.Errorf("%+v passes Validate", s)
		}
	}
	if err := bench.DefaultSuite().Validate(); err != nil {
		t.Fatal(err)
	}
}

func FuzzParseSizes(f *testing.F) {
	for _, s := range []string{"4-8", "5", " 3 - 4 ", "8-4", "1-2", "-", "4-", "x", "2-64", "2-65"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		lo, hi, err := bench.ParseSizes(v)
		if err != nil {
			if !strings.Contains(err.Error(), strconv.Quote(v)) {
				t.Fatalf("error %q does not name %q", err, v)
			}
			return
		}
		if lo < 2 || hi < lo || hi > 64 {
			t.Fatalf("%q gives %d-%d", v, lo, hi)
		}
		if lo2, hi2, err := bench.ParseSizes(fmt.Sprintf("%d-%d", lo, hi)); err != nil || lo2 != lo || hi2 != hi {
			t.Fatalf("%d-%d reads back as %d-%d, %v", lo, hi, lo2, hi2, err)
		}
	})
}
