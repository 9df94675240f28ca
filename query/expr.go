package query

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gcsm/gcsm/graph"
)

// Op is the operator of an Expr node.
type Op uint8

const (
	OpLit      Op = iota // a literal: Lit is a Number, String or Bool
	OpDuration           // a duration literal: Lit.Num is in milliseconds
	OpProp               // Var.Name: a property of a vertex or an edge
	OpNot                // NOT Args[0]
	OpNeg                // -Args[0]
	OpIsNull             // Args[0] IS NULL
	OpNotNull            // Args[0] IS NOT NULL
	OpAnd                // Args[0] AND Args[1]
	OpOr                 // Args[0] OR Args[1]
	OpEq                 // =
	OpNe                 // <> or !=
	OpLt                 // <
	OpLe                 // <=
	OpGt                 // >
	OpGe                 // >=
	OpAdd                // +
	OpSub                // -
	OpMul                // *
	OpDiv                // /
	OpIn                 // Args[0] IN [Args[1], Args[2], ...]
)

var opText = [...]string{
	OpNot: "NOT", OpNeg: "-", OpIsNull: "IS NULL", OpNotNull: "IS NOT NULL", OpAnd: "AND", OpOr: "OR",
	OpEq: "=", OpNe: "<>", OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">=",
	OpAdd: "+", OpSub: "-", OpMul: "*", OpDiv: "/", OpIn: "IN",
}

