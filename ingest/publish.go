package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/internal/kafkaconn"
)

// publishChunk is the most events handed to the writer at once. The writer
// is synchronous, so one chunk is in flight at a time and its buffers are
// reused; 4096 events like the documented input event are about 600 KiB, under the
// 1 MiB a request may carry per partition, and enough that a round trip
// per chunk does not bound the rate.
const publishChunk = 4096

// publishLinger is the client's linger: how long it waits for a
// partition's batch to fill before sending it anyway. Every chunk ends in
// part-filled batches, so it is paid once per chunk and must stay small.
const publishLinger = 2 * time.Millisecond

// publishGiveUp is how long a record may wait for its acknowledgement: a
// leader election rides through, a cluster gone for good fails the run.
const publishGiveUp = 15 * time.Second

// NewPublisher is a Publisher to topic through conn, at rate events per
// second (0: as fast as the brokers take them), from the file's event skip
// on; progress, if not nil, is told of the events acknowledged so far.
func NewPublisher(conn kafkaconn.Conn, topic string, rate float64, skip int, progress func(sent int)) (*Publisher, error) {
	cl, err := conn.NewClient(
		kgo.DefaultProduceTopic(topic),
		// Keys are source vertices: one vertex's edges go to one partition
		// and keep their order there. The sticky key partitioner hashes
		// keys by murmur2, the Java client's default, so other producers of
		// the topic place a vertex alike.
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)),
		kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(publishLinger),
		kgo.MaxBufferedRecords(2*publishChunk),
		// A lost cluster fails the run, with the resume command, instead
		// of waiting for ever: ten tries, and at most publishGiveUp.
		kgo.RecordRetries(10),
		kgo.RecordDeliveryTimeout(publishGiveUp),
	)
	if err != nil {
		return nil, err
	}
	return &Publisher{cl: cl, closeClient: sync.OnceFunc(cl.Close), rate: rate, skip: skip, progress: progress}, nil
}

// Close closes the client, failing any record still out.
func (p *Publisher) Close() { p.closeClient() }

// Acked says how far a failed Publish got: the events after the skipped
// ones acknowledged (a prefix of the file), the file line of the last of
// them (0 if unknown), and how many events of the failed chunk after its
// first failure were acknowledged all the same.
func (p *Publisher) Acked() (sent, lastLine, ackedAfter int) {
	return p.sent, p.lastLine, p.ackedAfter
}

// Publisher publishes a stream file's records to a topic as JSON input
// events, in chunks, each acknowledged before the next.
type Publisher struct {
	cl          *kgo.Client
	closeClient func()         // closes cl once
	rate        float64        // events per second; 0 for no pacing
	skip        int            // events at the start of the file not to publish
	progress    func(sent int) // told of the events acknowledged so far

	recs  []*kgo.Record
	buf   []byte // every key and value of the chunk in msgs
	ends  []int  // the end in buf of each message's key, then of its value
	lines []int  // the file line of each message of the chunk
	sent  int    // events after the skipped ones acknowledged, all of them before the chunk

	// Set by a failed flush: the last acknowledged event's line, and how
	// many events of the failed chunk after its first failure were
	// acknowledged all the same.
	lastLine, ackedAfter int
}

// Publish reads the file at path and publishes each record after the first
// p.skip. It returns the number acknowledged, which on an error is the
// length of the acknowledged prefix, and the number of bad lines skipped.
func (p *Publisher) Publish(ctx context.Context, path string, opts Options) (n, skipped int, err error) {
	r, c, err := Open(path, opts)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	chunk := publishChunk
	if p.rate > 0 {
		// A hundred chunks a second keep the pace even, without a write
		// per event at high rates.
		chunk = int(min(max(p.rate/100, 1), publishChunk))
	}
	start := time.Now()
	for seen := 0; ; {
		rec, err := r.Next()
		if err != nil && !errors.Is(err, io.EOF) {
			return p.sent, r.Skipped(), err
		}
		if err == nil {
			if seen++; seen <= p.skip {
				continue
			}
			p.add(rec)
		}
		if len(p.ends)/2 == chunk || errors.Is(err, io.EOF) && len(p.ends) > 0 {
			if p.rate > 0 {
				// The chunk is due when the events before it have had their
				// share of time.
				due := start.Add(time.Duration(float64(p.sent) / p.rate * float64(time.Second)))
				if err := p.waitUntil(ctx, due); err != nil {
					return p.sent, r.Skipped(), err
				}
			}
			if err := p.flush(ctx); err != nil {
				return p.sent, r.Skipped(), err
			}
		}
		if errors.Is(err, io.EOF) {
			return p.sent, r.Skipped(), nil
		}
	}
}

