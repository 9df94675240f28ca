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
	buf    []ingest.Message
	timer  *time.Timer
}

func newBatcher(in <-chan ingest.Message, size int, linger time.Duration) *batcher {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &batcher{in: in, size: size, linger: linger, buf: make([]ingest.Message, 0, size), timer: t}
}

// next returns the next batch (valid until the following call) and whether
// the stream goes on. While it waits it runs the HTTP API's operations, so
// they never wait longer than one batch. A tick while no batch has started
// returns an empty batch, so a quiet stream still gets its checkpoint.
func (b *batcher) next(ops <-chan op, run func(op), tick <-chan time.Time) ([]ingest.Message, bool) {
	b.buf = b.buf[:0]
	for len(b.buf) == 0 {
		select {
		case m, ok := <-b.in:
			if !ok {
				return b.buf, false
			}
			b.buf = append(b.buf, m)
		case o := <-ops:
			run(o)
		case <-tick:
			return b.buf, true
		}
	}
	b.timer.Reset(b.linger)
	defer b.timer.Stop()
	for len(b.buf) < b.size {
		// Take what is already there without touching the timer: a backlog
		// fills a batch at channel speed.
		select {
		case m, ok := <-b.in:
			if !ok {
				return b.buf, false
			}
			b.buf = append(b.buf, m)
			continue
		default:
		}
		select {
		case m, ok := <-b.in:
			if !ok {
				return b.buf, false
			}
			b.buf = append(b.buf, m)
		case <-b.timer.C:
			return b.buf, true
		}
	}
	return b.buf, true
}
