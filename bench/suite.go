package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
)

// Suite describes a continuous-subgraph-matching suite in the peers' CSM
// format (RapidFlow's), made from a static graph: a labeled initial graph,
// a stream of insertions and deletions, and queries sampled from the graph.
type Suite struct {
	// Labels is the number of vertex labels, drawn by a Zipf law of
	// exponent LabelSkew (above 1; 0 draws them uniformly), as R-MAT's are.
	Labels    int
	LabelSkew float64
	// Fraction of the edges makes the stream, half inserted and half
	// deleted (SplitStream).
	Fraction float64
	// Queries is the number of queries, of MinSize to MaxSize vertices.
	Queries          int
	MinSize, MaxSize int
	Seed             uint64
}

// DefaultSuite is the suite of the RapidFlow comparison (bench/rapidflow.sh):
// 12 labels of skew 1.2 (label 0 on 39% of the vertices, label 11 on 2%)
// and queries of 4 to 6 vertices. On Wiki-Vote and Email-Enron, RapidFlow
// then takes over 10 ms on 14 of the 20 queries of seed 1 and at most 31 s
// on one (a 6-vertex tree of five label-0 vertices on Enron's hubs) on a
// 2-core VM. With 6 labels, of skew 1.1 as of 1.5, or with 8-vertex
// queries, random walks through the hubs give queries with 10^9 to 10^10
// matches that run for minutes.
func DefaultSuite() Suite {
	return Suite{Labels: 12, LabelSkew: 1.2, Fraction: 0.1, Queries: 20, MinSize: 4, MaxSize: 6, Seed: 1}
}

// Validate reports whether s describes a suite that WriteSuite can make.
func (s Suite) Validate() error {
	var errs []error
	if s.Labels < 1 {
		errs = append(errs, fmt.Errorf("bench: a suite needs 1 label or more, got %d", s.Labels))
	}
	if !validSkew(s.LabelSkew) {
		errs = append(errs, fmt.Errorf("bench: label skew %v is neither 0 (uniform) nor a finite Zipf exponent above 1", s.LabelSkew))
	}
	if !(s.Fraction > 0 && s.Fraction <= 1) {
		errs = append(errs, fmt.Errorf("bench: stream fraction %v is not in (0, 1]", s.Fraction))
	}
	if s.Queries < 1 {
		errs = append(errs, fmt.Errorf("bench: a suite needs 1 query or more, got %d", s.Queries))
	}
	if s.MinSize < 2 || s.MaxSize < s.MinSize {
		errs = append(errs, fmt.Errorf("bench: query sizes %d-%d: want 2 or more vertices, the smaller first", s.MinSize, s.MaxSize))
	}
	return errors.Join(errs...)
}

// ParseSizes reads a range of query sizes, "4-8", or one size, "5".
func ParseSizes(v string) (lo, hi int, err error) {
	a, b, isRange := strings.Cut(strings.TrimSpace(v), "-")
	lo, err1 := strconv.Atoi(strings.TrimSpace(a))
	hi, err2 := lo, error(nil)
	if isRange {
		hi, err2 = strconv.Atoi(strings.TrimSpace(b))
	}
	if err1 != nil || err2 != nil || lo < 2 || hi < lo || hi > maxQuerySize {
		return 0, 0, fmt.Errorf("%q: want LO-HI or N, query vertices with 2 <= LO <= HI <= %d", v, maxQuerySize)
	}
	return lo, hi, nil
}

// maxQuerySize bounds a sampled query: a walk keeps its vertices in a
// slice searched linearly, and the peers' queries have at most 32.
const maxQuerySize = 64

// EdgeList is an undirected simple graph read from an edge list, its
// vertices renumbered 0 to Vertices-1 in order of first appearance.
type EdgeList struct {
	// Edges holds each edge once, as (lower id, higher id), in the order
	// of its first line, with label 0.
	Edges    []graph.Edge
	Vertices int
	// SelfLoops and Duplicates count the lines dropped: a directed list
	// such as Wiki-Vote gives many edges in both directions.
	SelfLoops, Duplicates int
}

// ReadEdgeList reads a SNAP edge list (ingest.FormatSNAP: "u v" lines,
// '#' comments, "\r\n" or "\n" ends) as an undirected graph, dropping
// self-loops and edges seen before in either direction. A line that is not
// an insertion (a CSV with an op column) is an error naming it.
func ReadEdgeList(path string) (EdgeList, error) {
	r, c, err := ingest.Open(path, ingest.Options{Format: ingest.FormatSNAP})
	if err != nil {
		return EdgeList{}, err
	}
	defer c.Close()
	var el EdgeList
	ids := map[string]uint32{}
	seen := map[uint64]struct{}{}
	id := func(name string) uint32 {
		v, ok := ids[name]
		if !ok {
			v = uint32(len(ids))
			ids[name] = v
		}
		return v
	}
	// graph.VertexID is 32 bits.
	const maxVertices = math.MaxUint32 - 1
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return EdgeList{}, err
		}
		if rec.Op != graph.Insert {
			return EdgeList{}, fmt.Errorf("%s:%d: an edge list of a static graph has insertions only, got %v", path, rec.Line, rec.Op)
		}
		if rec.Src == rec.Dst {
			el.SelfLoops++
			continue
		}
		if len(ids) >= maxVertices {
			return EdgeList{}, fmt.Errorf("%s:%d: more than %d vertices", path, rec.Line, maxVertices)
		}
		u, v := id(rec.Src), id(rec.Dst)
		if u > v {
			u, v = v, u
		}
		key := uint64(u)<<32 | uint64(v)
		if _, dup := seen[key]; dup {
			el.Duplicates++
			continue
		}
		seen[key] = struct{}{}
		el.Edges = append(el.Edges, graph.Edge{Src: u, Dst: v})
	}
	el.Vertices = len(ids)
	if len(el.Edges) == 0 {
		return EdgeList{}, fmt.Errorf("%s: no edges", path)
	}
	return el, nil
}

