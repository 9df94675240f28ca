package service

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/output"
)

// eventFixture returns a service with testConfig's queries registered, and per query matches of
// distinct accounts whose first edge a one-message batch changed, so that each event has a source.
func eventFixture(tb testing.TB, matches int) (*Service, *batchState, map[string][][]graph.VertexID) {
	cfg := testConfig(tb, []string{"127.0.0.1:1"}) // New does not connect
	s, err := New(Options{Config: cfg})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.close)
	if err := s.registerConfigured(context.Background()); err != nil {
		tb.Fatal(err)
	}
	batch := &batchState{
		msgs:      []ingest.Message{{Partition: 0, Offset: 100}},
		msgTime:   []int64{1764000000000},
		ranges:    map[int][2]int64{0: {100, 4195}},
		changedBy: map[edgeKey]int{},
	}
	all := map[string][][]graph.VertexID{}
	for _, st := range s.queries {
		n := st.q.N()
		for i := range matches {
			m := make([]graph.VertexID, n)
			for j := range m {
				// Reversed name order, so that the canonical order is not the engine's.
				if m[j], _, err = s.core.IDs().Intern(fmt.Sprintf("%s:%d", st.cfg.Name, i*n+n-j)); err != nil {
					tb.Fatal(err)
				}
			}
			e := st.q.Edges[0]
			batch.changedBy[s.key(graph.Edge{Src: m[e.A], Dst: m[e.B], Label: e.Label})] = 0
			all[st.cfg.Name] = append(all[st.cfg.Name], m)
		}
	}
	return s, batch, all
}

// eventBuilderFor returns the builder of batch's events, as build makes it on the delivery stage.
func eventBuilderFor(s *Service, batch *batchState) *eventBuilder {
	mt := &matched{queries: s.queries, batch: s.batch, parts: make([]int32, len(batch.msgs)), names: s.core.IDs()}
	for i, m := range batch.msgs {
		mt.parts[i] = int32(m.Partition)
	}
	return newEventBuilder(s, batch, mt)
}

// TestEventAllocs bounds the allocations of building one event: the key alone, once the batch's
// source message has its event time formatted; the bindings come from the batch's slab, the edges are the query's.
func TestEventAllocs(t *testing.T) {
	s, batch, all := eventFixture(t, 1)
	eb := eventBuilderFor(s, batch)
	for _, st := range s.queries {
		m := all[st.cfg.Name][0]
		var ev output.Event
		match := make([]output.Binding, st.q.N())
		if n := testing.AllocsPerRun(100, func() { eb.event(&ev, st, ref{m: m}, match, false) }); n > 1 {
			t.Errorf("%s: an event costs %v allocations, want at most 1", st.cfg.Name, n)
		}
		if ev.Source == nil || ev.EventTime == "" || ev.Key == "" {
			t.Errorf("%s: event %+v lacks its source, time or key", st.cfg.Name, ev)
		}
	}
}

// BenchmarkEvent measures building one match event on the service side, the step before a sink encodes
// it: the vertices' names, the canonical order among automorphisms, the edges, the source offsets, the
// event time and the key. ns/op is per event; ring3 has 3 automorphisms to compare, split 2.
func BenchmarkEvent(b *testing.B) {
	const matches = 4096
	s, batch, all := eventFixture(b, matches)
	eb := eventBuilderFor(s, batch)
	for _, st := range s.queries {
		b.Run(st.cfg.Name, func(b *testing.B) {
			ms := all[st.cfg.Name]
			var ev output.Event
			match := make([]output.Binding, st.q.N())
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				eb.event(&ev, st, ref{m: ms[i%matches]}, match, false)
				if ev.Source == nil {
					b.Fatal("event without its source")
				}
				i++
			}
		})
	}
}

// TestFormatTime checks formatTime against time.Format over the edges of its hand-written range and
// random instants.
func TestFormatTime(t *testing.T) {
	ms := []int64{0, -1, 1, 999, 1000, 1764000000000, 951782400000 /* 2000-02-29 */, math.MinInt64, math.MaxInt64,
		time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC).UnixMilli(),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(),
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli(),
		time.Date(-1, 12, 31, 23, 59, 59, 999e6, time.UTC).UnixMilli(),
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		ms = append(ms, r.Int64N(400000000000000)-200000000000000, int64(r.Uint64()))
	}
	for _, m := range ms {
		checkFormatTime(t, m)
	}
}

func FuzzFormatTime(f *testing.F) {
	f.Add(int64(1764000000000))
	f.Add(int64(-1))
	f.Fuzz(checkFormatTime)
}

func checkFormatTime(t *testing.T, ms int64) {
	if got, want := formatTime(ms), time.UnixMilli(ms).UTC().Format(rfc3339Milli); got != want {
		t.Fatalf("formatTime(%d) = %s, want %s", ms, got, want)
	}
}

func BenchmarkFormatTime(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		formatTime(1764000000123)
	}
}

