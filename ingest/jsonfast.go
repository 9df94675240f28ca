package ingest

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"unicode/utf8"

	"github.com/gcsm/gcsm/graph"
)

// fastKeys are the keys that fast reads, in the one order it takes them:
// AppendEvent's order for an edge event; the first fastNames are names.
// fastQuoted are their JSON spellings, which the common event has at the
// expected place.
var (
	fastKeys   = [...]int{keySrc, keyDst, keyLabel, keySrcLabel, keyDstLabel, keyID, keyTS, keyProps, keySrcProps, keyDstProps}
	fastQuoted = [len(fastKeys)]string{`"src"`, `"dst"`, `"label"`, `"src_label"`, `"dst_label"`, `"id"`, `"ts"`,
		`"props"`, `"src_props"`, `"dst_props"`}
)

// fastNames is how many of fastKeys are names: src to id.
const fastNames = 6

// fastWords are fastQuoted as two little-endian words each, with masks of
// their bytes, so that a key is matched by a load and a compare or two.
var fastWords = func() (w [len(fastKeys)]struct{ lo, hi, loMask, hiMask uint64 }) {
	for at, q := range fastQuoted {
		var buf, mask [16]byte
		copy(buf[:], q)
		for n := range len(q) {
			mask[n] = 0xff
		}
		w[at].lo, w[at].hi = binary.LittleEndian.Uint64(buf[:8]), binary.LittleEndian.Uint64(buf[8:])
		w[at].loMask, w[at].hiMask = binary.LittleEndian.Uint64(mask[:8]), binary.LittleEndian.Uint64(mask[8:])
	}
	return w
}()

// keyAt returns the least index in fastKeys from at on whose key b holds at
// i, or len(fastKeys) if there is none.
func keyAt(b []byte, i, at int) int {
	if len(b)-i < 16 {
		for at < len(fastKeys) && !hasAt(b, i, fastQuoted[at]) {
			at++
		}
		return at
	}
	lo, hi := binary.LittleEndian.Uint64(b[i:]), binary.LittleEndian.Uint64(b[i+8:])
	for ; at < len(fastKeys); at++ {
		if w := &fastWords[at]; lo&w.loMask == w.lo && hi&w.hiMask == w.hi {
			return at
		}
	}
	return at
}

// fast is parse in one pass for the common edge event, the one that
// AppendEvent writes: op "+", "-", "insert" or "delete" first, then src,
// dst, label, src_label, dst_label, id, ts, props, src_props and dst_props
// in this order, each at most once and src and dst given. Names are strings
// without escapes or non-negative integers, ts is an integer in j.unit or an
// RFC 3339 string without escapes; properties are read as record reads
// them, keeping those keep names. Keys gcsm does not read may come anywhere,
// with any value; a set's "vertex" and "edge", which gcsm reads, make it
// decline an edge event that carries them.
//
// Anything else it declines, returning false with *rec untouched, and
// parse reads it the general way, which also words every error: fast only
// takes what that way takes, and makes the same Record of it
// (FuzzDecodeFast). It costs two thirds of that way on the bench's event
// (BenchmarkDecode/json-bench); a declined event pays for both.
func (j *jsonLine) fast(b []byte, keep *PropFilter, rec *Record) bool {
	op, i := fastOp(b)
	if i < 0 {
		return false
	}
	var f fastFields
	j.text = j.text[:0]
	j.val[keyProps], j.val[keySrcProps], j.val[keyDstProps] = span{}, span{}, span{}
	if i = j.fastFields(b, i, &f); i < 0 {
		return false
	}
	// src and dst given, and nothing after the object.
	if f.names[0].end == 0 || f.names[1].end == 0 || skipSpace(b, i+1) != len(b) {
		return false
	}
	return j.fastRecord(b, op, &f, keep, rec)
}

// fastFields are what fast has read of an event's keys: spans of j.text
// for names and a textual ts, or the ts as a number.
type fastFields struct {
	names  [fastNames]span // by index in fastKeys
	ms     int64
	ts     span // when isText
	isText bool
	numTS  bool // ms is the ts as given, in j.unit
}

// fastOp reads the opening of an event, up to and including its op value,
// and returns the op and the index after it, or -1 if the event does not
// start with an op fast takes.
func fastOp(b []byte) (graph.Op, int) {
	i := skipSpace(b, 1)
	if !hasAt(b, i, `"op"`) {
		return 0, -1
	}
	if i = skipSpace(b, i+len(`"op"`)); i >= len(b) || b[i] != ':' {
		return 0, -1
	}
	switch i = skipSpace(b, i+1); {
	case hasAt(b, i, `"+"`):
		return graph.Insert, i + len(`"+"`)
	case hasAt(b, i, `"-"`):
		return graph.Delete, i + len(`"-"`)
	case hasAt(b, i, `"insert"`):
		return graph.Insert, i + len(`"insert"`)
	case hasAt(b, i, `"delete"`):
		return graph.Delete, i + len(`"delete"`)
	}
	return 0, -1
}

