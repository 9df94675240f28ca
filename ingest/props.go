package ingest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/internal/jsonstr"
)

// PropFilter names the properties that a Decoder or a Reader keeps: those
// that some standing query reads, so that memory grows with what is asked,
// not with what is sent. Edge properties (an edge event's "props") and
// vertex properties ("src_props", "dst_props" and a vertex event's "props")
// are named apart. A property the filter does not name is checked and
// skipped without an allocation.
//
// A PropFilter is immutable: decoders on many goroutines may share one, and
// a service that changes its queries swaps in a new one (an atomic.Pointer
// read before each batch). A nil *PropFilter keeps nothing.
type PropFilter struct {
	// edge and vertex map each name to itself: every record that keeps a
	// property shares the filter's copy of its name.
	edge, vertex map[string]string
	// all keeps every property, under the name the event spells.
	all bool
}

// AllProps returns the filter that keeps every property, for tools that
// pass events on rather than match them, such as gcsm produce.
func AllProps() *PropFilter { return &PropFilter{all: true} }

// NewPropFilter returns the filter that keeps the edge properties named in
// edge and the vertex properties named in vertex. Names are matched exactly,
// case included; empty names are left out, since no event can give one
// that a query reads.
func NewPropFilter(edge, vertex []string) *PropFilter {
	return &PropFilter{edge: nameSet(edge), vertex: nameSet(vertex)}
}

func nameSet(names []string) map[string]string {
	m := make(map[string]string, len(names))
	for _, n := range names {
		if n != "" {
			m[n] = n
		}
	}
	return m
}

// KeepsEdge reports whether f keeps the edge property name.
func (f *PropFilter) KeepsEdge(name string) bool {
	_, ok := f.lookup(false, []byte(name))
	return ok
}

// KeepsVertex reports whether f keeps the vertex property name.
func (f *PropFilter) KeepsVertex(name string) bool {
	_, ok := f.lookup(true, []byte(name))
	return ok
}

// lookup reports whether f keeps the vertex or edge property name, and
// returns the filter's copy of the name, or "" when f keeps every name.
func (f *PropFilter) lookup(vertex bool, name []byte) (canon string, ok bool) {
	switch {
	case f == nil:
		return "", false
	case f.all:
		return "", true
	case vertex:
		canon, ok = f.vertex[string(name)]
	default:
		canon, ok = f.edge[string(name)]
	}
	return canon, ok
}

// The property objects of an event, as indexes of Record's lists.
const (
	slotProps = iota
	slotSrcProps
	slotDstProps
	numSlots
)

// pendingProp is a kept property of the event being parsed. A String's
// text is still at str in jsonLine.text, and so is the name, at nameAt,
// when the filter has no copy of it (name is "").
type pendingProp struct {
	slot   int
	name   string
	nameAt span
	value  graph.Value
	str    span
}

// props checks the property objects of an event and gathers the properties
// that keep names into j.pending, in the order of their objects. An edge
// event has "props", "src_props" and "dst_props"; a vertex event has only
// "props", its vertex's, which goes to Record.SrcProps, as does a vertex
// set's; an edge set's "props" are its transfer's, Record.Props.
//
// Whether an event is refused does not depend on keep: every property is
// checked, so that the same event is taken or refused whatever the
// standing queries, but only kept ones are decoded.
func (j *jsonLine) props(op graph.Op, keep *PropFilter) *DecodeError {
	j.pending = j.pending[:0]
	clear(j.given) // their names point into the last event
	j.given = j.given[:0]
	if v := &j.val; v[keyProps].start == v[keyProps].end && v[keySrcProps].start == v[keySrcProps].end &&
		v[keyDstProps].start == v[keyDstProps].end {
		return nil // the common event, without properties
	}
	switch op {
	case graph.AddVertex:
		return j.propObject(keyProps, slotSrcProps, keep, true, false)
	case graph.SetVertex:
		return j.propObject(keyProps, slotSrcProps, keep, true, true)
	case graph.SetEdge:
		return j.propObject(keyProps, slotProps, keep, false, true)
	}
	if err := j.propObject(keyProps, slotProps, keep, false, false); err != nil {
		return err
	}
	if err := j.propObject(keySrcProps, slotSrcProps, keep, true, false); err != nil {
		return err
	}
	return j.propObject(keyDstProps, slotDstProps, keep, true, false)
}

