package ingest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gcsm/gcsm/internal/kafkaconn"
)

// ErrFenced is a transactional offset commit refused because this member no
// longer holds its generation: the group gave the partitions to another
// member, whose output the transaction would duplicate. The transaction
// must be aborted.
var ErrFenced = errors.New("fenced: the group has moved on to another generation")

// CommitInTxn adds offsets (partition → next offset to read) to the
// transaction that cl, a transactional client, has open, as the group's
// committed positions in this generation: they become visible with the
// transaction's output, or not at all. The group coordinator checks the
// generation and member (KIP-447), so a member that lost its partitions in
// a rebalance gets ErrFenced and its transaction cannot commit.
func (g *Generation) CommitInTxn(ctx context.Context, cl *kgo.Client, txnID string, offsets map[int]int64) error {
	if len(offsets) == 0 {
		return nil
	}
	if g.m.ended.Err() != nil {
		return fmt.Errorf("ingest: group %q: generation %d has ended: %w", g.g.name, g.ID, ErrFenced)
	}
	return commitInTxn(ctx, cl, txnID, g.g.name, g.m.id, g.m.memberID, g.g.topic, offsets)
}

// concurrentRetry spaces the retries of CONCURRENT_TRANSACTIONS, which a
// coordinator answers while the previous transaction's markers are still
// being written: a few milliseconds.
const concurrentRetry = 20 * time.Millisecond

func commitInTxn(ctx context.Context, cl *kgo.Client, txnID, group string, gen int32, member, topic string, offsets map[int]int64) error {
	id, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		return fmt.Errorf("ingest: group %q: transactional commit: %w", group, kafkaconn.Classify(err))
	}
	// AddOffsetsToTxn ties the group's offsets partition to the
	// transaction; brokers with KIP-890 would take TxnOffsetCommit v5
	// alone, older ones need it, and every one accepts it.
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = txnID, id, epoch, group
	for {
		resp, err := add.RequestWith(ctx, cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if errors.Is(err, kerr.ConcurrentTransactions) {
			select {
			case <-time.After(concurrentRetry):
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err != nil {
			return fmt.Errorf("ingest: group %q: adding offsets to transaction %q: %w", group, txnID, kafkaconn.Classify(err))
		}
		break
	}
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = txnID, group, id, epoch
	req.Generation, req.MemberID = gen, member
	t := kmsg.NewTxnOffsetCommitRequestTopic()
	t.Topic = topic
	for _, p := range slices.Sorted(maps.Keys(offsets)) {
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = int32(p), offsets[p], -1
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("ingest: group %q: transactional commit: %w", group, kafkaconn.Classify(err))
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			err := kerr.ErrorForCode(rp.ErrorCode)
			switch {
			case err == nil:
			case errors.Is(err, kerr.IllegalGeneration), errors.Is(err, kerr.UnknownMemberID), errors.Is(err, kerr.FencedInstanceID):
				return fmt.Errorf("ingest: group %q: generation %d: %v: %w", group, gen, err, ErrFenced)
			default:
				return fmt.Errorf("ingest: group %q: transactional commit of %s partition %d: %w", group, rt.Topic, rp.Partition, err)
			}
		}
	}
	return nil
}