// fastFields reads the members after op into f and j.val, in fastKeys'
// order, and returns the index of the closing brace, or -1 where fast
// declines the event. The values are read in the loop rather than by a
// function per key, which would cost a call for each of an event's keys.
func (j *jsonLine) fastFields(b []byte, i int, f *fastFields) int {
	next := 0 // the least index in fastKeys that the next key may have
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return -1
		}
		if b[i] == '}' {
			return i
		}
		if b[i] != ',' {
			return -1
		}
		if i = skipSpace(b, i+1); i >= len(b) || b[i] != '"' {
			return -1
		}
		at := keyAt(b, i, next)
		if at < len(fastKeys) {
			i += len(fastQuoted[at])
		} else {
			// Not a key that may come next: one gcsm does not read, or
			// one out of order, given twice, folded or of properties.
			end, plain := scanString(b, i)
			if end < 0 || !plain || keyIndex(b[i+1:end-1]) != -1 {
				return -1
			}
			i = end
		}
		if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
			return -1
		}
		i = skipSpace(b, i+1)
		switch {
		case at == len(fastKeys):
			// A key gcsm does not read: its value only has to be JSON.
			i = skipValue(b, i, 1)
		case at > fastNames:
			// Properties, read once the object is known to be whole.
			start := i
			i = skipValue(b, i, 1)
			j.val[fastKeys[at]] = span{start, i}
		case fastKeys[at] == keyTS && i < len(b) && b[i] == '"':
			// An RFC 3339 time, parsed once its text is a string.
			start := len(j.text)
			i = j.fastName(b, i)
			f.ts, f.isText = span{start, len(j.text)}, true
		case fastKeys[at] == keyTS:
			i, f.ms = fastInt(b, i)
			f.numTS = true
		default:
			start := len(j.text)
			i = j.fastName(b, i)
			f.names[at] = span{start, len(j.text)}
			if at <= 1 && f.names[at].start == f.names[at].end {
				return -1 // src or dst empty
			}
		}
		if i < 0 {
			return -1
		}
		if at < len(fastKeys) {
			next = at + 1
		}
	}
}

// fastRecord reads the properties and the time of a whole event that
// fastFields has read, and makes *rec of them; false declines the event
// with *rec untouched.
func (j *jsonLine) fastRecord(b []byte, op graph.Op, f *fastFields, keep *PropFilter, rec *Record) bool {
	j.buf = b
	err := j.props(graph.Insert, keep)
	j.buf = nil
	if err != nil {
		return false
	}
	ms := f.ms
	if f.numTS {
		n, ok := ms, false
		if ms, ok = j.unit.millis(n); !ok {
			return false
		}
		j.numTS, j.rawTS = true, n
	}
	s := string(j.text)
	if f.isText {
		if ms, err = parseRFC3339(s[f.ts.start:f.ts.end]); err != nil {
			return false
		}
	}
	*rec = Record{Op: op, Time: ms}
	for at, dst := range [len(f.names)]*string{&rec.Src, &rec.Dst, &rec.Label, &rec.SrcLabel, &rec.DstLabel, &rec.ID} {
		*dst = s[f.names[at].start:f.names[at].end]
	}
	j.takeProps(rec, s)
	return true
}

// hasAt reports whether b holds s at i.
func hasAt(b []byte, i int, s string) bool {
	return len(b)-i >= len(s) && string(b[i:i+len(s)]) == s
}

// fastName appends the name at b[i] to j.text, as name would: the body of
// a string without escapes that is UTF-8, or a non-negative integer, which
// is its own decimal spelling. It returns the index after the value, or -1
// for a value that fast declines.
func (j *jsonLine) fastName(b []byte, i int) int {
	if i < len(b) && b[i] == '"' {
		if end := scanPlain(b, i); end >= 0 {
			j.text = append(j.text, b[i+1:end-1]...)
			return end
		}
		end, plain := scanString(b, i)
		if end < 0 {
			return -1
		}
		body := b[i+1 : end-1]
		if !plain && (bytes.IndexByte(body, '\\') >= 0 || !utf8.Valid(body)) {
			return -1
		}
		j.text = append(j.text, body...)
		return end
	}
	end, _ := fastDigits(b, i)
	if end < 0 {
		return -1
	}
	j.text = append(j.text, b[i:end]...)
	return end
}

// scanPlain is scanString for the common string, ASCII without escapes: it
// returns the index just after the string literal at b[i] == '"', or -1 if
// it is not such a string. It looks at eight bytes at a time, which makes
// the bench's events' strings a word or two each.
func scanPlain(b []byte, i int) int {
	for i++; len(b)-i >= 8; i += 8 {
		if m := notPlain(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			if i += bits.TrailingZeros64(m) / 8; b[i] == '"' {
				return i + 1
			}
			return -1
		}
	}
	for ; i < len(b) && plainByte[b[i]]; i++ {
	}
	if i < len(b) && b[i] == '"' {
		return i + 1
	}
	return -1
}

// notPlain sets the high bit of each byte of w that plainByte refuses: a
// quote, a backslash, a control character or a byte from 0x80 on. A
// borrow may set bits above the lowest such byte too, but never below it.
func notPlain(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, bs := w^(ones*'"'), w^(ones*'\\')
	return ((q-ones)&^q | (bs-ones)&^bs | (w - ones*0x20) | w) & highs
}

// fastInt reads the JSON integer at b[i], which must fit an int64, and
// returns the index after it and its value, or -1 for anything else.
func fastInt(b []byte, i int) (int, int64) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	end, u := fastDigits(b, i)
	switch {
	case end < 0:
		return -1, 0
	case neg && u <= 1<<63:
		return end, int64(-u) // two's complement: exact down to math.MinInt64
	case !neg && u <= math.MaxInt64:
		return end, int64(u)
	}
	return -1, 0
}

// fastDigits reads the JSON integer without a sign at b[i] and returns the
// index after it and its value, or -1 if there is none, the number goes on
// with a fraction or an exponent, or it has more than 19 digits (the most
// that cannot overflow a uint64).
func fastDigits(b []byte, i int) (int, uint64) {
	start := i
	var n uint64
	for ; i < len(b) && isDigit(b[i]); i++ {
		n = n*10 + uint64(b[i]-'0')
	}
	switch {
	case i == start, i-start > 19, b[start] == '0' && i-start > 1:
		return -1, 0
	case i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E'):
		return -1, 0
	}
	return i, n
}
