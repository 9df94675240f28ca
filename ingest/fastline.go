package ingest

import (
	"github.com/gcsm/gcsm/graph"
)

// This file is NextUpdate's short cut for the lines that make up the data
// sets: CSM "v" and "e" lines and blank-separated edge list lines whose ids
// are numbers and whose labels are ASCII. Such a line goes straight to an
// update, its ids to graph.IDs.InternInt, with no Record and no string of
// the line: the general path spends an allocation per line on the
// Record's strings, and Resolve parses the ids a second time.
//
// The short cut takes a line only when it is sure that the general path
// would take it too and make the same update: any other line (a comment, a
// header, an id that is a string or out of range, a label beyond ASCII or
// over the length limit, a self-loop, a refusal) falls through to the
// general path, which reads it as it always did and words its errors. So
// the short cut never refuses anything, and what it interns is what Resolve
// would have interned first.

// fastUpdate is the update of line, and true, where the short cut takes
// the line.
func (r *Reader) fastUpdate(line []byte, res *Resolver) (graph.Update, bool) {
	// The first line may carry a byte order mark, and a format still to be
	// detected or a CSV header to read.
	if r.line == 1 {
		return graph.Update{}, false
	}
	switch {
	case r.format == FormatCSM:
		return r.fastCSM(line, res)
	case r.format == FormatSNAP && r.snapStarted && !r.csv:
		return r.fastSNAP(line, res)
	}
	return graph.Update{}, false
}

// fastCSM is fastUpdate of a CSM line: "v id label [degree]" or
// "e|+e|-e src dst [label]".
func (r *Reader) fastCSM(line []byte, res *Resolver) (graph.Update, bool) {
	var f [4]span
	n := blankFields(line, &f)
	if n != 3 && n != 4 {
		return graph.Update{}, false
	}
	limit := r.idLimit()
	kind := field(line, f[0])
	switch {
	case len(kind) == 1 && kind[0] == 'v':
		id, ok := parseUint(field(line, f[1]))
		label := field(line, f[2])
		if !ok || len(field(line, f[1])) > limit || !plainName(label, limit) {
			return graph.Update{}, false
		}
		if n == 4 {
			if _, ok := parseUint(field(line, f[3])); !ok {
				return graph.Update{}, false
			}
		}
		v, _, err := res.IDs.InternInt(id)
		if err != nil {
			return graph.Update{}, false
		}
		return graph.Update{Op: graph.AddVertex, Src: v, SrcLabel: res.labelBytes(label), DstLabel: graph.NoLabel}, true
	case len(kind) == 1 && kind[0] == 'e', len(kind) == 2 && kind[1] == 'e' && (kind[0] == '+' || kind[0] == '-'):
		src, okSrc := parseUint(field(line, f[1]))
		dst, okDst := parseUint(field(line, f[2]))
		if !okSrc || !okDst || max(f[1].end-f[1].start, f[2].end-f[2].start) > limit ||
			n == 4 && !plainName(field(line, f[3]), limit) {
			return graph.Update{}, false
		}
		op := graph.Insert
		if kind[0] == '-' {
			op = graph.Delete
		}
		var label []byte
		if n == 4 {
			label = field(line, f[3])
		}
		return r.fastEdge(op, src, dst, label, 0, res)
	}
	return graph.Update{}, false
}

// fastSNAP is fastUpdate of a blank-separated edge list line, "src dst
// [time]", whose ids are integers spelt as graph.IDs spells them: an id
// such as "07" is a string there, left to the general path.
func (r *Reader) fastSNAP(line []byte, res *Resolver) (graph.Update, bool) {
	var f [4]span
	n := blankFields(line, &f)
	if n != 2 && n != 3 {
		return graph.Update{}, false
	}
	src, okSrc := canonUint(field(line, f[0]))
	dst, okDst := canonUint(field(line, f[1]))
	if !okSrc || !okDst || max(f[0].end-f[0].start, f[1].end-f[1].start) > r.idLimit() {
		return graph.Update{}, false
	}
	var ms int64
	if n == 3 {
		// Not strict: a third field that is no time is a weight, ignored,
		// and never an error.
		ms, _ = r.columnTime(field(line, f[2]), false)
	}
	return r.fastEdge(graph.Insert, src, dst, nil, ms, res)
}

// fastEdge resolves an edge line that the short cut took, as Resolve
// resolves its record: ids first, then the label (nil: the default).
func (r *Reader) fastEdge(op graph.Op, src, dst uint64, label []byte, ms int64, res *Resolver) (graph.Update, bool) {
	if src == dst {
		return graph.Update{}, false // a self-loop, which Resolve words
	}
	s, _, err := res.IDs.InternInt(src)
	if err != nil {
		return graph.Update{}, false
	}
	d, _, err := res.IDs.InternInt(dst)
	if err != nil {
		return graph.Update{}, false
	}
	u := graph.Update{Op: op, Src: s, Dst: d, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}
	if label != nil {
		u.Label = res.labelBytes(label)
	} else {
		u.Label = res.label(res.DefaultEdgeLabel)
	}
	if res.KeepTime {
		u.Tx = &graph.Transfer{Time: ms}
	}
	return u, true
}

// blankFields is splitFields of a blank-separated line into f, without
// its closure: the spans of the first len(f) fields and their number, or
// len(f)+1 for a line with more. Reading the human graph takes 12.6 ms
// with it, 13.6 with splitFields (2-core VM).
func blankFields(line []byte, f *[4]span) int {
	n := 0
	for i := 0; ; n++ {
		for i < len(line) && isBlank(line[i]) {
			i++
		}
		switch {
		case i == len(line):
			return n
		case n == len(f):
			return n + 1
		}
		j := i
		for j < len(line) && !isBlank(line[j]) {
			j++
		}
		f[n] = span{i, j}
		i = j
	}
}

// idLimit is the longest id or label a line may have (Options.MaxIDBytes).
func (r *Reader) idLimit() int {
	if r.opts.MaxIDBytes > 0 {
		return r.opts.MaxIDBytes
	}
	return DefaultMaxIDBytes
}

// plainName reports whether b is a label the short cut may take: ASCII,
// so valid UTF-8, and within limit bytes.
func plainName(b []byte, limit int) bool {
	if len(b) > limit {
		return false
	}
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// canonUint parses b where graph.IDs would take it for an integer id: a
// non-negative decimal of no more than 20 digits, without a leading zero.
func canonUint(b []byte) (uint64, bool) {
	if len(b) > 20 || len(b) > 1 && b[0] == '0' {
		return 0, false
	}
	return parseUint(b)
}
