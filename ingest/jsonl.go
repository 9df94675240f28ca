package ingest

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gcsm/gcsm/graph"
)

// This file reads FormatJSON, for files and for Kafka messages alike.
//
// A hand-written scanner validates each object and finds the values of the
// keys gcsm reads where they lie, without a copy. encoding/json only takes
// over for what the scanner declines: keys that match one of ours only
// after unescaping or case folding (encoding/json matches keys without
// regard to case), nesting deeper than maxScanDepth, and every syntax error,
// which it words. The fallback keeps the reader's behaviour exactly that of
// encoding/json, while the common event costs one allocation instead of ten
// and a fraction of encoding/json's time (BenchmarkDecode, whose "fallback"
// is the encoding/json path).
//
// Before the scanner, fast (jsonfast.go) reads the common edge event, in
// AppendEvent's order of keys, in one pass, and leaves the rest to it.

// The keys of an input object that gcsm reads, as indexes of jsonLine.val.
const (
	keyOp = iota
	keyID
	keySrc
	keyDst
	keyLabel
	keySrcLabel
	keyDstLabel
	keyTS
	keyProps
	keySrcProps
	keyDstProps
	keyVertex // a set's vertex
	keyEdge   // a set's transfer id
	numKeys
)

var jsonKeys = [numKeys]string{"op", "id", "src", "dst", "label", "src_label", "dst_label", "ts", "props", "src_props", "dst_props",
	"vertex", "edge"}

// maxScanDepth bounds the nesting the scanner follows in values gcsm
// ignores; deeper input goes to encoding/json, which allows 10000 levels.
// Recursion this shallow cannot exhaust a stack.
const maxScanDepth = 32

// jsonRaw receives an object on encoding/json's path. Every field stays
// raw so that the parser, not encoding/json, says what is wrong with a
// value. RawMessage appends into its slice, so one jsonRaw reused from line
// to line reuses their memory too.
type jsonRaw struct {
	Op       json.RawMessage `json:"op"`
	ID       json.RawMessage `json:"id"`
	Src      json.RawMessage `json:"src"`
	Dst      json.RawMessage `json:"dst"`
	Label    json.RawMessage `json:"label"`
	SrcLabel json.RawMessage `json:"src_label"`
	DstLabel json.RawMessage `json:"dst_label"`
	TS       json.RawMessage `json:"ts"`
	Props    json.RawMessage `json:"props"`
	SrcProps json.RawMessage `json:"src_props"`
	DstProps json.RawMessage `json:"dst_props"`
	Vertex   json.RawMessage `json:"vertex"`
	Edge     json.RawMessage `json:"edge"`
}

// jsonLine parses objects of FormatJSON. One is kept from line to line, so
// that its buffers are reused: parsing a typical object then allocates only
// the one string that the record's strings share.
type jsonLine struct {
	// buf holds the raw values: the object itself after scan, or their
	// copies in slow after encoding/json.
	buf []byte
	// val[k] is the raw value of key jsonKeys[k] in buf; empty if absent.
	val [numKeys]span
	// plain[k] says that val[k] is known to be a string literal of ASCII
	// without escapes, to be copied as it is.
	plain [numKeys]bool
	raw   jsonRaw
	slow  []byte
	// text gathers the decoded strings of a record, to be copied out in one
	// allocation.
	text []byte
	// pending are the kept properties of the record.
	pending []pendingProp
	// unit is what a numeric ts counts, set by the owner; numTS says that
	// the last record's ts was numeric, rawTS as given.
	unit  TimeUnit
	numTS bool
	rawTS int64
	// seen, when set, is noted every property of an event taken, kept or
	// not (noteSeen); given gathers them while the event is parsed.
	seen  *graph.Catalog
	given []givenProp
	// lastShape is the shape of the last event noted, in shapeOf at its
	// generation shapeGen; shape is a buffer to make the next one in.
	shape, lastShape []byte
	shapeOf          *graph.Catalog
	shapeGen         uint64
}

