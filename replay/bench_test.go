package replay

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gcsm/gcsm/incremental"
)

// humanDir is csm_human_hybridflow of ../shared/datasets beside the checkout.
const humanDir = "../../shared/datasets/csm_human_hybridflow"

// BenchmarkHumanOneQuery is what one peer-style process of bench/rapidflow.sh
// spends in gcsm's own code on a cheap query: reading the data graph and
// the stream, and replaying the stream one update at a time on one worker.
// Process start is left out.
func BenchmarkHumanOneQuery(b *testing.B) {
	if _, err := os.Stat(humanDir); err != nil {
		b.Skip("no ../shared/datasets")
	}
	for _, q := range []string{"Q_34", "Q_20"} {
		b.Run(q, func(b *testing.B) {
			var load, run time.Duration
			for b.Loop() {
				t0 := time.Now()
				s, err := Open(Config{Cmd: "bench", Warn: io.Discard, Queries: []string{filepath.Join(humanDir, "query_graph", q)}})
				if err != nil {
					b.Fatal(err)
				}
				if err := s.LoadGraph(filepath.Join(humanDir, "data.graph")); err != nil {
					b.Fatal(err)
				}
				st, err := s.Read(filepath.Join(humanDir, "insertion.graph"))
				if err != nil {
					b.Fatal(err)
				}
				qs, err := s.Compile("the files")
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				r := &Replayer{Session: s, Stream: st, Queries: qs, Matcher: &incremental.CPU{Workers: 1}, Batch: 1, CountOnly: true}
				if _, err := r.Run(context.Background(), nil); err != nil {
					b.Fatal(err)
				}
				run += time.Since(t1)
				load += t1.Sub(t0)
				s.Close()
			}
			// The two halves apart: loading is the same for every query.
			b.ReportMetric(float64(load.Milliseconds())/float64(b.N), "load-ms/op")
			b.ReportMetric(float64(run.Microseconds())/1e3/float64(b.N), "stream-ms/op")
		})
	}
}

// BenchmarkLoadHuman is the load alone of BenchmarkHumanOneQuery: opening
// a session, building the human data graph and reading its insertion
// stream, without a query.
func BenchmarkLoadHuman(b *testing.B) {
	if _, err := os.Stat(humanDir); err != nil {
		b.Skip("no ../shared/datasets")
	}
	b.ReportAllocs()
	for b.Loop() {
		s, err := Open(Config{Cmd: "bench", Warn: io.Discard})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.LoadGraph(filepath.Join(humanDir, "data.graph")); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Read(filepath.Join(humanDir, "insertion.graph")); err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}