// SuiteQuery is one query of a suite, as written.
type SuiteQuery struct {
	Name     string // Q_1, Q_2, ...
	Vertices int
	Edges    [][2]int // (lower, higher) query vertex pairs
	Labels   []uint32
	Cyclic   bool // more edges than a tree
}

// SuiteReport says what WriteSuite wrote.
type SuiteReport struct {
	Dir                   string
	Vertices, Edges       int // the full graph's
	SelfLoops, Duplicates int // edge list lines dropped
	Initial               int // edges of data.graph
	Inserts, Deletes      int // updates of stream.graph
	LabelCounts           []int
	Queries               []SuiteQuery
}

// Print writes the report for people.
func (r SuiteReport) Print(w io.Writer) {
	fmt.Fprintf(w, "graph: %d vertices, %d undirected edges (%d self-loops and %d duplicate lines dropped)\n",
		r.Vertices, r.Edges, r.SelfLoops, r.Duplicates)
	fmt.Fprintf(w, "labels (vertices per label): %v\n", r.LabelCounts)
	fmt.Fprintf(w, "%s: %d edges\n", filepath.Join(r.Dir, "data.graph"), r.Initial)
	fmt.Fprintf(w, "%s: %d insertions, %d deletions\n", filepath.Join(r.Dir, "stream.graph"), r.Inserts, r.Deletes)
	fmt.Fprintf(w, "%s:", filepath.Join(r.Dir, "query_graph"))
	for _, q := range r.Queries {
		kind := "tree"
		if q.Cyclic {
			kind = "cyclic"
		}
		fmt.Fprintf(w, " %s(%dv %de %s)", q.Name, q.Vertices, len(q.Edges), kind)
	}
	fmt.Fprintln(w)
}

// saltSuite separates the query walks of a suite from RandomWalkQuery's, so
// that the two never sample alike from one seed.
const saltSuite = 0x5375697465

// WriteSuite writes the suite s of el into dir, which must be new or empty:
// dir/data.graph (`t N M`, `v id label degree`, `e u v 0`),
// dir/stream.graph (`e u v 0` and `-e u v 0` lines) and
// dir/query_graph/Q_1..Q_n in CSM form. It is deterministic for s.
//
// Every vertex of el is in data.graph, with its degree there, even when
// the stream adds all its edges: RapidFlow labels the endpoints of a
// stream edge from the data graph's vertices, and a vertex it has not seen
// gets label 0. The queries are sampled from the full graph (initial and
// stream edges together) by random walks, so each has an embedding there;
// even-numbered ones (Q_2, Q_4, ...) keep some edges that close cycles,
// the others are trees, and the sizes take MinSize to MaxSize in turn.
func WriteSuite(dir string, el EdgeList, s Suite) (SuiteReport, error) {
	if err := s.Validate(); err != nil {
		return SuiteReport{}, err
	}
	if err := emptyDir(dir); err != nil {
		return SuiteReport{}, err
	}
	labeler := RMAT{VertexLabels: s.Labels, LabelSkew: s.LabelSkew, Seed: s.Seed}
	labels := make([]uint32, el.Vertices)
	rep := SuiteReport{Dir: dir, Vertices: el.Vertices, Edges: len(el.Edges), LabelCounts: make([]int, s.Labels),
		SelfLoops: el.SelfLoops, Duplicates: el.Duplicates}
	for v := range labels {
		labels[v] = labeler.VertexLabel(uint32(v))
		rep.LabelCounts[labels[v]]++
	}
	initial, stream := SplitStream(el.Edges, s.Fraction, s.Seed)
	rep.Initial = len(initial)
	for _, u := range stream {
		if u.Op == graph.Insert {
			rep.Inserts++
		} else {
			rep.Deletes++
		}
	}
	qs, err := sampleQueries(newAdjacency(el), labels, s)
	if err != nil {
		return SuiteReport{}, err
	}
	rep.Queries = qs
	if err := writeFile(filepath.Join(dir, "data.graph"), func(w *bufio.Writer) { writeDataGraph(w, labels, initial) }); err != nil {
		return SuiteReport{}, err
	}
	if err := writeFile(filepath.Join(dir, "stream.graph"), func(w *bufio.Writer) { writeStream(w, stream) }); err != nil {
		return SuiteReport{}, err
	}
	qdir := filepath.Join(dir, "query_graph")
	if err := os.Mkdir(qdir, 0o755); err != nil {
		return SuiteReport{}, err
	}
	for _, q := range qs {
		if err := writeFile(filepath.Join(qdir, q.Name), func(w *bufio.Writer) { writeQuery(w, q) }); err != nil {
			return SuiteReport{}, err
		}
	}
	return rep, nil
}

