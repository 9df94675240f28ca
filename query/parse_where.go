package query

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/gcsm/gcsm/graph"
)

// clauses parses what may follow the pattern: WHERE <condition> and
// WITHIN <duration>, each at most once, in either order, then RETURN.
func (c *cypherParser) clauses() *Error {
	want := "',', WHERE, WITHIN, RETURN or the end of the pattern"
	for {
		c.skipSpace()
		if c.src == "" {
			return nil
		}
		at := c.pos()
		switch w := leadingWord(c.src); {
		case strings.EqualFold(w, "WHERE"):
			if c.p.Where != nil {
				return &Error{Pos: at, Reason: "a second WHERE: join the conditions with AND"}
			}
			c.word()
			c.skipSpace()
			e, err := c.or()
			if err != nil {
				return err
			}
			c.p.Where = e
			want = "an operator, WITHIN, RETURN or the end of the query"
		case strings.EqualFold(w, "WITHIN"):
			if c.p.Within != 0 {
				return &Error{Pos: at, Reason: "a second WITHIN: a pattern has one time bound"}
			}
			c.word()
			if err := c.within(at); err != nil {
				return err
			}
			want = "WHERE, RETURN or the end of the query"
		case strings.EqualFold(w, "RETURN"):
			c.word()
			return c.returns()
		default:
			return c.unexpected(want)
		}
	}
}

// returns parses the items of RETURN, the last clause of a pattern:
//
//	return = RETURN item {, item}
//	item   = or [AS name]
func (c *cypherParser) returns() *Error {
	for {
		c.skipSpace()
		at := c.pos()
		if c.src == "" {
			return c.unexpected("an item to return, such as a, t1.amount or sum([t1, t2].amount)")
		}
		e, err := c.or()
		if err != nil {
			return err
		}
		item := ReturnItem{Expr: e, Pos: at}
		c.skipSpace()
		want := "an operator, AS, ',' or the end of the query"
		if n := c.keyword("AS"); n > 0 {
			c.advanceBytes(n)
			c.skipSpace()
			if item.Name, err = c.itemName(); err != nil {
				return err
			}
			c.skipSpace()
			want = "',' or the end of the query"
		} else {
			item.Name = defaultName(e)
		}
		c.p.Return = append(c.p.Return, item)
		if c.accept(',') {
			continue
		}
		switch w := leadingWord(c.src); {
		case c.src == "":
			return nil
		case strings.EqualFold(w, "RETURN"):
			return &Error{Pos: c.pos(), Reason: "a second RETURN: list every item in one, separated by commas"}
		case strings.EqualFold(w, "WHERE"), strings.EqualFold(w, "WITHIN"):
			return &Error{Pos: c.pos(), Reason: fmt.Sprintf("%s after RETURN: RETURN is the last clause, so write %s before it", w, strings.ToUpper(w))}
		}
		return c.unexpected(want)
	}
}

// itemName parses the name after AS: a word or any text in backquotes.
func (c *cypherParser) itemName() (string, *Error) {
	at := c.pos()
	if c.peek() == '`' {
		name, err := c.quoted("name")
		if err == nil && name == "" {
			err = &Error{Pos: at, Reason: "empty name after AS"}
		}
		return name, err
	}
	name := c.word()
	if name == "" {
		return "", c.unexpected("a name after AS")
	}
	return name, nil
}

// defaultName is the name of a RETURN item without AS: a bare variable's
// own, v.p for a property, the source text for anything else.
func defaultName(e *Expr) string {
	switch e.Op {
	case OpVar:
		return e.Var
	case OpProp:
		return e.Var + "." + e.Name
	}
	return e.Text
}

// within parses the duration of WITHIN, whose keyword is at at.
func (c *cypherParser) within(at Pos) *Error {
	c.skipSpace()
	start := c.pos()
	if r := c.peek(); r < '0' || r > '9' {
		return c.unexpected("a duration such as 1h or 30m after WITHIN")
	}
	e, err := c.number()
	if err != nil {
		return err
	}
	if e.Op != OpDuration {
		return &Error{Pos: start, Reason: fmt.Sprintf("WITHIN %s: give a unit, as in %sm (ms, s, m, h or d)", e.Text, e.Text)}
	}
	ns := math.Round(e.Lit.Num * float64(time.Millisecond))
	switch {
	case ns < 1:
		return &Error{Pos: start, Reason: "WITHIN " + e.Text + ": the bound must be positive"}
	case ns >= math.MaxInt64:
		return &Error{Pos: start, Reason: "WITHIN " + e.Text + ": the bound is too long"}
	}
	c.p.Within, c.p.WithinPos = time.Duration(ns), at
	return nil
}

