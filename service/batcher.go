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
