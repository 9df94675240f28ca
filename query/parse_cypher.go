package query

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ParseCypher parses a pattern written as in the MATCH clause of Cypher:
//
//	MATCH (a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a)
//
// The MATCH keyword is optional. A node is (name), (name:Label), (:Label) or
// (); a node without a name is a vertex of its own, named _1, _2 and so on.
// A node without a label is a Wildcard. Names are letters, digits and
// underscores, not starting with a digit; a label is a name, a number (CSM
// labels are numbers, as in (a:0)) or any text in backquotes, where a
// doubled backquote stands for one.
//
// A relationship is --, -->, <--, -[r:TYPE]-, -[r:TYPE]-> or <-[r:TYPE]-,
// where the variable r and the type are both optional. -- is undirected;
// --> points From the left node To the right one and <-- the other way. The
// type is the edge label; no type is a Wildcard. A relationship variable
// must be unique; it names the transfer that the edge binds, for WHERE.
//
// Comma-separated paths form one pattern, and a name that appears again
// stands for the same vertex, so (a)-->(b), (a)-->(c) is a fork. The label
// may be given at any one appearance, or repeated. Whitespace, newlines and
// // comments may come between any two tokens.
//
// The pattern may be followed by WHERE <condition> and WITHIN <duration>,
// each at most once, in either order:
//
//	MATCH (a:Account)-[t1:TRANSFER]->(b:Account)-[t2:TRANSFER]->(a)
//	WHERE t1.amount > 10000 AND t1.ts < t2.ts AND t2.amount >= 0.9 * t1.amount
//	WITHIN 1h
//
// A condition reads properties (t1.amount, a.country, t1.`odd name`; an
// edge's ts is its event time and id its transfer id) and literals:
// numbers (12, 0.9, 1e6), strings ('EUR' or "EUR", with \\ \' \" \n \t
// \r escapes), true, false and durations (500ms, 30s, 15m, 1h, 2d, 1h30m).
// Its operators, loosest first: OR; AND; NOT; comparisons (= <> != < <= >
// >=), x IN [list], x IS NULL and x IS NOT NULL; + and -; * and /; unary -.
// Times and durations combine as time - time = duration, time ± duration =
// time and number * duration = duration. Keywords are case-insensitive.
// WITHIN d bounds the latest ts of the match's edges minus the earliest by
// d. See Expr for the three-valued logic.
//
// RETURN, last, lists what each match reports, each item an expression
// (as in WHERE, with aggregates such as sum([t1, t2].amount)) or a bare
// variable, optionally named with AS:
//
//	RETURN a, b, sum([t1, t2].amount) AS total, t2.ts - t1.ts AS gap
//
// The pattern is named source. A malformed or invalid pattern gives an
// *Error (see Validate).
func ParseCypher(source, text string) (*Pattern, error) {
	c := &cypherParser{
		all:      stripBOM(text),
		src:      stripBOM(text),
		line:     1,
		col:      1,
		p:        &Pattern{Name: source},
		vertices: make(map[string]int),
		rels:     make(map[string]bool),
	}
	if err := c.parse(); err != nil {
		err.Source = source
		return nil, err
	}
	return validated(source, c.p)
}

// endOfInput is what peek returns at the end of the input.
const endOfInput = -1

type cypherParser struct {
	all       string // the whole input, for the source text of expressions
	src       string // the unread input
	line, col int    // the position of src's first rune
	p         *Pattern
	vertices  map[string]int  // vertex index by name
	rels      map[string]bool // relationship variables seen
	depth     int             // how deep the condition being parsed nests
}

func (c *cypherParser) parse() *Error {
	c.skipSpace()
	if c.src == "" {
		return &Error{Pos: c.pos(), Reason: "empty input: expected a pattern such as (a)-->(b)"}
	}
	if strings.EqualFold(leadingWord(c.src), "MATCH") {
		c.word()
		c.skipSpace()
	}
	for {
		if err := c.path(); err != nil {
			return err
		}
		c.skipSpace()
		if !c.accept(',') {
			break
		}
		c.skipSpace()
	}
	c.nameAnonymous()
	return c.clauses()
}

// path parses a node followed by any number of relationship-node pairs.
func (c *cypherParser) path() *Error {
	left, err := c.node()
	if err != nil {
		return err
	}
	for {
		c.skipSpace()
		if r := c.peek(); r != '-' && r != '<' {
			return nil
		}
		e, leftward, err := c.relationship()
		if err != nil {
			return err
		}
		c.skipSpace()
		if c.src == "" {
			return &Error{Pos: e.Pos, Reason: "relationship with no node after it: expected '('"}
		}
		right, err := c.node()
		if err != nil {
			return err
		}
		e.From, e.To = left, right
		if leftward {
			e.From, e.To = right, left
		}
		c.p.Edges = append(c.p.Edges, e)
		left = right
	}
}