// The expression grammar, loosest first, as in Cypher:
//
//	or      = and {OR and}
//	and     = not {AND not}
//	not     = NOT not | compare
//	compare = sum [(= | <> | != | < | <= | > | >=) sum | IN list | IS [NOT] NULL]
//	sum     = product {(+ | -) product}
//	product = unary {(* | /) unary}
//	unary   = - unary | primary
//	primary = number | duration | string | TRUE | FALSE | var.prop | var | aggregate | ( or )
//	list    = [ [or {, or}] ]
//
// A bare var is a RETURN item of its own, and scope.check refuses it
// anywhere else; see aggregate for min, max and sum.
//
// Each function starts at its first token and stops right after its last,
// so that a node's Text has no trailing space.

func (c *cypherParser) offset() int { return len(c.all) - len(c.src) }

// mark is a point in the input to go back to, so that looking past spaces
// for an operator that is not there leaves the spaces unread.
type mark struct {
	src       string
	line, col int
}

func (c *cypherParser) mark() mark   { return mark{c.src, c.line, c.col} }
func (c *cypherParser) reset(m mark) { c.src, c.line, c.col = m.src, m.line, m.col }

// build makes a node of op that began at start (a byte offset) and at and
// ends here.
func (c *cypherParser) build(op Op, start int, at Pos, args ...*Expr) *Expr {
	return &Expr{Op: op, Args: args, Pos: at, Text: c.all[start:c.offset()]}
}

// binary parses a left-associative chain of next joined by the operators
// that op recognizes.
func (c *cypherParser) binary(next func() (*Expr, *Error), op func() (Op, int)) (*Expr, *Error) {
	start, at := c.offset(), c.pos()
	left, err := next()
	if err != nil {
		return nil, err
	}
	for {
		m := c.mark()
		c.skipSpace()
		o, n := op()
		if n == 0 {
			c.reset(m)
			return left, nil
		}
		c.advanceBytes(n)
		c.skipSpace()
		right, err := next()
		if err != nil {
			return nil, err
		}
		left = c.build(o, start, at, left, right)
	}
}

// maxNesting bounds how deep parentheses, lists, NOT and minus may nest,
// so that a hostile query cannot exhaust the stack of the parser, the
// checks or the evaluation, which all recurse.
const maxNesting = 200

// nest enters one level of nesting at the next token; the caller defers
// c.depth--.
func (c *cypherParser) nest() *Error {
	if c.depth++; c.depth > maxNesting {
		return &Error{Pos: c.pos(), Reason: fmt.Sprintf("the condition nests deeper than %d levels", maxNesting)}
	}
	return nil
}

func (c *cypherParser) or() (*Expr, *Error) {
	if err := c.nest(); err != nil {
		return nil, err
	}
	defer func() { c.depth-- }()
	return c.binary(c.and, func() (Op, int) { return OpOr, c.keyword("OR") })
}

func (c *cypherParser) and() (*Expr, *Error) {
	return c.binary(c.not, func() (Op, int) { return OpAnd, c.keyword("AND") })
}

func (c *cypherParser) not() (*Expr, *Error) {
	start, at := c.offset(), c.pos()
	if n := c.keyword("NOT"); n > 0 {
		if err := c.nest(); err != nil {
			return nil, err
		}
		defer func() { c.depth-- }()
		c.advanceBytes(n)
		c.skipSpace()
		e, err := c.not()
		if err != nil {
			return nil, err
		}
		return c.build(OpNot, start, at, e), nil
	}
	return c.compare()
}

// keyword returns the length of the keyword k if the input starts with it,
// in any case, or 0. A word followed by a dot is a variable, as in not.x,
// so that a vertex or relationship may have any name.
func (c *cypherParser) keyword(k string) int {
	if w := leadingWord(c.src); strings.EqualFold(w, k) && !c.dotAfter(len(w)) {
		return len(w)
	}
	return 0
}

// dotAfter says whether the first thing after the next n bytes, spaces and
// comments aside, is a dot.
func (c *cypherParser) dotAfter(n int) bool {
	m := c.mark()
	defer c.reset(m)
	c.advanceBytes(n)
	c.skipSpace()
	return c.peek() == '.'
}

// comparison returns the comparison operator at the start of the input and
// its length, or 0.
func (c *cypherParser) comparison() (Op, int) {
	for _, o := range []struct {
		text string
		op   Op
	}{{"<>", OpNe}, {"!=", OpNe}, {"<=", OpLe}, {">=", OpGe}, {"=", OpEq}, {"<", OpLt}, {">", OpGt}} {
		if strings.HasPrefix(c.src, o.text) {
			return o.op, len(o.text)
		}
	}
	return 0, 0
}

