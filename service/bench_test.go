package service

import (
	"context"
	"flag"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gcsm/gcsm/kernels"
)

var (
	benchUpdates  = flag.Int("service.updates", 200000, "updates in BenchmarkService's stream")
	benchAccounts = flag.Int("service.accounts", 100000, "accounts among which BenchmarkService's transfers flow")
	benchGPU      = flag.Bool("service.gpu", false, "run BenchmarkService on the GPU engine (device placement)")
)

// BenchmarkService measures the whole pipeline through an in-process Kafka
// cluster: a power-law transfer stream waits in the input topic, and the
// service consumes, matches and writes events for one query. It reports
// sustained updates/s (from the first batch's cut to the last batch's
// acknowledged output, so the group's join is not counted) and the p50 and
// p99 batch latency (cut to acknowledged output). Run with -benchtime=1x.
func BenchmarkService(b *testing.B) {
	for _, q := range []QueryConfig{
		{Name: "triangle", Pattern: "(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a)"},
		{Name: "diamond", Pattern: "(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(d:Account), (a)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(d)"},
	} {
		b.Run(q.Name, func(b *testing.B) {
			for range b.N {
				benchService(b, q)
			}
		})
	}
}

func benchService(b *testing.B, q QueryConfig) {
	b.StopTimer()
	addrs := cluster(b, 1, 1)
	_, vals := transferStreamAmong(*benchAccounts, *benchUpdates, 42)
	produce(b, addrs, "edges", vals)
	cfg := testConfig(b, addrs)
	cfg.Batch = BatchConfig{Size: 4096, Linger: 10 * time.Millisecond}
	cfg.State.CheckpointEvery = 10 * time.Second
	cfg.Queries = []QueryConfig{q}
	opts := Options{Config: cfg}
	if *benchGPU {
		x, err := kernels.Open(kernels.Options{Placement: kernels.Device})
		if err != nil {
			b.Fatal(err)
		}
		defer x.Close()
		opts.Matcher, opts.Alloc = x, x.Allocator()
	}
	var (
		mu           sync.Mutex
		lat          []time.Duration
		first, last  time.Time
		applied, evs int
	)
	opts.OnBatch = func(bi BatchInfo) {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if first.IsZero() {
			first = now.Add(-bi.Latency)
		}
		last = now
		lat = append(lat, bi.Latency)
		applied += bi.Messages
		evs += bi.Events
	}
	s, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	r := &running{s: s, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go func() { r.done <- s.Run(ctx) }()
	waitFor(b, "the stream", 10*time.Minute, func() bool { return s.Progress().Position[0] == int64(len(vals)) })
	b.StopTimer()
	r.shutdown(b)
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lat)
	secs := last.Sub(first).Seconds()
	b.ReportMetric(float64(applied)/secs, "updates/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(evs), "events")
	b.ReportMetric(float64(len(lat)), "batches")
}