// propObject reads the object of key k, whose JSON syntax has been checked,
// into j.pending. A property given twice keeps its last value, as a key
// given twice in the event does. A null value is no value, so a later null
// removes an earlier value; but a set's null (set true) is kept, as the
// value that removes the property where the set is applied.
func (j *jsonLine) propObject(k, slot int, keep *PropFilter, vertex, set bool) *DecodeError {
	raw := j.value(k)
	key := jsonKeys[k]
	if absent(raw) {
		return nil
	}
	if raw[0] != '{' {
		return decodeErrorf(ReasonBadValue, "field %q must be an object of properties, got %s", key, clip(raw))
	}
	first := len(j.pending)
	i := skipSpace(raw, 1)
	if raw[i] == '}' {
		return nil
	}
	for {
		end, plain := scanString(raw, i)
		if end < 0 {
			panic("BUG: a property name that the JSON syntax check took is not a string")
		}
		name := raw[i+1 : end-1]
		if !plain && (bytes.IndexByte(name, '\\') >= 0 || !utf8.Valid(name)) {
			// Escaped names are rare enough to take encoding/json's
			// allocation.
			ref := valueRef{key: key, propName: true}
			if err := checkJSONString(ref, name); err != nil {
				return err
			}
			var s string
			if err := json.Unmarshal(raw[i:end], &s); err != nil {
				return decodeErrorf(ReasonJSON, "%v: %v", ref, err)
			}
			name = []byte(s)
		}
		i = skipSpace(raw, skipSpace(raw, end)+1) // past the ':'
		var (
			v   graph.Value
			str span
			err *DecodeError
		)
		canon, kept := keep.lookup(vertex, name)
		if end, v, str, err = j.propValue(raw, i, key, name, kept); err != nil {
			return err
		}
		if j.seen != nil && v.Kind != graph.Null {
			j.given = append(j.given, givenProp{slot: slot, name: name, kind: v.Kind})
		}
		if kept {
			p := pendingProp{slot: slot, name: canon, value: v, str: str}
			if canon == "" {
				start := len(j.text)
				j.text = append(j.text, name...)
				p.nameAt = span{start, len(j.text)}
			}
			j.setProp(first, p, set)
		}
		i = skipSpace(raw, end)
		if raw[i] == '}' {
			return nil
		}
		i = skipSpace(raw, i+1) // past the ','
	}
}

// givenProp is a property that an event gave with a value: in which object,
// its name (in the event's bytes, or a copy when escaped) and its kind.
type givenProp struct {
	slot int
	name []byte
	kind graph.Kind
}

// noteSeen notes the properties rec's event gave in j.seen, under the
// labels of their edge or vertices; a vertex set's under "", since it names
// no label, which the catalog counts for every vertex label. It is called once rec is taken, so
// that a refused event adds nothing.
//
// A stream repeats a few shapes of event, so the shape of the last event
// noted (its labels, and its properties' objects, names and kinds) is
// kept: an event of the same shape, in the same catalog, is known there
// already, which costs a compare instead of a catalog lookup per property.
//
// An edge set's properties are not noted: the set names its transfer by id
// alone, so its edge label is not known here, and noting them under the
// default label would record what no edge of that label carried.
func (j *jsonLine) noteSeen(rec *Record) {
	if j.seen == nil || len(j.given) == 0 || rec.Op == graph.SetEdge {
		return
	}
	sh := j.shape[:0]
	for _, l := range []string{rec.Label, rec.SrcLabel, rec.DstLabel} {
		sh = binary.AppendUvarint(sh, uint64(len(l)))
		sh = append(sh, l...)
	}
	for _, p := range j.given {
		sh = append(sh, byte(p.slot), byte(p.kind))
		sh = binary.AppendUvarint(sh, uint64(len(p.name)))
		sh = append(sh, p.name...)
	}
	gen := j.seen.Generation()
	if j.shapeOf == j.seen && j.shapeGen == gen && bytes.Equal(sh, j.lastShape) {
		j.shape = sh
		return
	}
	j.shape, j.lastShape, j.shapeOf, j.shapeGen = j.lastShape, sh, j.seen, gen
	for _, p := range j.given {
		switch p.slot {
		case slotProps:
			j.seen.Note(false, rec.Label, p.name, p.kind)
		case slotSrcProps:
			j.seen.Note(true, rec.SrcLabel, p.name, p.kind)
		case slotDstProps:
			j.seen.Note(true, rec.DstLabel, p.name, p.kind)
		}
	}
}

// setProp records p, replacing the value of a property of the same name in
// j.pending[first:], or removing it when p is null and keepNull is not set.
func (j *jsonLine) setProp(first int, p pendingProp, keepNull bool) {
	for n := first; n < len(j.pending); n++ {
		q := j.pending[n]
		if q.name != p.name || p.name == "" && !bytes.Equal(j.text[q.nameAt.start:q.nameAt.end], j.text[p.nameAt.start:p.nameAt.end]) {
			continue
		}
		if p.value.Kind == graph.Null && !keepNull {
			j.pending = append(j.pending[:n], j.pending[n+1:]...)
		} else {
			j.pending[n] = p
		}
		return
	}
	if p.value.Kind != graph.Null || keepNull {
		j.pending = append(j.pending, p)
	}
}

