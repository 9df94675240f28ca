package service

import (
	"time"

	"github.com/gcsm/gcsm/ingest"
)

// batcher cuts the message stream into batches: a batch closes when it
// holds size messages or linger has passed since its first message. A busy
// stream fills batches to size, which is where the engine is fastest; a
// quiet one still sees each event within linger.
type batcher struct {
	in     <-chan ingest.Message
	size   int
	linger time.Duration
	timer  *time.Timer
}

func newBatcher(in <-chan ingest.Message, size int, linger time.Duration) *batcher {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &batcher{in: in, size: size, linger: linger, timer: t}
}

// next appends the next batch to buf[:0] and returns it, and whether the
// stream goes on. It waits for a batch's first message until done is
// closed, and then returns an empty batch and false.
func (b *batcher) next(buf []ingest.Message, done <-chan struct{}) ([]ingest.Message, bool) {
	buf = buf[:0]
	select {
	case m, ok := <-b.in:
		if !ok {
			return buf, false
		}
		buf = append(buf, m)
	case <-done:
		return buf, false
	}
	b.timer.Reset(b.linger)
	defer b.timer.Stop()
	for len(buf) < b.size {
		// Take what is already there without touching the timer: a backlog
		// fills a batch at channel speed.
		select {
		case m, ok := <-b.in:
			if !ok {
				return buf, false
			}
			buf = append(buf, m)
			continue
		default:
		}
		select {
		case m, ok := <-b.in:
			if !ok {
				return buf, false
			}
			buf = append(buf, m)
		case <-b.timer.C:
			return buf, true
		}
	}
	return buf, true
}