// absent reports whether a field was left out or set to null.
func absent(raw []byte) bool { return len(raw) == 0 || string(raw) == "null" }

// parseJSON reads a line of FormatJSON.
func (r *Reader) parseJSON(line []byte) (Record, bool, *LineError) {
	var rec Record
	r.js.seen = r.opts.Seen
	if err := r.js.parse(line, r.opts.Keep, &rec); err != nil {
		return Record{}, false, r.errorf("%s", err.Detail)
	}
	if r.js.numTS {
		r.odd.note(r.js.rawTS, r.opts.TSUnit, rec.Time, r.line)
	}
	rec.Line = r.line
	return rec, true, nil
}

// parse parses one trimmed, non-blank line holding a JSON object into
// *rec, a zero Record, keeping the properties that keep names. The record
// has Line 0; on an error, *rec is to be dropped.
func (j *jsonLine) parse(line []byte, keep *PropFilter, rec *Record) *DecodeError {
	if line[0] != '{' {
		return decodeErrorf(ReasonJSON, "expected a JSON object, got %s", quote(line))
	}
	j.numTS = false
	if j.fast(line, keep, rec) {
		return nil
	}
	return j.parseGeneral(line, keep, rec)
}

// parseGeneral is parse of any object: scan, or encoding/json where scan
// declines, then record.
func (j *jsonLine) parseGeneral(line []byte, keep *PropFilter, rec *Record) *DecodeError {
	if !j.scan(line) {
		if err := j.unmarshal(line); err != nil {
			return err
		}
	}
	err := j.record(keep, rec)
	j.buf = nil // let the caller's buffer go
	return err
}

// unmarshal is scan done by encoding/json: slower, but it takes every
// object and words the error of anything else.
func (j *jsonLine) unmarshal(line []byte) *DecodeError {
	r := &j.raw
	r.Op, r.ID, r.Src, r.Dst = r.Op[:0], r.ID[:0], r.Src[:0], r.Dst[:0]
	r.Label, r.SrcLabel, r.DstLabel, r.TS = r.Label[:0], r.SrcLabel[:0], r.DstLabel[:0], r.TS[:0]
	r.Props, r.SrcProps, r.DstProps = r.Props[:0], r.SrcProps[:0], r.DstProps[:0]
	r.Vertex, r.Edge = r.Vertex[:0], r.Edge[:0]
	if err := json.Unmarshal(line, r); err != nil {
		return decodeErrorf(ReasonJSON, "invalid JSON: %v", err)
	}
	j.slow = j.slow[:0]
	j.plain = [numKeys]bool{}
	for k, v := range [numKeys][]byte{r.Op, r.ID, r.Src, r.Dst, r.Label, r.SrcLabel, r.DstLabel, r.TS, r.Props, r.SrcProps, r.DstProps,
		r.Vertex, r.Edge} {
		start := len(j.slow)
		j.slow = append(j.slow, v...)
		j.val[k] = span{start, len(j.slow)}
	}
	j.buf = j.slow
	return nil
}

func (j *jsonLine) value(k int) []byte { return j.buf[j.val[k].start:j.val[k].end] }