func (c *cypherParser) compare() (*Expr, *Error) {
	start, at := c.offset(), c.pos()
	left, err := c.sum()
	if err != nil {
		return nil, err
	}
	m := c.mark()
	c.skipSpace()
	var e *Expr
	if op, n := c.comparison(); n > 0 {
		c.advanceBytes(n)
		c.skipSpace()
		right, err := c.sum()
		if err != nil {
			return nil, err
		}
		e = c.build(op, start, at, left, right)
	} else if n := c.keyword("IN"); n > 0 {
		c.advanceBytes(n)
		c.skipSpace()
		list, err := c.list()
		if err != nil {
			return nil, err
		}
		e = c.build(OpIn, start, at, append([]*Expr{left}, list...)...)
	} else if n := c.keyword("IS"); n > 0 {
		c.advanceBytes(n)
		c.skipSpace()
		op := OpIsNull
		if n := c.keyword("NOT"); n > 0 {
			c.advanceBytes(n)
			c.skipSpace()
			op = OpNotNull
		}
		n := c.keyword("NULL")
		if n == 0 {
			return nil, c.unexpected("NULL or NOT NULL after IS")
		}
		c.advanceBytes(n)
		e = c.build(op, start, at, left)
	} else {
		c.reset(m)
		return left, nil
	}
	m = c.mark()
	c.skipSpace()
	if _, n := c.comparison(); n > 0 || c.keyword("IN") > 0 || c.keyword("IS") > 0 {
		return nil, &Error{Pos: c.pos(), Reason: fmt.Sprintf("a comparison cannot follow %s: join comparisons with AND, as in a < b AND b < c", e.Text)}
	}
	c.reset(m)
	return e, nil
}

func (c *cypherParser) list() ([]*Expr, *Error) {
	open := c.pos()
	if !c.accept('[') {
		return nil, c.unexpected("'[' to start the list after IN")
	}
	var list []*Expr
	for {
		c.skipSpace()
		if c.accept(']') {
			return list, nil
		}
		if len(list) > 0 {
			if !c.accept(',') {
				if c.src == "" {
					return nil, &Error{Pos: open, Reason: "unterminated list: expected ']'"}
				}
				return nil, c.unexpected("',' or ']'")
			}
			c.skipSpace()
		}
		if c.src == "" {
			return nil, &Error{Pos: open, Reason: "unterminated list: expected ']'"}
		}
		e, err := c.or()
		if err != nil {
			return nil, err
		}
		list = append(list, e)
	}
}

func (c *cypherParser) sum() (*Expr, *Error) {
	return c.binary(c.product, func() (Op, int) {
		switch c.peek() {
		case '+':
			return OpAdd, 1
		case '-':
			return OpSub, 1
		}
		return 0, 0
	})
}

func (c *cypherParser) product() (*Expr, *Error) {
	return c.binary(c.unary, func() (Op, int) {
		switch c.peek() {
		case '*':
			return OpMul, 1
		case '/':
			if !strings.HasPrefix(c.src, "//") {
				return OpDiv, 1
			}
		}
		return 0, 0
	})
}

func (c *cypherParser) unary() (*Expr, *Error) {
	start, at := c.offset(), c.pos()
	if c.peek() != '-' {
		return c.primary()
	}
	if err := c.nest(); err != nil {
		return nil, err
	}
	defer func() { c.depth-- }()
	c.advance()
	c.skipSpace()
	e, err := c.unary()
	if err != nil {
		return nil, err
	}
	return c.build(OpNeg, start, at, e), nil
}