func (o Op) String() string {
	if int(o) < len(opText) && opText[o] != "" {
		return opText[o]
	}
	switch o {
	case OpLit:
		return "literal"
	case OpDuration:
		return "duration"
	case OpProp:
		return "property"
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// Expr is a node of a WHERE condition.
//
// Values are three-valued, as in Cypher: a property that a vertex or edge
// lacks is null, and so is an operation on null, on kinds it does not take
// (a property may hold any kind), or a division by zero. A comparison with
// null is unknown; NOT unknown is unknown, false AND unknown is false and
// true OR unknown is true; x IS NULL is never unknown. A match satisfies
// the condition only when it is true. Mistakes certain before any data
// arrives (t1.ts > 'x', a.x + 'y') are errors.
type Expr struct {
	Op   Op
	Args []*Expr     // the operands; for OpIn the value, then the list
	Var  string      // OpProp: the vertex or relationship variable
	Name string      // OpProp: the property name
	Lit  graph.Value // OpLit and OpDuration
	Pos  Pos         // where the expression starts in the source
	Text string      // its source text; "" when not parsed
}

// String writes e in the WHERE syntax, fully parenthesized, so that parsing
// it gives e again (less Pos and Text).
func (e *Expr) String() string {
	var b strings.Builder
	e.format(&b)
	return b.String()
}

func (e *Expr) format(b *strings.Builder) {
	if e == nil {
		b.WriteString("?") // in a malformed tree built in code, which check refuses
		return
	}
	arg := func(i int) *Expr {
		if i < len(e.Args) {
			return e.Args[i]
		}
		return nil
	}
	switch e.Op {
	case OpLit:
		switch e.Lit.Kind {
		case graph.String:
			writeString(b, e.Lit.Str)
		case graph.Bool:
			b.WriteString(strconv.FormatBool(e.Lit.Num != 0))
		default:
			b.WriteString(strconv.FormatFloat(e.Lit.Num, 'g', -1, 64))
		}
	case OpDuration:
		b.WriteString(strconv.FormatFloat(e.Lit.Num, 'g', -1, 64))
		b.WriteString("ms")
	case OpProp:
		b.WriteString(e.Var)
		b.WriteByte('.')
		if leadingWord(e.Name) == e.Name && e.Name != "" {
			b.WriteString(e.Name)
		} else {
			b.WriteString("`" + strings.ReplaceAll(e.Name, "`", "``") + "`")
		}
	case OpNot, OpNeg:
		b.WriteString("(")
		b.WriteString(e.Op.String())
		if e.Op == OpNot {
			b.WriteByte(' ')
		}
		arg(0).format(b)
		b.WriteString(")")
	case OpIsNull, OpNotNull:
		b.WriteString("(")
		arg(0).format(b)
		b.WriteString(" " + e.Op.String() + ")")
	case OpIn:
		b.WriteString("(")
		arg(0).format(b)
		b.WriteString(" IN [")
		for i := 1; i < len(e.Args); i++ {
			if i > 1 {
				b.WriteString(", ")
			}
			arg(i).format(b)
		}
		b.WriteString("])")
	default:
		b.WriteString("(")
		arg(0).format(b)
		b.WriteString(" " + e.Op.String() + " ")
		arg(1).format(b)
		b.WriteString(")")
	}
}

// formatDuration writes d in the units of the WHERE syntax, largest first,
// as in 1h30m or 2d; a part below a millisecond makes the last part a
// fraction, as in 1.5ms.
func formatDuration(d time.Duration) string {
	if d <= 0 {
		return d.String()
	}
	var b strings.Builder
	ms := int64(d / time.Millisecond)
	frac := d % time.Millisecond
	for _, u := range []struct {
		name string
		ms   int64
	}{{"d", 86400e3}, {"h", 3600e3}, {"m", 60e3}, {"s", 1e3}} {
		if n := ms / u.ms; n > 0 {
			b.WriteString(strconv.FormatInt(n, 10) + u.name)
			ms -= n * u.ms
		}
	}
	if ms > 0 || frac > 0 {
		b.WriteString(strconv.FormatFloat(float64(ms)+float64(frac)/1e6, 'f', -1, 64) + "ms")
	}
	return b.String()
}

// writeString writes s as a single-quoted string literal.
func writeString(b *strings.Builder, s string) {
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '\'':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
}

// source returns the text to show for e in messages.
func (e *Expr) source() string {
	if e.Text != "" {
		return e.Text
	}
	return e.String()
}

// types is a set of the kinds an expression may have at run time, apart
// from null, which any expression may be.
type types uint8

const (
	tNumber types = 1 << iota
	tString
	tBool
	tTime
	tDuration

	// tProp is what a property of unknown kind may hold: events carry
	// numbers, strings and booleans, and times are their own kind.
	tProp = tNumber | tString | tBool | tTime
)

// kindType maps a run-time kind to its type; null has none.
func kindType(k graph.Kind) types {
	switch k {
	case graph.Number:
		return tNumber
	case graph.String:
		return tString
	case graph.Bool:
		return tBool
	case graph.Time:
		return tTime
	case durationKind:
		return tDuration
	}
	return 0
}

var typeNames = []struct {
	t    types
	name string
}{{tNumber, "a number"}, {tString, "a string"}, {tBool, "a boolean"}, {tTime, "a time"}, {tDuration, "a duration"}}

func (t types) String() string {
	if t == tProp {
		return "a property of any kind"
	}
	var names []string
	for _, n := range typeNames {
		if t&n.t != 0 {
			names = append(names, n.name)
		}
	}
	switch len(names) {
	case 0:
		return "nothing"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// binaryType gives the type of a binary operation on operands of single
// kinds, or 0 where the operation is undefined. The same table decides the
// static check and the run-time result, so that the two cannot disagree.
func binaryType(op Op, l, r types) types {
	if l == 0 || r == 0 {
		return 0 // null, or a kind that no operator takes
	}
	switch op {
	case OpAnd, OpOr:
		if l == tBool && r == tBool {
			return tBool
		}
	case OpEq, OpNe:
		if l == r {
			return tBool
		}
	case OpLt, OpLe, OpGt, OpGe:
		if l == r && l != tBool {
			return tBool
		}
	case OpAdd:
		switch {
		case l == tNumber && r == tNumber, l == tDuration && r == tDuration:
			return l
		case l == tTime && r == tDuration, l == tDuration && r == tTime:
			return tTime
		}
	case OpSub:
		switch {
		case l == tNumber && r == tNumber, l == tDuration && r == tDuration:
			return l
		case l == tTime && r == tDuration:
			return tTime
		case l == tTime && r == tTime:
			return tDuration
		}
	case OpMul:
		switch {
		case l == tNumber && r == tNumber:
			return tNumber
		case l == tNumber && r == tDuration, l == tDuration && r == tNumber:
			return tDuration
		}
	case OpDiv:
		switch {
		case l == tNumber && r == tNumber, l == tDuration && r == tDuration:
			return tNumber
		case l == tDuration && r == tNumber:
			return tDuration
		}
	}
	return 0
}

// binaryTypes lifts binaryType to sets of kinds.
func binaryTypes(op Op, l, r types) types {
	var out types
	for _, a := range typeNames {
		for _, b := range typeNames {
			if l&a.t != 0 && r&b.t != 0 {
				out |= binaryType(op, a.t, b.t)
			}
		}
	}
	return out
}

// unaryType gives the type of NOT or negation of a single kind, or 0.
func unaryType(op Op, t types) types {
	switch {
	case op == OpNot && t == tBool:
		return tBool
	case op == OpNeg && (t == tNumber || t == tDuration):
		return t
	}
	return 0
}

func unaryTypes(op Op, t types) types {
	var out types
	for _, a := range typeNames {
		if t&a.t != 0 {
			out |= unaryType(op, a.t)
		}
	}
	return out
}

// Names of the properties every transfer has.
const (
	PropTime = "ts" // the event time, a graph.Time
	PropID   = "id" // the transfer id, a graph.String
)

// scope resolves the variables of a WHERE condition.
type scope struct {
	vertices map[string]int
	edges    map[string]int // the first edge with the name
}

func (p *Pattern) scope() scope {
	s := scope{vertices: make(map[string]int, len(p.Vertices)), edges: make(map[string]int)}
	for i, v := range p.Vertices {
		s.vertices[v.Name] = i
	}
	for i, e := range p.Edges {
		if _, ok := s.edges[e.Name]; e.Name != "" && !ok {
			s.edges[e.Name] = i
		}
	}
	return s
}

// propType is the static type of a property: an edge's "ts" is a time and
// its "id" a string; any other may hold any kind.
func propType(onEdge bool, name string) types {
	switch {
	case onEdge && name == PropTime:
		return tTime
	case onEdge && name == PropID:
		return tString
	}
	return tProp
}

// check resolves e's variables and returns its static type, or an error for
// an unknown variable or an operation that no run-time kinds could satisfy.
func (s scope) check(e *Expr) (types, *Error) {
	fail := func(format string, args ...any) (types, *Error) {
		return 0, &Error{Pos: e.Pos, Reason: e.source() + ": " + fmt.Sprintf(format, args...)}
	}
	switch e.Op {
	case OpLit:
		if t := kindType(e.Lit.Kind); t == tNumber || t == tString || t == tBool {
			return t, nil
		}
		return fail("a literal is a number, a string or a boolean, not %s", e.Lit.Kind)
	case OpDuration:
		if e.Lit.Kind != graph.Number {
			return fail("a duration literal holds a number of milliseconds, not %s", e.Lit.Kind)
		}
		return tDuration, nil
	case OpProp:
		if e.Name == "" {
			return fail("empty property name")
		}
		if _, ok := s.vertices[e.Var]; ok {
			return propType(false, e.Name), nil
		}
		if _, ok := s.edges[e.Var]; ok {
			return propType(true, e.Name), nil
		}
		return fail("unknown variable %s: name a vertex, as in (%s), or a relationship, as in -[%s:TYPE]->", e.Var, e.Var, e.Var)
	}
	if n := operands(e.Op); (n > 0 && len(e.Args) != n) || (n < 0 && len(e.Args) == 0) {
		return fail("%s has %d operands", e.Op, len(e.Args))
	}
	ts := make([]types, len(e.Args))
	for i, a := range e.Args {
		if a == nil {
			return fail("%s has a missing operand", e.Op)
		}
		t, err := s.check(a)
		if err != nil {
			return 0, err
		}
		ts[i] = t
	}
	switch e.Op {
	case OpIsNull, OpNotNull:
		return tBool, nil
	case OpNot, OpNeg:
		if t := unaryTypes(e.Op, ts[0]); t != 0 {
			return t, nil
		}
		want := "a boolean"
		if e.Op == OpNeg {
			want = "a number or a duration"
		}
		return fail("%s needs %s, and %s is %s", e.Op, want, e.Args[0].source(), ts[0])
	case OpIn:
		for i, t := range ts[1:] {
			if binaryTypes(OpEq, ts[0], t) == 0 {
				return fail("%s is %s, and the list's %s is %s: IN compares values of one kind", e.Args[0].source(), ts[0], e.Args[i+1].source(), t)
			}
		}
		return tBool, nil
	case OpAnd, OpOr, OpEq, OpNe, OpLt, OpLe, OpGt, OpGe, OpAdd, OpSub, OpMul, OpDiv:
		if t := binaryTypes(e.Op, ts[0], ts[1]); t != 0 {
			return t, nil
		}
		return fail("cannot apply %s to %s and %s%s", e.Op, ts[0], ts[1], hint(e.Op))
	}
	return fail("unknown operator %s", e.Op)
}

// operands is the number of Args an operator takes; -1 for one or more.
func operands(op Op) int {
	switch op {
	case OpNot, OpNeg, OpIsNull, OpNotNull:
		return 1
	case OpIn:
		return -1
	}
	return 2
}

// hint says what an operator accepts, for type errors.
func hint(op Op) string {
	switch op {
	case OpAnd, OpOr:
		return " (it joins two conditions)"
	case OpEq, OpNe:
		return " (it compares two values of one kind)"
	case OpLt, OpLe, OpGt, OpGe:
		return " (it orders two numbers, strings, times or durations)"
	case OpAdd:
		return " (it adds numbers, durations, or a duration to a time)"
	case OpSub:
		return " (it subtracts numbers, durations, a duration from a time, or two times)"
	case OpMul:
		return " (it multiplies numbers, or a duration by a number)"
	case OpDiv:
		return " (it divides numbers, or a duration by a number or a duration)"
	}
	return ""
}

// checkWhere checks p's condition and WITHIN bound.
func (p *Pattern) checkWhere() *Error {
	if p.Within < 0 {
		return &Error{Pos: p.WithinPos, Reason: fmt.Sprintf("WITHIN %v: the bound must be positive", p.Within)}
	}
	if p.Where == nil {
		return nil
	}
	s := p.scope()
	for _, e := range p.Edges {
		if _, clash := s.vertices[e.Name]; clash && e.Name != "" {
			return &Error{Pos: e.Pos, Reason: e.Name + " names both a vertex and a relationship"}
		}
	}
	t, err := s.check(p.Where)
	if err != nil {
		return err
	}
	if t&tBool == 0 {
		return &Error{Pos: p.Where.Pos, Reason: fmt.Sprintf("WHERE %s: a condition must be a boolean, not %s", p.Where.source(), t)}
	}
	return nil
}

// keywords are the words that an expression reserves.
var keywords = []string{"AND", "OR", "NOT", "IN", "IS", "NULL", "TRUE", "FALSE", "WHERE", "WITHIN"}

func isKeyword(w string) bool {
	for _, k := range keywords {
		if strings.EqualFold(w, k) {
			return true
		}
	}
	return false
}

// Properties returns the distinct property names p's WHERE reads on its
// vertices and, apart, on its edges, each in the order they first appear:
// what ingest must keep of an event for this pattern. An edge's ts and id
// are not among them, since every transfer carries them.
func (p *Pattern) Properties() (vertex, edge []string) {
	s := p.scope()
	var walk func(e *Expr)
	walk = func(e *Expr) {
		if e == nil {
			return
		}
		if e.Op == OpProp {
			if _, ok := s.vertices[e.Var]; ok {
				if !slices.Contains(vertex, e.Name) {
					vertex = append(vertex, e.Name)
				}
			} else if e.Name != PropTime && e.Name != PropID && !slices.Contains(edge, e.Name) {
				edge = append(edge, e.Name)
			}
		}
		for _, a := range e.Args {
			walk(a)
		}
	}
	walk(p.Where)
	return vertex, edge
}
