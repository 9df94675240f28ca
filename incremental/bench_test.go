package incremental

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/query"
)

// The benchmarks run on one R-MAT power-law graph of 2^16 vertices and 2^20
// distinct undirected edges with four skewed vertex labels, and a stream of
// 10% of its edges (docs/benchmarks.md, Workloads): half of them are left out of the initial
// graph and inserted by the stream, half are in it and deleted by the
// stream, interleaved. The graph is built once per process and shared by
// every sub-benchmark.
//
// A sub-benchmark's op is one batch: Apply, Match of one query in count mode
// on all cores, Reorganize. Batches walk the stream forward and, at its end,
// back through its inverse, so any b.N keeps the graph within the stream's
// span; every sub-benchmark starts from the initial graph. Imports point
// one way and bench imports incremental, so the generator is a small local
// one rather than bench.RMAT.
const (
	benchScale  = 16
	benchEdges  = 1 << 20
	benchStream = benchEdges / 10
)

// R-MAT quadrant probabilities (d = 0.11). Graph500's 0.57/0.19/0.19 makes
// hubs of 10k neighbours at this scale (sum of squared degrees 23 times a
// uniform graph's), where one unlabeled 4-cycle batch of 8192 updates took
// 170 s on 2 cores. These keep a power law with hubs of about 3k (the sum of
// squared degrees is 5 times a uniform graph's).
const benchA, benchB, benchC = 0.45, 0.22, 0.22

// Cycles of 4 and 5 vertices without labels stay expensive at this density
// whatever the skew: the walk enumerates every path of 3 edges from each
// update edge, and with 32 neighbours a vertex (more behind each hub) that
// is millions of paths per update. The sub-benchmarks whose one batch takes
// more than about 10 s on 2 cores run only with -heavy:
//
//	go test -run XXX -bench . ./incremental -heavy
var benchHeavy = flag.Bool("heavy", false, "also run the benchmarks that take minutes per batch on a few cores")

// benchLabelShare is the share of each vertex label: skewed, as in real
// labeled graphs.
var benchLabelShare = []float64{0.60, 0.25, 0.10, 0.05}

type benchFixture struct {
	g       *dyngraph.Graph
	dict    *graph.Dict
	stream  []graph.Update
	inverse []graph.Update // stream with every op flipped
	// The graph holds the initial graph plus stream[:pos]. Batches move
	// forward until pos reaches the end, then back, and so on.
	pos    int
	back   bool
	setup  time.Duration
	edges  int64
	maxDeg int
}

var (
	benchOnce sync.Once
	benchFix  *benchFixture
	benchErr  error
)

func benchSetup(b *testing.B) *benchFixture {
	b.Helper()
	benchOnce.Do(func() { benchFix, benchErr = newBenchFixture() })
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchFix
}

