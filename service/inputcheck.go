package service

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gcsm/gcsm/ingest"
)

// ErrInputLost is the cause of a start that checkInput refused: records the
// state needs are not on the brokers, so going on would build a graph that
// silently differs from the stream's.
var ErrInputLost = errors.New("input lost")

// checkInput compares the restored position with the input's offsets on
// the brokers before anything is read, and refuses, unless
// state.accept_input_loss is set, two starts that would otherwise go
// ahead in silence:
//   - a partition that ends before the position: the topic was recreated
//     or truncated, and its offsets now name other records (kgo would
//     reset to offset 0 and apply them over the old graph);
//   - a partition the state holds no position for whose log starts past
//     offset 0: retention removed records that were never applied, and no
//     checkpoint holds them (all unusable, or none yet).
//
// A partition whose position the log start has passed keeps the retention
// gap warning of ingest.ConsumerConfig.Skipped: the checkpoint names the
// lost range, and the operator chose that retention. The batch log's
// positions are at or past the checkpoint's, so the checkpoint's decide.
// Accepted, each partition is read from its first offset.
func (s *Service) checkInput(ctx context.Context) error {
	cl, err := s.kafka.NewClient()
	if err != nil {
		return fmt.Errorf("cannot check the input's offsets against the state: %w", err)
	}
	defer cl.Close()
	topic := s.cfg.Input.Topic
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	first, end, err := ingest.TopicOffsets(cctx, cl, topic)
	if errors.Is(err, ingest.ErrNoTopic) {
		// A topic to be created by its first producer; the checkpoint's
		// partitions are then as good as gone.
		first, end, err = map[int]int64{}, map[int]int64{}, nil
		for p := range s.position {
			first[p], end[p] = 0, 0
		}
	}
	if err != nil {
		return fmt.Errorf("cannot check the input's offsets against the state: %w", err)
	}
	var problems []string
	from := map[int]int64{}
	for _, p := range slices.Sorted(maps.Keys(end)) {
		at, ok := s.position[p]
		switch {
		case ok && end[p] < at:
			problems = append(problems, fmt.Sprintf("partition %d ends at offset %d, before the checkpoint's position %d (the topic was recreated or truncated; its offsets now name other records)", p, end[p], at))
		case !ok && first[p] > 0:
			problems = append(problems, fmt.Sprintf("partition %d starts at offset %d: records [0, %d) are gone (retention) and no usable checkpoint holds them", p, first[p], first[p]))
		default:
			continue
		}
		from[p] = first[p]
	}
	if len(problems) == 0 {
		return nil
	}
	what := fmt.Sprintf("input topic %q: %s", topic, strings.Join(problems, "; "))
	if !s.cfg.State.AcceptInputLoss {
		return fmt.Errorf("%w: %s; the graph would silently differ from the stream. Start with a new state.dir to rebuild from what the topic holds, or set state.accept_input_loss (gcsm run --accept-input-loss) to go on from each partition's first offset", ErrInputLost, what)
	}
	s.log.Warn().Bool("accept_input_loss", true).Interface("from", from).
		Msgf("INPUT LOSS ACCEPTED: %s; reading these partitions from their first offsets over the graph as it is, which no longer matches the stream", what)
	maps.Copy(s.position, from)
	s.publishPosition()
	return nil
}
