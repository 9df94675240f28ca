package ingest

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gcsm/gcsm/internal/kafkaconn"
)

// ConsumePartition hands each record of topic's partition to fn, from the
// offset from on, until the position passes to - 1 (to < 0: no end), fn
// returns an error, a fetch fails, or ctx is done. to must lie past from.
//
// It reads read_committed, as every consumer of gcsm's transactional output
// must: records of aborted or still open transactions never reach fn. A
// transaction's commit or abort marker takes an offset and is no record for
// fn, so the markers are fetched (KeepControlRecords) and only move the
// position: the offset before the end of a partition is often a marker, and
// waiting to be handed the record there would never end.
func ConsumePartition(ctx context.Context, conn kafkaconn.Conn, topic string, partition int32, from kgo.Offset, to int64, fn func(*kgo.Record) error) error {
	cl, err := conn.NewClient(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: from}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := fs.Err(); err != nil {
			return fmt.Errorf("topic %q partition %d: %w", topic, partition, kafkaconn.Classify(err))
		}
		for it := fs.RecordIter(); !it.Done(); {
			m := it.Next()
			if to >= 0 && m.Offset >= to {
				return nil
			}
			if !m.Attrs.IsControl() {
				if err := fn(m); err != nil {
					return err
				}
			}
			if to >= 0 && m.Offset+1 >= to {
				return nil
			}
		}
	}
}