func newBenchFixture() (*benchFixture, error) {
	start := time.Now()
	r := rand.New(rand.NewPCG(2026, 11))
	f := &benchFixture{dict: graph.NewDict()}
	var labels [4]graph.Label
	for i := range labels {
		labels[i] = f.dict.Intern(fmt.Sprintf("L%d", i))
	}
	elabel := f.dict.Intern("e")
	const nv = 1 << benchScale

	// Vertices get scrambled ids, so that hubs (low R-MAT ids) spread over
	// the id space and over the labels.
	perm := r.Perm(nv)
	initial := make([]graph.Update, 0, nv+benchEdges)
	for v := range nv {
		p, l := r.Float64(), 0
		for l < len(benchLabelShare)-1 && p >= benchLabelShare[l] {
			p -= benchLabelShare[l]
			l++
		}
		initial = append(initial, graph.Update{Op: graph.AddVertex, Src: uint32(v), SrcLabel: labels[l]})
	}
	seen := make(map[uint64]struct{}, benchEdges)
	edges := make([][2]uint32, 0, benchEdges)
	for len(edges) < benchEdges {
		var s, d uint32
		for range benchScale {
			s, d = s<<1, d<<1
			switch p := r.Float64(); {
			case p < benchA:
			case p < benchA+benchB:
				d |= 1
			case p < benchA+benchB+benchC:
				s |= 1
			default:
				s, d = s|1, d|1
			}
		}
		s, d = uint32(perm[s]), uint32(perm[d])
		if s == d {
			continue
		}
		if s > d {
			s, d = d, s
		}
		k := uint64(s)<<32 | uint64(d)
		if _, dup := seen[k]; dup {
			continue
		}
		seen[k] = struct{}{}
		edges = append(edges, [2]uint32{s, d})
	}
	seen = nil

	// edges is in draw order, which is random: the first 5% are inserted by
	// the stream, the next 5% deleted by it.
	half := benchStream / 2
	for _, e := range edges[half:] {
		initial = append(initial, graph.Update{Op: graph.Insert, Src: e[0], Dst: e[1], Label: elabel, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
	}
	for i, e := range edges[:2*half] {
		op := graph.Insert
		if i >= half {
			op = graph.Delete
		}
		f.stream = append(f.stream, graph.Update{Op: op, Src: e[0], Dst: e[1], Label: elabel, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
	}
	r.Shuffle(len(f.stream), func(i, j int) { f.stream[i], f.stream[j] = f.stream[j], f.stream[i] })
	f.inverse = make([]graph.Update, len(f.stream))
	for i, u := range f.stream {
		u.Op = graph.Insert + graph.Delete - u.Op
		f.inverse[i] = u
	}

	g, err := dyngraph.New(dyngraph.Options{Alloc: hostmem.Mmap{}})
	if err != nil {
		return nil, err
	}
	rej, _, err := g.Build(initial)
	if err != nil || len(rej) > 0 {
		return nil, fmt.Errorf("loading the benchmark graph: %v, %d rejects", err, len(rej))
	}
	f.g, f.edges, f.maxDeg = g, g.NumEdges(), g.MaxDegree()
	f.setup = time.Since(start)
	return f, nil
}

// batch applies the next batch of up to size updates, forward or back, and
// returns its ΔE and its length.
func (f *benchFixture) batch(b *testing.B, size int) ([]graph.Change, int) {
	var u []graph.Update
	if !f.back {
		hi := min(f.pos+size, len(f.stream))
		u = f.stream[f.pos:hi]
		f.pos = hi
		f.back = hi == len(f.stream)
	} else {
		lo := max(f.pos-size, 0)
		u = f.inverse[lo:f.pos]
		f.pos = lo
		f.back = lo > 0
	}
	delta, rej, _, err := f.g.Apply(u)
	if err != nil || len(rej) > 0 {
		b.Fatalf("apply: %v, %d rejects", err, len(rej))
	}
	return delta, len(u)
}

// rewind takes the graph back to the initial one in one batch.
func (f *benchFixture) rewind(b *testing.B) {
	if f.pos > 0 {
		if _, rej, _, err := f.g.Apply(f.inverse[:f.pos]); err != nil || len(rej) > 0 {
			b.Fatalf("rewind: %v, %d rejects", err, len(rej))
		}
		f.g.Reorganize()
	}
	f.pos, f.back = 0, false
}

// warm runs one single-update batch through cpu, so that its walkers exist
// before the timer starts, and rewinds the graph.
func (f *benchFixture) warm(b *testing.B, cpu *CPU, qs []*query.Query) {
	f.rewind(b)
	delta, _ := f.batch(b, 1)
	if _, err := cpu.Match(f.g, delta, qs, Count, nil); err != nil {
		b.Fatal(err)
	}
	f.g.Reorganize()
	f.rewind(b)
}

type benchShape struct {
	name  string
	n     int
	edges [][2]int
	// heavy and heavyLabeled are the smallest batch sizes that need
	// -heavy, unlabeled and labeled; zero for none. Measured on 2 cores
	// (Intel Xeon, 2026-11): the unlabeled 4-cycle takes 0.4 s for a batch
	// of 64, the house 4 s, the 5-cycle 72 s; the labeled 5-cycle 4.5 s
	// for a batch of 1024. A batch costs about linearly in its size.
	heavy, heavyLabeled int
}

// The benchmark shapes (docs/benchmarks.md) up to 5 vertices.
var benchShapes = []benchShape{
	{"triangle", 3, [][2]int{{0, 1}, {1, 2}, {2, 0}}, 0, 0},
	{"4-cycle", 4, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}}, 8192, 0},
	{"diamond", 4, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 2}}, 0, 0},
	{"4-clique", 4, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 2}, {1, 3}}, 0, 0},
	{"house", 5, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 0}, {0, 4}, {4, 1}}, 1024, 0},
	{"5-cycle", 5, [][2]int{{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 0}}, 64, 8192},
}