// node parses a node and returns the index of its vertex.
func (c *cypherParser) node() (int, *Error) {
	open := c.pos()
	if !c.accept('(') {
		return 0, c.unexpected("'(' to start a node")
	}
	c.skipSpace()
	name, _, err := c.variable()
	if err != nil {
		return 0, err
	}
	c.skipSpace()
	var label string
	var labelAt Pos
	if c.accept(':') {
		c.skipSpace()
		labelAt = c.pos()
		if label, err = c.label(); err != nil {
			return 0, err
		}
		c.skipSpace()
	}
	if err := c.expect(')', open, "node"); err != nil {
		return 0, err
	}
	return c.vertex(name, label, open, labelAt)
}

// vertex returns the index of the vertex that a node (name:label) at open
// stands for, adding one for a new name or no name.
func (c *cypherParser) vertex(name, label string, open, labelAt Pos) (int, *Error) {
	i, seen := c.vertices[name]
	if !seen {
		if c.rels[name] {
			return 0, &Error{Pos: open, Reason: name + " is already a relationship variable"}
		}
		i = len(c.p.Vertices)
		c.p.Vertices = append(c.p.Vertices, Vertex{Name: name, Wildcard: true, Pos: open})
		// Anonymous vertices stay out of the map, so that each () is new.
		if name != "" {
			c.vertices[name] = i
		}
	}
	v := &c.p.Vertices[i]
	switch {
	case label == "" || label == v.Label:
	case v.Wildcard:
		v.Label, v.Wildcard = label, false
	default:
		return 0, &Error{Pos: labelAt, Reason: fmt.Sprintf("vertex %s has two labels, %q and %q", name, v.Label, label)}
	}
	return i, nil
}

// relationship parses a relationship and returns its edge, less the
// endpoints, and whether it points from the right node to the left one.
func (c *cypherParser) relationship() (Edge, bool, *Error) {
	e := Edge{Wildcard: true, Pos: c.pos()}
	leftward := c.accept('<')
	c.skipSpace()
	if err := c.expect('-', e.Pos, "relationship"); err != nil {
		return e, false, err
	}
	c.skipSpace()
	if open := c.pos(); c.accept('[') {
		c.skipSpace()
		name, at, err := c.variable()
		if err != nil {
			return e, false, err
		}
		if name != "" {
			if c.rels[name] {
				return e, false, &Error{Pos: at, Reason: "relationship variable " + name + " is used twice"}
			}
			if _, ok := c.vertices[name]; ok {
				return e, false, &Error{Pos: at, Reason: name + " is already a vertex"}
			}
			c.rels[name] = true
			e.Name = name
		}
		c.skipSpace()
		if c.accept(':') {
			c.skipSpace()
			if e.Label, err = c.label(); err != nil {
				return e, false, err
			}
			e.Wildcard = false
			c.skipSpace()
		}
		if err := c.expect(']', open, "relationship"); err != nil {
			return e, false, err
		}
		c.skipSpace()
	}
	if err := c.expect('-', e.Pos, "relationship"); err != nil {
		return e, false, err
	}
	c.skipSpace()
	rightward := c.accept('>')
	if leftward && rightward {
		return e, false, &Error{Pos: e.Pos, Reason: "a relationship cannot point both ways: write -- for either direction"}
	}
	e.Directed = leftward || rightward
	return e, leftward, nil
}

// variable parses an optional node or relationship variable and returns it
// and where it starts.
func (c *cypherParser) variable() (string, Pos, *Error) {
	at := c.pos()
	w := c.word()
	if r, _ := utf8.DecodeRuneInString(w); unicode.IsDigit(r) {
		return "", at, &Error{Pos: at, Reason: fmt.Sprintf("invalid name %s: a name starts with a letter or an underscore", w)}
	}
	return w, at, nil
}

// label parses a label or relationship type after its colon.
func (c *cypherParser) label() (string, *Error) {
	at := c.pos()
	if c.peek() == '`' {
		label, err := c.quoted("label")
		if err == nil && label == "" {
			err = &Error{Pos: at, Reason: "empty label: leave the label out to match any"}
		}
		return label, err
	}
	w := c.word()
	if w == "" {
		return "", c.unexpected("a label")
	}
	if r, _ := utf8.DecodeRuneInString(w); unicode.IsDigit(r) && strings.IndexFunc(w, isNotDigit) >= 0 {
		return "", &Error{Pos: at, Reason: fmt.Sprintf("invalid label %s: a label is a name, a number or `any text`", w)}
	}
	return w, nil
}

