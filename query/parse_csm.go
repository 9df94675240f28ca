package query

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ParseCSM reads a pattern in the query-file format of RapidFlow, the
// RapidsAtHKUST benchmarks and most continuous subgraph matching papers:
//
//	# a comment
//	t 3 2        optional header: vertex count, edge count
//	v 0 14 1     vertex: id, label, optional degree (checked for form only)
//	v 1 14 2
//	v 2 36 1
//	e 0 1 0      edge: two declared vertex ids, optional label
//	e 1 2
//
// Fields are separated by spaces or tabs; blank lines and lines starting with
// # are skipped, and CRLF line ends are fine. A vertex's Name is its id as
// written. An edge without a label is a Wildcard. Every edge is Directed
// From the first id To the second: on an undirected graph the matcher
// ignores the direction, so files that list each edge in both directions
// give two edges here, which the compiler merges.
//
// The header is checked only in the form t N M with N and M positive: N must
// be the number of vertices and M the number of edges, counted as listed or
// as distinct vertex pairs. Other forms, gSpan's "t # 0" and the "t 0 N" of
// some benchmark suites, carry no counts we can rely on and are ignored.
//
// The pattern is named source. A malformed or invalid query gives an *Error
// (see Validate); an error reading r is returned as it is.
func ParseCSM(source string, r io.Reader) (*Pattern, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return parseCSM(source, string(b))
}

func parseCSM(source, text string) (*Pattern, error) {
	p, err := csmPattern(stripBOM(text))
	if err != nil {
		err.Source = source
		return nil, err
	}
	p.Name, p.ImpliedDirection = source, true
	return validated(source, p)
}

// csmPattern does the line-by-line work of parseCSM, stopping at the first
// syntax error; the structural checks come after, in validated.
func csmPattern(text string) (*Pattern, *Error) {
	p := new(Pattern)
	ids := make(map[string]int) // vertex index by id as written
	var header []lineToken      // the t line, when there is one
	for i, line := range strings.Split(text, "\n") {
		f := lineTokens(line, i+1)
		if len(f) == 0 || strings.HasPrefix(f[0].s, "#") {
			continue
		}
		switch f[0].s {
		case "t":
			// In gSpan-style files a second t line starts a second graph.
			if header != nil || len(p.Vertices) > 0 || len(p.Edges) > 0 {
				return nil, f[0].errorf("a second header, or one after vertices or edges: a query file holds one pattern, and its t line comes first")
			}
			header = f
		case "v":
			const form = "v <id> <label> [<degree>]"
			if err := checkFieldCount(f, 3, 4, form); err != nil {
				return nil, err
			}
			if len(f) == 4 {
				if d, err := strconv.Atoi(f[3].s); err != nil || d < 0 {
					return nil, f[3].errorf("degree %s is not a non-negative integer: expected %s", f[3].s, form)
				}
			}
			id := f[1]
			if j, dup := ids[id.s]; dup {
				return nil, id.errorf("duplicate vertex id %s (first declared on line %d)", id.s, p.Vertices[j].Pos.Line)
			}
			ids[id.s] = len(p.Vertices)
			p.Vertices = append(p.Vertices, Vertex{Name: id.s, Label: f[2].s, Pos: id.pos})
		case "e":
			if err := checkFieldCount(f, 3, 4, "e <u> <v> [<label>]"); err != nil {
				return nil, err
			}
			var end [2]int
			for k, t := range f[1:3] {
				j, ok := ids[t.s]
				if !ok {
					return nil, t.errorf("edge references unknown vertex %s: declare it with a v line before the edges that use it", t.s)
				}
				end[k] = j
			}
			e := Edge{From: end[0], To: end[1], Wildcard: true, Directed: true, Pos: f[0].pos}
			if len(f) == 4 {
				e.Label, e.Wildcard = f[3].s, false
			}
			p.Edges = append(p.Edges, e)
		default:
			return nil, f[0].errorf("unknown line type %q: expected t, v or e", f[0].s)
		}
	}
	if err := checkHeader(header, p); err != nil {
		return nil, err
	}
	return p, nil
}

// checkFieldCount checks that a line of the given form has between least and
// most fields, the line type included.
func checkFieldCount(f []lineToken, least, most int, form string) *Error {
	if len(f) > most {
		return f[most].errorf("unexpected field %s: expected %s", f[most].s, form)
	}
	if len(f) < least {
		// Point just past the last field, where the missing one belongs.
		last := f[len(f)-1]
		at := Pos{last.pos.Line, last.pos.Col + utf8.RuneCountInString(last.s) + 1}
		return &Error{Pos: at, Reason: "too few fields: expected " + form}
	}
	return nil
}

// checkHeader compares a "t N M" header with the content of the file.
func checkHeader(h []lineToken, p *Pattern) *Error {
	if len(h) != 3 {
		return nil
	}
	nv, err1 := strconv.Atoi(h[1].s)
	ne, err2 := strconv.Atoi(h[2].s)
	if err1 != nil || err2 != nil || nv <= 0 || ne <= 0 {
		return nil
	}
	if nv != len(p.Vertices) {
		return h[1].errorf("the header says %d vertices, the file has %d", nv, len(p.Vertices))
	}
	if d := distinctEdges(p); ne != len(p.Edges) && ne != d {
		return h[2].errorf("the header says %d edges, the file has %d (%d distinct)", ne, len(p.Edges), d)
	}
	return nil
}

// distinctEdges counts the edges of p as undirected pairs, ignoring repeats.
func distinctEdges(p *Pattern) int {
	type key struct {
		lo, hi int
		label  string
	}
	seen := make(map[key]bool, len(p.Edges))
	for _, e := range p.Edges {
		k := key{min(e.From, e.To), max(e.From, e.To), e.Label}
		seen[k] = true
	}
	return len(seen)
}

// A lineToken is a whitespace-separated field of a line and where it starts.
type lineToken struct {
	s   string
	pos Pos
}

func (t lineToken) errorf(format string, args ...any) *Error {
	return &Error{Pos: t.pos, Reason: fmt.Sprintf(format, args...)}
}

// lineTokens splits line number n into tokens. Any Unicode space separates
// tokens, which takes care of tabs and of the \r of CRLF line ends. Columns
// count runes, as editors do.
func lineTokens(line string, n int) []lineToken {
	var toks []lineToken
	start, startCol := -1, 0
	col := 0
	for i, r := range line {
		col++
		switch {
		case unicode.IsSpace(r) && start >= 0:
			toks = append(toks, lineToken{line[start:i], Pos{n, startCol}})
			start = -1
		case !unicode.IsSpace(r) && start < 0:
			start, startCol = i, col
		}
	}
	if start >= 0 {
		toks = append(toks, lineToken{line[start:], Pos{n, startCol}})
	}
	return toks
}
