package output

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Franz is a Sink that produces to Kafka with franz-go's kgo client, idempotent with acks=all. It is also
// a Sender: a batch's records go out while the last batch's are still being acknowledged, in as few
// produce requests as the partitions and BatchBytes allow.
type Franz struct {
	cfg        KafkaConfig
	cl         *kgo.Client
	topic      string
	deadTopic  string
	batchBytes int64
	timeout    time.Duration // of one request

	// max is the largest record the output topic takes (limit.go), 0 until read; stale is set when a
	// broker refused a record as too large, to read it again.
	max      atomic.Int64
	stale    atomic.Bool
	limitMu  sync.Mutex // serializes readings of the limit
	limitErr error

	mu   sync.Mutex
	free []*sendBufs // of Sends whose records are all acknowledged or failed

	// produced counts the records handed to the client, for a Txn's
	// Produced.
	produced atomic.Int64
}

// produce hands r to the client.
func (k *Franz) produce(ctx context.Context, r *kgo.Record, promise func(*kgo.Record, error)) {
	k.produced.Add(1)
	k.cl.Produce(ctx, r, promise)
}

// encoded is a run of records' keys and values in buf; ends holds each record's key and value end
// offsets in buf while buf may still move. ready is closed once the run is encoded.
type encoded struct {
	buf   []byte
	ends  []int
	ready chan struct{}
}

// encodeChunk is how many events one goroutine encodes at a time. A Write of several chunks encodes
// them on all cores while its own goroutine produces the chunks already encoded, in order: encoding a
// 400-byte event costs about as much as producing it, and both ran one after the other on one core.
const encodeChunk = 1024

var _ Sender = (*Franz)(nil)

// franzCodec returns kgo's codec of a KafkaConfig.Compression that validate accepted.
func franzCodec(name string) kgo.CompressionCodec {
	switch name {
	case "gzip":
		return kgo.GzipCompression()
	case "snappy":
		return kgo.SnappyCompression()
	case "lz4":
		return kgo.Lz4Compression()
	case "zstd":
		return kgo.ZstdCompression()
	}
	return kgo.NoCompression()
}

// FranzOptions returns the kgo client options of the franz-go sink for cfg, so that a benchmark can
// produce as the sink does.
func FranzOptions(cfg KafkaConfig) ([]kgo.Opt, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return franzOptions(cfg), nil
}

// newFranz returns a Franz sink for a validated cfg.
func newFranz(cfg KafkaConfig, extra ...kgo.Opt) (*Franz, error) {
	k := &Franz{cfg: cfg, topic: cfg.Topic, deadTopic: cfg.DeadTopic, batchBytes: cfg.BatchBytes, timeout: cfg.WriteTimeout}
	// kgo sizes the output topic's batches by the topic's limit, read before the first record (limit.go):
	// batches of small alerts over a topic limit below BatchBytes would be refused whole.
	batchMax := kgo.ProducerBatchMaxBytesFn(func(topic string) int32 {
		if l := k.max.Load(); topic == k.topic && l > 0 {
			return int32(max(512, l))
		}
		return int32(cfg.BatchBytes)
	})
	cl, err := kgo.NewClient(append(append(franzOptions(cfg), batchMax), extra...)...)
	if err != nil {
		return nil, fmt.Errorf("cannot create Kafka output: %w", err)
	}
	k.cl = cl
	return k, nil
}

// franzOptions returns the client options of a validated cfg.
func franzOptions(cfg KafkaConfig) []kgo.Opt {
	opts := []kgo.ProducerOpt{
		// Murmur2 on the key is the Java client's default partitioner: a match's events land on the
		// partition that Kafka Streams or any Java producer would pick for the same key.
		kgo.RecordPartitioner(onePartitionFirst{kgo.StickyKeyPartitioner(nil)}),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// Nothing flushes a Send, so records go out as soon as the broker's last produce request is
		// answered: the records that arrive meanwhile fill the next request, without a linger's wait on
		// every batch's last records (kgo's default is 10ms).
		kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(franzCodec(cfg.Compression)),
		kgo.ProducerBatchMaxBytes(int32(cfg.BatchBytes)),
		kgo.ProduceRequestTimeout(cfg.WriteTimeout),
		kgo.RecordRetries(cfg.MaxAttempts),
		// A record that cannot be delivered, because the cluster is gone or refuses the login, fails
		// after MaxAttempts produce timeouts, rather than waiting for ever.
		kgo.RecordDeliveryTimeout(max(time.Second, time.Duration(cfg.MaxAttempts)*cfg.WriteTimeout)), // kgo refuses less than 1s
		// The caller bounds the Sends in flight, and with them the records buffered; a smaller bound would
		// only make Produce wait in the middle of a Send.
		kgo.MaxBufferedRecords(math.MaxInt32),
	}
	copts := append(cfg.Conn.Opts(), kgo.AllowAutoTopicCreation())
	for _, o := range opts {
		copts = append(copts, o)
	}
	return copts
}