// add appends rec to the chunk, keyed by its source vertex, or an edge
// set by its transfer id, which it has instead: the sets of one transfer
// then stay in order on one partition, and spread over partitions as
// transfers do.
func (p *Publisher) add(rec Record) {
	key := rec.Src
	if rec.Op == graph.SetEdge {
		key = rec.ID
	}
	p.buf = append(p.buf, key...)
	p.ends = append(p.ends, len(p.buf))
	p.buf = AppendEvent(p.buf, rec)
	p.ends = append(p.ends, len(p.buf))
	p.lines = append(p.lines, rec.Line)
}

// flush writes the chunk and waits for every broker to acknowledge it.
func (p *Publisher) flush(ctx context.Context) error {
	// The slices into buf are taken only now that buf has stopped growing.
	p.recs = p.recs[:0]
	start := 0
	for i := 0; i < len(p.ends); i += 2 {
		k, v := p.ends[i], p.ends[i+1]
		p.recs = append(p.recs, &kgo.Record{Key: p.buf[start:k:k], Value: p.buf[k:v:v]})
		start = v
	}
	// kgo times a record out only when it tries to send it, which a
	// cluster that is gone never lets it do, and ProduceSync waits for
	// every record: past publishGiveUp, or on an interrupt, closing the
	// client fails the records still out, and the run ends.
	done := make(chan kgo.ProduceResults, 1)
	go func() { done <- p.cl.ProduceSync(context.WithoutCancel(ctx), p.recs...) }()
	var res kgo.ProduceResults
	timer := time.NewTimer(publishGiveUp)
	defer timer.Stop()
	select {
	case res = <-done:
	case <-timer.C:
	case <-ctx.Done():
	}
	if res == nil {
		p.closeClient()
		res = <-done
		for i := range res {
			if res[i].Err != nil && ctx.Err() == nil {
				res[i].Err = fmt.Errorf("no acknowledgement in %v (is the cluster reachable?)", publishGiveUp)
			}
		}
	}
	if err := res.FirstErr(); err != nil {
		return p.failed(res)
	}
	p.sent += len(p.recs)
	if p.progress != nil {
		p.progress(p.sent)
	}
	// ProduceSync has waited for every record: the client holds no
	// reference now.
	clear(p.recs)
	p.buf, p.ends, p.lines = p.buf[:0], p.ends[:0], p.lines[:0]
	return nil
}

// failed counts the chunk's acknowledged prefix into p.sent after a
// ProduceSync that failed, and returns the error to report. Each record
// has its own error; they are nearly always one cause repeated, so only
// the first in the file's order is kept.
func (p *Publisher) failed(res kgo.ProduceResults) error {
	// Results come in the order the brokers answered, not the chunk's.
	at := make(map[*kgo.Record]int, len(p.recs))
	for i, r := range p.recs {
		at[r] = i
	}
	errs := make([]error, len(p.recs))
	for _, r := range res {
		errs[at[r.Record]] = r.Err
	}
	ok := 0
	for ok < len(errs) && errs[ok] == nil {
		ok++
	}
	var err error
	if ok < len(errs) {
		err = kafkaconn.Classify(errs[ok])
		for _, e := range errs[ok:] {
			if e == nil {
				p.ackedAfter++
			}
		}
	}
	p.sent += ok
	if ok > 0 {
		p.lastLine = p.lines[ok-1]
	}
	return err
}

// waitUntil sleeps until t or until ctx is done.
func (p *Publisher) waitUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