func isNotDigit(r rune) bool { return !unicode.IsDigit(r) }

// quoted parses a backquoted label or property name ("what"). It slices the
// input rather than decoding it, so that the text keeps its bytes even where
// they are not valid UTF-8.
func (c *cypherParser) quoted(what string) (string, *Error) {
	open := c.pos()
	c.advance()
	start := c.src
	for !strings.HasPrefix(c.src, "`") || strings.HasPrefix(c.src, "``") {
		if c.src == "" {
			return "", &Error{Pos: open, Reason: "unterminated " + what + ": expected a closing backquote"}
		}
		if strings.HasPrefix(c.src, "``") {
			c.advance()
		}
		c.advance()
	}
	label := strings.ReplaceAll(start[:len(start)-len(c.src)], "``", "`")
	c.advance()
	return label, nil
}

// expect consumes r, which continues or closes the node or relationship
// ("what") that starts at open.
func (c *cypherParser) expect(r rune, open Pos, what string) *Error {
	if c.accept(r) {
		return nil
	}
	if c.src == "" {
		return &Error{Pos: open, Reason: fmt.Sprintf("unterminated %s: expected %q", what, r)}
	}
	// Name the Cypher features that users are likely to try and that a
	// pattern of gcsm cannot express.
	var reason string
	switch c.peek() {
	case ':':
		reason = "a " + what + " has at most one label"
	case '|':
		reason = "alternative labels (A|B) are not supported"
	case '{':
		reason = "property maps are not supported"
	case '*':
		if what == "relationship" {
			reason = "variable-length relationships are not supported"
		}
	}
	if reason != "" {
		return &Error{Pos: c.pos(), Reason: reason}
	}
	return c.unexpected(fmt.Sprintf("%q", r))
}

// nameAnonymous names each anonymous vertex _1, _2 and so on in order of
// appearance, skipping names that the pattern itself uses.
func (c *cypherParser) nameAnonymous() {
	n := 0
	for i := range c.p.Vertices {
		v := &c.p.Vertices[i]
		for v.Name == "" {
			n++
			name := "_" + strconv.Itoa(n)
			if _, taken := c.vertices[name]; !taken && !c.rels[name] {
				v.Name = name
			}
		}
	}
}

// unexpected reports that the next token is not the wanted one.
func (c *cypherParser) unexpected(want string) *Error {
	var what string
	switch w := leadingWord(c.src); {
	case c.src == "":
		what = "end of input"
	case w != "":
		what = strconv.Quote(w)
	default:
		what = strconv.QuoteRune(c.peek())
	}
	return &Error{Pos: c.pos(), Reason: "unexpected " + what + ": expected " + want}
}

func (c *cypherParser) pos() Pos { return Pos{c.line, c.col} }

// peek returns the next rune, or endOfInput.
func (c *cypherParser) peek() rune {
	if c.src == "" {
		return endOfInput
	}
	r, _ := utf8.DecodeRuneInString(c.src)
	return r
}

// advance consumes one rune, or one byte that is not valid UTF-8.
func (c *cypherParser) advance() {
	r, n := utf8.DecodeRuneInString(c.src)
	c.src = c.src[n:]
	if r == '\n' {
		c.line++
		c.col = 1
	} else {
		c.col++
	}
}

// accept consumes r if it is next.
func (c *cypherParser) accept(r rune) bool {
	if c.peek() != r {
		return false
	}
	c.advance()
	return true
}

// skipSpace skips whitespace and // comments.
func (c *cypherParser) skipSpace() {
	for {
		switch r := c.peek(); {
		case r != endOfInput && unicode.IsSpace(r):
			c.advance()
		case strings.HasPrefix(c.src, "//"):
			for c.src != "" && c.peek() != '\n' {
				c.advance()
			}
		default:
			return
		}
	}
}

// word consumes and returns a run of letters, digits and underscores.
func (c *cypherParser) word() string {
	w := leadingWord(c.src)
	c.src = c.src[len(w):]
	c.col += utf8.RuneCountInString(w)
	return w
}

// leadingWord returns the run of letters, digits and underscores that s
// starts with.
func leadingWord(s string) string {
	end := strings.IndexFunc(s, func(r rune) bool {
		return r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	if end < 0 {
		return s
	}
	return s[:end]
}
