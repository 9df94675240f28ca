package ingest

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// This file is the Kafka side of members, service instances that share one
// stream: every member reads every input partition without a group
// (ReadAll), follows the batch boundaries of a cuts topic (Cut), and owns
// the shards a group on a coordination topic assigns it (ShardGroup).

// ReadAll streams every partition of cfg.Topic into out, each from the
// offset in from (the first one held where from has no entry), as
// Generation.Read does, until ctx is done or a fetch fails; then it closes
// out. It joins no group: cfg.Group is not used. The partitions are those
// the topic has when it starts.
func ReadAll(ctx context.Context, cfg ConsumerConfig, from map[int]int64, out chan<- Message) error {
	defer close(out)
	if err := cfg.defaults(); err != nil {
		return err
	}
	n, err := Partitions(ctx, cfg.Brokers, cfg.TLS, cfg.Topic)
	if err != nil {
		return err
	}
	parts := make([]int, n)
	for i := range parts {
		parts[i] = i
	}
	g := &Generation{Partitions: parts, cfg: &cfg}
	return g.readEach(ctx, from, func(chunk []Message) bool {
		for _, m := range chunk {
			select {
			case out <- m:
			case <-ctx.Done():
				return false
			}
		}
		return true
	})
}

// Partitions is the number of partitions of topic.
func Partitions(ctx context.Context, brokers []string, tlsCfg *tls.Config, topic string) (int, error) {
	c := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: &kafka.Transport{TLS: tlsCfg}}
	resp, err := c.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return 0, fmt.Errorf("ingest: metadata of topic %q: %w", topic, err)
	}
	for _, t := range resp.Topics {
		if t.Name != topic {
			continue
		}
		if t.Error != nil {
			return 0, fmt.Errorf("ingest: metadata of topic %q: %w", topic, t.Error)
		}
		return len(t.Partitions), nil
	}
	return 0, fmt.Errorf("ingest: topic %q does not exist", topic)
}

// EnsureTopic creates topic with the given number of partitions and topic
// configs unless it exists, and checks that an existing one has that many
// partitions: a coordination topic's partitions are its shards, which
// cannot change under a deployment. An existing topic keeps its configs.
func EnsureTopic(ctx context.Context, brokers []string, tlsCfg *tls.Config, topic string, partitions int, configs map[string]string) error {
	c := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: &kafka.Transport{TLS: tlsCfg}}
	tc := kafka.TopicConfig{Topic: topic, NumPartitions: partitions, ReplicationFactor: -1}
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		tc.ConfigEntries = append(tc.ConfigEntries, kafka.ConfigEntry{ConfigName: k, ConfigValue: configs[k]})
	}
	resp, err := c.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{tc}})
	if err != nil {
		return fmt.Errorf("ingest: cannot create topic %q: %w", topic, err)
	}
	if err := resp.Errors[topic]; err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
		return fmt.Errorf("ingest: cannot create topic %q: %w", topic, err)
	}
	// A topic just created may take a moment to appear in the metadata.
	var n int
	for try := 0; ; try++ {
		if n, err = Partitions(ctx, brokers, tlsCfg, topic); err == nil && n > 0 || try == 50 || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	if n != partitions {
		return fmt.Errorf("ingest: topic %q has %d partitions, want %d (it cannot change under a running deployment; use a new topic)", topic, n, partitions)
	}
	return nil
}

// AppendCut appends the cut record of a batch: ends maps an input
// partition to the batch's end offset (exclusive), and from, when not nil,
// to the position before it, so that a reader can tell which batch follows
// which: {"from":{"0":20},"ends":{"0":120,"1":97}}. Members write ends
// alone; a single service writes both (service's batch log).
func AppendCut(dst []byte, from, ends map[int]int64) []byte {
	dst = append(dst, '{')
	if from != nil {
		dst = appendOffsets(append(dst, `"from":`...), from)
		dst = append(dst, ',')
	}
	dst = appendOffsets(append(dst, `"ends":`...), ends)
	return append(dst, '}')
}

// appendOffsets appends partition → offset as a JSON object, partitions in
// order, so that equal maps encode alike.
func appendOffsets(dst []byte, m map[int]int64) []byte {
	dst = append(dst, '{')
	for i, p := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = strconv.AppendInt(dst, int64(p), 10)
		dst = append(dst, `":`...)
		dst = strconv.AppendInt(dst, m[p], 10)
	}
	return append(dst, '}')
}

// ParseCut reads a cut record written by AppendCut; from is nil when the
// record has none. Partitions and offsets must be non-negative integers;
// anything else is refused.
func ParseCut(b []byte) (from, ends map[int]int64, err error) {
	var c struct {
		From map[string]int64 `json:"from"`
		Ends map[string]int64 `json:"ends"`
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return nil, nil, fmt.Errorf("cut record: %w", err)
	}
	if d.More() {
		return nil, nil, errors.New("cut record: data after the object")
	}
	if c.Ends == nil {
		return nil, nil, errors.New(`cut record: no "ends"`)
	}
	if ends, err = parseOffsets("end", c.Ends); err != nil {
		return nil, nil, err
	}
	if c.From != nil {
		if from, err = parseOffsets("start", c.From); err != nil {
			return nil, nil, err
		}
	}
	return from, ends, nil
}