// record makes *rec, a zero Record, of the values found by scan or
// unmarshal; on an error, *rec is to be dropped. (Records are 200 bytes:
// filling the caller's spares copies that take a tenth of Decode.)
func (j *jsonLine) record(keep *PropFilter, rec *Record) *DecodeError {
	var err *DecodeError
	if rec.Op, err = j.op(); err != nil {
		return err
	}
	j.text = j.text[:0]
	ms, ts, isText, err := j.time()
	if err != nil {
		return err
	}
	// The names, in the order in which they are checked, and where they go.
	var (
		names [6]span
		dsts  [6]*string
		n     int
	)
	add := func(sp span, dst *string) { names[n], dsts[n] = sp, dst; n++ }
	switch rec.Op {
	case graph.SetVertex:
		var target span
		rec.Op, target, err = j.set()
		if rec.Op == graph.SetEdge {
			add(target, &rec.ID)
		} else {
			add(target, &rec.Src)
		}
	case graph.AddVertex:
		id, key := keyID, "id"
		if absent(j.value(keyID)) && !absent(j.value(keySrc)) {
			id, key = keySrc, "src"
		}
		var src, label span
		if src, err = j.required(id, key); err == nil {
			label, err = j.required(keyLabel, "label")
		}
		add(src, &rec.Src)
		add(label, &rec.SrcLabel)
	default:
		var src, dst, label, srcLabel, dstLabel, id span
		if src, err = j.required(keySrc, "src"); err == nil {
			dst, err = j.required(keyDst, "dst")
		}
		if err == nil {
			label, err = j.name(keyLabel, "label")
		}
		if err == nil {
			srcLabel, err = j.name(keySrcLabel, "src_label")
		}
		if err == nil {
			dstLabel, err = j.name(keyDstLabel, "dst_label")
		}
		if err == nil {
			id, err = j.name(keyID, "id")
		}
		add(src, &rec.Src)
		add(dst, &rec.Dst)
		add(label, &rec.Label)
		add(srcLabel, &rec.SrcLabel)
		add(dstLabel, &rec.DstLabel)
		add(id, &rec.ID)
	}
	if err == nil {
		err = j.props(rec.Op, keep)
	}
	if err != nil {
		// A bad time is reported first, as encoding/json's order of keys
		// would have it; its check only waited for the string below.
		if isText {
			if _, terr := parseRFC3339(string(j.text[ts.start:ts.end])); terr != nil {
				return terr
			}
		}
		return err
	}
	s := string(j.text)
	rec.Time = ms
	if isText {
		if rec.Time, err = parseRFC3339(s[ts.start:ts.end]); err != nil {
			return err
		}
	}
	for i, sp := range names[:n] {
		*dsts[i] = s[sp.start:sp.end]
	}
	j.takeProps(rec, s)
	return nil
}

// op reads the event's op. A set is SetVertex here, until set reads
// whether it names a vertex or a transfer.
func (j *jsonLine) op() (graph.Op, *DecodeError) {
	switch op := j.value(keyOp); string(op) {
	case `"+"`, `"insert"`:
		return graph.Insert, nil
	case `"-"`, `"delete"`:
		return graph.Delete, nil
	case `"vertex"`:
		return graph.AddVertex, nil
	case `"set"`:
		return graph.SetVertex, nil
	default:
		if absent(op) {
			return 0, decodeErrorf(ReasonMissingField, `missing field "op"`)
		}
		if err := checkUTF8(`field "op"`, bytes.Trim(op, `"`)); err != nil {
			return 0, err
		}
		return 0, decodeErrorf(ReasonUnknownOp, "unknown op %s", clip(op))
	}
}

// setFields are the fields of edge and vertex events that a set refuses:
// it names its vertex with "vertex" or its transfer with "edge", so an
// "id" or a "src" would leave the reader to guess which one is meant.
var setFields = [...]int{keySrc, keyDst, keyID, keyLabel, keySrcLabel, keyDstLabel, keySrcProps, keyDstProps}

