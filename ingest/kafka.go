package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"
	"sync"
	"time"

	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Message is one Kafka record of the input topic.
type Message struct {
	Partition int
	Offset    int64
	Value     []byte
	// HighWaterMark is the partition's end offset when the record was
	// fetched, so HighWaterMark-Offset-1 is the lag behind it.
	HighWaterMark int64
	// Control marks a transaction's commit or abort marker, which only a
	// ConsumerConfig.ReadCommitted reading hands over: it has no value, but
	// its offset tells a reader that it has reached the topic's end.
	Control bool
}

// ConsumerConfig configures a Consumer. Zero durations take the defaults
// in parentheses.
type ConsumerConfig struct {
	// Conn reaches the brokers, for the group's member and the reading
	// client alike.
	Conn  kafkaconn.Conn
	Topic string
	Group string
	// SessionTimeout (10s) is how long the group coordinator waits for a
	// silent member before it gives that member's partitions away, and so
	// how long a standby waits after the active member crashed.
	SessionTimeout time.Duration
	// HeartbeatInterval (SessionTimeout/5) and RebalanceTimeout
	// (SessionTimeout) tune the group protocol.
	HeartbeatInterval, RebalanceTimeout time.Duration
	// MaxBytes (1 MiB, Kafka's max.partition.fetch.bytes) caps one fetch
	// from one partition. The client holds up to two fetches decoded, so
	// it bounds memory: a large cap lets a backlog of small events hold
	// hundreds of thousands of decoded records, which cost memory and the
	// client's CPU for no gain in throughput.
	MaxBytes int
	// MaxWait (100ms) is how long a fetch waits for new records; it bounds
	// how soon a quiet stream's first record is seen.
	MaxWait time.Duration
	// Logf, if set, receives the group protocol's progress (joins,
	// assignments, commits), for debugging.
	Logf func(format string, args ...any)
	// Skipped, if set, is told when a partition's first record is past the
	// offset its reading started from: the broker no longer holds the
	// records in between (retention dropped them before they were read;
	// on a compacted or transactional topic, the offsets may have held no
	// record), and reading goes on from the first it holds. It is also
	// told when retention drops records ahead of the reading.
	Skipped func(partition int, from, to int64)
	// ReadCommitted reads only committed transactions' records, and hands
	// over their markers as Control messages. The batch log is read so:
	// a logged batch's alerts are in the output topic exactly when its
	// record is committed.
	ReadCommitted bool
}

func (c *ConsumerConfig) defaults() error {
	if len(c.Conn.Brokers) == 0 || c.Topic == "" {
		return errors.New("ingest: a consumer needs brokers and a topic")
	}
	if c.SessionTimeout <= 0 {
		c.SessionTimeout = 10 * time.Second
	}
	if c.HeartbeatInterval <= 0 {
		c.HeartbeatInterval = c.SessionTimeout / 5
	}
	if c.RebalanceTimeout <= 0 {
		c.RebalanceTimeout = c.SessionTimeout
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 1 << 20
	}
	if c.MaxWait <= 0 {
		c.MaxWait = 100 * time.Millisecond
	}
	return nil
}

// Consumer reads the input topic as a member of a consumer group in which
// one member at a time is active.
//
// gcsm's state is the whole graph, so the partitions of the input topic
// cannot be split among instances the way stateless consumers split them: a
// pattern's edges may come from any partition. The group therefore uses its
// own assignment strategy, "gcsm-active-standby": every partition goes to
// one member, the one already active if there is one, else the most recently
// started; the others are standbys that take over when the active member
// leaves or stops heartbeating.
//
// Where reading starts is the caller's decision, not the group's: the
// caller's state (a checkpoint) says which offsets it has applied, and
// committed group offsets only record what a checkpoint made durable.
type Consumer struct {
	cfg ConsumerConfig
	g   *group
	bal *activeStandby
	cur *Generation // the last generation handed out
}

