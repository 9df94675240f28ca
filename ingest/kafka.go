package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
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
	// MaxBytes (16 MiB) caps one fetch from one partition.
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
	// record), and kafka-go goes on from the first it holds.
	Skipped func(partition int, from, to int64)
}

func (c *ConsumerConfig) defaults() error {
	if len(c.Brokers) == 0 || c.Topic == "" || c.Group == "" {
		return errors.New("ingest: a consumer needs brokers, a topic and a group")
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
		c.MaxBytes = 16 << 20
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
// from (kafka.FirstOffset, -2, where from has no entry), until the
// generation ends or ctx is done; then it closes out. A full out blocks the
// fetches, which is the consumer's backpressure. Errors end the generation's
// reading and are returned by Wait.
func (g *Generation) Read(ctx context.Context, from map[int]int64, out chan<- Message) *Reading {
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
		var wg sync.WaitGroup
		var once sync.Once
		for _, p := range g.Partitions {
			start, ok := from[p]
			if !ok {
				start = kafka.FirstOffset
			}
			wg.Go(func() {
				if err := g.readPartition(ctx, p, start, out); err != nil && ctx.Err() == nil {
					once.Do(func() { rd.err = err })
					cancel()
				}
			})
		}
		wg.Wait()
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

func (g *Generation) readPartition(ctx context.Context, p int, start int64, out chan<- Message) error {
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:   g.cfg.Brokers,
		Topic:     g.cfg.Topic,
		Partition: p,
		MinBytes:  1,
		MaxBytes:  g.cfg.MaxBytes,
		MaxWait:   g.cfg.MaxWait,
	})
	defer r.Close()
	if err := r.SetOffset(start); err != nil {
		return fmt.Errorf("ingest: partition %d: cannot seek to %d: %w", p, start, err)
	}
	for first := start >= 0; ; first = false {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("ingest: partition %d: %w", p, err)
		}
		if first && m.Offset > start && g.cfg.Skipped != nil {
			g.cfg.Skipped(p, start, m.Offset)
		}
		select {
		case out <- Message{Partition: p, Offset: m.Offset, Value: m.Value, HighWaterMark: m.HighWaterMark}:
		case <-ctx.Done():
			return nil
		}
	}
}

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
