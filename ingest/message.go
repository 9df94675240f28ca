package ingest

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/internal/jsonstr"
)

// The reasons for which a Decoder refuses a value, as DecodeError.Reason.
// They are few and stable, because the service counts refusals by reason
// (gcsm_rejects_total{reason}) and files dead letters under them; what
// exactly is wrong goes into DecodeError.Detail.
const (
	// ReasonOversized: the value is longer than Decoder.MaxBytes.
	ReasonOversized = "oversized"
	// ReasonEmpty: the value holds no event: it is blank, a comment (a line
	// starting with '#' or '%') or a CSM "t" header.
	ReasonEmpty = "empty"
	// ReasonJSON: the value is not one JSON object.
	ReasonJSON = "json"
	// ReasonMissingField: "op", "src" or "dst", or a vertex's "id" or
	// "label", is absent, null or empty; or a set has neither "vertex" nor
	// "edge", or no "props", or names an empty one.
	ReasonMissingField = "missing_field"
	// ReasonUnknownOp: "op" is none of "+", "-", "insert", "delete",
	// "vertex" and "set".
	ReasonUnknownOp = "unknown_op"
	// ReasonBadSet: a set event names both a vertex ("vertex") and a
	// transfer ("edge"), or gives a field of edge and vertex events ("src",
	// "dst", "id", a label, "src_props" or "dst_props"), which a set does
	// not read: taking it silently would hide what the producer meant.
	ReasonBadSet = "bad_set"
	// ReasonBadTime: "ts" is neither an RFC 3339 string nor an integer.
	ReasonBadTime = "bad_time"
	// ReasonTSOutOfRange: "ts" is before 1970 (a negative number, or an
	// RFC 3339 time), or a number so large that its milliseconds overflow.
	// Such times are refused rather than read: no stream gcsm serves has
	// them, while a negative count is the mark of a producer's arithmetic
	// gone wrong.
	ReasonTSOutOfRange = "ts_out_of_range"
	// ReasonBadValue: an id or a label is neither a string nor an integer,
	// or a property value is not a number (within a float64's range), a
	// string, a boolean or null, or a property field is not an object.
	ReasonBadValue = "bad_value"
	// ReasonCSM: the value is not a CSM line (e, +e, -e or v).
	ReasonCSM = "csm"
	// ReasonInvalidUTF8: an id, a label, the op, the time or a property's
	// name or string value is not valid UTF-8, or is a JSON string with a
	// \u escape of half a surrogate pair.
	// Such names are refused, not repaired: encoding/json would turn every
	// bad sequence into U+FFFD and so make one vertex of distinct ids.
	ReasonInvalidUTF8 = "invalid_utf8"
	// ReasonFormat: Decoder.Format is not one that a Decoder decodes, or
	// Decoder.TSUnit no unit. It is the configuration that is wrong, not
	// the value.
	ReasonFormat = "format"
	// ReasonIDTooLong: an id (a vertex's, or an edge's "id") or a label is
	// longer than Decoder.MaxIDBytes once decoded.
	ReasonIDTooLong = "id_too_long"
)

// DefaultMaxIDBytes is the longest id or label accepted when no limit is
// set. Every alert repeats the ids of its match, and the dictionaries keep
// them for the graph's life: two 460 KB account ids made one alert larger
// than a broker's 1 MB message limit, which could then never be written.
// At 1 KiB, an alert of a 5-vertex pattern over 5 transfers stays under
// 16 KiB of names; account numbers, UUIDs and URLs of real streams fit.
const DefaultMaxIDBytes = 1 << 10

// DecodeReasons returns every DecodeError.Reason, so that a service can
// export a zero count for each before the first refusal.
func DecodeReasons() []string {
	return []string{ReasonOversized, ReasonEmpty, ReasonJSON, ReasonMissingField, ReasonUnknownOp, ReasonBadSet,
		ReasonBadTime, ReasonTSOutOfRange, ReasonBadValue, ReasonCSM, ReasonInvalidUTF8, ReasonFormat, ReasonIDTooLong}
}

// DecodeError says why a value was refused.
type DecodeError struct {
	// Reason is one of the Reason constants: a class fit for a metric label.
	Reason string
	// Detail says what is wrong, for people: `missing field "dst"`. It
	// quotes at most a few dozen bytes of the value.
	Detail string
}

// Error returns Detail: the caller knows where the value came from and
// adds that.
func (e *DecodeError) Error() string { return e.Detail }