func parseOffsets(what string, m map[string]int64) (map[int]int64, error) {
	out := make(map[int]int64, len(m))
	for k, o := range m {
		p, err := strconv.Atoi(k)
		if err != nil || p < 0 || strconv.Itoa(p) != k {
			return nil, fmt.Errorf("cut record: partition %q is not a partition number", k)
		}
		if o < 0 {
			return nil, fmt.Errorf("cut record: partition %d: negative %s offset %d", p, what, o)
		}
		out[p] = o
	}
	return out, nil
}

// CutWriter appends cut records to the cuts topic's partition 0.
type CutWriter struct {
	cl    *kgo.Client
	topic string
}

// NewCutWriter prepares a writer; it does not block on the brokers.
func NewCutWriter(brokers []string, tlsCfg *tls.Config, topic string) (*CutWriter, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ClientID("gcsm-cutter"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0)}
	if tlsCfg != nil {
		opts = append(opts, kgo.DialTLSConfig(tlsCfg))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("ingest: cuts topic %q: %w", topic, err)
	}
	return &CutWriter{cl: cl, topic: topic}, nil
}

// Topic is the cuts topic.
func (w *CutWriter) Topic() string { return w.topic }

// Write appends a cut record and waits for its acknowledgement.
func (w *CutWriter) Write(ctx context.Context, from, ends map[int]int64) error {
	return w.Start(ctx, from, ends).Wait(ctx)
}

// Start appends a cut record without waiting: the returned CutWritten
// reports its acknowledgement.
func (w *CutWriter) Start(ctx context.Context, from, ends map[int]int64) *CutWritten {
	c := &CutWritten{done: make(chan struct{}), Offset: -1}
	r := &kgo.Record{Topic: w.topic, Partition: 0, Value: AppendCut(nil, from, ends)}
	w.cl.Produce(ctx, r, func(r *kgo.Record, err error) {
		if err != nil {
			c.err = fmt.Errorf("ingest: cuts topic %q: %w", w.topic, err)
		} else {
			c.Offset = r.Offset
		}
		close(c.done)
	})
	return c
}

// CutWritten is a cut record on its way to the cuts topic.
type CutWritten struct {
	done chan struct{}
	err  error
	// Offset is the record's offset in the cuts topic, once Wait has
	// returned nil.
	Offset int64
}

// Wait waits until the record is acknowledged or failed, or ctx ends.
func (c *CutWritten) Wait(ctx context.Context) error {
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close releases the writer's client.
func (w *CutWriter) Close() { w.cl.Close() }

// ShardGroup is a member's place in the group on the coordination topic:
// the partitions it is assigned are the shards it owns, and the offset
// committed on each is the next batch whose output for that shard is
// still to be emitted.
type ShardGroup struct {
	topic string
	group *kafka.ConsumerGroup
	bal   *sticky
}

// NewShardGroup joins group on topic. cfg gives the brokers and the
// session timing; its Topic and Group are not used.
func NewShardGroup(cfg ConsumerConfig, group, topic string) (*ShardGroup, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	bal := &sticky{}
	g, err := kafka.NewConsumerGroup(kafka.ConsumerGroupConfig{
		ID:                group,
		Brokers:           cfg.Brokers,
		Topics:            []string{topic},
		GroupBalancers:    []kafka.GroupBalancer{bal},
		SessionTimeout:    cfg.SessionTimeout,
		HeartbeatInterval: cfg.HeartbeatInterval,
		RebalanceTimeout:  cfg.RebalanceTimeout,
		JoinGroupBackoff:  time.Second,
		StartOffset:       kafka.FirstOffset,
		Logger:            logf(cfg.Logf),
		Dialer:            &kafka.Dialer{Timeout: 10 * time.Second, DualStack: true, TLS: cfg.TLS},
	})
	if err != nil {
		return nil, fmt.Errorf("ingest: cannot join group %q: %w", group, err)
	}
	return &ShardGroup{topic: topic, group: g, bal: bal}, nil
}

// Close leaves the group, so the other members take the shards at once.
func (s *ShardGroup) Close() error { return s.group.Close() }

// ShardGeneration is one membership period: the shards owned, and for
// each the committed next batch (absent where none was ever committed).
// Commit works until Release.
type ShardGeneration struct {
	ID        int32
	Shards    []int
	Committed map[int]uint64
	ended     chan struct{}
	release   chan struct{}
	once      sync.Once
	gen       *kafka.Generation
	topic     string
}

// Next blocks until the group hands out the next generation. The previous
// one must have been released.
func (s *ShardGroup) Next(ctx context.Context) (*ShardGeneration, error) {
	gen, err := s.group.Next(ctx)
	if err != nil {
		return nil, err
	}
	g := &ShardGeneration{ID: gen.ID, Committed: map[int]uint64{}, ended: make(chan struct{}), release: make(chan struct{}),
		gen: gen, topic: s.topic}
	for _, pa := range gen.Assignments[s.topic] {
		g.Shards = append(g.Shards, pa.ID)
		if pa.Offset >= 0 {
			g.Committed[pa.ID] = uint64(pa.Offset)
		}
	}
	slices.Sort(g.Shards)
	s.bal.setOwned(g.Shards)
	gen.Start(func(gctx context.Context) {
		<-gctx.Done()
		close(g.ended)
		// kafka-go ends the generation, and closes the connection Commit
		// uses, when this returns: the member commits its last batches first.
		<-g.release
	})
	return g, nil
}

// Ended is closed when the group rebalances or leaves.
func (g *ShardGeneration) Ended() <-chan struct{} { return g.ended }

// Release lets the generation end; calling it again does nothing.
func (g *ShardGeneration) Release() { g.once.Do(func() { close(g.release) }) }

// Commit records, per shard, the next batch to emit.
func (g *ShardGeneration) Commit(next map[int]uint64) error {
	if len(next) == 0 {
		return nil
	}
	offs := make(map[int]int64, len(next))
	for s, n := range next {
		offs[s] = int64(n)
	}
	return g.gen.CommitOffsets(map[string]map[int]int64{g.topic: offs})
}

// sticky is the shard group's assignment strategy, "gcsm-sticky-shards":
// every member keeps the shards it owns up to an even share, and the rest
// are spread so that shares differ by at most one. A rebalance then moves
// only the shards it must, and each moved shard costs its new owner a
// replay at worst.
type sticky struct {
	mu    sync.Mutex
	owned []int
}

func (b *sticky) setOwned(s []int) {
	b.mu.Lock()
	b.owned = slices.Clone(s)
	b.mu.Unlock()
}

func (b *sticky) ProtocolName() string { return "gcsm-sticky-shards" }

func (b *sticky) UserData() ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return json.Marshal(b.owned)
}