// skipHeavy skips a sub-benchmark whose batches of size take minutes,
// unless -heavy is set.
func skipHeavy(b *testing.B, s benchShape, labeled bool, size int) {
	h := s.heavy
	if labeled {
		h = s.heavyLabeled
	}
	if h > 0 && size >= h && !*benchHeavy {
		b.Skipf("minutes per batch on a few cores; run with -heavy")
	}
}

// benchQueryLabels labels the vertices of the labeled variants: the common
// labels on most vertices, a rarer one on the third.
var benchQueryLabels = []string{"L0", "L1", "L2", "L0", "L1"}

func (f *benchFixture) query(b *testing.B, s benchShape, labeled bool) *query.Query {
	p := &query.Pattern{Name: s.name}
	for i := range s.n {
		v := query.Vertex{Name: fmt.Sprintf("v%d", i), Wildcard: true}
		if labeled {
			v.Label, v.Wildcard = benchQueryLabels[i], false
		}
		p.Vertices = append(p.Vertices, v)
	}
	for _, e := range s.edges {
		p.Edges = append(p.Edges, query.Edge{From: e[0], To: e[1], Wildcard: true})
	}
	q, err := query.Compile(p, f.dict, false, query.Embeddings)
	if err != nil {
		b.Fatal(err)
	}
	return q
}

// BenchmarkMatch measures Apply+Match+Reorganize per batch. Metrics:
// updates/s (stream updates, each a distinct edge that flips, over the time
// of the whole op) and matches/op (|ΔM+| + |ΔM-| per batch).
func BenchmarkMatch(b *testing.B) {
	f := benchSetup(b)
	b.Logf("graph: %d vertices, %d edges, max degree %d, stream %d updates; setup %v",
		1<<benchScale, f.edges, f.maxDeg, len(f.stream), f.setup.Round(time.Millisecond))
	for _, s := range benchShapes {
		for _, labeled := range []bool{false, true} {
			name := s.name
			if labeled {
				name += "-labeled"
			}
			q := f.query(b, s, labeled)
			qs := []*query.Query{q}
			for _, size := range []int{64, 1024, 8192} {
				b.Run(fmt.Sprintf("%s/batch=%d", name, size), func(b *testing.B) {
					skipHeavy(b, s, labeled, size)
					cpu := &CPU{}
					f.warm(b, cpu, qs)
					var updates int64
					var matches graph.Count
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						delta, n := f.batch(b, size)
						c, err := cpu.Match(f.g, delta, qs, Count, nil)
						if err != nil {
							b.Fatal(err)
						}
						f.g.Reorganize()
						updates += int64(n)
						matches = matches.Add(c[0].Positive).Add(c[0].Negative)
					}
					b.ReportMetric(float64(updates)/b.Elapsed().Seconds(), "updates/s")
					b.ReportMetric(matches.Float64()/float64(b.N), "matches/op")
				})
			}
		}
	}
}

// BenchmarkStatic measures the static matcher over the initial graph.
// Metrics: the matches (embeddings) found, and edges/s, the graph's edges
// over the time of one op. The unlabeled 4-cycle (billions of embeddings)
// needs -heavy; the unlabeled triangle takes 9 s on 2 cores.
func BenchmarkStatic(b *testing.B) {
	f := benchSetup(b)
	for _, s := range benchShapes[:2] {
		for _, labeled := range []bool{false, true} {
			name := s.name
			if labeled {
				name += "-labeled"
			}
			q := f.query(b, s, labeled)
			qs := []*query.Query{q}
			b.Run(name, func(b *testing.B) {
				if s.heavy > 0 && !labeled && !*benchHeavy {
					b.Skip("minutes on a few cores; run with -heavy")
				}
				f.rewind(b)
				cpu := &CPU{}
				var found graph.Count
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					c, err := cpu.Static(f.g, qs, Count, nil)
					if err != nil {
						b.Fatal(err)
					}
					found = c[0]
				}
				b.ReportMetric(found.Float64(), "matches")
				b.ReportMetric(float64(f.edges)*float64(b.N)/b.Elapsed().Seconds(), "edges/s")
			})
		}
	}
}