// set reads what a set event names: a vertex ("vertex") or a transfer
// ("edge"), exactly one, whose properties "props" sets. It returns the op
// and the name's span in j.text.
func (j *jsonLine) set() (graph.Op, span, *DecodeError) {
	for _, k := range setFields {
		if !absent(j.value(k)) {
			return 0, span{}, decodeErrorf(ReasonBadSet, `a set takes no field %q: it names a vertex with "vertex" or a transfer with "edge", and gives "props"`, jsonKeys[k])
		}
	}
	vertex, edge := !absent(j.value(keyVertex)), !absent(j.value(keyEdge))
	switch {
	case vertex && edge:
		return 0, span{}, decodeErrorf(ReasonBadSet, `a set names a vertex ("vertex") or a transfer ("edge"), not both`)
	case !vertex && !edge:
		return 0, span{}, decodeErrorf(ReasonMissingField, `missing field "vertex" or "edge": a set names the vertex or the transfer whose properties it sets`)
	case absent(j.value(keyProps)):
		return 0, span{}, decodeErrorf(ReasonMissingField, `missing field "props": a set gives the properties it sets`)
	}
	if edge {
		sp, err := j.required(keyEdge, "edge")
		return graph.SetEdge, sp, err
	}
	sp, err := j.required(keyVertex, "vertex")
	return graph.SetVertex, sp, err
}

// required is name of a field that must be given and not empty.
func (j *jsonLine) required(k int, key string) (span, *DecodeError) {
	if absent(j.value(k)) {
		return span{}, decodeErrorf(ReasonMissingField, "missing field %q", key)
	}
	sp, err := j.name(k, key)
	if err == nil && sp.start == sp.end {
		err = decodeErrorf(ReasonMissingField, "field %q is empty", key)
	}
	return sp, err
}

// name decodes an id or a label into j.text and returns where it is
// there: a JSON string, or an integer, which becomes its decimal spelling.
// An absent name is empty.
func (j *jsonLine) name(k int, key string) (span, *DecodeError) {
	start := len(j.text)
	raw := j.value(k)
	switch {
	case absent(raw):
		return span{start, start}, nil
	case raw[0] == '"':
		return j.appendString(k, key)
	}
	// An integer becomes its decimal spelling, which is its JSON spelling
	// (JSON has no leading zeros or plus signs) but for "-0".
	if i, ok := parseInt(raw); ok && i == 0 {
		j.text = append(j.text, '0')
		return span{start, len(j.text)}, nil
	}
	if _, ok := parseUint(raw); ok {
		j.text = append(j.text, raw...)
		return span{start, len(j.text)}, nil
	}
	if _, ok := parseInt(raw); ok {
		j.text = append(j.text, raw...)
		return span{start, len(j.text)}, nil
	}
	return span{}, decodeErrorf(ReasonBadValue, "field %q must be a string or an integer, got %s", key, clip(raw))
}

// appendString decodes the JSON string literal of key k into j.text.
func (j *jsonLine) appendString(k int, key string) (span, *DecodeError) {
	raw := j.value(k)
	if sp, ok := j.appendPlain(raw, j.plain[k]); ok {
		return sp, nil
	}
	return j.appendEscaped(raw, valueRef{key: key})
}

// appendPlain copies the body of the JSON string literal raw into j.text
// when it needs no decoding: it has no escapes and is UTF-8, as most
// strings are (plain says that it is known to be ASCII without escapes).
// Its syntax has been checked already.
func (j *jsonLine) appendPlain(raw []byte, plain bool) (span, bool) {
	start := len(j.text)
	if body := raw[1 : len(raw)-1]; plain || bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		j.text = append(j.text, body...)
		return span{start, len(j.text)}, true
	}
	return span{}, false
}

// appendEscaped decodes the JSON string literal raw, of the value ref, into
// j.text, the slow way.
func (j *jsonLine) appendEscaped(raw []byte, ref valueRef) (span, *DecodeError) {
	start := len(j.text)
	// encoding/json would make U+FFFD of what is not UTF-8; refuse it here.
	if err := checkJSONString(ref, raw[1:len(raw)-1]); err != nil {
		return span{}, err
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return span{}, decodeErrorf(ReasonJSON, "%v: %v", ref, err)
	}
	j.text = append(j.text, s...)
	return span{start, len(j.text)}, nil
}

