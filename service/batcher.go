package service

import (
	"time"

	"github.com/gcsm/gcsm/ingest"
)

// batcher cuts the message stream into batches: a batch closes when it
// holds size messages or linger has passed since its first message. A busy
// stream fills batches to size, which is where the engine is fastest; a
// quiet one still sees each event within linger. Messages arrive in
// chunks (ingest.Generation.Read); a chunk that overfills a batch starts
// the next one.
type batcher struct {
	in      <-chan []ingest.Message
	pending []ingest.Message // the rest of the last chunk received
	size    int
	linger  time.Duration
	timer   *time.Timer
}

func newBatcher(in <-chan []ingest.Message, size int, linger time.Duration) *batcher {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &batcher{in: in, size: size, linger: linger, timer: t}
}

// next appends the next batch to buf[:0] and returns it, and whether the
// stream goes on. It waits for a batch's first message until done is
// closed, and then returns an empty batch and false.
func (b *batcher) next(buf []ingest.Message, done <-chan struct{}) ([]ingest.Message, bool) {
	buf = buf[:0]
	for len(b.pending) == 0 {
		select {
		case c, ok := <-b.in:
			if !ok {
				return buf, false
			}
			b.pending = c
		case <-done:
			return buf, false
		}
	}
	b.timer.Reset(b.linger)
	defer b.timer.Stop()
	for {
		k := min(len(b.pending), b.size-len(buf))
		buf = append(buf, b.pending[:k]...)
		b.pending = b.pending[k:]
		if len(buf) == b.size {
			return buf, true
		}
		// Take what is already there without touching the timer: a backlog
		// fills a batch at channel speed.
		select {
		case c, ok := <-b.in:
			if !ok {
				return buf, false
			}
			b.pending = c
			continue
		default:
		}
		select {
		case c, ok := <-b.in:
			if !ok {
				return buf, false
			}
			b.pending = c
		case <-b.timer.C:
			return buf, true
		}
	}
}

// upTo appends to buf[:0] the batch from the position from to ends, as a
// previous run logged it, and returns it once it is whole: the messages of
// each partition below its end, in the order they arrive. Messages past a
// partition's end, or of a partition the batch does not take, stay for the
// next batches. It returns nothing and false if the stream ends, or done is
// closed, before the batch is whole.
func (b *batcher) upTo(buf []ingest.Message, from, ends map[int]int64, done <-chan struct{}) ([]ingest.Message, bool) {
	buf = buf[:0]
	var rest []ingest.Message
	// reached is, per partition, the offset after the last message seen:
	// the batch is whole once every partition has reached its end. A
	// partition whose records below the end are gone (retention) reaches
	// it with the first record past them.
	reached := map[int]int64{}
	take := func(chunk []ingest.Message) {
		for _, m := range chunk {
			if m.Offset < ends[m.Partition] {
				buf = append(buf, m)
			} else {
				rest = append(rest, m)
			}
			reached[m.Partition] = max(reached[m.Partition], m.Offset+1)
		}
	}
	whole := func() bool {
		for p, e := range ends {
			if e > from[p] && reached[p] < e {
				return false
			}
		}
		return true
	}
	take(b.pending)
	b.pending = nil
	for !whole() {
		select {
		case c, ok := <-b.in:
			if !ok {
				return buf[:0], false
			}
			take(c)
		case <-done:
			return buf[:0], false
		}
	}
	b.pending = rest
	return buf, true
}
