package ingest

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gcsm/gcsm/graph"
)

// This file reads the whitespace- and comma-separated formats, CSM and SNAP.
// Each record's strings are cut from a single string of the part of the line
// they span: one allocation per line rather than one per field.

// span is the field line[start:end] of a line.
type span struct{ start, end int }

func field(line []byte, s span) []byte { return line[s.start:s.end] }

func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
}

func trimBlanks(b []byte) []byte {
	for len(b) > 0 && isBlank(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isBlank(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

// split is splitFields into r.fields.
func (r *Reader) split(line []byte, comma bool, keep int) (f []span, n int) {
	f, n = splitFields(r.fields, line, comma, keep)
	r.fields = f
	return f, n
}

// splitFields cuts line into fields: at runs of blanks or, with comma set,
// at every comma, trimming blanks around each field. It returns the spans
// of the first keep fields, appended to buf[:0], and the number of fields,
// so that a line of a million fields costs no memory and can still be
// reported.
func splitFields(buf []span, line []byte, comma bool, keep int) (f []span, n int) {
	f = buf[:0]
	add := func(s span) {
		if n < keep {
			f = append(f, s)
		}
		n++
	}
	if comma {
		for start := 0; ; {
			end := bytes.IndexByte(line[start:], ',')
			if end < 0 {
				end = len(line)
			} else {
				end += start
			}
			s := span{start, end}
			for s.start < s.end && isBlank(line[s.start]) {
				s.start++
			}
			for s.end > s.start && isBlank(line[s.end-1]) {
				s.end--
			}
			add(s)
			if end == len(line) {
				break
			}
			start = end + 1
		}
	} else {
		for i := 0; i < len(line); {
			if isBlank(line[i]) {
				i++
				continue
			}
			j := i
			for j < len(line) && !isBlank(line[j]) {
				j++
			}
			add(span{i, j})
			i = j
		}
	}
	return f, n
}

// parseCSM reads a line of a CSM graph or stream file.
func (r *Reader) parseCSM(line []byte) (Record, bool, *LineError) {
	rec, ok, err := parseCSM(line, &r.fields)
	if err != nil {
		return Record{}, false, r.errorf("%s", err.Detail)
	}
	rec.Line = r.line
	return rec, ok, nil
}

// parseCSM parses one trimmed, non-blank CSM line, splitting it into
// *fields (scratch space kept by the caller from line to line). ok is false
// for a "t" header, which holds no record. Errors have ReasonCSM, or
// ReasonInvalidUTF8 for a field that is not UTF-8. The record has Line 0.
func parseCSM(line []byte, fields *[]span) (rec Record, ok bool, err *DecodeError) {
	f, n := splitFields(*fields, line, false, 4)
	*fields = f
	kind := field(line, f[0])
	switch string(kind) {
	case "t":
		// "t N M" announces the sizes; the records speak for themselves.
		return Record{}, false, nil
	case "v":
		if n != 3 && n != 4 {
			return Record{}, false, decodeErrorf(ReasonCSM, `vertex line needs 2 or 3 fields after "v", got %d`, n-1)
		}
		rec.Op = graph.AddVertex
	case "e", "+e", "-e":
		if n != 3 && n != 4 {
			return Record{}, false, decodeErrorf(ReasonCSM, "edge line needs 2 or 3 fields after %q, got %d", kind, n-1)
		}
		rec.Op = graph.Insert
		if kind[0] == '-' {
			rec.Op = graph.Delete
		}
	default:
		if err := checkUTF8("line type", kind); err != nil {
			return Record{}, false, err
		}
		return Record{}, false, decodeErrorf(ReasonCSM, "unknown line type %s", quote(kind))
	}
	names := &csmEdgeFields
	if rec.Op == graph.AddVertex {
		names = &csmVertexFields
	}
	for i, name := range names[:n-1] {
		if err := checkUTF8(name, field(line, f[i+1])); err != nil {
			return Record{}, false, err
		}
	}
	if rec.Op == graph.AddVertex && n == 4 {
		if _, ok := parseUint(field(line, f[3])); !ok {
			return Record{}, false, decodeErrorf(ReasonCSM, "vertex degree %s is not a non-negative integer", quote(field(line, f[3])))
		}
	}
	last := 2 // the last field that goes into the record
	if rec.Op != graph.AddVertex {
		last = n - 1
	}
	ids := f[1:3]
	if rec.Op == graph.AddVertex {
		ids = f[1:2]
	}
	for _, id := range ids {
		if _, ok := parseUint(field(line, id)); !ok {
			return Record{}, false, decodeErrorf(ReasonCSM, "vertex id %s is not a non-negative integer", quote(field(line, id)))
		}
	}
	s, base := string(line[f[1].start:f[last].end]), f[1].start
	get := func(i int) string { return s[f[i].start-base : f[i].end-base] }
	rec.Src = canonID(get(1))
	if rec.Op == graph.AddVertex {
		rec.SrcLabel = get(2)
		return rec, true, nil
	}
	rec.Dst = canonID(get(2))
	if n == 4 {
		rec.Label = get(3)
	}
	return rec, true, nil
}

// The names of the fields after a CSM line's type, for errors.
var (
	csmVertexFields = [3]string{"vertex id", "vertex label", "vertex degree"}
	csmEdgeFields   = [3]string{"source vertex id", "target vertex id", "edge label"}
)

// checkUTF8 refuses the field b, named what, unless it is valid UTF-8. A
// name is refused, never repaired: outputs write names as JSON, where bad
// bytes become U+FFFD, so a repair at any point gives two names one spelling.
func checkUTF8(what string, b []byte) *DecodeError {
	if utf8.Valid(b) {
		return nil
	}
	return decodeErrorf(ReasonInvalidUTF8, "%s is not valid UTF-8 at byte %d: %s", what, invalidUTF8At(b), quote(b))
}

// invalidUTF8At returns the offset of the first byte of b that does not
// start a valid UTF-8 sequence, or len(b) if there is none.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// canonID drops the leading zeros of a CSM id, which graph.IDs would take
// for a string distinct from the number.
func canonID(id string) string {
	if len(id) > 1 && id[0] == '0' {
		n, _ := strconv.ParseUint(id, 10, 64)
		return strconv.FormatUint(n, 10)
	}
	return id
}

// parseSNAP reads a line of an edge list; the first data line decides
// whether it is CSV.
func (r *Reader) parseSNAP(line []byte) (Record, bool, *LineError) {
	if !r.snapStarted {
		r.snapStarted = true
		r.csv = bytes.IndexByte(line, ',') >= 0
		if r.csv {
			if header, err := r.csvHeader(line); header || err != nil {
				return Record{}, false, err
			}
		}
	}
	if r.csv {
		return r.parseCSV(line)
	}
	f, n := r.split(line, false, 3)
	switch n {
	case 2:
		return r.edge(line, f, pairColumns)
	case 3:
		return r.edge(line, f, timedColumns)
	}
	return Record{}, false, r.errorf("edge list line needs 2 or 3 fields, got %d", n)
}

// csvLayout is what a CSV header says: the number of columns, the column
// of each field of a record (-1 where the header does not name it), and
// the columns of properties.
type csvLayout struct {
	width                                           int
	src, dst, label, srcLabel, dstLabel, ts, id, op int
	props                                           []csvProp
	// refused is the line of a header that was refused, after which no
	// line is read: read by position, its lines would make wrong edges.
	refused int
}

// csvProp is a column of properties: its name, the PropFilter's copy
// where it keeps the property, and whether it does.
type csvProp struct {
	col  int
	name string
	kept bool
}

// csvFields are the names of a CSV header's columns that make a record;
// every other column is a property of the edge.
var csvFields = [...]string{"src", "dst", "label", "src_label", "dst_label", "ts", "id", "op"}

// csvAliases are other names of csvFields that edge lists use: SNAP's
// and networkx's source and target, and the time columns the CSV reader
// took before it read headers by name.
var csvAliases = map[string]string{"source": "src", "target": "dst", "time": "ts", "timestamp": "ts"}

// csvHeader reports whether line, the first of a CSV file, is a header (no
// field is a number) and if so reads the layout of the lines that follow,
// or refuses it: a header must name src and dst, and no column twice.
func (r *Reader) csvHeader(line []byte) (bool, *LineError) {
	f, n := r.split(line, true, math.MaxInt)
	for _, s := range f {
		if _, err := strconv.ParseFloat(string(field(line, s)), 64); err == nil {
			return false, nil
		}
	}
	l := &r.csvLayout
	*l = csvLayout{width: n, src: -1, dst: -1, label: -1, srcLabel: -1, dstLabel: -1, ts: -1, id: -1, op: -1}
	cols := [len(csvFields)]*int{&l.src, &l.dst, &l.label, &l.srcLabel, &l.dstLabel, &l.ts, &l.id, &l.op}
	refuse := func(format string, args ...any) (bool, *LineError) {
		l.refused = r.line
		return true, r.errorf("CSV header %s: %s", quote(line), fmt.Sprintf(format, args...))
	}
	seen := make(map[string]int, n)
	for i, s := range f {
		name := field(line, s)
		if err := checkUTF8(fmt.Sprintf("the name of column %d", i+1), name); err != nil {
			return refuse("%s", err.Detail)
		}
		if len(name) == 0 {
			return refuse("column %d has no name", i+1)
		}
		key := string(name)
		if alias, ok := csvAliases[strings.ToLower(key)]; ok {
			key = alias
		}
		for k, f := range csvFields {
			if strings.EqualFold(key, f) {
				key = f
				*cols[k] = i
			}
		}
		if j, ok := seen[key]; ok {
			return refuse("columns %d and %d both name %q", j+1, i+1, key)
		}
		seen[key] = i
		if slices.Contains(csvFields[:], key) {
			continue
		}
		p := csvProp{col: i, name: key}
		if canon, kept := r.opts.Keep.lookup(false, name); kept {
			p.kept = true
			if canon != "" {
				p.name = canon
			}
		}
		l.props = append(l.props, p)
	}
	switch {
	case l.src < 0 && l.dst < 0:
		return refuse(`no column is named "src" or "dst"; a CSV file's first line without a number is its header, which names its columns (src, dst, label, src_label, dst_label, ts, id, op; any other is a property)`)
	case l.src < 0:
		return refuse(`no column is named "src"`)
	case l.dst < 0:
		return refuse(`no column is named "dst"`)
	}
	return true, nil
}

// parseCSV reads a data line of a CSV edge list.
func (r *Reader) parseCSV(line []byte) (Record, bool, *LineError) {
	if l := &r.csvLayout; l.refused > 0 {
		return Record{}, false, r.errorf("not read: the CSV header on line %d was refused", l.refused)
	} else if l.width > 0 {
		f, n := r.split(line, true, l.width)
		if n != l.width {
			return Record{}, false, r.errorf("CSV line has %d fields, the header %d", n, l.width)
		}
		return r.csvRecord(line, f)
	}
	f, n := r.split(line, true, 4)
	switch n {
	case 2:
		return r.edge(line, f, pairColumns)
	case 3:
		return r.edge(line, f, timedColumns)
	case 4:
		return r.edge(line, f, signedColumns)
	}
	return Record{}, false, r.errorf("CSV line needs 2, 3 or 4 fields, got %d", n)
}

// csvRecord makes the record of a data line of a CSV file with a header.
// Empty fields are absent: no label, no time, no property; src and dst, and
// op where the header names it, must not be empty.
func (r *Reader) csvRecord(line []byte, f []span) (Record, bool, *LineError) {
	l := &r.csvLayout
	rec := Record{Op: graph.Insert, Line: r.line}
	if l.op >= 0 {
		switch op := field(line, f[l.op]); string(op) {
		case "+", "insert":
		case "-", "delete":
			rec.Op = graph.Delete
		case "":
			return Record{}, false, r.errorf(`empty field "op"`)
		case "set":
			// Every other column of a CSV line is a property of an edge
			// between src and dst, and a set has no endpoints: a line
			// could not tell a vertex's set from a transfer's.
			return Record{}, false, r.errorf(`op "set" is JSON only: a CSV line cannot say whether it sets a vertex or a transfer; write set events as JSON lines`)
		default:
			if err := checkUTF8(`field "op"`, op); err != nil {
				return Record{}, false, r.errorf("%s", err.Detail)
			}
			return Record{}, false, r.errorf("unknown op %s: want +, -, insert or delete", quote(op))
		}
	}
	if l.ts >= 0 {
		if t := field(line, f[l.ts]); len(t) > 0 {
			var err *LineError
			if rec.Time, err = r.columnTime(t, true); err != nil {
				return Record{}, false, err
			}
		}
	}
	names := [...]struct {
		col  int
		name string
		dst  *string
	}{{l.src, "src", &rec.Src}, {l.dst, "dst", &rec.Dst}, {l.label, "label", &rec.Label},
		{l.srcLabel, "src_label", &rec.SrcLabel}, {l.dstLabel, "dst_label", &rec.DstLabel}, {l.id, "id", &rec.ID}}
	for k, c := range names {
		if c.col < 0 {
			continue
		}
		b := field(line, f[c.col])
		if k < 2 && len(b) == 0 {
			return Record{}, false, r.errorf("empty field %q", c.name)
		}
		if !utf8.Valid(b) {
			return Record{}, false, r.errorf("%s", checkUTF8(fmt.Sprintf("field %q", c.name), b).Detail)
		}
	}
	kept := 0
	for _, p := range l.props {
		b := field(line, f[p.col])
		if len(b) == 0 {
			continue
		}
		if !utf8.Valid(b) {
			return Record{}, false, r.errorf("%s", checkUTF8(fmt.Sprintf("property %q", p.name), b).Detail)
		}
		if _, _, err := csvValue(b, p.name); err != nil {
			return Record{}, false, r.errorf("%s", err.Detail)
		}
		if p.kept {
			kept++
		}
	}
	// One string holds every name and kept string of the line.
	s := string(line)
	for _, c := range names {
		if c.col >= 0 {
			*c.dst = s[f[c.col].start:f[c.col].end]
		}
	}
	if r.opts.Seen != nil {
		// Kept or not, as a JSON event's (Options.Seen).
		for _, p := range l.props {
			if b := field(line, f[p.col]); len(b) > 0 {
				_, isNum, _ := csvValue(b, p.name)
				r.opts.Seen.Note(false, rec.Label, []byte(p.name), csvKind(isNum))
			}
		}
	}
	if kept > 0 {
		rec.Props = make([]graph.Prop, 0, kept)
		for _, p := range l.props {
			if sp := f[p.col]; p.kept && sp.start < sp.end {
				v, isNum, _ := csvValue(field(line, sp), p.name)
				if !isNum {
					v = graph.StringValue(s[sp.start:sp.end])
				}
				rec.Props = append(rec.Props, graph.Prop{Name: p.name, Value: v})
			}
		}
	}
	return rec, true, nil
}

// csvKind is the kind of a property field that csvValue read.
func csvKind(isNum bool) graph.Kind {
	if isNum {
		return graph.Number
	}
	return graph.String
}

// csvValue reads a property field: a number where it is one as JSON spells
// numbers (so that "007" or "+5", codes more than amounts, stay strings),
// else a string, which isNum false leaves to the caller to make. A number
// beyond a float64's range is refused, as it is in JSON.
func csvValue(b []byte, name string) (v graph.Value, isNum bool, err *DecodeError) {
	if (b[0] != '-' && !isDigit(b[0])) || scanNumber(b, 0) != len(b) {
		return graph.Value{}, false, nil
	}
	if n, ok := parseInt(b); ok {
		return graph.NumberValue(float64(n)), true, nil
	}
	g, perr := strconv.ParseFloat(string(b), 64)
	if perr != nil {
		return graph.Value{}, false, decodeErrorf(ReasonBadValue, "property %q is out of the range of a number (a float64): %s", name, clip(b))
	}
	return graph.NumberValue(g), true, nil
}

// columns says which fields of a line make an edge record read by
// position; -1 is absent.
type columns struct {
	src, dst, label, time int
	// anyTime lets a time field that is not a non-negative integer pass as
	// something else, such as a weight or a sign in the third column of an
	// edge list.
	anyTime bool
}

var (
	pairColumns   = columns{src: 0, dst: 1, label: -1, time: -1}
	timedColumns  = columns{src: 0, dst: 1, label: -1, time: 2, anyTime: true}
	signedColumns = columns{src: 0, dst: 1, label: 2, time: 3} // SNAP's soc-sign-bitcoin*
)

// columnTime reads a time field t as unix milliseconds: an integer count
// of Options.TSUnit, or, if strict, an RFC 3339 time. Without strict, any
// other field (a fraction, a negative weight or sign, a word) is no time,
// 0; with it, such a field is refused.
func (r *Reader) columnTime(t []byte, strict bool) (int64, *LineError) {
	u := r.opts.TSUnit
	if n, isInt := parseInt(t); isInt {
		if ms, ok := u.millis(n); ok {
			r.odd.note(n, u, ms, r.line)
			return ms, nil
		}
		if strict {
			return 0, r.errorf("%s", tsError(n, u).Detail)
		}
	}
	if !strict {
		return 0, nil
	}
	ms, derr := parseRFC3339(string(t))
	switch {
	case derr == nil:
		return ms, nil
	case derr.Reason == ReasonTSOutOfRange:
		return 0, r.errorf("%s", derr.Detail)
	}
	return 0, r.errorf(`field "ts" %s is neither an integer (unix %s) nor an RFC 3339 time`, quote(t), u.word())
}

// edge makes an insertion of the fields c picks from an edge list line.
func (r *Reader) edge(line []byte, f []span, c columns) (Record, bool, *LineError) {
	rec := Record{Op: graph.Insert, Line: r.line}
	if c.time >= 0 {
		var err *LineError
		if rec.Time, err = r.columnTime(field(line, f[c.time]), !c.anyTime); err != nil {
			return Record{}, false, err
		}
	}
	if f[c.src].start == f[c.src].end || f[c.dst].start == f[c.dst].end {
		return Record{}, false, r.errorf("empty vertex id")
	}
	for _, col := range [...]struct {
		i    int
		name string
	}{{c.src, "source vertex id"}, {c.dst, "target vertex id"}, {c.label, "edge label"}} {
		if col.i < 0 {
			continue
		}
		if err := checkUTF8(col.name, field(line, f[col.i])); err != nil {
			return Record{}, false, r.errorf("%s", err.Detail)
		}
	}
	lo, hi := min(f[c.src].start, f[c.dst].start), max(f[c.src].end, f[c.dst].end)
	if c.label >= 0 {
		lo, hi = min(lo, f[c.label].start), max(hi, f[c.label].end)
	}
	s := string(line[lo:hi])
	get := func(i int) string { return s[f[i].start-lo : f[i].end-lo] }
	rec.Src, rec.Dst = get(c.src), get(c.dst)
	if c.label >= 0 {
		rec.Label = get(c.label)
	}
	return rec, true, nil
}

// parseUint parses an unsigned decimal integer. It takes bytes where
// strconv takes a string, which would cost an allocation per field.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		d := uint64(c - '0')
		if d > 9 || n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// parseInt parses a signed decimal integer, like strconv.ParseInt(s, 10, 64).
func parseInt(b []byte) (int64, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	u, ok := parseUint(b)
	switch {
	case !ok:
		return 0, false
	case neg && u <= 1<<63:
		return int64(-u), true // two's complement: exact down to math.MinInt64
	case !neg && u <= math.MaxInt64:
		return int64(u), true
	}
	return 0, false
}

// clipLen bounds the input quoted in an error message, so that a megabyte
// token cannot flood a log.
const clipLen = 40

// clip returns b, cut short at clipLen bytes, as a string.
func clip(b []byte) string {
	if len(b) > clipLen {
		return string(b[:clipLen]) + "..."
	}
	return string(b)
}

// quote returns b as a Go string literal for an error message, cut short at
// clipLen bytes.
func quote(b []byte) string {
	if len(b) > clipLen {
		return strconv.Quote(string(b[:clipLen])) + "..."
	}
	return strconv.Quote(string(b))
}