// checkJSONString refuses the body of a JSON string literal, whose syntax
// has been checked, that does not decode to valid UTF-8: it has bytes that
// are not UTF-8, or a \u escape of a surrogate that is not half of a high
// and low pair. RFC 8259 leaves lone surrogates to the implementation;
// gcsm refuses them because encoding/json decodes each to U+FFFD, and
// "a\ud800" and "a\udbff" would then be one vertex.
func checkJSONString(ref valueRef, body []byte) *DecodeError {
	// Escapes are ASCII, so bytes that are not UTF-8 are raw ones.
	if !utf8.Valid(body) {
		return checkUTF8(ref.String(), body)
	}
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		i++
		if body[i] != 'u' {
			continue
		}
		r := hex4(body[i+1:])
		i += 4
		if !utf16.IsSurrogate(r) {
			continue
		}
		if r < 0xdc00 && i+6 < len(body) && body[i+1] == '\\' && body[i+2] == 'u' {
			if lo := hex4(body[i+3:]); 0xdc00 <= lo && lo < 0xe000 {
				i += 6
				continue
			}
		}
		return decodeErrorf(ReasonInvalidUTF8, "%v is not valid UTF-8: \\u%04x is half of a surrogate pair", ref, r)
	}
	return nil
}

// hex4 returns the value of the four hex digits at the start of b.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// time decodes "ts": an RFC 3339 string, or an integer count of j.unit
// since the epoch, returned as unix milliseconds. A
// string is only put into j.text, at sp with isText set, for record to
// parse once it has made a string of j.text: time.Parse takes a string, and
// a string of its own would cost an allocation.
func (j *jsonLine) time() (ms int64, sp span, isText bool, err *DecodeError) {
	raw := j.value(keyTS)
	switch {
	case absent(raw):
		return 0, span{}, false, nil
	case raw[0] == '"':
		sp, err = j.appendString(keyTS, "ts")
		return 0, sp, true, err
	}
	if n, ok := parseInt(raw); ok {
		if ms, ok = j.unit.millis(n); !ok {
			return 0, span{}, false, tsError(n, j.unit)
		}
		j.numTS, j.rawTS = true, n
		return ms, span{}, false, nil
	}
	return 0, span{}, false, decodeErrorf(ReasonBadTime, `field "ts" must be an RFC 3339 string or an integer (unix %s), got %s`, j.unit.word(), clip(raw))
}

// parseRFC3339 returns the unix milliseconds of an RFC 3339 time. A time
// before 1970 is refused as a negative number is: event times are never
// negative, which AppendEvent's numbers rely on to read back.
func parseRFC3339(s string) (int64, *DecodeError) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return 0, decodeErrorf(ReasonBadTime, `field "ts": %s is not an RFC 3339 time`, quote([]byte(s)))
	}
	if ms := t.UnixMilli(); ms >= 0 {
		return ms, nil
	}
	return 0, decodeErrorf(ReasonTSOutOfRange, `field "ts": %s is before 1970`, quote([]byte(s)))
}

// scan is the fast path of parse: it checks that line is one JSON object,
// by the grammar of RFC 8259 as encoding/json applies it, and sets j.val to
// the values of gcsm's keys in place. It returns false, having decided
// nothing, for what it leaves to encoding/json: an error, a key that could
// match one of gcsm's only after unescaping or case folding, or deep
// nesting. A key given twice keeps its last value, as in encoding/json.
func (j *jsonLine) scan(b []byte) bool {
	j.val = [numKeys]span{}
	i := skipSpace(b, 1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return false
			}
			end, plain := scanString(b, i)
			if end < 0 || !plain {
				return false
			}
			k := keyIndex(b[i+1 : end-1])
			if k == keyFolded {
				return false
			}
			i = skipSpace(b, end)
			if i >= len(b) || b[i] != ':' {
				return false
			}
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == '"' {
				end, plain = scanString(b, i)
			} else {
				end, plain = skipValue(b, i, 1), false
			}
			if end < 0 {
				return false
			}
			if k >= 0 {
				j.val[k], j.plain[k] = span{i, end}, plain
			}
			i = skipSpace(b, end)
			if i < len(b) && b[i] == ',' {
				i = skipSpace(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return false
		}
	}
	if skipSpace(b, i) != len(b) {
		return false
	}
	j.buf = b
	return true
}

