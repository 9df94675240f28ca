package ingest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/gcsm/gcsm/graph"
)

// Format is the syntax of an input.
type Format int

const (
	// FormatAuto decides by the first line that is neither blank nor a
	// comment, as DetectFormat does.
	FormatAuto Format = iota
	// FormatCSM is the format of RapidFlow, TurboFlux and the CSM benchmarks:
	// "t N M" (a header, ignored), "v id label [degree]", "e u v [label]",
	// "+e u v [label]" and "-e u v [label]". Vertex ids are non-negative
	// integers; a spelling with leading zeros names the same vertex as
	// without them.
	FormatCSM
	// FormatSNAP is an edge list "u v [time]" separated by blanks, or by
	// commas when the first data line has one (CSV). Every line is an
	// insertion without labels; a third column is taken as a time when it
	// is a non-negative integer and ignored otherwise (a weight or a sign,
	// say).
	//
	// A CSV file may start with a header, a line with no numeric field (so
	// a CSV whose ids are not numbers needs one), which names its columns:
	// src, dst, label, src_label, dst_label, ts, id and op (+, -, insert or
	// delete), in any order and case, as in a JSON event (source, target,
	// time and timestamp are taken for src, dst, ts and ts); every other
	// column is a property of the edge, a number where it is spelt as a
	// JSON number and a string otherwise, and kept as Options.Keep says. A
	// header must name src and dst, and no column twice; a header that
	// does not is refused, and so is every line after it. An empty field is
	// absent (no label, no time, no property), but src, dst and op must
	// not be empty. Without a header, a CSV line has two columns, three
	// (the third as above) or four: SNAP's signed networks, source,
	// target, rating (the label) and time. Quotes have no meaning in CSV
	// fields.
	//
	// Times, in the ts column or by position, are integers counting
	// Options.TSUnit since the epoch (an RFC 3339 string in a ts column or
	// a fourth column too), as in JSON.
	FormatSNAP
	// FormatJSON is one JSON object per line:
	//
	//	{"op":"+","src":1,"dst":"b","label":"x","src_label":"A","dst_label":"B","ts":"2024-06-01T12:00:00Z"}
	//
	// op is "+" or "insert", "-" or "delete", or "vertex", which introduces
	// the vertex "id" (or "src") with the label "label". Ids and labels are
	// JSON strings or integers. A string with bytes that are not UTF-8, or
	// with a \u escape of a lone surrogate, is refused: encoding/json would
	// make U+FFFD of either. ts is optional: an RFC 3339 string or an
	// integer count of Options.TSUnit (milliseconds by default) since the
	// epoch; a negative one is refused.
	//
	// An edge event may name its own edge with "id" (a string or an
	// integer), one of many parallel edges between its endpoints, and give
	// properties: "props" are the edge's, "src_props" and "dst_props" its
	// endpoints', and a vertex event's "props" are the vertex's:
	//
	//	{"op":"+","src":"acct:1","dst":"acct:2","label":"TRANSFER","id":"tx-981","ts":"2026-11-20T10:00:00Z","props":{"amount":12000,"currency":"EUR"},"src_props":{"country":"DE"}}
	//
	// Each is an object whose values are numbers (float64s, which hold
	// integers exactly up to 2^53), strings and booleans; null is no value.
	// A nested object or array, a number beyond the range of a float64 and
	// a string that is not UTF-8 are refused, whether or not the property
	// is kept (Options.Keep), so that which events are refused does not
	// depend on the standing queries. A property named twice in an object
	// keeps its last value, as a key given twice in the event does. Other
	// fields are ignored.
	FormatJSON
)