// onePartitionFirst is a partitioner that sends every record of a one-partition topic to it without
// hashing the key, and leaves the others to the Partitioner it wraps: murmur2 cost about 0.1 µs an event
// on the goroutine that produces them all, for a partition chosen in advance.
type onePartitionFirst struct{ kgo.Partitioner }

func (p onePartitionFirst) ForTopic(topic string) kgo.TopicPartitioner {
	return onePartitionFirstTopic{p.Partitioner.ForTopic(topic)}
}

type onePartitionFirstTopic struct{ kgo.TopicPartitioner }

func (p onePartitionFirstTopic) Partition(r *kgo.Record, n int) int {
	if n == 1 {
		return 0
	}
	return p.TopicPartitioner.Partition(r, n)
}

// OnNewBatch passes kgo's call on, for the wrapped partitioner's stickiness (records without a key).
func (p onePartitionFirstTopic) OnNewBatch() {
	if o, ok := p.TopicPartitioner.(kgo.TopicPartitionerOnNewBatch); ok {
		o.OnNewBatch()
	}
}

// Write produces events to the output topic, keyed by Event.Key, and returns when all in-sync replicas
// have acknowledged every one, or the error of the first that failed.
func (k *Franz) Write(ctx context.Context, events []Event) error {
	return k.send(ctx, nil, events).wait(ctx)
}

// WriteDead produces dead letters to the dead letter topic, keyed "topic/partition/offset", with the
// durability of Write. Without a dead letter topic it drops them.
func (k *Franz) WriteDead(ctx context.Context, letters []DeadLetter) error {
	return k.send(ctx, letters, nil).wait(ctx)
}

// Send hands the client the dead letters (dropped without a dead letter topic), then the events, and
// returns once it holds their records, before any is acknowledged. The records of successive Sends keep
// their order within each partition: the client is idempotent, with one produce request in flight per
// broker.
func (k *Franz) Send(ctx context.Context, letters []DeadLetter, events []Event) Pending {
	return k.send(ctx, letters, events)
}

func (k *Franz) send(ctx context.Context, letters []DeadLetter, events []Event) *sending {
	if k.deadTopic == "" {
		letters = nil
	}
	p := newSending(len(letters), len(events), k.topic, k.deadTopic)
	if len(letters)+len(events) == 0 {
		p.finish()
		return p
	}
	p.tooLarge = func() { k.stale.Store(true) }
	var limit int64
	if len(events) > 0 {
		limit = k.limit(ctx)
	}
	bufs := k.take()
	p.release = func() { k.put(bufs) }
	// Every record is counted before the first is produced: a promise may run before the next Produce.
	p.left.Store(int64(len(letters) + len(events)))
	if len(letters) > 0 {
		bufs.dead.buf, bufs.dead.ends = appendDeadLetters(bufs.dead.buf[:0], bufs.dead.ends[:0], letters)
		bufs.deadRecs = appendRecords(bufs.deadRecs[:0], k.deadTopic, bufs.dead.buf, bufs.dead.ends, time.Now())
		p.deadRecs = bufs.deadRecs
		for i := range bufs.deadRecs {
			k.produce(ctx, &bufs.deadRecs[i], p.deadPromise)
		}
	}
	if len(events) > 0 {
		k.sendEvents(ctx, bufs, p, events, limit)
	}
	return p
}

