package service

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/kernels"
	"github.com/gcsm/gcsm/query"
)

// held is the run loop's side of incremental.Overlapper on a machine
// without a GPU: Begin matches on the CPU at once, but the matches reach
// the sink from another goroutine, while the run loop goes on with the
// next batch, as the GPU's launches do (kernels.GPU.Begin).
type held struct {
	incremental.CPU
	// overlapped counts the waits called after the graph had moved on to
	// a later batch: the overlaps that the test wants to see.
	overlapped atomic.Int64
}

func (h *held) Begin(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode incremental.Mode, sink incremental.Sink) func() ([]incremental.Counts, error) {
	type match struct {
		q    int
		sign graph.Sign
		m    []graph.VertexID
	}
	var (
		mu      sync.Mutex
		matches []match
	)
	counts, err := h.Match(g, delta, queries, mode, func(_, q int, sign graph.Sign, m []graph.VertexID) {
		mu.Lock()
		matches = append(matches, match{q, sign, slices.Clone(m)})
		mu.Unlock()
	})
	epoch := g.Epoch()
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(time.Millisecond)
		for _, m := range matches {
			sink(0, m.q, m.sign, m.m)
		}
	}()
	return func() ([]incremental.Counts, error) {
		<-done
		// The run loop calls wait, so reading the graph here is no race.
		if g.Epoch() > epoch {
			h.overlapped.Add(1)
		}
		return counts, err
	}
}

// TestOverlappedMatch runs the stream of TestEndToEnd through an executor
// whose matches finish while the next batch is applied: the events must be
// the replay's, in batch order, and the last batch's must come out although
// no batch follows it. The executor is the run loop's alone, or the GPU
// side of a Placer (--device auto), which begins it beside its CPU side.
// With -service.gpu it is the GPU executor in the device placement
// instead, whose Begin overlaps for real.
func TestOverlappedMatch(t *testing.T) {
	for _, placer := range []bool{false, true} {
		t.Run(fmt.Sprintf("placer=%v", placer), func(t *testing.T) { overlappedMatch(t, placer) })
	}
}

func overlappedMatch(t *testing.T, placer bool) {
	addrs, cfg, recs, vals := fullBatches(t, 24, 7)
	// No checkpoint completes the last batch: the run loop must, once no
	// batch follows it.
	cfg.State.CheckpointEvery = time.Hour
	out := consume(t, addrs, "matches", true)

	opts := Options{Config: cfg, Log: zerolog.New(io.Discard)}
	h := &held{CPU: incremental.CPU{Workers: 2}}
	var gpu incremental.Matcher = h
	if *benchGPU {
		x, err := kernels.Open(kernels.Options{Placement: kernels.Device})
		if err != nil {
			t.Fatal(err)
		}
		// After the service's shutdown, registered below: the graph lives
		// in the GPU's pinned memory until its last checkpoint is written.
		t.Cleanup(func() { x.Close() })
		gpu, opts.Alloc = x, x.Allocator()
	}
	opts.Matcher = gpu
	p := &incremental.Placer{CPU: &incremental.CPU{Workers: 2}, GPU: gpu, Explore: 2, CPUBelow: 1}
	if placer {
		opts.Matcher = p
	}
	r := startOpts(t, opts)

	waitFor(t, "the stream to be applied", time.Minute, func() bool { return r.s.Progress().Position[0] == int64(len(vals)) })
	waitFor(t, "the events to be read", time.Minute, func() bool { return int64(out.count()) == r.s.Progress().Events })
	events, _ := out.snapshot(t)
	got := make([]string, len(events))
	for i, ev := range events {
		got[i] = describe(ev)
		if i > 0 && ev.Batch < events[i-1].Batch {
			t.Fatalf("event %d of batch %d follows one of batch %d", i, ev.Batch, events[i-1].Batch)
		}
	}
	slices.Sort(got)
	if want := replayEvents(t, cfg, recs); !slices.Equal(got, want) {
		t.Fatalf("events differ from the replay's: got %d, want %d\nfirst got  %v\nfirst want %v", len(got), len(want), head(got), head(want))
	}
	if !*benchGPU && h.overlapped.Load() == 0 {
		t.Fatal("no match overlapped the next batch's apply")
	}
	t.Logf("%d events; %d of 24 batches overlapped", len(got), h.overlapped.Load())
}
