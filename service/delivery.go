package service

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/gcsm/gcsm/output"
)

// Delivery's failures (docs/operations.md, "Delivery guarantees"). A Send
// whose records fail is sent again, only the records that failed, in
// batch order. Records the brokers refuse for what they are (refused
// records: too large, invalid, corrupt) are tried at most maxResends more
// times, then given up, reported and counted, and the stream goes on.
// Records that failed for the cluster's sake (unreachable, timed out, a
// leader or coordinator moving, not authorized) are sent again until they
// are acknowledged, however long that takes: an outage must lose nothing,
// and it shows on /readyz as undeliverable output meanwhile. Before issue
// 42 a failed batch was written again whole, with every batch after it,
// for ever: one alert the broker refused (MESSAGE_TOO_LARGE) blocked all
// alerting and wrote the batch's other alerts 60 times in 40 s.

// maxResends bounds the rounds of re-sending refused records. Each
// round's records have had kgo's own retries (output.max_attempts produce
// attempts, within its delivery timeout), so three more rounds, 0.25 to
// 1 s apart, are enough to tell a record the brokers refuse for good.
const maxResends = 3

// maxBackoff caps the wait between rounds while the cluster is away.
const maxBackoff = 5 * time.Second

// recordRefused says whether err is the brokers refusing the records themselves,
// which sending them again cannot mend, rather than the cluster failing to
// take them.
func recordRefused(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) ||
		errors.Is(err, kerr.InvalidRecord) || errors.Is(err, kerr.CorruptMessage) ||
		errors.Is(err, kerr.InvalidTimestamp) || errors.Is(err, kerr.UnsupportedForMessageFormat)
}

// Reasons of undelivered_total.
const (
	reasonRetries    = "retries"    // still failing after maxResends rounds
	reasonSuperseded = "superseded" // a later batch's event of its key is in the topic
)

// redo is a sent batch's records that are not yet acknowledged: indexes
// into its dead letters and events.
type redo struct {
	b               *batchState
	letters, events []int
	err             error
}