// emptyDir makes dir, or checks that it is empty: a suite written over an
// older one with more queries would leave that one's last queries behind.
func emptyDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if err != nil && err != io.EOF {
		return err
	}
	if len(names) > 0 {
		return fmt.Errorf("%s is not empty (it holds %s): write a suite into a new or empty directory", dir, names[0])
	}
	return nil
}

// adjacency is a graph in compressed sparse rows, for walks.
type adjacency struct {
	off []int
	adj []uint32
}

func newAdjacency(el EdgeList) adjacency {
	a := adjacency{off: make([]int, el.Vertices+1), adj: make([]uint32, 2*len(el.Edges))}
	for _, e := range el.Edges {
		a.off[e.Src+1]++
		a.off[e.Dst+1]++
	}
	for v := range el.Vertices {
		a.off[v+1] += a.off[v]
	}
	next := append([]int(nil), a.off[:el.Vertices]...)
	for _, e := range el.Edges {
		a.adj[next[e.Src]] = e.Dst
		next[e.Src]++
		a.adj[next[e.Dst]] = e.Src
		next[e.Dst]++
	}
	return a
}

func (a adjacency) neighbours(v uint32) []uint32 { return a.adj[a.off[v]:a.off[v+1]] }

// sampleQueries draws s.Queries queries by random walks on the full graph:
// trees for odd numbers, trees with extra edges for even ones.
func sampleQueries(a adjacency, labels []uint32, s Suite) ([]SuiteQuery, error) {
	rng := rand.New(rand.NewPCG(s.Seed, saltSuite))
	nv := len(labels)
	var qs []SuiteQuery
	for i := range s.Queries {
		q := SuiteQuery{Name: "Q_" + strconv.Itoa(i+1), Vertices: s.MinSize + i%(s.MaxSize-s.MinSize+1), Cyclic: i%2 == 1}
		if q.Vertices > nv {
			return nil, fmt.Errorf("bench: %s needs %d vertices, the graph has %d", q.Name, q.Vertices, nv)
		}
		found := false
		for range walkAttempts {
			vs, tree := walk(a.neighbours, nv, q.Vertices, rng)
			if len(vs) < q.Vertices {
				continue
			}
			q.Edges = tree
			if q.Cyclic {
				extra := induced(a.neighbours, vs, tree)
				if len(extra) == 0 {
					continue
				}
				// At most size/2+1 extra edges keep the average degree at
				// most 3, as RandomWalkQuery's sparse class does: the
				// peers' suites have few dense queries.
				rng.Shuffle(len(extra), func(i, j int) { extra[i], extra[j] = extra[j], extra[i] })
				q.Edges = append(tree, extra[:1+rng.IntN(min(len(extra), q.Vertices/2+1))]...)
			}
			q.Labels = make([]uint32, len(vs))
			for k, v := range vs {
				q.Labels[k] = labels[v]
			}
			found = true
			break
		}
		if !found {
			return nil, fmt.Errorf("bench: no connected query of %d vertices (cyclic: %v) in %d random walks", q.Vertices, q.Cyclic, walkAttempts)
		}
		qs = append(qs, q)
	}
	return qs, nil
}

// writeFile creates path and writes it through write, reporting the first
// error of writing, flushing or closing.
func writeFile(path string, write func(*bufio.Writer)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<16)
	write(w)
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return f.Close()
}

func writeDataGraph(w *bufio.Writer, labels []uint32, edges []graph.Edge) {
	deg := make([]int, len(labels))
	for _, e := range edges {
		deg[e.Src]++
		deg[e.Dst]++
	}
	fmt.Fprintf(w, "t %d %d\n", len(labels), len(edges))
	for v, l := range labels {
		fmt.Fprintf(w, "v %d %d %d\n", v, l, deg[v])
	}
	for _, e := range edges {
		fmt.Fprintf(w, "e %d %d 0\n", e.Src, e.Dst)
	}
}

func writeStream(w *bufio.Writer, stream []graph.Update) {
	for _, u := range stream {
		if u.Op == graph.Delete {
			w.WriteByte('-')
		}
		fmt.Fprintf(w, "e %d %d 0\n", u.Src, u.Dst)
	}
}

func writeQuery(w *bufio.Writer, q SuiteQuery) {
	deg := make([]int, q.Vertices)
	for _, e := range q.Edges {
		deg[e[0]]++
		deg[e[1]]++
	}
	fmt.Fprintf(w, "t %d %d\n", q.Vertices, len(q.Edges))
	for v, l := range q.Labels {
		fmt.Fprintf(w, "v %d %d %d\n", v, l, deg[v])
	}
	for _, e := range q.Edges {
		fmt.Fprintf(w, "e %d %d 0\n", e[0], e[1])
	}
}
