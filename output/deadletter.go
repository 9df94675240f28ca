package output

import (
	"encoding/base64"
	"strconv"
	"unicode/utf8"

	"github.com/gcsm/gcsm/internal/jsonstr"
)

// Encoding values of DeadLetter.
const base64Encoding = "base64"

// DeadLetter is an input message that could not be used, or an alert that could not be written
// (docs/operations.md, "Kafka").
type DeadLetter struct {
	Reason    string `json:"reason,omitempty"` // the class: an input's rejects_total reason, or an alert's ReasonAlertTooLarge
	Error     string `json:"error"`
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	Offset    int64  `json:"offset"`
	Value     string `json:"value"`                    // the original bytes; base64 when not valid UTF-8
	Encoding  string `json:"value_encoding,omitempty"` // "base64" when Value is base64

	// An alert's: Topic is the output topic, Partition and Offset are -1, Value is the alert (cut at
	// 64 KiB), Key its key (cut at 16 KiB), and Bytes its record's size over the topic's Limit.
	Query string `json:"query,omitempty"`
	Key   string `json:"key,omitempty"`
	Batch uint64 `json:"batch,omitempty"`
	Bytes int    `json:"bytes,omitempty"`
	Limit int64  `json:"limit,omitempty"`
}

// NewDeadLetter returns the dead letter of the message at topic/partition/offset, rejected for reason. A
// UTF-8 value is kept as it is so that an operator can read the bad line; any other value is base64
// (standard, padded) with Encoding "base64", because JSON would replace its invalid bytes and lose them.
func NewDeadLetter(reason, topic string, partition int, offset int64, value []byte) DeadLetter {
	d := DeadLetter{Error: reason, Topic: topic, Partition: partition, Offset: offset}
	if utf8.Valid(value) {
		d.Value = string(value)
	} else {
		d.Value = base64.StdEncoding.EncodeToString(value)
		d.Encoding = base64Encoding
	}
	return d
}

// appendDeadLetter appends d as the JSON object of its struct tags, as encoding/json would write it.
func appendDeadLetter(dst []byte, d *DeadLetter) []byte {
	dst = append(dst, '{')
	if d.Reason != "" {
		dst = append(dst, `"reason":`...)
		dst = jsonstr.Append(dst, d.Reason)
		dst = append(dst, ',')
	}
	dst = append(dst, `"error":`...)
	dst = jsonstr.Append(dst, d.Error)
	dst = append(dst, `,"topic":`...)
	dst = jsonstr.Append(dst, d.Topic)
	dst = append(dst, `,"partition":`...)
	dst = strconv.AppendInt(dst, int64(d.Partition), 10)
	dst = append(dst, `,"offset":`...)
	dst = strconv.AppendInt(dst, d.Offset, 10)
	dst = append(dst, `,"value":`...)
	dst = jsonstr.Append(dst, d.Value)
	if d.Encoding != "" {
		dst = append(dst, `,"value_encoding":`...)
		dst = jsonstr.Append(dst, d.Encoding)
	}
	if d.Query != "" {
		dst = append(dst, `,"query":`...)
		dst = jsonstr.Append(dst, d.Query)
	}
	if d.Key != "" {
		dst = append(dst, `,"key":`...)
		dst = jsonstr.Append(dst, d.Key)
	}
	if d.Batch != 0 {
		dst = append(dst, `,"batch":`...)
		dst = strconv.AppendUint(dst, d.Batch, 10)
	}
	if d.Bytes != 0 {
		dst = append(dst, `,"bytes":`...)
		dst = strconv.AppendInt(dst, int64(d.Bytes), 10)
	}
	if d.Limit != 0 {
		dst = append(dst, `,"limit":`...)
		dst = strconv.AppendInt(dst, d.Limit, 10)
	}
	return append(dst, '}')
}

// appendDeadKey appends the Kafka key of d, "topic/partition/offset": the input position names the
// message uniquely, so a replayed dead letter has the same key as the first. An alert's is its own key,
// as in the output topic.
func appendDeadKey(dst []byte, d *DeadLetter) []byte {
	if d.Key != "" {
		return append(dst, d.Key...)
	}
	dst = append(dst, d.Topic...)
	dst = append(dst, '/')
	dst = strconv.AppendInt(dst, int64(d.Partition), 10)
	dst = append(dst, '/')
	return strconv.AppendInt(dst, d.Offset, 10)
}