// resend delivers what the sends of ws left unacknowledged, every one of
// them done, by the rule above, and reports their diverted events. It
// returns an error only once ctx ends.
func (s *Service) resend(ctx context.Context, sender output.Sender, ws []sent) error {
	rs := make([]redo, len(ws))
	for i, w := range ws {
		rs[i] = redo{b: w.b, err: w.pending.Err()}
		rs[i].letters, rs[i].events = w.pending.Unsent()
		s.diverted(w.b, w.pending.Diverted(), nil)
	}
	backoff := 250 * time.Millisecond
	for round := 1; ; round++ {
		s.supersede(rs)
		left := 0
		for _, r := range rs {
			left += len(r.letters) + len(r.events)
		}
		if left == 0 {
			return nil
		}
		if round > maxResends && s.giveUp(rs) == left {
			return nil
		}
		for _, r := range rs {
			if n := len(r.letters) + len(r.events); n > 0 {
				s.log.Warn().Err(r.err).Uint64("batch", r.b.id).Int("records", n).Int("round", round).Dur("retry_in", backoff).
					Msg("output not acknowledged; sending the records that failed again")
			}
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff = min(2*backoff, maxBackoff)
		// All of the round's sends go out before any is awaited: records
		// of successive Sends keep their order within a partition.
		pend := make([]output.Pending, len(rs))
		for i, r := range rs {
			if len(r.letters)+len(r.events) > 0 {
				pend[i] = sender.Send(ctx, pick(r.b.dead, r.letters), pick(r.b.events, r.events))
			}
		}
		for i, pd := range pend {
			if pd == nil {
				continue
			}
			select {
			case <-pd.Done():
			case <-ctx.Done():
				return ctx.Err()
			}
			r := &rs[i]
			s.diverted(r.b, pd.Diverted(), r.events)
			letters, events := pd.Unsent()
			r.letters, r.events, r.err = remap(letters, r.letters), remap(events, r.events), pd.Err()
		}
	}
}

// supersede drops from rs the failed events whose key a later batch of rs
// carries in an event already acknowledged: sending the older one again
// would put it after the newer, and a key's last event is its state.
func (s *Service) supersede(rs []redo) {
	later := map[string]bool{}
	for i := len(rs) - 1; i >= 0; i-- {
		r := &rs[i]
		kept := r.events[:0]
		dropped := 0
		for _, e := range r.events {
			if later[r.b.events[e].Key] {
				dropped++
				continue
			}
			kept = append(kept, e)
		}
		r.events = kept
		if dropped > 0 {
			r.b.lost += dropped
			s.met.undelivered.WithLabelValues(reasonSuperseded).Add(float64(dropped))
			s.log.Warn().Uint64("batch", r.b.id).Int("events", dropped).
				Msg("failed events not sent again: a later batch's event of the same key is already delivered")
		}
		failed := make(map[int]bool, len(r.events))
		for _, e := range r.events {
			failed[e] = true
		}
		for e := range r.b.events {
			if !failed[e] {
				later[r.b.events[e].Key] = true
			}
		}
	}
}

// giveUp reports the refused records of rs still failing after maxResends
// rounds, and drops them from rs: an error log line per batch,
// undelivered_total and the time lastUndelivered reads. Their batch then
// counts as delivered. It returns how many records it gave up.
func (s *Service) giveUp(rs []redo) int {
	given := 0
	for i := range rs {
		r := &rs[i]
		n := len(r.letters) + len(r.events)
		if n == 0 || !recordRefused(r.err) {
			continue
		}
		given += n
		r.b.lost += len(r.events)
		r.b.lostLetters += len(r.letters)
		s.gaveUp(n)
		s.log.Error().Err(r.err).Uint64("batch", r.b.id).Int("events", len(r.events)).Int("dead_letters", len(r.letters)).
			Int("rounds", maxResends).Msg("output given up: these records are not in Kafka; the stream goes on")
		r.letters, r.events = nil, nil
	}
	return given
}

// gaveUp counts n records given up after maxResends rounds, and notes
// when, for readiness.
func (s *Service) gaveUp(n int) {
	s.met.undelivered.WithLabelValues(reasonRetries).Add(float64(n))
	s.met.lastUndelivered.Store(time.Now().UnixNano())
	s.met.lastUndeliveredAt.SetToCurrentTime()
}

// lastUndelivered is when delivery last gave records up (zero if never),
// for readiness: the output is healthy while it is zero or old.
func (s *Service) lastUndelivered() time.Time {
	if ns := s.met.lastUndelivered.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// diverted counts and logs the events of b that went to the dead-letter
// topic as too large. Their indexes are into the events sent: b.events,
// or, with sent not nil, b.events at sent's indexes.
func (s *Service) diverted(b *batchState, tl []output.TooLarge, sent []int) {
	for _, d := range tl {
		i := d.Index
		if sent != nil {
			i = sent[i]
		}
		e := &b.events[i]
		b.diverted++
		s.met.rejects.WithLabelValues(output.ReasonAlertTooLarge).Inc()
		key := e.Key
		if len(key) > 256 {
			key = key[:256] + "…"
		}
		s.log.Warn().Str("query", e.Query).Str("key", key).Uint64("batch", b.id).Str("change", e.Change).
			Int("bytes", d.Bytes).Int("limit", d.Limit).Msg("alert over the output topic's message limit: sent to the dead-letter topic")
	}
}

// pick returns xs at the indexes idx.
func pick[T any](xs []T, idx []int) []T {
	out := make([]T, len(idx))
	for i, j := range idx {
		out[i] = xs[j]
	}
	return out
}

// remap turns indexes into a picked slice into indexes into the original.
func remap(idx, picked []int) []int {
	for i, j := range idx {
		idx[i] = picked[j]
	}
	return idx
}

// deliveryMetrics are delivery's failures.
type deliveryMetrics struct {
	undelivered       *prometheus.CounterVec // reason
	lastUndeliveredAt prometheus.Gauge
	lastUndelivered   atomic.Int64 // unix ns
}

// registerDelivery adds delivery's series to m: its own, and the
// alert_too_large reason of rejects_total.
func (m *metrics) registerDelivery(reg prometheus.Registerer) {
	m.deliveryMetrics = &deliveryMetrics{
		undelivered: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "gcsm", Name: "undelivered_total",
			Help: "Alerts and dead letters given up by delivery, by reason: retries (still failing after the bounded re-sends) or superseded (a later event of the key was delivered)."}, []string{"reason"}),
		lastUndeliveredAt: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "gcsm", Name: "undelivered_last_timestamp_seconds",
			Help: "When delivery last gave records up after its re-sends; zero if never."}),
	}
	reg.MustRegister(m.undelivered, m.lastUndeliveredAt)
	for _, r := range []string{reasonRetries, reasonSuperseded} {
		m.undelivered.WithLabelValues(r)
	}
	m.rejects.WithLabelValues(output.ReasonAlertTooLarge)
}
