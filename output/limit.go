package output

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The largest alert the output topic takes. The broker refuses a record batch over the topic's
// max.message.bytes with MESSAGE_TOO_LARGE, and kgo refuses a record that does not fit in
// ProducerBatchMaxBytes on its own; either way the alert could never be written, and before this check
// its batch was retried for ever, with every later alert behind it (issue 42). So Franz learns the limit
// once, before its first record, and sends an alert that cannot fit to the dead-letter topic instead.

// DefaultMaxMessageBytes is Kafka's default message.max.bytes, the limit when the brokers do not say.
const DefaultMaxMessageBytes = 1048588

// recordOverhead is what a one-record batch adds to the record's key and value: the v2 batch header is
// 61 bytes and a record's framing (length, attributes, timestamp and offset deltas, key and value
// lengths, header count) at most 32; the rest is margin.
const recordOverhead = 128

// variantBound bounds how much two events of one key can differ in size: only "change" (11 bytes at
// most), "batch" (20 digits), "event_time" (48 with its name), "source" (363 with a 249-byte topic name,
// Kafka's longest) and "initial" (15) differ, 457 bytes in all. Franz decides on an alert's size less
// these fields, plus this bound, so that a key's appeared and disappeared fall on the same side of the
// limit: a consumer never gets a disappeared for an appeared it was not sent, nor keeps an appeared
// whose disappeared was diverted.
const variantBound = 512

// TooLarge is an alert that Franz sent to the dead-letter topic instead of the output topic.
type TooLarge struct {
	Index int // in the Send's events
	Bytes int // its record's key and value
	Limit int // the output topic's limit when it was sent
}

// readLimit asks the brokers for the output topic's max.message.bytes, or failing that the broker's
// message.max.bytes, and returns the smaller of it and BatchBytes: kgo refuses a record over
// ProducerBatchMaxBytes itself. It falls back to Kafka's default when the brokers do not answer, so that
// a cluster without DescribeConfigs rights still gets the usual limit.
func (k *Franz) readLimit(ctx context.Context) (int64, error) {
	limit := int64(DefaultMaxMessageBytes)
	got, err := k.describeLimit(ctx)
	if err == nil {
		limit = got
	}
	return min(limit, k.batchBytes), err
}

// describeLimit is readLimit's DescribeConfigs of the topic and of one broker.
func (k *Franz) describeLimit(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, k.timeout)
	defer cancel()
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, k.cl)
	if err != nil {
		return 0, fmt.Errorf("cannot read the output topic's message limit: metadata: %w", err)
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	topic := kmsg.NewDescribeConfigsRequestResource()
	topic.ResourceType, topic.ResourceName = kmsg.ConfigResourceTypeTopic, k.topic
	topic.ConfigNames = []string{"max.message.bytes"}
	req.Resources = append(req.Resources, topic)
	if len(meta.Brokers) > 0 {
		broker := kmsg.NewDescribeConfigsRequestResource()
		broker.ResourceType, broker.ResourceName = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(meta.Brokers[0].NodeID))
		broker.ConfigNames = []string{"message.max.bytes"}
		req.Resources = append(req.Resources, broker)
	}
	resp, err := req.RequestWith(ctx, k.cl)
	if err != nil {
		return 0, fmt.Errorf("cannot read the output topic's message limit: %w", err)
	}
	var byType [2]int64 // topic, broker
	var errs []error
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", r.ResourceType, r.ResourceName, err))
			continue
		}
		for _, c := range r.Configs {
			if c.Value == nil {
				continue
			}
			n, err := strconv.ParseInt(*c.Value, 10, 64)
			if err != nil || n <= 0 {
				errs = append(errs, fmt.Errorf("%s %q: %s %q is not a size", r.ResourceType, r.ResourceName, c.Name, *c.Value))
				continue
			}
			if r.ResourceType == kmsg.ConfigResourceTypeTopic {
				byType[0] = n
			} else {
				byType[1] = n
			}
		}
	}
	for _, n := range byType {
		if n > 0 {
			return n, nil
		}
	}
	// An output topic that does not exist yet is created with the broker's limit.
	return 0, fmt.Errorf("cannot read the output topic's message limit: %w", errors.Join(errs...))
}

// limit returns the output topic's limit, reading it first if it is not known or a broker has since
// refused a record as too large (the topic's config was lowered). A failed read takes Kafka's default
// (or BatchBytes, if smaller) until the next MESSAGE_TOO_LARGE.
func (k *Franz) limit(ctx context.Context) int64 {
	if l := k.max.Load(); l > 0 && !k.stale.Load() {
		return l
	}
	k.limitMu.Lock()
	defer k.limitMu.Unlock()
	if l := k.max.Load(); l > 0 && !k.stale.Load() {
		return l
	}
	l, err := k.readLimit(ctx)
	k.limitErr = err
	k.max.Store(l)
	k.stale.Store(false)
	return l
}

// LimitErr is the error of the last reading of the output topic's message limit: nil once it was read,
// or before the first Send.
func (k *Franz) LimitErr() error {
	k.limitMu.Lock()
	defer k.limitMu.Unlock()
	return k.limitErr
}

// fits says whether event e, encoded as key and value, fits under limit, by the rule of variantBound.
// The caller has checked the fast case, len(key)+len(value)+recordOverhead+variantBound <= limit; here
// the event is encoded again without its variant fields.
func fits(e *Event, key, value []byte, limit int64) bool {
	if int64(len(key)+len(value)+recordOverhead) > limit {
		return false
	}
	stripped := *e
	stripped.Change, stripped.Batch, stripped.EventTime, stripped.Source, stripped.Initial = "", 0, "", nil, false
	inv := len(AppendJSON(nil, &stripped))
	return int64(len(key)+inv+variantBound+recordOverhead) <= limit
}

// maxDeadAlert caps the alert and the key that a dead letter of a too-large alert carries, as the
// service caps an input message's: the letter must fit in the dead-letter topic.
const (
	maxDeadAlert = 64 << 10
	maxDeadKey   = 16 << 10
)

// tooLargeLetter is the dead letter of event e, encoded as value, over limit.
func tooLargeLetter(topic string, e *Event, value []byte, size int, limit int64) DeadLetter {
	d := DeadLetter{
		Reason: ReasonAlertTooLarge,
		Error:  fmt.Sprintf("alert of %d bytes is over the output topic's limit of %d bytes, less %d bytes of margin", size, limit, recordOverhead+variantBound),
		Topic:  topic, Partition: -1, Offset: -1,
		Query: e.Query, Batch: e.Batch, Bytes: size, Limit: limit,
		Key: cutUTF8(e.Key, maxDeadKey),
	}
	v := string(value)
	if len(v) > maxDeadAlert {
		v = cutUTF8(v, maxDeadAlert)
		d.Error += fmt.Sprintf(" (alert cut to its first %d bytes)", len(v))
	}
	d.Value = v
	return d
}

// ReasonAlertTooLarge is the Reason of an alert's dead letter.
const ReasonAlertTooLarge = "alert_too_large"

// cutUTF8 cuts s to at most n bytes, at a rune boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n]
}
