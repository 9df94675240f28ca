package service

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gcsm/gcsm/ingest"
)

// The watch samples what the run loop cannot see while it waits: the
// input's end offsets on the brokers, the clock, and the output's
// acknowledgements. A broker outage, a stuck delivery and an input that
// no batch takes all leave the loop blocked with no batch ending, so
// metrics set at batch ends would freeze at healthy values. From the
// samples it sets consumer_lag, checkpoint_age_seconds, broker_reachable
// and ready, logs the broker going and coming back, logs progress every
// progressEvery while working, and gives /readyz its reason to fail.

const (
	// sampleEvery is the watch's period: one metadata and two ListOffsets
	// requests on a client kept open, a few hundred bytes each way.
	sampleEvery = time.Second
	// sampleTimeout bounds one sample; kgo retries within it.
	sampleTimeout = 3 * time.Second
	// brokerGrace is how long samples may fail before the broker counts as
	// unreachable: a leader moving or a broker restarting under a rolling
	// upgrade fails a request or two and is no outage.
	brokerGrace = 5 * time.Second
	// progressEvery is the period of the info line of a working service.
	progressEvery = 10 * time.Second
)

// health is one moment's view of the service, from which readiness
// follows (reason).
type health struct {
	now time.Time
	// active says that this process consumes the input; a standby has no
	// lag of its own and cannot stall.
	active bool
	// unreachable is when the samples began to fail, zero while they
	// succeed or fail within brokerGrace; err is the last failure.
	unreachable time.Time
	err         error
	// lag is the input records past the acknowledged position; waiting
	// is when lag last became positive, zero while it is 0.
	lag     int64
	waiting time.Time
	// done is when the last batch was acknowledged, or the service became
	// active if later.
	done time.Time
	// oldestOut is when the oldest batch still waiting for its output's
	// acknowledgement was handed to the output stage; zero when none waits.
	oldestOut time.Time
	// gaveUp is when delivery last gave up records the brokers refused
	// (delivery.go); zero if never.
	gaveUp time.Time
	// behind names the partitions whose end is before the acknowledged
	// position: the input topic was recreated or truncated under the
	// service.
	behind []string
}

// reason is why the service is not ready, or "" when it is. One line, so
// that a probe's log and kubectl describe show it whole.
func (h health) reason(stallAfter time.Duration) string {
	since := func(t time.Time) time.Duration { return h.now.Sub(t).Round(time.Second) }
	switch {
	case !h.unreachable.IsZero():
		return fmt.Sprintf("broker unreachable since %s (%v): %v", h.unreachable.UTC().Format(time.RFC3339), since(h.unreachable), h.err)
	case len(h.behind) > 0:
		return "input went backwards (topic recreated or truncated?): " + strings.Join(h.behind, "; ")
	case !h.oldestOut.IsZero() && h.now.Sub(h.oldestOut) >= stallAfter:
		return fmt.Sprintf("output undeliverable: the oldest matched batch has waited %v for its acknowledgement", since(h.oldestOut))
	case !h.gaveUp.IsZero() && h.now.Sub(h.gaveUp) < stallAfter:
		return fmt.Sprintf("output refused: records the brokers refused were given up %v ago (gcsm_undelivered_total, and the error log, say which)", since(h.gaveUp))
	case h.active && h.lag > 0 && !h.waiting.IsZero():
		from := h.waiting
		if h.done.After(from) {
			from = h.done
		}
		if h.now.Sub(from) >= stallAfter {
			return fmt.Sprintf("stalled: no batch completed for %v while %d records wait", since(from), h.lag)
		}
	}
	return ""
}

// watcher is the watch's state between samples.
type watcher struct {
	cl      *kgo.Client
	failed  time.Time // the first of the current run of failed samples
	down    bool      // the outage has been logged
	waiting time.Time
	// last is the progress at the last info line, and its time.
	last      Progress
	lastAt    time.Time
	lastUpd   int64
	lastIdle  bool
	behindLog string // the backwards report last logged
}

// watch samples until ctx ends.
func (s *Service) watch(ctx context.Context) {
	cl, err := s.kafka.NewClient()
	if err != nil {
		s.log.Error().Err(err).Msg("health watch not started: consumer_lag and /readyz go unsampled")
		return
	}
	defer cl.Close()
	s.met.brokerReachable.Set(1) // Run's kafka.Check has just reached it
	w := &watcher{cl: cl, last: s.Progress(), lastAt: time.Now(), lastUpd: s.updates.Load()}
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			s.sample(ctx, w)
		}
	}
}