// keyFolded is keyIndex's answer for a key that is none of gcsm's but
// equals one without regard to case, which encoding/json would match.
const keyFolded = -2

// keyIndex returns the index in jsonKeys of key, an ASCII key without
// escapes, or -1 if it is none of them.
func keyIndex(key []byte) int {
	switch string(key) {
	case "op":
		return keyOp
	case "id":
		return keyID
	case "src":
		return keySrc
	case "dst":
		return keyDst
	case "label":
		return keyLabel
	case "src_label":
		return keySrcLabel
	case "dst_label":
		return keyDstLabel
	case "ts":
		return keyTS
	case "props":
		return keyProps
	case "src_props":
		return keySrcProps
	case "dst_props":
		return keyDstProps
	case "vertex":
		return keyVertex
	case "edge":
		return keyEdge
	}
	for _, name := range jsonKeys {
		// Both are ASCII, so EqualFold's Unicode folding is ASCII's.
		if len(key) == len(name) && bytes.EqualFold(key, []byte(name)) {
			return keyFolded
		}
	}
	return -1
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space. White space is all at most ' ', so most bytes take one
// compare.
func skipSpace(b []byte, i int) int {
	for i < len(b) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the index just after the string literal starting at
// b[i] == '"', or -1 if it is not one. plain reports that the literal is
// ASCII without escapes. Like encoding/json, it takes bytes that are not
// UTF-8.
func scanString(b []byte, i int) (end int, plain bool) {
	// The common string is plain: a table lookup per byte finds its end.
	for i++; i < len(b) && plainByte[b[i]]; i++ {
	}
	if i < len(b) && b[i] == '"' {
		return i + 1, true
	}
	for ; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, false
		case c == '\\':
			i++
			if i >= len(b) {
				return -1, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return -1, false
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return -1, false
					}
				}
				i += 4
			default:
				return -1, false
			}
		case c < 0x20:
			return -1, false
		}
	}
	return -1, false
}

// plainByte[c] says whether c stands for itself in a JSON string and is
// ASCII.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// skipValue returns the index just after the JSON value starting at b[i],
// or -1 if there is none or it nests deeper than maxScanDepth (depth is
// that of the value).
func skipValue(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		end, _ := scanString(b, i)
		return end
	case c == '{', c == '[':
		if depth >= maxScanDepth {
			return -1
		}
		return skipComposite(b, i, depth)
	case c == '-' || isDigit(c):
		return scanNumber(b, i)
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
			return i + len(lit)
		}
	}
	return -1
}

// skipComposite is skipValue of an object or an array.
func skipComposite(b []byte, i, depth int) int {
	obj := b[i] == '{'
	closing := byte(']')
	if obj {
		closing = '}'
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == closing {
		return i + 1
	}
	for {
		if obj {
			if i >= len(b) || b[i] != '"' {
				return -1
			}
			if i, _ = scanString(b, i); i < 0 {
				return -1
			}
			if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
				return -1
			}
			i = skipSpace(b, i+1)
		}
		if i = skipValue(b, i, depth+1); i < 0 {
			return -1
		}
		switch i = skipSpace(b, i); {
		case i >= len(b):
			return -1
		case b[i] == closing:
			return i + 1
		case b[i] != ',':
			return -1
		}
		i = skipSpace(b, i+1)
	}
}

// scanNumber returns the index just after the JSON number starting at
// b[i], or -1 if there is none. What follows is the caller's to check.
func scanNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case isDigit(b[i]):
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i
}