// propValue reads the value at raw[i] of the property name of field key
// and returns the index after it. It checks every value; only a kept one
// is decoded, a string into j.text at str.
func (j *jsonLine) propValue(raw []byte, i int, key string, name []byte, kept bool) (end int, v graph.Value, str span, err *DecodeError) {
	ref := valueRef{key: key, prop: name, isProp: true}
	switch c := raw[i]; {
	case c == '"':
		end, plain := scanString(raw, i)
		v.Kind = graph.String // for the catalog, kept or not
		if !kept {
			if !plain {
				err = checkJSONString(ref, raw[i+1:end-1])
			}
			return end, v, str, err
		}
		if str, ok := j.appendPlain(raw[i:end], plain); ok {
			return end, v, str, nil
		}
		str, err = j.appendEscaped(raw[i:end], ref)
		return end, v, str, err
	case c == '-' || isDigit(c):
		end = scanNumber(raw, i)
		num := raw[i:end]
		// An integer, the common amount, rounds to the float64 that
		// ParseFloat would give (-0 aside, which equals 0), without
		// ParseFloat's general parse.
		f, ok := 0.0, false
		if n, isInt := parseInt(num); isInt {
			f, ok = float64(n), true
		} else if g, perr := strconv.ParseFloat(string(num), 64); perr == nil {
			f, ok = g, true
		}
		if !ok {
			return 0, v, str, decodeErrorf(ReasonBadValue, "%v is out of the range of a number (a float64): %s", ref, clip(num))
		}
		return end, graph.NumberValue(f), str, nil
	case c == 't':
		return i + len("true"), graph.BoolValue(true), str, nil
	case c == 'f':
		return i + len("false"), graph.BoolValue(false), str, nil
	case c == 'n':
		return i + len("null"), v, str, nil
	}
	end = skipValue(raw, i, 1)
	if end < 0 {
		end = len(raw)
	}
	return 0, v, str, decodeErrorf(ReasonBadValue, "%v must be a number, a string, a boolean or null, got %s", ref, clip(raw[i:end]))
}

// valueRef names a value in errors: field key of the event, the value of
// its property prop, or the name of one of its properties. It is formatted
// only for an error, so that naming costs nothing on the way.
type valueRef struct {
	key      string
	prop     []byte
	isProp   bool
	propName bool
}

func (r valueRef) String() string {
	switch {
	case r.propName:
		return fmt.Sprintf("a property name in field %q", r.key)
	case r.isProp:
		return fmt.Sprintf("field %q key %s", r.key, quote(r.prop))
	}
	return fmt.Sprintf("field %q", r.key)
}

// takeProps makes the Record's property lists of j.pending, whose strings
// are in s (j.text made a string): one allocation for all three lists.
func (j *jsonLine) takeProps(rec *Record, s string) {
	if len(j.pending) == 0 {
		return
	}
	all := make([]graph.Prop, len(j.pending))
	var count [numSlots]int
	for n, p := range j.pending {
		if p.value.Kind == graph.String {
			p.value.Str = s[p.str.start:p.str.end]
		}
		if p.name == "" {
			p.name = s[p.nameAt.start:p.nameAt.end]
		}
		all[n] = graph.Prop{Name: p.name, Value: p.value}
		count[p.slot]++
	}
	// j.pending is in the order of the slots: each list is a run of all,
	// capped so that appending to one cannot overwrite the next.
	lists := [numSlots]*[]graph.Prop{&rec.Props, &rec.SrcProps, &rec.DstProps}
	at := 0
	for slot, n := range count {
		if n > 0 {
			*lists[slot] = all[at : at+n : at+n]
			at += n
		}
	}
}

// appendProps writes a property object "key":{…} into an event.
func appendProps(dst []byte, key string, props []graph.Prop) []byte {
	if len(props) == 0 {
		return dst
	}
	dst = append(dst, ',', '"')
	dst = append(dst, key...)
	dst = append(dst, `":{`...)
	for n, p := range props {
		if n > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, p.Name)
		dst = append(dst, ':')
		dst = appendValue(dst, p.Value)
	}
	return append(dst, '}')
}

// appendValue writes v as JSON: a Time as its unix milliseconds, and what
// JSON cannot spell (a NaN, an infinity, a Null) as null.
func appendValue(dst []byte, v graph.Value) []byte {
	switch v.Kind {
	case graph.String:
		return jsonstr.Append(dst, v.Str)
	case graph.Bool:
		return strconv.AppendBool(dst, v.Num != 0)
	case graph.Number, graph.Time:
		if f := v.Num; f-f == 0 { // neither NaN nor infinite
			return appendNumber(dst, f)
		}
	}
	return append(dst, "null"...)
}

// appendNumber writes f as encoding/json does: the shortest decimal that
// reads back as f, with an exponent only below 1e-6 and from 1e21 on, so
// that amounts read as people write them.
func appendNumber(dst []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if n := len(dst); format == 'e' && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		// e-07 becomes e-7.
		dst[n-2] = dst[n-1]
		dst = dst[:n-1]
	}
	return dst
}
