package ingest

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
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
}

// ConsumerConfig configures a Consumer. Zero durations take the defaults
// in parentheses.
type ConsumerConfig struct {
	Brokers []string
	Topic   string
	Group   string
	// SessionTimeout (10s) is how long the group coordinator waits for a
	// silent member before it gives that member's partitions away, and so
	// how long a standby waits after the active member crashed.
	SessionTimeout time.Duration
	// HeartbeatInterval (SessionTimeout/5) and RebalanceTimeout
	// (SessionTimeout) tune the group protocol.
	HeartbeatInterval, RebalanceTimeout time.Duration
	// MaxBytes (1 MiB, Kafka's max.partition.fetch.bytes) caps one fetch
	// from one partition. The client holds up to two fetches decoded, so
	// it bounds memory: with 16 MiB a backlog of small events held half a
	// million decoded records (bench service, alert-sparse, 2-core VM: peak
	// RSS 920 MB against 550-600 MB, and the client's CPU 0.39 s per
	// million records against 0.26).
	MaxBytes int
	// MaxWait (100ms) is how long a fetch waits for new records; it bounds
	// how soon a quiet stream's first record is seen.
	MaxWait time.Duration
	// TLS, if set, is used to reach the brokers, by the group's member and
	// by the reading client alike.
	TLS *tls.Config
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
}

func (c *ConsumerConfig) defaults() error {
	if len(c.Brokers) == 0 || c.Topic == "" {
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
	cfg   ConsumerConfig
	group *kafka.ConsumerGroup
	bal   *activeStandby
}

// NewConsumer joins the group. It does not block on the brokers.
func NewConsumer(cfg ConsumerConfig) (*Consumer, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	if cfg.Group == "" {
		return nil, errors.New("ingest: a consumer needs a group")
	}
	bal := &activeStandby{since: time.Now().UnixNano()}
	g, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:                cfg.Group,
		Brokers:           cfg.Brokers,
		Topics:            []string{cfg.Topic},
		GroupBalancers:    []kafka.GroupBalancer{bal},
		SessionTimeout:    cfg.SessionTimeout,
		HeartbeatInterval: cfg.HeartbeatInterval,
		RebalanceTimeout:  cfg.RebalanceTimeout,
		JoinGroupBackoff:  time.Second,
		// A new partition must reach the active member: without the watch a
		// partition added to a live topic would never be read.
		WatchPartitionChanges:  true,
		PartitionWatchInterval: 5 * time.Second,
		StartOffset:            kafka.FirstOffset,
		Logger:                 logf(cfg.Logf),
		Dialer:                 &kafka.Dialer{Timeout: 10 * time.Second, DualStack: true, TLS: cfg.TLS},
	})
	if err != nil {
		return nil, fmt.Errorf("ingest: cannot join group %q: %w", cfg.Group, err)
	}
	return &Consumer{cfg: cfg, group: g, bal: bal}, nil
}

// Close leaves the group, so a standby takes over at once instead of after
// the session timeout.
func (c *Consumer) Close() error { return c.group.Close() }

// Generation is one membership period of the group. Partitions is empty
// for a standby.
type Generation struct {
	ID         int32
	Partitions []int
	gen        *kafka.Generation
	cfg        *ConsumerConfig
}

// Next blocks until the group hands out the next generation.
func (c *Consumer) Next(ctx context.Context) (*Generation, error) {
	gen, err := c.group.Next(ctx)
	if err != nil {
		return nil, err
	}
	g := &Generation{ID: gen.ID, gen: gen, cfg: &c.cfg}
	for _, pa := range gen.Assignments[c.cfg.Topic] {
		g.Partitions = append(g.Partitions, pa.ID)
	}
	slices.Sort(g.Partitions)
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
	g.gen.Start(func(gctx context.Context) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-gctx.Done():
			case <-ctx.Done():
			}
			cancel()
		}()
		if len(g.Partitions) > 0 {
			rd.err = g.read(ctx, from, out)
		}
		close(out)
		close(rd.done)
		// kafka-go ends the generation, and closes the connection Commit
		// uses, as soon as this function returns.
		select {
		case <-rd.release:
		case <-gctx.Done():
		}
	})
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
// or a fetch fails. kgo's PollFetches reads 2.5-3x faster than kafka-go's
// Reader (BenchmarkKafkaRead), and the group stays kafka-go's: the client
// only fetches the partitions at the offsets given, it joins no group.
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
		kgo.SeedBrokers(g.cfg.Brokers...),
		kgo.ClientID("gcsm"),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{g.cfg.Topic: offsets}),
		// An offset the broker no longer holds resumes at the log start,
		// as kafka-go's Reader did; Skipped then names the gap.
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(maxBytes),
		kgo.FetchMaxPartitionBytes(maxBytes),
		kgo.FetchMaxWait(g.cfg.MaxWait),
		// kgo drops a larger response; a broker returns a first record past
		// the fetch's cap whole, so leave room above it.
		kgo.BrokerMaxReadBytes(int32(min(math.MaxInt32, max(100<<20, 2*int64(maxBytes))))),
		kgo.WithPools(&recordPool{}),
	}
	if g.cfg.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(g.cfg.TLS))
	}
	cl, err := kgo.NewClient(opts...)
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
					chunk[i] = Message{Partition: int(r.Partition), Offset: r.Offset, Value: r.Value, HighWaterMark: fp.HighWatermark}
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
// one at a time cost the service's decoding stage a channel operation each,
// 0.1-0.3 µs on its critical path (a fifth of the stage on a 2-core VM);
// a chunk per fetched partition, capped so that a large fetch still flows
// on as it is read, costs one per MaxChunk.
const MaxChunk = 256

// Commit records offsets (partition → next offset to read) as the group's
// committed position. It fails once the generation has ended.
func (g *Generation) Commit(offsets map[int]int64) error {
	if len(offsets) == 0 {
		return nil
	}
	return g.gen.CommitOffsets(map[string]map[int]int64{g.cfg.Topic: offsets})
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

func (b *activeStandby) ProtocolName() string { return "gcsm-active-standby" }

func (b *activeStandby) UserData() ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return json.Marshal(memberInfo{Since: b.since, Active: b.active})
}

func (b *activeStandby) AssignGroups(members []kafka.GroupMember, partitions []kafka.Partition) kafka.GroupMemberAssignments {
	out := kafka.GroupMemberAssignments{}
	best, bestInfo := -1, memberInfo{}
	for i, m := range members {
		out[m.ID] = map[string][]int{}
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
	for _, p := range partitions {
		a := out[members[best].ID]
		a[p.Topic] = append(a[p.Topic], p.ID)
	}
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
	ended := make(chan struct{})
	g.gen.Start(func(gctx context.Context) {
		select {
		case <-gctx.Done():
		case <-ctx.Done():
		}
		close(ended)
	})
	<-ended
}

// logf adapts f to kafka-go's Logger; nil stays nil, which kafka-go takes
// as no logging.
func logf(f func(string, ...any)) kafka.Logger {
	if f == nil {
		return nil
	}
	return kafka.LoggerFunc(f)
}