func (c *cypherParser) primary() (*Expr, *Error) {
	start, at := c.offset(), c.pos()
	switch r := c.peek(); {
	case r >= '0' && r <= '9':
		return c.number()
	case r == '\'' || r == '"':
		s, err := c.str()
		if err != nil {
			return nil, err
		}
		e := c.build(OpLit, start, at)
		e.Lit = graph.StringValue(s)
		return e, nil
	case r == '(':
		c.advance()
		c.skipSpace()
		e, err := c.or()
		if err != nil {
			return nil, err
		}
		c.skipSpace()
		if !c.accept(')') {
			if c.src == "" {
				return nil, &Error{Pos: at, Reason: "unterminated parenthesis: expected ')'"}
			}
			return nil, c.unexpected("an operator or ')'")
		}
		// The node keeps its parentheses, so that messages quote them.
		e.Pos, e.Text = at, c.all[start:c.offset()]
		return e, nil
	}
	w := leadingWord(c.src)
	switch {
	case w == "":
		return nil, c.unexpected("a value: a number, a duration, a 'string', true, false, a property such as t1.amount, or '('")
	case c.dotAfter(len(w)):
		c.word()
		c.skipSpace()
		c.advance() // the dot
		c.skipSpace()
		name, err := c.propName(w + ".")
		if err != nil {
			return nil, err
		}
		e := c.build(OpProp, start, at)
		e.Var, e.Name = w, name
		return e, nil
	case strings.EqualFold(w, "TRUE"), strings.EqualFold(w, "FALSE"):
		c.word()
		e := c.build(OpLit, start, at)
		e.Lit = graph.BoolValue(strings.EqualFold(w, "TRUE"))
		return e, nil
	case strings.EqualFold(w, "NULL"):
		return nil, &Error{Pos: at, Reason: "null is not a value here: test for a missing property with IS NULL or IS NOT NULL"}
	case isKeyword(w):
		return nil, c.unexpected("a value")
	case c.parenAfter(len(w)):
		return c.aggregate(w, start, at)
	}
	c.word()
	e := c.build(OpVar, start, at)
	e.Var = w
	return e, nil
}

// propName parses a property name, after the dot that follows what.
func (c *cypherParser) propName(what string) (string, *Error) {
	nameAt := c.pos()
	if c.peek() == '`' {
		name, err := c.quoted("property name")
		if err == nil && name == "" {
			err = &Error{Pos: nameAt, Reason: "empty property name"}
		}
		return name, err
	}
	if name := c.word(); name != "" {
		return name, nil
	}
	return "", c.unexpected("a property name after " + what)
}

// parenAfter says whether the first thing after the next n bytes, spaces and
// comments aside, is an opening parenthesis: a function call.
func (c *cypherParser) parenAfter(n int) bool {
	m := c.mark()
	defer c.reset(m)
	c.advanceBytes(n)
	c.skipSpace()
	return c.peek() == '('
}

// aggregates are the functions, each over a list of variables.
var aggregates = map[string]Op{"min": OpMin, "max": OpMax, "sum": OpSum}

// aggregate parses a call of the function fn, which starts at start and at:
//
//	aggregate = (min | max | sum) ( [ variable {, variable} ] . property )
func (c *cypherParser) aggregate(fn string, start int, at Pos) (*Expr, *Error) {
	op, ok := aggregates[strings.ToLower(fn)]
	if !ok {
		return nil, &Error{Pos: at, Reason: fmt.Sprintf("unknown function %s: the functions are min, max and sum, as in sum([t1, t2].amount)", fn)}
	}
	c.word()
	c.skipSpace()
	open := c.pos()
	c.advance() // the parenthesis
	c.skipSpace()
	list := c.pos()
	if !c.accept('[') {
		return nil, c.unexpected(fmt.Sprintf("'[' to start the list of variables, as in %s([t1, t2].amount)", op))
	}
	var vars []*Expr
	for {
		c.skipSpace()
		if c.accept(']') {
			break
		}
		if len(vars) > 0 {
			if !c.accept(',') {
				if c.src == "" {
					return nil, &Error{Pos: list, Reason: "unterminated list: expected ']'"}
				}
				return nil, c.unexpected("',' or ']'")
			}
			c.skipSpace()
		}
		if c.src == "" {
			return nil, &Error{Pos: list, Reason: "unterminated list: expected ']'"}
		}
		vStart, vAt := c.offset(), c.pos()
		name, _, err := c.variable()
		if err != nil {
			return nil, err
		}
		if name == "" {
			return nil, c.unexpected("a vertex or relationship variable")
		}
		v := c.build(OpVar, vStart, vAt)
		v.Var = name
		vars = append(vars, v)
	}
	if len(vars) == 0 {
		return nil, &Error{Pos: list, Reason: fmt.Sprintf("%s of an empty list: list the variables, as in %s([t1, t2].amount)", op, op)}
	}
	c.skipSpace()
	if !c.accept('.') {
		return nil, c.unexpected("'.' and the property to aggregate after the list, as in [t1, t2].amount")
	}
	c.skipSpace()
	name, err := c.propName("the list's '.'")
	if err != nil {
		return nil, err
	}
	c.skipSpace()
	if !c.accept(')') {
		if c.src == "" {
			return nil, &Error{Pos: open, Reason: "unterminated call of " + fn + ": expected ')'"}
		}
		return nil, c.unexpected("')'")
	}
	e := c.build(op, start, at, vars...)
	e.Name = name
	return e, nil
}