// sendEvents encodes events on all cores, encodeChunk at a time, while it produces the chunks already
// encoded, in order. Each chunk's records are made where it was encoded, not in the producing loop: that
// loop is the one serial step of delivery, so whatever it does not do shortens the send step.
//
// An event whose record would not fit under limit goes to the dead-letter topic instead (limit.go); the
// check costs one comparison an event that fits.
func (k *Franz) sendEvents(ctx context.Context, bufs *sendBufs, p *sending, events []Event, limit int64) {
	n := (len(events) + encodeChunk - 1) / encodeChunk
	if cap(bufs.chunks) < n {
		bufs.chunks = append(bufs.chunks[:cap(bufs.chunks)], make([]encoded, n-cap(bufs.chunks))...)
	}
	chunks := bufs.chunks[:n]
	if cap(bufs.recs) < len(events) {
		bufs.recs = make([]kgo.Record, 0, len(events))
	}
	// recs is bufs.recs' array, which is in bufs before the first Produce: the last promise may hand bufs to
	// the next Send before the loop below ends. Chunk i's records are recs[i*encodeChunk:], one an event.
	recs := bufs.recs[:len(events)]
	p.recs = recs
	fast := limit - recordOverhead - variantBound
	now := time.Now()
	bounds := func(i int) (lo, hi int) { return i * encodeChunk, min((i+1)*encodeChunk, len(events)) }
	encode := func(i int) {
		c := &chunks[i]
		lo, hi := bounds(i)
		c.buf, c.ends = appendEvents(c.buf[:0], c.ends[:0], events[lo:hi])
		appendRecords(recs[lo:lo:hi], k.topic, c.buf, c.ends, now)
		close(c.ready)
	}
	for i := range chunks {
		chunks[i].ready = make(chan struct{})
	}
	if workers := min(runtime.GOMAXPROCS(0), n) - 1; workers == 0 {
		for i := range chunks {
			encode(i)
		}
	} else {
		// Every chunk is encoded before Send returns: the producing loop below waits for each.
		var next atomic.Int64
		for range workers {
			go func() {
				for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
					encode(i)
				}
			}()
		}
	}
	for i := range chunks {
		<-chunks[i].ready
		lo, hi := bounds(i)
		for j := lo; j < hi; j++ {
			r := &recs[j]
			if int64(len(r.Key)+len(r.Value)) > fast && !fits(&events[j], r.Key, r.Value, limit) {
				k.divert(ctx, p, j, &events[j], r, limit)
				continue
			}
			k.produce(ctx, r, p.eventPromise)
		}
	}
}

// divert sends event i of p, encoded as r, to the dead-letter topic instead of the output topic, or drops
// it without one; p reports it in Diverted. The letter's failure is the event's: a retry sends the event
// again, which diverts it again.
func (k *Franz) divert(ctx context.Context, p *sending, i int, e *Event, r *kgo.Record, limit int64) {
	size := len(r.Key) + len(r.Value) + recordOverhead
	p.mu.Lock()
	p.diverted = append(p.diverted, TooLarge{Index: i, Bytes: size, Limit: int(limit)})
	p.mu.Unlock()
	if k.deadTopic == "" {
		p.promise(1, nil)
		return
	}
	d := tooLargeLetter(k.topic, e, r.Value, size, limit)
	rec := &kgo.Record{Topic: k.deadTopic, Key: appendDeadKey(nil, &d), Value: appendDeadLetter(nil, &d), Timestamp: r.Timestamp}
	k.produce(ctx, rec, func(_ *kgo.Record, err error) {
		if err != nil {
			p.mu.Lock()
			p.failedEvents = append(p.failedEvents, i)
			p.mu.Unlock()
		}
		p.promise(1, err)
	})
}

// sendBufs hold the keys and values of one Send's records, and the records, which point into them. They
// go back to Franz.free once every record's promise has run, so that a steady stream of batches
// allocates no encoding buffers and no records; a Send abandoned by its caller keeps them until then.
type sendBufs struct {
	chunks   []encoded
	recs     []kgo.Record
	dead     encoded
	deadRecs []kgo.Record
}

func (k *Franz) take() *sendBufs {
	k.mu.Lock()
	defer k.mu.Unlock()
	if n := len(k.free); n > 0 {
		b := k.free[n-1]
		k.free = k.free[:n-1]
		return b
	}
	return new(sendBufs)
}

func (k *Franz) put(b *sendBufs) {
	k.mu.Lock()
	k.free = append(k.free, b)
	k.mu.Unlock()
}

// sending is one Send's records on their way to the brokers: a Pending.
type sending struct {
	left     atomic.Int64 // records whose promise has not run
	done     chan struct{}
	release  func() // after the last promise: the records' buffers are free again
	tooLarge func() // after a broker refused a record as too large

	// The Send's records, in the order of its letters and events, until the last promise turns the failed
	// ones into indexes, before release hands them to another Send.
	deadRecs, recs []kgo.Record

	mu       sync.Mutex
	kinds    [2]pendingKind // dead letters, events
	failed   map[*kgo.Record]bool
	diverted []TooLarge
	// failedLetters and failedEvents index the failed records in the Send's letters and events, in
	// order once done is closed.
	failedLetters, failedEvents []int
}

