package ingest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/gcsm/gcsm/internal/kafkaconn"
)

// This file speaks Kafka's classic consumer-group protocol (JoinGroup,
// SyncGroup, Heartbeat, OffsetFetch, OffsetCommit, LeaveGroup) over a kgo
// client's raw requests, for the two groups gcsm joins: the input's
// active/standby group (Consumer) and the members' shard group
// (ShardGroup). Neither is a stateless consumer, which is what kgo's own
// group consumer serves: the shard group never reads its topic, only owns
// partitions and commits on them, and an input generation must start
// reading at the offsets a checkpoint gives, and go on committing what it
// applied after its reading stopped, until the caller lets it end. Spoken
// directly, a generation is a value with exactly that life, and the
// assignment strategies stay plain functions that every leader runs alike.
// kgo still routes each request to the group's coordinator and retries
// what a coordinator move makes retriable.

// groupMember is one member as the leader sees it at a join.
type groupMember struct {
	ID       string
	UserData []byte
}

// strategy is a group's assignment strategy.
type strategy interface {
	// protocolName names the strategy in the group protocol; every member
	// of a group must offer the same one.
	protocolName() string
	// userData is what this member tells the leader at a join.
	userData() []byte
	// assign gives each member its partitions of the topic; it runs on the
	// leader only, and must decide alike on any leader.
	assign(members []groupMember, partitions []int) map[string][]int
}

// group is this process's membership of one group on one topic.
type group struct {
	cl    *kgo.Client
	name  string
	topic string
	strat strategy
	// session and rebalance are the group protocol's timeouts; heartbeat
	// the interval between heartbeats.
	session, rebalance, heartbeat time.Duration
	// watch, if set, ends a generation when the topic's partition count
	// changes, so that a partition added to a live topic is assigned.
	watch time.Duration
	logf  func(string, ...any)

	mu       sync.Mutex
	memberID string
}

func newGroup(cfg ConsumerConfig, name, topic string, strat strategy, watch time.Duration) (*group, error) {
	// OffsetCommit v10 names topics by id alone, which kgo fills in for
	// its own group's commits but not in a raw request; v9 names them, and
	// brokers from Kafka 2.x on take it.
	vers := kversion.Stable()
	vers.SetMaxKeyVersion(int16(kmsg.OffsetCommit), 9)
	cl, err := cfg.Conn.NewClient(kgo.MaxVersions(vers))
	if err != nil {
		return nil, fmt.Errorf("ingest: cannot join group %q: %w", name, err)
	}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &group{cl: cl, name: name, topic: topic, strat: strat,
		session: cfg.SessionTimeout, rebalance: cfg.RebalanceTimeout, heartbeat: cfg.HeartbeatInterval,
		watch: watch, logf: logf}, nil
}

// membership is one generation of the group as this member holds it.
type membership struct {
	id         int32
	memberID   string
	partitions []int
	// ended is done when the generation ends: a heartbeat learns of a
	// rebalance, the session is lost, the partitions changed, or the group
	// is left.
	ended  context.Context
	end    context.CancelFunc
	beaten chan struct{} // closed when the heartbeats have stopped
}

// join blocks until the group hands out the next generation.
func (g *group) join(ctx context.Context) (*membership, error) {
	for {
		m, retry, err := g.joinOnce(ctx)
		if err == nil {
			return m, nil
		}
		if !retry || ctx.Err() != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("ingest: group %q: %w", g.name, err)
		}
		g.logf("group %q: joining again: %v", g.name, err)
		if errors.Is(err, kerr.MemberIDRequired) || errors.Is(err, kerr.UnknownMemberID) {
			// The coordinator named this member, or forgot it: join at
			// once, within the session timeout that holds a named member.
			continue
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(time.Second, g.heartbeat)):
		}
	}
}

// retriable are the group errors that a new join resolves.
func retriable(err error) bool {
	return errors.Is(err, kerr.RebalanceInProgress) || errors.Is(err, kerr.IllegalGeneration) ||
		errors.Is(err, kerr.UnknownMemberID) || errors.Is(err, kerr.CoordinatorNotAvailable) ||
		errors.Is(err, kerr.NotCoordinator) || errors.Is(err, kerr.CoordinatorLoadInProgress) ||
		errors.Is(err, kerr.MemberIDRequired) || errors.Is(err, kerr.UnknownTopicOrPartition) ||
		kerr.IsRetriable(err)
}

