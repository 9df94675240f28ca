package service

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/gcsm/gcsm/incremental"
)

// TestPlacerService runs the service on a Placer whose two devices are CPU
// executors: its events equal the replay's on one CPU, and
// query_batches_total shows each query on both devices (the Placer measures
// each query alone on each), summing to the batches matched.
func TestPlacerService(t *testing.T) {
	addrs := cluster(t, 1, 1)
	cfg := testConfig(t, addrs)
	recs, vals := transferStream(12*cfg.Batch.Size, 5)
	produce(t, addrs, "edges", vals)
	cfg.Batch.Linger = 10 * time.Second // every batch fills to Size, as the replay's do
	out := consume(t, addrs, "matches", true)
	reg := prometheus.NewRegistry()
	p := &incremental.Placer{CPU: &incremental.CPU{Workers: 2}, GPU: &incremental.CPU{Workers: 3}, Explore: 2}
	s, err := New(Options{Config: cfg, Log: zerolog.New(io.Discard), Matcher: p, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	}()
	waitFor(t, "the stream to be applied", time.Minute, func() bool { return s.Progress().Position[0] == int64(len(vals)) })
	waitFor(t, "the events to be read", time.Minute, func() bool { return int64(out.count()) == s.Progress().Events })
	events, _ := out.snapshot(t)
	got := make([]string, len(events))
	for i, ev := range events {
		got[i] = describe(ev)
	}
	slices.Sort(got)
	if want := replayEvents(t, cfg, recs); !slices.Equal(got, want) {
		t.Fatalf("events on the placer differ from the replay's: got %d, want %d", len(got), len(want))
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "gcsm_query_batches_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var q, d string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "query":
					q = l.GetValue()
				case "device":
					d = l.GetValue()
				}
			}
			if ran[q] == nil {
				ran[q] = map[string]float64{}
			}
			ran[q][d] += m.GetCounter().GetValue()
		}
	}
	for _, qc := range cfg.Queries {
		r := ran[qc.Name]
		if r["cpu"] == 0 || r["gpu"] == 0 || r["cpu"]+r["gpu"] != 12 {
			t.Errorf("query %s: query_batches_total %v, want both devices, 12 batches in all", qc.Name, r)
		}
	}
	// GET /queries names the device of each query's last batch.
	s.mu.Lock()
	infos := slices.Clone(s.infos)
	s.mu.Unlock()
	for _, qi := range infos {
		if qi.Device != "cpu" && qi.Device != "gpu" {
			t.Errorf("query %s: device %q in /queries", qi.Name, qi.Device)
		}
	}
}