// durationUnits are the units of a duration literal, in milliseconds.
var durationUnits = map[string]float64{"ms": 1, "s": 1e3, "m": 60e3, "h": 3600e3, "d": 86400e3}

// number parses a number (12, 0.9, 1e6) or a duration: one or more numbers
// each followed by a unit, as in 500ms, 1.5h or 1h30m.
func (c *cypherParser) number() (*Expr, *Error) {
	start, at := c.offset(), c.pos()
	total, parts := 0.0, 0
	for {
		partStart, partAt := c.offset(), c.pos()
		c.digits()
		if c.peek() == '.' {
			c.advance()
			if c.digits() == "" {
				return nil, &Error{Pos: partAt, Reason: "a number needs digits after its decimal point"}
			}
		}
		if rest := c.src; len(rest) > 1 && (rest[0] == 'e' || rest[0] == 'E') {
			if rest = rest[1:]; rest[0] == '+' || rest[0] == '-' {
				rest = rest[1:]
			}
			if rest != "" && rest[0] >= '0' && rest[0] <= '9' {
				c.advanceBytes(len(c.src) - len(rest))
				c.digits()
			}
		}
		text := c.all[partStart:c.offset()]
		v, err := strconv.ParseFloat(text, 64)
		switch {
		case errors.Is(err, strconv.ErrRange):
			return nil, &Error{Pos: partAt, Reason: fmt.Sprintf("number %s is out of range", text)}
		case err != nil:
			panic("BUG: query: the number lexer accepted " + strconv.Quote(text))
		}
		unitAt := c.pos()
		unit := c.letters()
		if unit == "" {
			if parts > 0 {
				return nil, &Error{Pos: unitAt, Reason: fmt.Sprintf("%s: every part of a duration needs a unit (ms, s, m, h or d)", c.all[start:c.offset()])}
			}
			e := c.build(OpLit, start, at)
			e.Lit = graph.NumberValue(v)
			return e, nil
		}
		ms, ok := durationUnits[unit]
		if !ok {
			return nil, &Error{Pos: unitAt, Reason: fmt.Sprintf("unknown unit %q after a number: a duration's units are ms, s, m, h and d", unit)}
		}
		total += v * ms
		parts++
		if math.IsInf(total, 0) {
			return nil, &Error{Pos: at, Reason: fmt.Sprintf("duration %s is out of range", c.all[start:c.offset()])}
		}
		if r := c.peek(); r < '0' || r > '9' {
			e := c.build(OpDuration, start, at)
			e.Lit = graph.NumberValue(total)
			return e, nil
		}
	}
}

// str parses a string literal in single or double quotes. A backslash
// escapes \\, \', \", and gives \n, \t and \r; any other byte stands for
// itself, so that the string keeps bytes that are not valid UTF-8.
func (c *cypherParser) str() (string, *Error) {
	open := c.pos()
	quote := c.src[0]
	c.advance()
	var b strings.Builder
	for {
		if c.src == "" {
			return "", &Error{Pos: open, Reason: fmt.Sprintf("unterminated string: expected a closing %c", quote)}
		}
		switch ch := c.src[0]; ch {
		case quote:
			c.advance()
			return b.String(), nil
		case '\\':
			at := c.pos()
			c.advance()
			if c.src == "" {
				continue
			}
			switch e := c.src[0]; e {
			case '\\', '\'', '"':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			default:
				return "", &Error{Pos: at, Reason: fmt.Sprintf("unknown escape \\%c in a string: use \\\\, \\', \\\", \\n, \\t or \\r", c.peek())}
			}
			c.advance()
		default:
			before := c.src
			c.advance()
			b.WriteString(before[:len(before)-len(c.src)])
		}
	}
}

// digits consumes and returns a run of ASCII digits.
func (c *cypherParser) digits() string {
	n := 0
	for n < len(c.src) && c.src[n] >= '0' && c.src[n] <= '9' {
		n++
	}
	d := c.src[:n]
	c.advanceBytes(n)
	return d
}

// letters consumes and returns a run of letters.
func (c *cypherParser) letters() string {
	end := strings.IndexFunc(c.src, func(r rune) bool { return !unicode.IsLetter(r) })
	if end < 0 {
		end = len(c.src)
	}
	l := c.src[:end]
	c.advanceBytes(end)
	return l
}

// advanceBytes consumes the next n bytes, which hold no newline.
func (c *cypherParser) advanceBytes(n int) {
	for consumed := len(c.src) - n; len(c.src) > consumed; {
		c.advance()
	}
}