func (g *group) joinOnce(ctx context.Context) (*membership, bool, error) {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{g.topic}
	meta.UserData = g.strat.userData()
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group = g.name
	req.SessionTimeoutMillis = int32(g.session.Milliseconds())
	req.RebalanceTimeoutMillis = int32(g.rebalance.Milliseconds())
	req.ProtocolType = "consumer"
	g.mu.Lock()
	req.MemberID = g.memberID
	g.mu.Unlock()
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name = g.strat.protocolName()
	proto.Metadata = meta.AppendTo(nil)
	req.Protocols = append(req.Protocols, proto)
	resp, err := req.RequestWith(ctx, g.cl)
	if err != nil {
		return nil, true, fmt.Errorf("join: %w", kafkaconn.Classify(err))
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		switch {
		case errors.Is(err, kerr.MemberIDRequired):
			// KIP-394: the coordinator names the member before it may join.
			g.setMember(resp.MemberID)
		case errors.Is(err, kerr.UnknownMemberID):
			g.setMember("")
		}
		return nil, retriable(err), fmt.Errorf("join: %w", err)
	}
	g.setMember(resp.MemberID)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group = g.name
	sync.Generation = resp.Generation
	sync.MemberID = resp.MemberID
	sync.ProtocolType = &req.ProtocolType
	sync.Protocol = &proto.Name
	if resp.LeaderID == resp.MemberID {
		plan, err := g.plan(ctx, resp.Members)
		if err != nil {
			return nil, true, err
		}
		for id, parts := range plan {
			a := kmsg.NewConsumerMemberAssignment()
			t := kmsg.NewConsumerMemberAssignmentTopic()
			t.Topic = g.topic
			for _, p := range parts {
				t.Partitions = append(t.Partitions, int32(p))
			}
			a.Topics = append(a.Topics, t)
			ga := kmsg.NewSyncGroupRequestGroupAssignment()
			ga.MemberID = id
			ga.MemberAssignment = a.AppendTo(nil)
			sync.GroupAssignment = append(sync.GroupAssignment, ga)
		}
	}
	sresp, err := sync.RequestWith(ctx, g.cl)
	if err != nil {
		return nil, true, fmt.Errorf("sync: %w", kafkaconn.Classify(err))
	}
	if err := kerr.ErrorForCode(sresp.ErrorCode); err != nil {
		if errors.Is(err, kerr.UnknownMemberID) {
			g.setMember("")
		}
		return nil, retriable(err), fmt.Errorf("sync: %w", err)
	}
	m := &membership{id: resp.Generation, memberID: resp.MemberID, beaten: make(chan struct{})}
	if len(sresp.MemberAssignment) > 0 {
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(sresp.MemberAssignment); err != nil {
			return nil, false, fmt.Errorf("sync: the leader's assignment does not parse: %w", err)
		}
		for _, t := range a.Topics {
			if t.Topic == g.topic {
				for _, p := range t.Partitions {
					m.partitions = append(m.partitions, int(p))
				}
			}
		}
	}
	slices.Sort(m.partitions)
	g.logf("group %q: generation %d, member %s, partitions %v", g.name, m.id, m.memberID, m.partitions)
	n := -1
	if g.watch > 0 {
		n, _ = topicPartitions(ctx, g.cl, g.topic)
	}
	m.ended, m.end = context.WithCancel(context.Background())
	go g.heartbeats(m, n)
	return m, false, nil
}

func (g *group) setMember(id string) {
	g.mu.Lock()
	g.memberID = id
	g.mu.Unlock()
}

// plan is the leader's assignment of the topic's partitions.
func (g *group) plan(ctx context.Context, joined []kmsg.JoinGroupResponseMember) (map[string][]int, error) {
	n, err := topicPartitions(ctx, g.cl, g.topic)
	if err != nil {
		return nil, err
	}
	parts := make([]int, n)
	for i := range parts {
		parts[i] = i
	}
	members := make([]groupMember, 0, len(joined))
	for _, jm := range joined {
		var meta kmsg.ConsumerMemberMetadata
		// A member whose metadata does not parse is still a member; its
		// strategy data is then empty and only loses it the preference.
		_ = meta.ReadFrom(jm.ProtocolMetadata)
		members = append(members, groupMember{ID: jm.MemberID, UserData: meta.UserData})
	}
	return g.strat.assign(members, parts), nil
}

