package output

import (
	"encoding/base64"
	"strconv"
	"unicode/utf8"

	"github.com/gcsm/gcsm/internal/jsonstr"
)

// Encoding values of DeadLetter.
const base64Encoding = "base64"

// DeadLetter is an input message that could not be used (docs/operations.md, "Kafka").
type DeadLetter struct {
	Error     string `json:"error"`
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	Offset    int64  `json:"offset"`
	Value     string `json:"value"`                    // the original bytes; base64 when not valid UTF-8
	Encoding  string `json:"value_encoding,omitempty"` // "base64" when Value is base64
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
	dst = append(dst, `{"error":`...)
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
	return append(dst, '}')
}

// appendDeadKey appends the Kafka key of d, "topic/partition/offset": the input position names the
// message uniquely, so a replayed dead letter has the same key as the first.
func appendDeadKey(dst []byte, d *DeadLetter) []byte {
	dst = append(dst, d.Topic...)
	dst = append(dst, '/')
	dst = strconv.AppendInt(dst, int64(d.Partition), 10)
	dst = append(dst, '/')
	return strconv.AppendInt(dst, d.Offset, 10)
}