func (f Format) String() string {
	switch f {
	case FormatAuto:
		return "auto"
	case FormatCSM:
		return "csm"
	case FormatSNAP:
		return "snap"
	case FormatJSON:
		return "json"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// Options configures a Reader. The zero value detects the format, stops at
// the first bad line and accepts lines of up to 1 MiB.
type Options struct {
	Format Format
	// File names the input in errors.
	File string
	// SkipBad makes Next count and skip malformed lines instead of
	// returning their errors; see Reader.Skipped and Reader.Bad.
	SkipBad bool
	// MaxLineBytes is the longest line accepted, its terminator excluded;
	// 0 means 1 MiB. Longer lines are malformed.
	MaxLineBytes int
	// MaxIDBytes is the longest id or label accepted, as for a Decoder
	// (Decoder.MaxIDBytes); 0 means DefaultMaxIDBytes. A line with a
	// longer one is malformed.
	MaxIDBytes int
	// Keep names the properties of FormatJSON events and of CSV property
	// columns that records keep; nil keeps none.
	Keep *PropFilter
	// TSUnit is what a numeric time counts since the epoch, in every
	// format; the zero value is milliseconds.
	TSUnit TimeUnit
	// Seen, when set, is noted the properties of every JSON event and CSV
	// line taken, as for a Decoder (Decoder.Seen).
	Seen *graph.Catalog
}

const (
	defaultMaxLineBytes = 1 << 20
	// bufSize is large enough that real lines never straddle a refill, so
	// the common path hands out slices of the bufio buffer without copying.
	bufSize = 64 << 10
	// maxBad bounds the errors a skipping reader keeps: enough for a report,
	// not a copy of a broken file.
	maxBad = 100
)

// Reader reads Records from a stream of lines. Lines starting with '#' or
// '%' are comments in every format; blank lines and a leading UTF-8 byte
// order mark are ignored; lines may end in "\n" or "\r\n".
//
// In every format, ids, labels and the other fields read must be valid
// UTF-8: a line with one that is not is malformed, never repaired, since
// repairing would give distinct ids one spelling.
//
// A Reader checks syntax only. It passes self-loops through, as it does
// deletions of absent edges: those are for the consumer to judge (Resolve
// refuses self-loops).
type Reader struct {
	br      *bufio.Reader
	opts    Options
	format  Format // FormatAuto until the first data line
	maxLine int
	line    int   // number of the line last read
	err     error // sticky end: io.EOF or an I/O error

	long   []byte // a line that did not fit in br's buffer
	fields []span // the fields of the current line, reused
	js     jsonLine

	// SNAP only: whether the first data line has been seen, whether it had
	// a comma, and if it was a CSV header, what it says (width 0 without
	// one).
	snapStarted bool
	csv         bool
	csvLayout   csvLayout

	odd oddTimes

	skipped int
	bad     []*LineError
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader, opts Options) *Reader {
	return newReader(r, opts, bufSize)
}

// newReader lets tests use a tiny buffer to exercise lines that straddle it.
func newReader(r io.Reader, opts Options, size int) *Reader {
	rd := &Reader{br: bufio.NewReaderSize(r, size), opts: opts, format: opts.Format, maxLine: opts.MaxLineBytes}
	rd.js.unit = opts.TSUnit
	if rd.maxLine <= 0 {
		rd.maxLine = defaultMaxLineBytes
	}
	if opts.Format < FormatAuto || opts.Format > FormatJSON {
		rd.err = fmt.Errorf("ingest: unknown %v", opts.Format)
	}
	if opts.TSUnit < Milliseconds || opts.TSUnit > Nanoseconds {
		rd.err = fmt.Errorf("ingest: unknown %v", opts.TSUnit)
	}
	return rd
}

// Open opens the file at path for reading. Unless opts.File is set, errors
// name the file by path; with FormatAuto, its content decides the format.
// The caller must close the returned Closer.
func Open(path string, opts Options) (*Reader, io.Closer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	if opts.File == "" {
		opts.File = path
	}
	return NewReader(f, opts), f, nil
}

// Format returns the format being read: Options.Format, or once the first
// data line has been read, the detected one.
func (r *Reader) Format() Format { return r.format }

// Directed reports whether the format being read gives edges a direction
// by default: JSON events and CSV files name a source and a target, while
// CSM files and blank-separated SNAP edge lists are read as undirected, as
// the CSM benchmarks read them. It is meaningful once Next has read a data
// line.
func (r *Reader) Directed() bool { return r.format == FormatJSON || r.format == FormatSNAP && r.csv }

// OddTime returns the first numeric time read whose time lands before 1990
// or from 2100 on in Options.TSUnit, and whether there was one, for the
// caller to warn about: it is read as given all the same.
func (r *Reader) OddTime() (OddTime, bool) { return r.odd.first, r.odd.seen }

// Skipped returns the number of malformed lines skipped so far.
func (r *Reader) Skipped() int { return r.skipped }

// Bad returns the errors of the first (up to 100) skipped lines. The caller
// must not modify the slice.
func (r *Reader) Bad() []*LineError { return r.bad }

// Next returns the next record, or io.EOF at the end of the input. A
// malformed line yields a *LineError, after which Next goes on with the
// following line; with Options.SkipBad such lines are skipped instead. I/O
// errors end the reader: Next returns them from then on.
func (r *Reader) Next() (Record, error) {
	for r.err == nil {
		line, tooLong, err := r.readLine()
		if err != nil {
			r.err = err
			break
		}
		if rec, ok, err := r.record(line, tooLong); ok || err != nil {
			return rec, err
		}
	}
	return Record{}, r.err
}

// record parses a line that readLine returned. ok is false, with no error,
// for a line that holds no record (blank, a comment, a header) and for a
// malformed line skipped under Options.SkipBad.
func (r *Reader) record(line []byte, tooLong bool) (rec Record, ok bool, err error) {
	var lerr *LineError
	if tooLong {
		lerr = r.errorf("line is longer than %d bytes", r.maxLine)
	} else {
		rec, ok, lerr = r.parse(line)
	}
	switch {
	case lerr == nil:
		return rec, ok, nil
	case !r.opts.SkipBad:
		return Record{}, false, lerr
	}
	r.skipped++
	if len(r.bad) < maxBad {
		r.bad = append(r.bad, lerr)
	}
	return Record{}, false, nil
}

// NextUpdate is Next followed by res.Resolve: the next record as an
// update, with its line, or io.EOF at the end of the input. Malformed lines
// are as for Next; a record that Resolve refuses is a *LineError naming
// the file too, which Options.SkipBad does not skip (it is the caller's
// policy, as Resolve's errors are), after which NextUpdate goes on with
// the following line.
//
// It reads the lines of CSM files and blank-separated edge lists whose ids
// are numbers without making a Record of them (fastUpdate), the bulk of
// the data sets: on the human graph that halves the time to read it.
func (r *Reader) NextUpdate(res *Resolver) (u graph.Update, line int, err error) {
	for r.err == nil {
		text, tooLong, err := r.readLine()
		if err != nil {
			r.err = err
			break
		}
		if !tooLong {
			if u, ok := r.fastUpdate(text, res); ok {
				return u, r.line, nil
			}
		}
		rec, ok, err := r.record(text, tooLong)
		if err != nil {
			return graph.Update{}, r.line, err
		}
		if !ok {
			continue
		}
		u, err := res.Resolve(rec)
		if le, isLine := err.(*LineError); isLine {
			le.File = r.opts.File
		}
		return u, rec.Line, err
	}
	return graph.Update{}, r.line, r.err
}

// readLine returns the next line without its terminator, valid until the
// next read. A line over maxLine comes back empty, its bytes discarded, with
// tooLong set. err is io.EOF only when no line is left.
func (r *Reader) readLine() (line []byte, tooLong bool, err error) {
	line, err = r.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		line, tooLong, err = r.readLong(line)
	}
	switch {
	case err == io.EOF && (len(line) > 0 || tooLong):
		// The last line has no terminator: deliver it and end next time.
		r.err = io.EOF
	case err != nil:
		// An I/O error drops the partial line: it may be cut anywhere.
		return nil, false, err
	}
	r.line++
	// Not bytes.TrimSuffix: its call of bytes.Equal was a tenth of reading
	// a CSM file.
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, tooLong || len(line) > r.maxLine, nil
}

// readLong finishes a line that overflowed the bufio buffer, whose first
// part is first. It gathers the line in r.long or, once it is known to be
// too long, discards the rest so that reading can go on at the next line.
func (r *Reader) readLong(first []byte) (line []byte, tooLong bool, err error) {
	// The +2 leaves room for a "\r\n" that does not count against maxLine.
	limit := r.maxLine + 2
	tooLong = len(first) > limit
	if !tooLong {
		r.long = append(r.long[:0], first...)
	}
	for {
		var chunk []byte
		chunk, err = r.br.ReadSlice('\n')
		if !tooLong && len(r.long)+len(chunk) > limit {
			tooLong = true
		}
		if !tooLong {
			r.long = append(r.long, chunk...)
		}
		if err != bufio.ErrBufferFull {
			break
		}
	}
	if tooLong {
		return nil, true, err
	}
	return r.long, false, err
}

var bom = []byte("\xef\xbb\xbf")

// parse turns one line into a record. ok is false for a line that holds
// none: blank, a comment or a header.
func (r *Reader) parse(line []byte) (rec Record, ok bool, err *LineError) {
	if r.line == 1 {
		line = bytes.TrimPrefix(line, bom)
	}
	line = trimBlanks(line)
	if isComment(line) {
		return Record{}, false, nil
	}
	if r.format == FormatAuto {
		r.format = detect(line)
	}
	switch r.format {
	case FormatCSM:
		rec, ok, err = r.parseCSM(line)
	case FormatSNAP:
		rec, ok, err = r.parseSNAP(line)
	default:
		rec, ok, err = r.parseJSON(line)
	}
	if err == nil && ok {
		if derr := checkIDs(&rec, r.opts.MaxIDBytes); derr != nil {
			return Record{}, false, r.errorf("%s", derr.Detail)
		}
		if r.format == FormatJSON {
			r.js.noteSeen(&rec)
		}
	}
	return rec, ok, err
}

// DetectFormat returns the format of an input that starts with lines, judged
// by the first that is neither blank nor a comment: JSON if it starts with
// '{', CSM if its first field is t, v, e, +e or -e, SNAP otherwise. It
// returns FormatAuto when no line decides. A SNAP file whose first vertex is
// named "v" or "e" reads as CSM: pass its format explicitly.
func DetectFormat(lines ...string) Format {
	for _, l := range lines {
		line := trimBlanks(bytes.TrimPrefix([]byte(l), bom))
		if !isComment(line) {
			return detect(line)
		}
	}
	return FormatAuto
}

// detect is DetectFormat of one trimmed data line.
func detect(line []byte) Format {
	if line[0] == '{' {
		return FormatJSON
	}
	n := 0
	for n < len(line) && !isBlank(line[n]) {
		n++
	}
	switch string(line[:n]) {
	case "t", "v", "e", "+e", "-e":
		return FormatCSM
	}
	return FormatSNAP
}

// isComment reports whether a trimmed line holds no data.
func isComment(line []byte) bool {
	return len(line) == 0 || line[0] == '#' || line[0] == '%'
}

func (r *Reader) errorf(format string, args ...any) *LineError {
	return &LineError{File: r.opts.File, Line: r.line, Reason: fmt.Sprintf(format, args...)}
}
