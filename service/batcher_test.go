package service

import (
	"slices"
	"testing"
	"time"

	"github.com/gcsm/gcsm/ingest"
)

// chunk is n messages of partition 0 from offset from on.
func chunk(from int64, n int) []ingest.Message {
	c := make([]ingest.Message, n)
	for i := range c {
		c[i] = ingest.Message{Offset: from + int64(i)}
	}
	return c
}

// TestBatcherChunks cuts batches from chunks that do not line up with
// them: a chunk that overfills a batch starts the next, none is lost or
// repeated, linger closes a short batch, and the input's end closes the
// last.
func TestBatcherChunks(t *testing.T) {
	in := make(chan []ingest.Message, 8)
	in <- chunk(0, 3)
	in <- chunk(3, 7)
	in <- chunk(10, 1)
	in <- chunk(11, 4)
	bt := newBatcher(in, 4, 20*time.Millisecond)
	done := make(chan struct{})
	var next int64
	check := func(batch []ingest.Message, want int) {
		t.Helper()
		if len(batch) != want {
			t.Fatalf("a batch of %d messages from offset %d, want %d", len(batch), next, want)
		}
		for _, m := range batch {
			if m.Offset != next {
				t.Fatalf("offset %d, want %d", m.Offset, next)
			}
			next++
		}
	}
	var buf []ingest.Message
	for range 3 {
		var more bool
		buf, more = bt.next(buf, done)
		if !more {
			t.Fatal("the stream ended early")
		}
		check(buf, 4)
	}
	// Offsets 12-14 are left: a short batch, closed by linger.
	start := time.Now()
	buf, more := bt.next(buf, done)
	check(buf, 3)
	if !more || time.Since(start) < 20*time.Millisecond {
		t.Fatalf("a short batch closed after %v (more %v), want linger's 20ms", time.Since(start), more)
	}
	in <- chunk(15, 2)
	close(in)
	buf, more = bt.next(buf, done)
	check(buf, 2)
	if more {
		t.Fatal("the stream goes on after its input closed")
	}
}

// TestBatcherDone: waiting for a batch's first message ends when done is
// closed.
func TestBatcherDone(t *testing.T) {
	bt := newBatcher(make(chan []ingest.Message), 4, time.Hour)
	done := make(chan struct{})
	close(done)
	if buf, more := bt.next(nil, done); len(buf) != 0 || more {
		t.Fatalf("next = %d messages, more %v; want none, false", len(buf), more)
	}
}

// TestNewBatchStateRanges: a batch's offset range per partition covers
// every message of it, whether its messages come in one run or several.
func TestNewBatchStateRanges(t *testing.T) {
	msgs := []ingest.Message{{Partition: 1, Offset: 7}, {Partition: 1, Offset: 8}, {Partition: 0, Offset: 3},
		{Partition: 1, Offset: 9}, {Partition: 2, Offset: 5}, {Partition: 0, Offset: 4}, {Partition: 0, Offset: 5}}
	b := newBatchState(&buffers{msgs: msgs})
	want := map[int][2]int64{0: {3, 5}, 1: {7, 9}, 2: {5, 5}}
	if len(b.ranges) != len(want) {
		t.Fatalf("ranges %v, want %v", b.ranges, want)
	}
	for p, r := range want {
		if b.ranges[p] != r {
			t.Fatalf("ranges %v, want %v", b.ranges, want)
		}
	}
}

// TestLag sums each partition's lag as of its last message in the batch.
func TestLag(t *testing.T) {
	msgs := []ingest.Message{{Partition: 0, Offset: 3, HighWaterMark: 10}, {Partition: 1, Offset: 7, HighWaterMark: 20},
		{Partition: 0, Offset: 4, HighWaterMark: 12}, {Partition: 1, Offset: 8, HighWaterMark: 20}, {Partition: 1, Offset: 9, HighWaterMark: 20}}
	// Partition 0: 12-4-1 = 7; partition 1: 20-9-1 = 10.
	if got := lag(msgs); got != 17 {
		t.Fatalf("lag = %d, want 17", got)
	}
	if got := lag(nil); got != 0 {
		t.Fatalf("lag of no messages = %d, want 0", got)
	}
}

// TestBatcherUpTo re-forms logged batches over two partitions whose
// chunks straddle them: each batch takes exactly the messages below its
// ends, waits for the ones not read yet, and leaves the rest, in order, to
// the next batch, logged or cut.
func TestBatcherUpTo(t *testing.T) {
	part := func(p int, from int64, n int) []ingest.Message {
		c := chunk(from, n)
		for i := range c {
			c[i].Partition = p
		}
		return c
	}
	in := make(chan []ingest.Message, 8)
	in <- part(0, 0, 5)
	in <- part(1, 10, 3)
	bt := newBatcher(in, 100, time.Millisecond)
	done := make(chan struct{})
	offsets := func(batch []ingest.Message) [][2]int64 {
		var o [][2]int64
		for _, m := range batch {
			o = append(o, [2]int64{int64(m.Partition), m.Offset})
		}
		return o
	}
	// Partition 1 must reach 14, which is not read yet.
	got := make(chan []ingest.Message)
	go func() {
		b, _ := bt.upTo(nil, map[int]int64{0: 0, 1: 10}, map[int]int64{0: 2, 1: 14}, done)
		got <- b
	}()
	select {
	case b := <-got:
		t.Fatalf("a batch %v before partition 1 reached its end", offsets(b))
	case <-time.After(20 * time.Millisecond):
	}
	in <- part(1, 13, 2)
	b := <-got
	want := [][2]int64{{0, 0}, {0, 1}, {1, 10}, {1, 11}, {1, 12}, {1, 13}}
	if g := offsets(b); !slices.Equal(g, want) {
		t.Fatalf("first batch %v, want %v", g, want)
	}
	// The second takes nothing of partition 1, whose 14 waits.
	b, ok := bt.upTo(nil, map[int]int64{0: 2, 1: 14}, map[int]int64{0: 4, 1: 14}, done)
	if want := [][2]int64{{0, 2}, {0, 3}}; !ok || !slices.Equal(offsets(b), want) {
		t.Fatalf("second batch %v, %v, want %v", offsets(b), ok, want)
	}
	// Past the log, the batcher cuts the rest as it arrived.
	close(in)
	b, _ = bt.next(nil, done)
	if want := [][2]int64{{0, 4}, {1, 14}}; !slices.Equal(offsets(b), want) {
		t.Fatalf("cut after the log %v, want %v", offsets(b), want)
	}
}

// TestBatcherUpToGone: a logged batch whose records retention removed is
// whole, and empty, once a record past its end arrives, which stays for
// the next batch.
func TestBatcherUpToGone(t *testing.T) {
	in := make(chan []ingest.Message, 1)
	in <- chunk(6, 2)
	bt := newBatcher(in, 100, time.Millisecond)
	b, ok := bt.upTo(nil, map[int]int64{0: 0}, map[int]int64{0: 4}, make(chan struct{}))
	if !ok || len(b) != 0 {
		t.Fatalf("upTo over removed records: %d messages, %v", len(b), ok)
	}
	close(in)
	if b, _ = bt.next(nil, make(chan struct{})); len(b) != 2 || b[0].Offset != 6 {
		t.Fatalf("next batch %v", b)
	}
}