// NewConsumer prepares the member. It does not block on the brokers: the
// first Next joins.
func NewConsumer(cfg ConsumerConfig) (*Consumer, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if cfg.Group == "" {
		return nil, errors.New("ingest: a consumer needs a group")
	}
	bal := &activeStandby{since: time.Now().UnixNano()}
	// A new partition must reach the active member: without the watch a
	// partition added to a live topic would never be read.
	g, err := newGroup(cfg, cfg.Group, cfg.Topic, bal, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &Consumer{cfg: cfg, g: g, bal: bal}, nil
}

// Close leaves the group, so a standby takes over at once instead of after
// the session timeout.
func (c *Consumer) Close() error {
	var m *membership
	if c.cur != nil {
		m = c.cur.m
	}
	c.g.leave(m)
	return nil
}

// Generation is one membership period of the group. Partitions is empty
// for a standby.
type Generation struct {
	ID         int32
	Partitions []int
	m          *membership
	g          *group
	cfg        *ConsumerConfig
}

// Next blocks until the group hands out the next generation. The previous
// one must have ended: a rebalance ended it, or its Reading was released.
func (c *Consumer) Next(ctx context.Context) (*Generation, error) {
	if c.cur != nil {
		select {
		case <-c.cur.m.ended.Done():
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	m, err := c.g.join(ctx)
	if err != nil {
		return nil, err
	}
	g := &Generation{ID: m.id, Partitions: m.partitions, m: m, g: c.g, cfg: &c.cfg}
	c.cur = g
	c.bal.setActive(len(g.Partitions) > 0)
	return g, nil
}

// Read streams the assigned partitions into out, each from the offset in
// from (the first one held where from has no entry or a negative one), in
// offset order within a partition, until the
// generation ends or ctx is done; then it closes out. Messages come in
// chunks of one partition, at most MaxChunk each, which the receiver owns;
// a chunk never waits for more records. A full out blocks the fetches,
// which is the consumer's backpressure. Errors end the generation's reading
// and are returned by Wait.
func (g *Generation) Read(ctx context.Context, from map[int]int64, out chan<- []Message) *Reading {
	rd := &Reading{done: make(chan struct{}), release: make(chan struct{})}
	go func() {
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(g.m.ended, cancel)
		defer stop()
		if len(g.Partitions) > 0 {
			rd.err = g.read(rctx, from, out)
		}
		close(out)
		close(rd.done)
		// The generation lives on, heartbeating, until released, so that
		// the caller can commit what it applied after the read stopped.
		select {
		case <-rd.release:
			g.m.end()
		case <-g.m.ended.Done():
		}
	}()
	return rd
}

// Reading is a generation's running read.
type Reading struct {
	done    chan struct{}
	release chan struct{}
	once    sync.Once
	err     error
}

// Release lets the generation end once the read has stopped. Until then
// Commit still works after Wait, so a caller stopping on its own can commit
// what it applied; a rebalance ends the generation regardless. Calling it
// again does nothing.
func (r *Reading) Release() { r.once.Do(func() { close(r.release) }) }

// Wait blocks until the read has stopped and out is closed.
func (r *Reading) Wait() error {
	<-r.done
	return r.err
}

// read polls the assigned partitions with one kgo client until ctx is done
// or a fetch fails. The client only fetches the partitions at the offsets
// given; it joins no group (group.go holds the membership).
func (g *Generation) read(ctx context.Context, from map[int]int64, out chan<- []Message) error {
	return g.readEach(ctx, from, func(chunk []Message) bool {
		select {
		case out <- chunk:
			return true
		case <-ctx.Done():
			return false
		}
	})
}

// readEach is read handing each chunk to send, which says whether to go on.
func (g *Generation) readEach(ctx context.Context, from map[int]int64, send func([]Message) bool) error {
	offsets := make(map[int32]kgo.Offset, len(g.Partitions))
	// next holds each partition's next offset where known, and seen the
	// partitions with a record read, for the Skipped report: the first
	// record past next is a gap, a later jump one only where the log start
	// passed next (offsets a compacted or transactional topic leaves
	// empty are no gap).
	next := make(map[int32]int64, len(g.Partitions))
	seen := make(map[int32]bool, len(g.Partitions))
	for _, p := range g.Partitions {
		start, ok := from[p]
		if !ok || start < 0 {
			offsets[int32(p)] = kgo.NewOffset().AtStart()
			continue
		}
		offsets[int32(p)] = kgo.NewOffset().At(start)
		next[int32(p)] = start
	}
	maxBytes := int32(min(g.cfg.MaxBytes, math.MaxInt32))
	opts := []kgo.Opt{
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{g.cfg.Topic: offsets}),
		// An offset the broker no longer holds resumes at the log start;
		// Skipped then names the gap.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(maxBytes),
		kgo.FetchMaxPartitionBytes(maxBytes),
		kgo.FetchMaxWait(g.cfg.MaxWait),
		// kgo drops a larger response; a broker returns a first record past
		// the fetch's cap whole, so leave room above it.
		kgo.BrokerMaxReadBytes(int32(min(math.MaxInt32, max(100<<20, 2*int64(maxBytes))))),
		kgo.WithPools(&recordPool{}),
	}
	if g.cfg.ReadCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	}
	cl, err := g.cfg.Conn.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("ingest: cannot start reading topic %q: %w", g.cfg.Topic, err)
	}
	defer cl.Close()
	for {
		// The client fetches ahead by at most one response per broker while
		// records wait here, so a full out stops the fetches.
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var stopped bool
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			if stopped || len(fp.Records) == 0 {
				return
			}
			p := fp.Partition
			want, known := next[p]
			if first := fp.Records[0].Offset; known && first > want && (!seen[p] || fp.LogStartOffset > want) && g.cfg.Skipped != nil {
				g.cfg.Skipped(int(p), want, first)
			}
			seen[p], next[p] = true, fp.Records[len(fp.Records)-1].Offset+1
			for rs := fp.Records; len(rs) > 0; {
				chunk := make([]Message, min(len(rs), MaxChunk))
				for i, r := range rs[:len(chunk)] {
					chunk[i] = Message{Partition: int(r.Partition), Offset: r.Offset, Value: r.Value, HighWaterMark: fp.HighWatermark,
						Control: r.Attrs.IsControl()}
					r.Recycle()
				}
				rs = rs[len(chunk):]
				if !send(chunk) {
					stopped = true
					return
				}
			}
		})
		if stopped {
			return nil
		}
		var ferr error
		// kgo retries what can be retried; an error it reports ends the
		// read, after the records that came with it.
		fs.EachError(func(topic string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("ingest: topic %q partition %d: %w", topic, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
	}
}

// recordPool lends the reading client the slices it decodes a fetch's
// records into; a slice comes back once each of its records is recycled.
// Without it the client allocates about 220 bytes per record, a third of
// what the service allocates on a stream of small events (one GC cycle in
// 13 on a 1M-update bench run). Only the records are pooled, not the
// decompressed bytes: a Message's Value points into those and outlives the
// record. Record batches come in all sizes, so slices are kept by size
// class (a power of two), each big enough for any batch of its class. The
// free lists hold at most what the client had out at once, about two
// fetches (it fetches one ahead).
type recordPool struct {
	mu   sync.Mutex
	free [33][][]kgo.Record
}

func (p *recordPool) GetRecords(n int) []kgo.Record {
	c := bits.Len(uint(max(n, 1) - 1))
	if c >= len(p.free) {
		return make([]kgo.Record, 0, n)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if k := len(p.free[c]); k > 0 {
		s := p.free[c][k-1]
		p.free[c] = p.free[c][:k-1]
		return s[:0]
	}
	return make([]kgo.Record, 0, 1<<c)
}

func (p *recordPool) PutRecords(s []kgo.Record) {
	// A slice of capacity in [2^c, 2^(c+1)) serves any batch of class c.
	if c := bits.Len(uint(cap(s))) - 1; c >= 0 && c < len(p.free) {
		p.mu.Lock()
		p.free[c] = append(p.free[c], s)
		p.mu.Unlock()
	}
}

// MaxChunk is the most messages Read sends at once. Handing records over
// one at a time would cost the service's decoding stage a channel
// operation each, on its critical path; a chunk per fetched partition,
// capped so that a large fetch still flows on as it is read, costs one per
// MaxChunk.
const MaxChunk = 256

// Commit records offsets (partition → next offset to read) as the group's
// committed position. It fails once the generation has ended.
func (g *Generation) Commit(offsets map[int]int64) error {
	if len(offsets) == 0 {
		return nil
	}
	if g.m.ended.Err() != nil {
		return fmt.Errorf("ingest: group %q: generation %d has ended; not committing", g.g.name, g.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.cfg.SessionTimeout)
	defer cancel()
	return g.g.commit(ctx, g.m, offsets)
}

// CommitForward commits the offsets that are ahead of the group's
// committed ones, or where it has none, and leaves the others: a
// transactional writer's commits may be ahead of a checkpoint it restarts
// from, and must not move back.
func (g *Generation) CommitForward(offsets map[int]int64) error {
	if len(offsets) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.cfg.SessionTimeout)
	defer cancel()
	have, err := g.g.committed(ctx, slices.Sorted(maps.Keys(offsets)))
	if err != nil {
		return err
	}
	ahead := map[int]int64{}
	for p, o := range offsets {
		if c, ok := have[p]; !ok || c < o {
			ahead[p] = o
		}
	}
	return g.Commit(ahead)
}

// activeStandby is the group's assignment strategy (see Consumer).
type activeStandby struct {
	since int64 // when this member started, unix ns
	mu    sync.Mutex
	// active is whether this member held the partitions in its last
	// generation, so a rebalance caused by a joining standby leaves them
	// where they are.
	active bool
}

type memberInfo struct {
	Since  int64 `json:"since"`
	Active bool  `json:"active"`
}

func (b *activeStandby) setActive(v bool) {
	b.mu.Lock()
	b.active = v
	b.mu.Unlock()
}

func (b *activeStandby) protocolName() string { return "gcsm-active-standby" }

func (b *activeStandby) userData() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	data, _ := json.Marshal(memberInfo{Since: b.since, Active: b.active})
	return data
}

func (b *activeStandby) assign(members []groupMember, partitions []int) map[string][]int {
	out := map[string][]int{}
	best, bestInfo := -1, memberInfo{}
	for i, m := range members {
		out[m.ID] = nil
		var info memberInfo
		// A member whose data does not parse is still a member; it only
		// loses the preference.
		_ = json.Unmarshal(m.UserData, &info)
		if best < 0 || preferred(info, m.ID, bestInfo, members[best].ID) {
			best, bestInfo = i, info
		}
	}
	if best < 0 {
		return out
	}
	out[members[best].ID] = slices.Clone(partitions)
	return out
}

// preferred orders candidates for the active role: the active one, so a
// joining standby moves nothing, then the most recently started, then by
// id so that every leader decides alike. Recent beats old because a member
// that crashed while joining stays listed until the coordinator expires it,
// and the member that started last, typically its restart, is the one most
// likely alive.
func preferred(a memberInfo, aID string, b memberInfo, bID string) bool {
	if a.Active != b.Active {
		return a.Active
	}
	if a.Since != b.Since {
		return a.Since > b.Since
	}
	return aID < bID
}

// Wait blocks until the generation ends (the group rebalances) or ctx is
// done. A standby waits here for its turn.
func (g *Generation) Wait(ctx context.Context) {
	select {
	case <-g.m.ended.Done():
	case <-ctx.Done():
	}
}