// pendingKind is what a sending knows of one topic's records.
type pendingKind struct {
	what, topic string
	n, failed   int
	err         error // the first failure
}

func newSending(letters, events int, topic, deadTopic string) *sending {
	return &sending{done: make(chan struct{}), kinds: [2]pendingKind{
		{what: "dead letters", topic: deadTopic, n: letters},
		{what: "events", topic: topic, n: events},
	}}
}

func (p *sending) deadPromise(r *kgo.Record, err error)  { p.record(0, r, err) }
func (p *sending) eventPromise(r *kgo.Record, err error) { p.record(1, r, err) }

// record is a promise of one of the Send's own records, which notes the failed ones.
func (p *sending) record(kind int, r *kgo.Record, err error) {
	if err != nil {
		p.mu.Lock()
		if p.failed == nil {
			p.failed = map[*kgo.Record]bool{}
		}
		p.failed[r] = true
		p.mu.Unlock()
		if errors.Is(err, kerr.MessageTooLarge) && p.tooLarge != nil {
			p.tooLarge()
		}
	}
	p.promise(kind, err)
}

func (p *sending) promise(kind int, err error) {
	if err != nil {
		p.mu.Lock()
		k := &p.kinds[kind]
		if k.failed == 0 {
			k.err = err
		}
		k.failed++
		p.mu.Unlock()
	}
	if p.left.Add(-1) == 0 {
		p.indexFailed()
		if p.release != nil {
			p.release()
		}
		p.finish()
	}
}

// indexFailed turns the failed records into indexes, once every promise has run: one pass over the
// records, and only when some failed.
func (p *sending) indexFailed() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.failed) > 0 {
		for i := range p.deadRecs {
			if p.failed[&p.deadRecs[i]] {
				p.failedLetters = append(p.failedLetters, i)
			}
		}
		for i := range p.recs {
			if p.failed[&p.recs[i]] {
				p.failedEvents = append(p.failedEvents, i)
			}
		}
		p.failed = nil
	}
	slices.Sort(p.failedEvents) // a diverted event's failed letter was noted by its promise
	p.deadRecs, p.recs = nil, nil
}

func (p *sending) finish() { close(p.done) }

// Unsent returns the indexes of the letters and events that failed, ascending.
func (p *sending) Unsent() (letters, events []int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failedLetters, p.failedEvents
}

// Diverted returns the events sent to the dead-letter topic instead, as too large, in order.
func (p *sending) Diverted() []TooLarge {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.diverted
}

func (p *sending) Done() <-chan struct{} { return p.done }

// Err reports the dead letters' failure before the events'.
func (p *sending) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, k := range p.kinds {
		if k.failed > 0 {
			return fmt.Errorf("cannot write %d of %d %s to Kafka topic %q: %w", k.failed, k.n, k.what, k.topic, k.err)
		}
	}
	return nil
}

// wait waits for Done and returns Err, or returns ctx's error once ctx ends first.
func (p *sending) wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.Err()
	case <-ctx.Done():
		k := p.kinds[1]
		if k.n == 0 {
			k = p.kinds[0]
		}
		return fmt.Errorf("cannot write %d %s to Kafka topic %q: %w", k.n, k.what, k.topic, ctx.Err())
	}
}

// appendRecords appends to recs the records whose keys and values lie in buf, delimited by ends, stamped
// with the time at (kgo would read the clock for every record without one).
func appendRecords(recs []kgo.Record, topic string, buf []byte, ends []int, at time.Time) []kgo.Record {
	start := 0
	for i := 0; i < len(ends); i += 2 {
		keyEnd, valueEnd := ends[i], ends[i+1]
		// A whole new Record: kgo fills in Partition, Offset, Timestamp and more, which the previous call
		// left set.
		recs = append(recs, kgo.Record{
			Topic:     topic,
			Key:       buf[start:keyEnd:keyEnd],
			Value:     buf[keyEnd:valueEnd:valueEnd],
			Timestamp: at,
		})
		start = valueEnd
	}
	return recs
}

// Close fails records still buffered and closes the connections. Writes after Close fail.
func (k *Franz) Close() error {
	k.cl.Close()
	return nil
}
