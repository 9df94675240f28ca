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
	OpVar                // Var alone: a vertex's account id or a transfer's id, only as a RETURN item
	OpMin                // min([Args...].Name): Args are OpVar nodes, all vertices or all relationships
	OpMax                // max([Args...].Name)
	OpSum                // sum([Args...].Name)
)

var opText = [...]string{
	OpNot: "NOT", OpNeg: "-", OpIsNull: "IS NULL", OpNotNull: "IS NOT NULL", OpAnd: "AND", OpOr: "OR",
	OpEq: "=", OpNe: "<>", OpLt: "<", OpLe: "<=", OpGt: ">", OpGe: ">=",
	OpAdd: "+", OpSub: "-", OpMul: "*", OpDiv: "/", OpIn: "IN",
	OpMin: "min", OpMax: "max", OpSum: "sum",
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
	case OpVar:
		return "variable"
	}
	return "Op(" + strconv.Itoa(int(o)) + ")"
}

// Expr is a node of a WHERE condition or of a RETURN item.
//
// Values are three-valued, as in Cypher: a property that a vertex or edge
// lacks is null, and so is an operation on null, on kinds it does not take
// (a property may hold any kind), or a division by zero. A comparison with
// null is unknown; NOT unknown is unknown, false AND unknown is false and
// true OR unknown is true; x IS NULL is never unknown. A match satisfies
// the condition only when it is true. Mistakes certain before any data
// arrives (t1.ts > 'x', a.x + 'y') are errors.
//
// The aggregates min, max and sum read one property of several variables,
// as in sum([t1, t2].amount), and skip nulls, as SQL's do: they are null
// only when every value is, or when the values are of kinds they do not
// take together (a number and a string, a boolean).
type Expr struct {
	Op   Op
	Args []*Expr     // the operands; for OpIn the value, then the list; for an aggregate its variables
	Var  string      // OpProp and OpVar: the vertex or relationship variable
	Name string      // OpProp and aggregates: the property name
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
		writeName(b, e.Name)
	case OpVar:
		b.WriteString(e.Var)
	case OpMin, OpMax, OpSum:
		b.WriteString(e.Op.String() + "([")
		for i, a := range e.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			a.format(b)
		}
		b.WriteString("].")
		writeName(b, e.Name)
		b.WriteString(")")
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
	return string(appendDuration(nil, d))
}

// appendDuration is formatDuration for a positive d, appending to dst.
func appendDuration(dst []byte, d time.Duration) []byte {
	ms := int64(d / time.Millisecond)
	frac := d % time.Millisecond
	for _, u := range [...]struct {
		name byte
		ms   int64
	}{{'d', 86400e3}, {'h', 3600e3}, {'m', 60e3}, {'s', 1e3}} {
		if n := ms / u.ms; n > 0 {
			dst = append(strconv.AppendInt(dst, n, 10), u.name)
			ms -= n * u.ms
		}
	}
	if ms > 0 || frac > 0 {
		dst = strconv.AppendFloat(dst, float64(ms)+float64(frac)/1e6, 'f', -1, 64)
		dst = append(dst, "ms"...)
	}
	return dst
}

