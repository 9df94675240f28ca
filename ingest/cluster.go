package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	n, err := Partitions(ctx, cfg.Conn, cfg.Topic)
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
func Partitions(ctx context.Context, conn kafkaconn.Conn, topic string) (int, error) {
	cl, err := conn.NewClient()
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	return topicPartitions(ctx, cl, topic)
}

func topicPartitions(ctx context.Context, cl *kgo.Client, topic string) (int, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("ingest: metadata of topic %q: %w", topic, kafkaconn.Classify(err))
	}
	for _, t := range resp.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				return 0, fmt.Errorf("ingest: topic %q %w", topic, ErrNoTopic)
			}
			return 0, fmt.Errorf("ingest: metadata of topic %q: %w", topic, err)
		}
		return len(t.Partitions), nil
	}
	return 0, fmt.Errorf("ingest: topic %q %w", topic, ErrNoTopic)
}

// EnsureTopic creates topic with the given number of partitions and topic
// configs unless it exists, and checks that an existing one has that many
// partitions: a coordination topic's partitions are its shards, which
// cannot change under a deployment. An existing topic keeps its configs.
func EnsureTopic(ctx context.Context, conn kafkaconn.Conn, topic string, partitions int, configs map[string]string) error {
	cl, err := conn.NewClient()
	if err != nil {
		return fmt.Errorf("ingest: cannot create topic %q: %w", topic, err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10_000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, int32(partitions), -1
	for _, k := range slices.Sorted(maps.Keys(configs)) {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, kmsg.StringPtr(configs[k])
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("ingest: cannot create topic %q: %w", topic, kafkaconn.Classify(err))
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("ingest: cannot create topic %q: %w", topic, err)
		}
	}
	// A topic just created may take a moment to appear in the metadata.
	var n int
	for try := 0; ; try++ {
		if n, err = topicPartitions(ctx, cl, topic); err == nil && n > 0 || try == 50 || ctx.Err() != nil {
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

// AppendTxnCut is AppendCut for a batch log record written in the
// transaction of the batch's output, which it says ("txn":true): a reader
// of the log then knows the output is in the topic. A record of a run
// without transactions says nothing of its batch's output.
func AppendTxnCut(dst []byte, from, ends map[int]int64) []byte {
	dst = AppendCut(dst, from, ends)
	return append(dst[:len(dst)-1], `,"txn":true}`...)
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
	from, ends, _, err = ParseLoggedCut(b)
	return from, ends, err
}

// ParseLoggedCut is ParseCut that also says whether the record was
// written in its batch's transaction (AppendTxnCut).
func ParseLoggedCut(b []byte) (from, ends map[int]int64, txn bool, err error) {
	var c struct {
		From map[string]int64 `json:"from"`
		Ends map[string]int64 `json:"ends"`
		Txn  bool             `json:"txn"`
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&c); err != nil {
		return nil, nil, false, fmt.Errorf("cut record: %w", err)
	}
	if d.More() {
		return nil, nil, false, errors.New("cut record: data after the object")
	}
	if c.Ends == nil {
		return nil, nil, false, errors.New(`cut record: no "ends"`)
	}
	if ends, err = parseOffsets("end", c.Ends); err != nil {
		return nil, nil, false, err
	}
	if c.From != nil {
		if from, err = parseOffsets("start", c.From); err != nil {
			return nil, nil, false, err
		}
	}
	return from, ends, c.Txn, nil
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
func NewCutWriter(conn kafkaconn.Conn, topic string) (*CutWriter, error) {
	cl, err := conn.NewClient(kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(0))
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
	g   *group
	bal *sticky
	cur *ShardGeneration
}

// NewShardGroup prepares the membership of group on topic; the first Next
// joins. cfg gives the connection and the session timing; its Topic and
// Group are not used.
func NewShardGroup(cfg ConsumerConfig, group, topic string) (*ShardGroup, error) {
	cfg.Topic = topic
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	bal := &sticky{}
	g, err := newGroup(cfg, group, topic, bal, 0)
	if err != nil {
		return nil, err
	}
	return &ShardGroup{g: g, bal: bal}, nil
}

// Close leaves the group, so the other members take the shards at once.
func (s *ShardGroup) Close() error {
	var m *membership
	if s.cur != nil {
		m = s.cur.m
	}
	s.g.leave(m)
	return nil
}

// ShardGeneration is one membership period: the shards owned, and for
// each the committed next batch (absent where none was ever committed).
// Commit works until Release.
type ShardGeneration struct {
	ID        int32
	Shards    []int
	Committed map[int]uint64
	m         *membership
	g         *group
	timeout   time.Duration
}

// Next blocks until the group hands out the next generation. The previous
// one must have been released.
func (s *ShardGroup) Next(ctx context.Context) (*ShardGeneration, error) {
	if s.cur != nil {
		select {
		case <-s.cur.m.ended.Done():
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	for {
		m, err := s.g.join(ctx)
		if err != nil {
			return nil, err
		}
		committed, err := s.g.committed(ctx, m.partitions)
		if err != nil {
			// The generation cannot be used without its commits; a new
			// join tries again.
			m.end()
			<-m.beaten
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			s.g.logf("%v", err)
			continue
		}
		g := &ShardGeneration{ID: m.id, Shards: m.partitions, Committed: map[int]uint64{}, m: m, g: s.g,
			timeout: s.g.session}
		for p, o := range committed {
			g.Committed[p] = uint64(o)
		}
		s.bal.setOwned(g.Shards)
		s.cur = g
		return g, nil
	}
}

// Ended is closed when the group rebalances or leaves.
func (g *ShardGeneration) Ended() <-chan struct{} { return g.m.ended.Done() }

// Release lets the generation end; calling it again does nothing.
func (g *ShardGeneration) Release() { g.m.end() }

// Commit records, per shard, the next batch to emit.
func (g *ShardGeneration) Commit(next map[int]uint64) error {
	if len(next) == 0 {
		return nil
	}
	offs := make(map[int]int64, len(next))
	for s, n := range next {
		offs[s] = int64(n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	return g.g.commit(ctx, g.m, offs)
}

// CommitInTxn is Commit inside the transaction that cl, a transactional
// client, has open (Generation.CommitInTxn): a member's shards move on
// exactly when the output of their batches commits, and a member whose
// generation ended gets ErrFenced.
func (g *ShardGeneration) CommitInTxn(ctx context.Context, cl *kgo.Client, txnID string, next map[int]uint64) error {
	if len(next) == 0 {
		return nil
	}
	if g.m.ended.Err() != nil {
		return fmt.Errorf("ingest: group %q: generation %d has ended: %w", g.g.name, g.ID, ErrFenced)
	}
	offs := make(map[int]int64, len(next))
	for s, n := range next {
		offs[s] = int64(n)
	}
	return commitInTxn(ctx, cl, txnID, g.g.name, g.m.id, g.m.memberID, g.g.topic, offs)
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

func (b *sticky) protocolName() string { return "gcsm-sticky-shards" }

func (b *sticky) userData() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	data, _ := json.Marshal(b.owned)
	return data
}

func (b *sticky) assign(members []groupMember, partitions []int) map[string][]int {
	return assignSticky(members, partitions)
}

// assignSticky assigns partitions (of one topic) to members: a member's
// previous shards (its user data) up to its quota, then the rest to the
// members below their quotas. The members holding the most keep the larger
// quotas, and ties go by id, so that every leader decides alike.
func assignSticky(members []groupMember, partitions []int) map[string][]int {
	out := map[string][]int{}
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
	exists := map[int]bool{}
	ids := make([]int, 0, len(partitions))
	for _, p := range partitions {
		if !exists[p] {
			exists[p] = true
			ids = append(ids, p)
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
		out[c.id] = c.got
	}
	return out
}

// Offsets are the first and the end offset of a topic's partition.
func Offsets(ctx context.Context, conn kafkaconn.Conn, topic string, partition int) (first, end int64, err error) {
	cl, err := conn.NewClient()
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	firsts, ends, err := listOffsets(ctx, cl, topic, []int{partition}, false)
	if err != nil {
		return 0, 0, err
	}
	return firsts[partition], ends[partition], nil
}

// TopicOffsets are the first and the end offset of every partition of
// topic, by partition, from one metadata and two ListOffsets requests on
// cl. The caller keeps cl for the next call: the service asks every second
// (watch.go), and a client per call would dial the brokers each time.
func TopicOffsets(ctx context.Context, cl *kgo.Client, topic string) (first, end map[int]int64, err error) {
	n, err := topicPartitions(ctx, cl, topic)
	if err != nil {
		return nil, nil, err
	}
	parts := make([]int, n)
	for p := range parts {
		parts[p] = p
	}
	return listOffsets(ctx, cl, topic, parts, false)
}

// StableOffsets are the first and the last stable offset of topic's
// partitions: the end a read_committed consumer reaches, before the first
// record of a transaction still open (the end offset when none is). The
// output is written in transactions; the input, which gcsm reads
// uncommitted, is read to its end (Offsets, TopicOffsets).
func StableOffsets(ctx context.Context, conn kafkaconn.Conn, topic string, partitions []int) (first, end map[int]int64, err error) {
	cl, err := conn.NewClient()
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	return listOffsets(ctx, cl, topic, partitions, true)
}

// listOffsets are the first and the end offset of topic's partitions, from
// two ListOffsets requests; every partition must answer. With committed,
// the end is the last stable offset.
func listOffsets(ctx context.Context, cl *kgo.Client, topic string, partitions []int, committed bool) (first, end map[int]int64, err error) {
	var got [2]map[int]int64
	// Timestamp -2 asks for the first offset, -1 for the end.
	for i, ts := range [2]int64{-2, -1} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		if committed {
			req.IsolationLevel = 1
		}
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		for _, p := range partitions {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = int32(p), ts, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, nil, fmt.Errorf("ingest: offsets of topic %q: %w", topic, kafkaconn.Classify(err))
		}
		got[i] = make(map[int]int64, len(partitions))
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if t.Topic != topic {
					continue
				}
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return nil, nil, fmt.Errorf("ingest: offsets of topic %q partition %d: %w", topic, p.Partition, err)
				}
				got[i][int(p.Partition)] = p.Offset
			}
		}
		if len(got[i]) != len(partitions) {
			return nil, nil, fmt.Errorf("ingest: offsets of topic %q: %d of partitions %v answered", topic, len(got[i]), partitions)
		}
	}
	return got[0], got[1], nil
}