func decodeErrorf(reason, format string, args ...any) *DecodeError {
	return &DecodeError{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// Decoder decodes message values, such as those of the input topic, into
// Records: each value is one event, a JSON object of FormatJSON or one CSM
// line. The syntax is the file Reader's, parsed by the same code, but a
// value holds exactly one event: a value without one is refused
// (ReasonEmpty) rather than skipped, since it is as much a producer's
// mistake as a malformed one.
//
// A Decoder is not safe for concurrent use; use one per goroutine. The zero
// value detects the format of each value, accepts values of up to 1 MiB and
// keeps no property.
type Decoder struct {
	// Format is FormatAuto (JSON if the value starts with '{' after white
	// space, else CSM), FormatJSON or FormatCSM. Others are refused with
	// ReasonFormat.
	Format Format
	// MaxBytes is the longest value accepted; 0 means 1 MiB. Longer values
	// are refused with ReasonOversized before they are looked at.
	MaxBytes int
	// MaxIDBytes is the longest id or label accepted, in bytes once
	// decoded; 0 means DefaultMaxIDBytes. An event with a longer one is
	// refused with ReasonIDTooLong. Ids and labels share one limit: both
	// are names that alerts repeat and dictionaries keep, and a label
	// longer than any id is as much a mistake.
	MaxIDBytes int
	// Keep names the properties that records keep; nil keeps none. It is
	// read at each Decode, so a service may set it before each batch from
	// the filter of its current queries.
	Keep *PropFilter
	// TSUnit is what a numeric "ts" counts since the epoch; the zero value
	// is milliseconds.
	TSUnit TimeUnit
	// Seen, when set, is noted every property of every JSON event taken,
	// kept or not, with its kind, under the labels of its edge or
	// vertices: what queries registered later are checked against.
	Seen *graph.Catalog

	fields []span
	js     jsonLine
	odd    oddTimes
}

// OddTime returns the first numeric ts decoded whose time lands before 1990
// or from 2100 on in TSUnit, and whether there was one, for the caller to
// warn about: it decodes as given all the same.
func (d *Decoder) OddTime() (OddTime, bool) { return d.odd.first, d.odd.seen }

// Decode decodes one value. A failure is a *DecodeError. The Record has
// Line 0; its strings share one allocation (a CSM line with leading zeros
// in an id takes another), its kept properties' lists share a second, and
// none refers to value.
//
// Decode checks syntax only, like the Reader: self-loops and deletions of
// absent edges are for the consumer to judge.
func (d *Decoder) Decode(value []byte) (rec Record, err error) {
	if derr := d.decode(value, &rec); derr != nil {
		return Record{}, derr
	}
	return rec, nil
}

// decode decodes value into *rec, a zero Record; on an error, *rec is to be
// dropped.
func (d *Decoder) decode(value []byte, rec *Record) *DecodeError {
	limit := d.MaxBytes
	if limit <= 0 {
		limit = defaultMaxLineBytes
	}
	if len(value) > limit {
		return decodeErrorf(ReasonOversized, "value is %d bytes, over the limit of %d", len(value), limit)
	}
	line := trimValue(value)
	if isComment(line) {
		if len(line) == 0 {
			return decodeErrorf(ReasonEmpty, "value is blank")
		}
		return decodeErrorf(ReasonEmpty, "value is a comment, not an event: %s", quote(line))
	}
	if d.TSUnit < Milliseconds || d.TSUnit > Nanoseconds {
		return decodeErrorf(ReasonFormat, "a Decoder reads times in s, ms, us or ns, not %v", d.TSUnit)
	}
	format := d.Format
	if format == FormatAuto {
		format = FormatCSM
		if line[0] == '{' {
			format = FormatJSON
		}
	}
	var err *DecodeError
	switch format {
	case FormatJSON:
		d.js.unit = d.TSUnit
		d.js.seen = d.Seen
		if err = d.js.parse(line, d.Keep, rec); err == nil && d.js.numTS {
			d.odd.note(d.js.rawTS, d.TSUnit, rec.Time, 0)
		}
	case FormatCSM:
		var ok bool
		*rec, ok, err = parseCSM(line, &d.fields)
		if err == nil && !ok {
			err = decodeErrorf(ReasonEmpty, `value is a CSM "t" header, not an event`)
		}
	default:
		return decodeErrorf(ReasonFormat, "a Decoder decodes JSON and CSM, not %v", format)
	}
	if err != nil {
		return err
	}
	if err := checkIDs(rec, d.MaxIDBytes); err != nil {
		return err
	}
	if format == FormatJSON {
		d.js.noteSeen(rec)
	}
	return nil
}

// checkIDs refuses a record with an id or a label longer than limit bytes
// (0: DefaultMaxIDBytes). It checks the decoded record, after every parser,
// so that the limit is the same for every format and path, and the common
// record costs six compares. The decoding it wastes on a refused one is
// rare.
func checkIDs(rec *Record, limit int) *DecodeError {
	if limit <= 0 {
		limit = DefaultMaxIDBytes
	}
	if len(rec.Src) <= limit && len(rec.Dst) <= limit && len(rec.ID) <= limit &&
		len(rec.Label) <= limit && len(rec.SrcLabel) <= limit && len(rec.DstLabel) <= limit {
		return nil
	}
	// The names of the input's fields: a vertex's are "id" and "label", a
	// set's "vertex" or "edge".
	fields := [...]struct {
		key string
		n   int
	}{{"src", len(rec.Src)}, {"dst", len(rec.Dst)}, {"label", len(rec.Label)}, {"src_label", len(rec.SrcLabel)},
		{"dst_label", len(rec.DstLabel)}, {"id", len(rec.ID)}}
	switch rec.Op {
	case graph.AddVertex:
		fields[0].key, fields[3].key = "id", "label"
	case graph.SetVertex:
		fields[0].key = "vertex"
	case graph.SetEdge:
		fields[5].key = "edge"
	}
	for _, f := range fields {
		if f.n > limit {
			return decodeErrorf(ReasonIDTooLong, "field %q is %d bytes, over the limit of %d for ids and labels", f.key, f.n, limit)
		}
	}
	panic("BUG: checkIDs found no name over the limit")
}

// trimValue drops a leading byte order mark and surrounding blanks and
// newlines: tools that publish a file line by line may keep the newline.
func trimValue(b []byte) []byte {
	b = bytes.TrimPrefix(b, bom)
	for len(b) > 0 && (isBlank(b[0]) || b[0] == '\n') {
		b = b[1:]
	}
	for len(b) > 0 && (isBlank(b[len(b)-1]) || b[len(b)-1] == '\n') {
		b = b[:len(b)-1]
	}
	return b
}

// AppendEvent appends rec to dst as one JSON input event, without a
// newline, and returns the extended slice. It is the inverse of Decode:
// for every Record r that Decode returns, Decode(AppendEvent(nil, r))
// returns r again (with the Decoder's PropFilter and TSUnit
// Milliseconds). Ids and labels are written as strings, labels and the
// edge's "id" only when given, "ts" as unix milliseconds when rec.Time is
// not 0, and each list of properties as
// an object when it is not empty. A vertex record is
// {"op":"vertex","id":…,"label":…}, with its SrcProps as "props"; a set is
// {"op":"set","vertex":…} with its SrcProps, or {"op":"set","edge":…} with
// its Props, as "props", which a set always has, and whose nulls it keeps.
// Bytes of rec's strings that are not UTF-8 become U+FFFD, as they do in
// encoding/json.
func AppendEvent(dst []byte, rec Record) []byte {
	dst = append(dst, `{"op":`...)
	switch rec.Op {
	case graph.SetVertex:
		dst = append(dst, `"set","vertex":`...)
		dst = jsonstr.Append(dst, rec.Src)
		return appendSet(dst, rec.Time, rec.SrcProps)
	case graph.SetEdge:
		dst = append(dst, `"set","edge":`...)
		dst = jsonstr.Append(dst, rec.ID)
		return appendSet(dst, rec.Time, rec.Props)
	case graph.AddVertex:
		dst = append(dst, `"vertex","id":`...)
		dst = jsonstr.Append(dst, rec.Src)
		dst = append(dst, `,"label":`...)
		dst = jsonstr.Append(dst, rec.SrcLabel)
		dst = appendTS(dst, rec.Time)
		dst = appendProps(dst, "props", rec.SrcProps)
		return append(dst, '}')
	case graph.Insert:
		dst = append(dst, `"+"`...)
	case graph.Delete:
		dst = append(dst, `"-"`...)
	default:
		// Not an event: written so that it reads back as ReasonUnknownOp.
		dst = jsonstr.Append(dst, rec.Op.String())
	}
	dst = append(dst, `,"src":`...)
	dst = jsonstr.Append(dst, rec.Src)
	dst = append(dst, `,"dst":`...)
	dst = jsonstr.Append(dst, rec.Dst)
	for _, f := range [...]struct{ key, val string }{
		{`,"label":`, rec.Label}, {`,"src_label":`, rec.SrcLabel}, {`,"dst_label":`, rec.DstLabel}, {`,"id":`, rec.ID},
	} {
		if f.val != "" {
			dst = append(dst, f.key...)
			dst = jsonstr.Append(dst, f.val)
		}
	}
	dst = appendTS(dst, rec.Time)
	if len(rec.Props)+len(rec.SrcProps)+len(rec.DstProps) > 0 {
		dst = appendProps(dst, "props", rec.Props)
		dst = appendProps(dst, "src_props", rec.SrcProps)
		dst = appendProps(dst, "dst_props", rec.DstProps)
	}
	return append(dst, '}')
}

// appendSet ends a set event after its target: "ts" and "props", which a
// set needs even when its filter kept none of them, to read back as a set.
func appendSet(dst []byte, ms int64, props []graph.Prop) []byte {
	dst = appendTS(dst, ms)
	if len(props) == 0 {
		return append(dst, `,"props":{}}`...)
	}
	dst = appendProps(dst, "props", props)
	return append(dst, '}')
}

// appendTS writes an event's "ts" when it has one.
func appendTS(dst []byte, ms int64) []byte {
	if ms != 0 {
		dst = append(dst, `,"ts":`...)
		dst = strconv.AppendInt(dst, ms, 10)
	}
	return dst
}