// sample takes one sample and publishes what follows from it.
func (s *Service) sample(ctx context.Context, w *watcher) {
	rctx, cancel := context.WithTimeout(ctx, sampleTimeout)
	first, end, err := ingest.TopicOffsets(rctx, w.cl, s.cfg.Input.Topic)
	cancel()
	if ctx.Err() != nil {
		return
	}
	now := time.Now()
	s.mu.Lock()
	h := health{now: now, active: s.active, done: s.doneAt, lag: -1}
	pos := maps.Clone(s.progress.Position)
	ready := s.ready
	s.mu.Unlock()
	if t := s.oldestOut.Load(); t != 0 {
		h.oldestOut = time.Unix(0, t)
	}
	h.gaveUp = s.lastUndelivered()
	if err != nil {
		if w.failed.IsZero() {
			w.failed = now
		}
		if now.Sub(w.failed) >= brokerGrace {
			h.unreachable, h.err = w.failed, err
			if !w.down {
				w.down = true
				s.log.Warn().Err(err).Time("since", w.failed).Msg("broker unreachable: no input is read and no output delivered until it is back")
			}
		}
	} else {
		if w.down {
			s.log.Warn().Dur("after", now.Sub(w.failed).Round(time.Second)).Msg("broker reachable again")
		}
		w.failed, w.down = time.Time{}, false
		s.met.lag.Set(0)
		if h.active {
			h.lag, h.behind = inputLag(pos, first, end)
			s.met.lag.Set(float64(h.lag))
			if b := strings.Join(h.behind, "; "); b != "" && b != w.behindLog {
				s.log.Error().Str("topic", s.cfg.Input.Topic).Str("partitions", b).
					Msg("the input's end is before the applied position: the topic was recreated or truncated, and its new records are not the ones the graph holds")
				w.behindLog = b
			}
		}
	}
	s.met.brokerReachable.Set(b2f(h.unreachable.IsZero()))
	switch {
	case h.lag <= 0:
		w.waiting = time.Time{}
	case w.waiting.IsZero():
		w.waiting = now
	}
	h.waiting = w.waiting
	if t := s.ckptAt.Load(); t != 0 {
		s.met.checkpointAge.Set(now.Sub(time.Unix(0, t)).Seconds())
	}
	reason := h.reason(s.cfg.Health.StallAfter)
	s.mu.Lock()
	prev := s.unready
	s.unready = reason
	s.mu.Unlock()
	s.met.ready.Set(b2f(ready && reason == ""))
	// The broker's going and coming are logged above, once each; the other
	// reasons change with their figures, so only a change of kind is
	// logged.
	if k, pk := reasonKind(reason), reasonKind(prev); k != pk {
		switch {
		case k != "" && k != "broker":
			s.log.Warn().Str("reason", reason).Msg("not ready")
		case k == "" && pk != "broker":
			s.log.Info().Str("was", prev).Msg("ready again")
		}
	}
	if now.Sub(w.lastAt) >= progressEvery {
		s.logProgress(w, now, h.lag)
	}
}

// logProgress writes the info line of the last progressEvery: what the
// service did, so that an operator sees events arrive. An idle service
// says so once, then keeps quiet until input comes.
func (s *Service) logProgress(w *watcher, now time.Time, lag int64) {
	p, upd := s.Progress(), s.updates.Load()
	secs := now.Sub(w.lastAt).Seconds()
	idle := p.Batches == w.last.Batches && lag <= 0
	switch {
	case !idle:
		s.log.Info().Uint64("batches", p.Batches-w.last.Batches).Float64("updates_per_s", float64(int64(float64(upd-w.lastUpd)/secs*10))/10).
			Int64("alerts", p.Events-w.last.Events).Int64("dead_letters", p.DeadLetters-w.last.DeadLetters).Int64("lag", lag).
			Msgf("working: last %v", now.Sub(w.lastAt).Round(time.Second))
	case !w.lastIdle:
		s.log.Info().Int64("lag", lag).Msgf("idle: no input in the last %v", now.Sub(w.lastAt).Round(time.Second))
	}
	w.last, w.lastAt, w.lastUpd, w.lastIdle = p, now, upd, idle
}

// inputLag is the records past pos, the next offsets to apply, on the
// partitions whose offsets are first and end; a partition pos lacks counts
// from its first offset. behind names the partitions whose end is before
// pos, which add nothing to the lag.
func inputLag(pos, first, end map[int]int64) (lag int64, behind []string) {
	for _, p := range slices.Sorted(maps.Keys(end)) {
		at, ok := pos[p]
		if !ok {
			at = first[p]
		}
		if end[p] < at {
			behind = append(behind, fmt.Sprintf("partition %d ends at %d, before the applied position %d", p, end[p], at))
			continue
		}
		lag += end[p] - max(at, first[p])
	}
	return lag, behind
}

// reasonKind is a readiness reason's first word: broker, input, output
// or stalled:.
func reasonKind(reason string) string {
	k, _, _ := strings.Cut(reason, " ")
	return k
}

func b2f(v bool) float64 {
	if v {
		return 1
	}
	return 0
}