// heartbeats keeps the membership alive until the coordinator says the
// generation is over, the session is lost, the partition count differs
// from parts (when watched), or the membership is ended.
func (g *group) heartbeats(m *membership, parts int) {
	defer close(m.beaten)
	defer m.end()
	tick := time.NewTicker(g.heartbeat)
	defer tick.Stop()
	var watch <-chan time.Time
	if g.watch > 0 && parts >= 0 {
		w := time.NewTicker(g.watch)
		defer w.Stop()
		watch = w.C
	}
	last := time.Now()
	for {
		select {
		case <-m.ended.Done():
			return
		case <-watch:
			ctx, cancel := context.WithTimeout(m.ended, g.session)
			n, err := topicPartitions(ctx, g.cl, g.topic)
			cancel()
			if err == nil && n != parts {
				g.logf("group %q: topic %q has %d partitions, not %d: joining again", g.name, g.topic, n, parts)
				return
			}
		case <-tick.C:
			req := kmsg.NewPtrHeartbeatRequest()
			req.Group, req.Generation, req.MemberID = g.name, m.id, m.memberID
			ctx, cancel := context.WithTimeout(m.ended, g.session)
			resp, err := req.RequestWith(ctx, g.cl)
			cancel()
			if err == nil {
				err = kerr.ErrorForCode(resp.ErrorCode)
			}
			switch {
			case err == nil:
				last = time.Now()
			case errors.Is(err, kerr.RebalanceInProgress), errors.Is(err, kerr.IllegalGeneration),
				errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.FencedInstanceID):
				if errors.Is(err, kerr.UnknownMemberID) {
					g.setMember("")
				}
				g.logf("group %q: generation %d ends: %v", g.name, m.id, err)
				return
			case time.Since(last) > g.session:
				// The coordinator has given the partitions away by now.
				g.logf("group %q: generation %d ends, no heartbeat for %v: %v", g.name, m.id, time.Since(last), err)
				return
			}
		}
	}
}

// commit records offsets (partition → offset) as the group's committed
// positions in generation m.
func (g *group) commit(ctx context.Context, m *membership, offsets map[int]int64) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = g.name, m.id, m.memberID
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = g.topic
	for _, p := range slices.Sorted(maps.Keys(offsets)) {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = int32(p), offsets[p], -1
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, g.cl)
	if err != nil {
		return fmt.Errorf("ingest: group %q: commit: %w", g.name, kafkaconn.Classify(err))
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return fmt.Errorf("ingest: group %q: commit of %s partition %d: %w", g.name, rt.Topic, rp.Partition, err)
			}
		}
	}
	return nil
}

// committed fetches the group's committed offsets of partitions; a
// partition without one is absent.
func (g *group) committed(ctx context.Context, partitions []int) (map[int]int64, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = g.name
	t := kmsg.NewOffsetFetchRequestTopic()
	t.Topic = g.topic
	for _, p := range partitions {
		t.Partitions = append(t.Partitions, int32(p))
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, g.cl)
	if err != nil {
		return nil, fmt.Errorf("ingest: group %q: committed offsets: %w", g.name, kafkaconn.Classify(err))
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("ingest: group %q: committed offsets: %w", g.name, err)
	}
	out := map[int]int64{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, fmt.Errorf("ingest: group %q: committed offset of %s partition %d: %w", g.name, rt.Topic, rp.Partition, err)
			}
			if rt.Topic == g.topic && rp.Offset >= 0 {
				out[int(rp.Partition)] = rp.Offset
			}
		}
	}
	return out, nil
}

// leave ends m's heartbeats and leaves the group, so that the others take
// its partitions at once instead of after the session timeout.
func (g *group) leave(m *membership) {
	if m != nil {
		m.end()
		<-m.beaten
	}
	g.mu.Lock()
	id := g.memberID
	g.mu.Unlock()
	if id != "" {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group, req.MemberID = g.name, id
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = id
		req.Members = append(req.Members, lm)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		// Leaving is a courtesy: a member that cannot leave expires.
		_, _ = req.RequestWith(ctx, g.cl)
		cancel()
	}
	g.cl.Close()
}