// writeName writes a property or RETURN item name, backquoted unless it is
// a word.
func writeName(b *strings.Builder, name string) {
	if leadingWord(name) == name && name != "" {
		b.WriteString(name)
		return
	}
	b.WriteString("`" + strings.ReplaceAll(name, "`", "``") + "`")
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
	case DurationKind:
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
		return fail("%s", unknownVariable(e.Var))
	case OpVar:
		if _, err := s.variable(e); err != nil {
			return 0, err
		}
		what, id, prop := "a vertex", "account id", e.Var+".amount"
		if _, ok := s.edges[e.Var]; ok {
			what, id, prop = "a relationship", "transfer id", e.Var+".amount or "+e.Var+".id"
		}
		return 0, &Error{Pos: e.Pos, Reason: fmt.Sprintf("%s is %s, not a value: RETURN %s gives its %s as an item of its own; elsewhere name a property, as in %s", e.Var, what, e.Var, id, prop)}
	case OpMin, OpMax, OpSum:
		return s.aggregate(e)
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

// unknownVariable says that v names nothing, and how to name something.
func unknownVariable(v string) string {
	return fmt.Sprintf("unknown variable %s: name a vertex, as in (%s), or a relationship, as in -[%s:TYPE]->", v, v, v)
}

// variable resolves a bare variable and says whether it is a relationship.
func (s scope) variable(e *Expr) (onEdge bool, err *Error) {
	if _, ok := s.vertices[e.Var]; ok {
		return false, nil
	}
	if _, ok := s.edges[e.Var]; ok {
		return true, nil
	}
	return false, &Error{Pos: e.Pos, Reason: unknownVariable(e.Var)}
}

// aggregate checks min, max or sum over a list of variables and returns
// its type: what its values' kinds give, less those it refuses (it skips
// nulls, so only the kinds count).
func (s scope) aggregate(e *Expr) (types, *Error) {
	fail := func(format string, args ...any) (types, *Error) {
		return 0, &Error{Pos: e.Pos, Reason: e.source() + ": " + fmt.Sprintf(format, args...)}
	}
	if len(e.Args) == 0 {
		return fail("%s of an empty list: list the variables, as in %s([t1, t2].amount)", e.Op, e.Op)
	}
	if e.Name == "" {
		return fail("empty property name")
	}
	var onEdge bool
	for i, a := range e.Args {
		if a == nil || a.Op != OpVar {
			return fail("%s reads a property of a list of variables, as in %s([t1, t2].amount)", e.Op, e.Op)
		}
		edge, err := s.variable(a)
		if err != nil {
			return 0, err
		}
		if i > 0 && edge != onEdge {
			return 0, &Error{Pos: a.Pos, Reason: fmt.Sprintf("%s: %s lists vertices and relationships together: list only vertices or only relationships", e.source(), e.Op)}
		}
		onEdge = edge
	}
	// A property is a time, a string, or of any kind (propType), so only
	// sum can refuse one: sum([t1, t2].ts) or sum([t1, t2].id).
	t := propType(onEdge, e.Name)
	if e.Op != OpSum {
		return t &^ tBool, nil
	}
	switch t {
	case tTime:
		return fail("sum of times: sum adds numbers; subtract two times for a duration, as in t2.ts - t1.ts")
	case tString:
		return fail("sum of strings: sum adds numbers")
	}
	return tNumber, nil
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

// checkWhere checks p's condition, WITHIN bound and RETURN items.
func (p *Pattern) checkWhere() *Error {
	if p.Within < 0 {
		return &Error{Pos: p.WithinPos, Reason: fmt.Sprintf("WITHIN %v: the bound must be positive", p.Within)}
	}
	if p.Where == nil && len(p.Return) == 0 {
		return nil
	}
	s := p.scope()
	for _, e := range p.Edges {
		if _, clash := s.vertices[e.Name]; clash && e.Name != "" {
			return &Error{Pos: e.Pos, Reason: e.Name + " names both a vertex and a relationship"}
		}
	}
	if p.Where != nil {
		t, err := s.check(p.Where)
		if err != nil {
			return err
		}
		if t&tBool == 0 {
			return &Error{Pos: p.Where.Pos, Reason: fmt.Sprintf("WHERE %s: a condition must be a boolean, not %s", p.Where.source(), t)}
		}
	}
	return s.checkReturn(p.Return)
}

// checkReturn checks RETURN items: each a bare variable or an expression of
// some kind, under a name of its own.
func (s scope) checkReturn(items []ReturnItem) *Error {
	names := make(map[string]bool, len(items))
	for _, it := range items {
		switch {
		case it.Expr == nil:
			return &Error{Pos: it.Pos, Reason: "RETURN " + it.Name + ": an item without an expression"}
		case it.Expr.Op == OpVar:
			if _, err := s.variable(it.Expr); err != nil {
				return err
			}
		default:
			if _, err := s.check(it.Expr); err != nil {
				return err
			}
		}
		switch {
		case it.Name == "":
			return &Error{Pos: it.Pos, Reason: "RETURN " + it.Expr.source() + ": an item needs a name"}
		case names[it.Name]:
			return &Error{Pos: it.Pos, Reason: fmt.Sprintf("RETURN: two items named %s; give one another name with AS", it.Name)}
		}
		names[it.Name] = true
	}
	return nil
}

// keywords are the words that an expression reserves.
var keywords = []string{"AND", "OR", "NOT", "IN", "IS", "NULL", "TRUE", "FALSE", "WHERE", "WITHIN", "RETURN", "AS"}

func isKeyword(w string) bool {
	for _, k := range keywords {
		if strings.EqualFold(w, k) {
			return true
		}
	}
	return false
}

// Properties returns the distinct property names p's WHERE and RETURN read
// on its vertices and, apart, on its edges, each in the order they first
// appear: what ingest must keep of an event for this pattern. An edge's ts
// and id are not among them, since every transfer carries them.
func (p *Pattern) Properties() (vertex, edge []string) {
	s := p.scope()
	read := func(v, name string) {
		if _, ok := s.vertices[v]; ok {
			if !slices.Contains(vertex, name) {
				vertex = append(vertex, name)
			}
		} else if name != PropTime && name != PropID && !slices.Contains(edge, name) {
			edge = append(edge, name)
		}
	}
	var walk func(e *Expr)
	walk = func(e *Expr) {
		if e == nil {
			return
		}
		switch e.Op {
		case OpProp:
			read(e.Var, e.Name)
		case OpMin, OpMax, OpSum:
			for _, a := range e.Args {
				read(a.Var, e.Name)
			}
			return
		}
		for _, a := range e.Args {
			walk(a)
		}
	}
	walk(p.Where)
	for _, it := range p.Return {
		walk(it.Expr)
	}
	return vertex, edge
}