func (b *sticky) AssignGroups(members []kafka.GroupMember, partitions []kafka.Partition) kafka.GroupMemberAssignments {
	return assignSticky(members, partitions)
}

// assignSticky assigns partitions (of one topic) to members: a member's
// previous shards (its user data) up to its quota, then the rest to the
// members below their quotas. The members holding the most keep the larger
// quotas, and ties go by id, so that every leader decides alike.
func assignSticky(members []kafka.GroupMember, partitions []kafka.Partition) kafka.GroupMemberAssignments {
	out := kafka.GroupMemberAssignments{}
	if len(members) == 0 {
		return out
	}
	type cand struct {
		id   string
		prev []int
		got  []int
	}
	cs := make([]*cand, len(members))
	for i, m := range members {
		c := &cand{id: m.ID}
		// A member whose data does not parse is still a member; it only
		// keeps nothing.
		_ = json.Unmarshal(m.UserData, &c.prev)
		cs[i] = c
	}
	slices.SortFunc(cs, func(a, b *cand) int {
		if len(a.prev) != len(b.prev) {
			return len(b.prev) - len(a.prev)
		}
		return strings.Compare(a.id, b.id)
	})
	topic := ""
	exists := map[int]bool{}
	ids := make([]int, 0, len(partitions))
	for _, p := range partitions {
		topic = p.Topic
		if !exists[p.ID] {
			exists[p.ID] = true
			ids = append(ids, p.ID)
		}
	}
	slices.Sort(ids)
	quota := func(i int) int {
		q := len(ids) / len(cs)
		if i < len(ids)%len(cs) {
			q++
		}
		return q
	}
	taken := map[int]bool{}
	for i, c := range cs {
		for _, p := range c.prev {
			if len(c.got) < quota(i) && exists[p] && !taken[p] {
				taken[p] = true
				c.got = append(c.got, p)
			}
		}
	}
	i := 0
	for _, p := range ids {
		if taken[p] {
			continue
		}
		for len(cs[i].got) >= quota(i) {
			i++
		}
		cs[i].got = append(cs[i].got, p)
	}
	for _, c := range cs {
		slices.Sort(c.got)
		out[c.id] = map[string][]int{topic: c.got}
	}
	return out
}

// Offsets are the first and the end offset of a topic's partition.
func Offsets(ctx context.Context, brokers []string, tlsCfg *tls.Config, topic string, partition int) (first, end int64, err error) {
	c := &kafka.Client{Addr: kafka.TCP(brokers...), Timeout: 10 * time.Second, Transport: &kafka.Transport{TLS: tlsCfg}}
	resp, err := c.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
		topic: {kafka.FirstOffsetOf(partition), kafka.LastOffsetOf(partition)},
	}})
	if err != nil {
		return 0, 0, fmt.Errorf("ingest: offsets of topic %q partition %d: %w", topic, partition, err)
	}
	for _, po := range resp.Topics[topic] {
		if po.Partition != partition {
			continue
		}
		if po.Error != nil {
			return 0, 0, fmt.Errorf("ingest: offsets of topic %q partition %d: %w", topic, partition, po.Error)
		}
		return po.FirstOffset, po.LastOffset, nil
	}
	return 0, 0, fmt.Errorf("ingest: topic %q has no partition %d", topic, partition)
}