// TestSortRefs checks the parallel sort against a plain one in the events' order (query, disappeared
// before appeared, vertex ids), for worker counts that leave odd chunks and odd merge rounds.
func TestSortRefs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 4095, 4096, 10007} {
		var want []ref
		for range n {
			q := r.IntN(3)
			sign := graph.Sign(1)
			if r.IntN(2) == 0 {
				sign = -1
			}
			m := make([]graph.VertexID, 2+q)
			for j := range m {
				// Few ids, so that prefixes tie, of several bytes each, so that the radix sort takes several passes.
				m[j] = graph.VertexID(r.IntN(5)) * 0x1020_3010
			}
			want = append(want, newRef(found{q: q, sign: sign}, m, nil, nil))
		}
		plain := func(x, y ref) int {
			if x.q() != y.q() {
				return x.q() - y.q()
			}
			xs, ys := x.pre>>32&1, y.pre>>32&1
			if xs != ys {
				return int(xs) - int(ys)
			}
			return slices.Compare(x.m, y.m)
		}
		// radixRefs takes matches of up to three vertices only.
		var upTo3 []ref
		for _, r := range want {
			if len(r.m) <= 3 {
				upTo3 = append(upTo3, r)
			}
		}
		got := radixRefs(slices.Clone(upTo3))
		slices.SortStableFunc(upTo3, plain)
		for i := range got {
			if plain(got[i], upTo3[i]) != 0 {
				t.Fatalf("n %d, radix: ref %d is %v, want %v", n, i, got[i], upTo3[i])
			}
		}
		for _, workers := range []int{1, 2, 3, 7, 16} {
			got := sortRefs(slices.Clone(want), workers)
			slices.SortStableFunc(want, plain)
			if len(got) != len(want) {
				t.Fatalf("n %d, %d workers: %d refs out", n, workers, len(got))
			}
			for i := range got {
				if plain(got[i], want[i]) != 0 {
					t.Fatalf("n %d, %d workers: ref %d is %v, want %v", n, workers, i, got[i], want[i])
				}
			}
		}
	}
}

// TestBuildOrder hands the build stage matches of every query and both signs, spread over worker
// buffers in no order, more than one chunk of the parallel sort, and checks that the events come out one
// per match in the events' order (query, disappeared before appeared, vertex ids), each the event
// that match makes alone.
func TestBuildOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	// All of testConfig's queries sort by comparison (split has four vertices); ring3 alone, by radix.
	t.Run("all", func(t *testing.T) { testBuildOrder(t, 0) })
	t.Run("ring3", func(t *testing.T) { testBuildOrder(t, 1) })
}

func testBuildOrder(t *testing.T, queries int) {
	s, batch, all := eventFixture(t, 2500)
	if queries > 0 {
		s.queries = s.queries[:queries]
	}
	c := newCollector(s.queries)
	type match struct {
		q    int
		sign graph.Sign
		m    []graph.VertexID
	}
	var want []match
	r := rand.New(rand.NewPCG(5, 6))
	for qi, st := range s.queries {
		for i, m := range all[st.cfg.Name] {
			// Some matches disappear, some appear, some both: the two signs' sets differ.
			switch i % 3 {
			case 0:
				want = append(want, match{qi, -1, m})
			case 1:
				want = append(want, match{qi, 1, m})
			default:
				want = append(want, match{qi, 1, m}, match{qi, -1, m})
			}
		}
	}
	r.Shuffle(len(want), func(i, j int) { want[i], want[j] = want[j], want[i] })
	for _, w := range want {
		c.sink(r.IntN(5), w.q, w.sign, w.m)
	}
	s.events(batch, c)
	s.build(batch)

	slices.SortFunc(want, func(x, y match) int {
		if x.q != y.q {
			return x.q - y.q
		}
		if x.sign != y.sign {
			return int(x.sign) - int(y.sign)
		}
		return slices.Compare(x.m, y.m)
	})
	if len(batch.events) != len(want) {
		t.Fatalf("%d events from %d matches", len(batch.events), len(want))
	}
	eb := eventBuilderFor(s, batch)
	for i, w := range want {
		st := s.queries[w.q]
		var ev output.Event
		eb.event(&ev, st, ref{m: w.m}, make([]output.Binding, st.q.N()), w.sign < 0)
		got := batch.events[i]
		if string(output.AppendJSON(nil, &got)) != string(output.AppendJSON(nil, &ev)) {
			t.Fatalf("event %d is\n%s\nwant\n%s", i, output.AppendJSON(nil, &got), output.AppendJSON(nil, &ev))
		}
	}
}

// BenchmarkBuild measures the build stage on a batch of 4,096 matches of each query, collected over
// four worker buffers: gathering, the parallel sort and building the events on all cores. ns/event is
// the wall time per event; the run loop's part of it is only the collector's hand-off.
func BenchmarkBuild(b *testing.B) {
	s, batch, all := eventFixture(b, 4096)
	type match struct {
		q int
		m []graph.VertexID
	}
	var ms []match
	for qi, st := range s.queries {
		for _, m := range all[st.cfg.Name] {
			ms = append(ms, match{qi, m})
		}
	}
	rand.New(rand.NewPCG(7, 8)).Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	b.ReportAllocs()
	for b.Loop() {
		c := newCollector(s.queries)
		for i, m := range ms {
			c.sink(i%4, m.q, 1, m.m)
		}
		batch.events = nil
		s.events(batch, c)
		s.build(batch)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ms)), "ns/event")
}
