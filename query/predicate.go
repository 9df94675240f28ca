package query

import (
	"fmt"
	"math"
	"slices"

	"github.com/gcsm/gcsm/graph"
)

// Binding is one transfer that a match binds: every pattern edge binds one.
// Pattern edges that compile to the same query edge share a Binding when
// they have the same variable (or none, as in CSM files that list an edge
// twice); with different variables they are two Bindings of one Edge, two
// parallel transfers between the same pair of vertices, which a match binds
// to two distinct transfers.
type Binding struct {
	Edge int    // index into Query.Edges
	Name string // the relationship variable, or ""
}

// PropRef names a property that predicates read.
type PropRef struct {
	OnEdge bool // Index is a Binding index if true, a query vertex if false
	Index  int
	// Name is the property's name. On an edge, PropTime ("ts") is the event
	// time, a graph.Time, and PropID ("id") the transfer id, a graph.String.
	Name string
}

// Predicates is a pattern's WHERE and WITHIN, compiled.
type Predicates struct {
	Props     []PropRef  // every property some conjunct reads, each once
	Conjuncts []Conjunct // the WHERE split at its top-level ANDs, then WITHIN
}

// Conjunct is one condition that every match must satisfy. A conjunct that
// reads nothing (Bindings and Vertices both 0) is a constant that is not
// true, such as WHERE false: the pattern matches nothing.
type Conjunct struct {
	Bindings uint64 // bit b: reads Binding b
	Vertices uint64 // bit v: reads query vertex v
	Props    []int  // indexes into Predicates.Props that it reads
	Text     string // the source text, for errors and docs
	Pos      Pos
	// Eval says whether the conjunct holds: vals[i] is the value of
	// Predicates.Props[i] for the candidate match; only the entries in
	// Props are read. It is true only when the condition is true, not
	// false or unknown. It allocates nothing and is safe for concurrent use.
	Eval func(vals []graph.Value) bool
}

// MaxBindings is the most transfers a pattern with predicates may bind,
// since a Conjunct keeps the Bindings it reads in a 64-bit mask.
const MaxBindings = 64

// DurationKind is the run-time kind of a duration, which only expressions
// produce, never data: Num holds milliseconds, the unit of graph.Time.
const DurationKind graph.Kind = 255

// bindings builds q.Bindings from p's edges, given the query edge that each
// pattern edge compiled to. It returns the Binding of each variable, the
// first pattern edge of each Binding, and whether some Edge has several
// Bindings.
func (q *Query) bindings(p *Pattern, edgeOf []int) (byName map[string]int, first []int, parallel bool, err *Error) {
	type key struct {
		edge int
		name string
	}
	seen := make(map[key]int)
	byName = make(map[string]int)
	perEdge := make([]int, len(q.Edges))
	for i, e := range p.Edges {
		k := key{edgeOf[i], e.Name}
		b, ok := seen[k]
		if !ok {
			b = len(q.Bindings)
			seen[k] = b
			q.Bindings = append(q.Bindings, Binding{Edge: k.edge, Name: e.Name})
			first = append(first, i)
			perEdge[k.edge]++
			parallel = parallel || perEdge[k.edge] > 1
		}
		if e.Name == "" {
			continue
		}
		if prev, ok := byName[e.Name]; ok && prev != b {
			return nil, nil, false, &Error{Source: p.Name, Pos: e.Pos, Reason: "relationship variable " + e.Name + " names two different edges"}
		}
		byName[e.Name] = b
	}
	return byName, first, parallel, nil
}

// predicates compiles p's WHERE and WITHIN into q.Pred, given what
// bindings returned.
func (q *Query) predicates(p *Pattern, byName map[string]int, first []int) *Error {
	if p.Where == nil && p.Within == 0 {
		return nil
	}
	c := newCompiler(q, p, byName, first)
	if p.Where != nil {
		for _, e := range splitAnd(p.Where, nil) {
			if err := c.conjunct(e); err != nil {
				err.Source = p.Name
				return err
			}
		}
	}
	if p.Within != 0 {
		if err := c.within(); err != nil {
			err.Source = p.Name
			return err
		}
	}
	q.Pred = &Predicates{Props: c.props, Conjuncts: c.conjuncts}
	return nil
}

// splitAnd appends the conjuncts of e to dst. A conjunction is true exactly
// when each conjunct is, unknown counting as not true, so the split is exact.
func splitAnd(e *Expr, dst []*Expr) []*Expr {
	if e.Op == OpAnd {
		return splitAnd(e.Args[1], splitAnd(e.Args[0], dst))
	}
	return append(dst, e)
}

// predCompiler compiles the expressions of WHERE or of RETURN into
// functions over one list of property values, props.
type predCompiler struct {
	q         *Query
	p         *Pattern
	byName    map[string]int
	first     []int // the first pattern edge of each Binding
	scope     scope
	refs      map[PropRef]int // index in props
	props     []PropRef
	conjuncts []Conjunct
	cur       *Conjunct // the conjunct or RETURN item being compiled: what it reads
}

func newCompiler(q *Query, p *Pattern, byName map[string]int, first []int) *predCompiler {
	return &predCompiler{q: q, p: p, byName: byName, first: first, scope: p.scope(), refs: make(map[PropRef]int)}
}

func (c *predCompiler) conjunct(e *Expr) *Error {
	c.cur = &Conjunct{Text: e.source(), Pos: e.Pos}
	f, err := c.expr(e)
	if err != nil {
		return err
	}
	eval := func(vals []graph.Value) bool { v := f(vals); return v.Kind == graph.Bool && v.Num != 0 }
	if c.cur.Bindings == 0 && c.cur.Vertices == 0 && eval(nil) {
		return nil // always true: nothing to check
	}
	c.cur.Eval = eval
	c.conjuncts = append(c.conjuncts, *c.cur)
	return nil
}

// within adds the conjunct of WITHIN: the latest event time of the bound
// transfers minus the earliest is at most the bound.
func (c *predCompiler) within() *Error {
	c.cur = &Conjunct{Text: "WITHIN " + formatDuration(c.p.Within), Pos: c.p.WithinPos}
	if len(c.q.Bindings) > MaxBindings {
		return &Error{Pos: c.p.WithinPos, Reason: fmt.Sprintf("WITHIN reads the time of each of %d edges; predicates read at most %d", len(c.q.Bindings), MaxBindings)}
	}
	var idx []int
	for b := range c.q.Bindings {
		if why := c.unbindable(c.first[b]); why != "" {
			return &Error{Pos: c.p.WithinPos, Reason: "WITHIN reads the time of every edge, and " + why}
		}
		idx = append(idx, c.ref(PropRef{OnEdge: true, Index: b, Name: PropTime}))
	}
	limit := float64(c.p.Within) / 1e6 // milliseconds
	c.cur.Eval = func(vals []graph.Value) bool {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, i := range idx {
			v := vals[i]
			if v.Kind != graph.Time {
				return false
			}
			lo, hi = min(lo, v.Num), max(hi, v.Num)
		}
		return hi-lo <= limit
	}
	c.conjuncts = append(c.conjuncts, *c.cur)
	return nil
}

// ref returns the index of r in props, adding it, and records the read in
// the current conjunct.
func (c *predCompiler) ref(r PropRef) int {
	i, ok := c.refs[r]
	if !ok {
		i = len(c.props)
		c.refs[r] = i
		c.props = append(c.props, r)
	}
	if r.OnEdge {
		c.cur.Bindings |= 1 << uint(r.Index)
	} else {
		c.cur.Vertices |= 1 << uint(r.Index)
	}
	if !slices.Contains(c.cur.Props, i) {
		c.cur.Props = append(c.cur.Props, i)
	}
	return i
}

// unbindable says why the transfers of pattern edge i cannot be bound, or
// "" when they can: the matcher binds transfers only on labelled edges and,
// on a directed graph, directed ones.
func (c *predCompiler) unbindable(i int) string {
	e := c.p.Edges[i]
	a, b := c.p.Vertices[e.From].Name, c.p.Vertices[e.To].Name
	switch {
	case e.Wildcard:
		return fmt.Sprintf("the edge (%s)-(%s) at %s has no label: predicates need a labelled edge, as in -[t:TRANSFER]->", a, b, e.Pos)
	case c.q.Directed && !e.Directed:
		return fmt.Sprintf("the edge (%s)-(%s) at %s has no direction: on a directed graph predicates need a directed edge, as in -[t:%s]->", a, b, e.Pos, e.Label)
	}
	return ""
}

// evalFn computes an expression's value for one candidate match.
type evalFn func(vals []graph.Value) graph.Value

var null = graph.Value{}

func (c *predCompiler) expr(e *Expr) (evalFn, *Error) {
	switch e.Op {
	case OpLit:
		v := e.Lit
		return func([]graph.Value) graph.Value { return v }, nil
	case OpDuration:
		v := graph.Value{Kind: DurationKind, Num: e.Lit.Num}
		return func([]graph.Value) graph.Value { return v }, nil
	case OpProp:
		i, err := c.prop(e, e.Name)
		if err != nil {
			return nil, err
		}
		return func(vals []graph.Value) graph.Value { return vals[i] }, nil
	case OpMin, OpMax, OpSum:
		idx := make([]int, len(e.Args))
		for j, a := range e.Args {
			i, err := c.prop(a, e.Name)
			if err != nil {
				return nil, err
			}
			idx[j] = i
		}
		if e.Op == OpSum {
			return sum(idx), nil
		}
		return extreme(e.Op == OpMin, idx), nil
	}
	args := make([]evalFn, len(e.Args))
	for i, a := range e.Args {
		f, err := c.expr(a)
		if err != nil {
			return nil, err
		}
		args[i] = f
	}
	switch e.Op {
	case OpNot:
		f := args[0]
		return func(vals []graph.Value) graph.Value {
			if v := f(vals); v.Kind == graph.Bool {
				return graph.BoolValue(v.Num == 0)
			}
			return null
		}, nil
	case OpNeg:
		f := args[0]
		return func(vals []graph.Value) graph.Value {
			if v := f(vals); v.Kind == graph.Number || v.Kind == DurationKind {
				return graph.Value{Kind: v.Kind, Num: -v.Num}
			}
			return null
		}, nil
	case OpIsNull, OpNotNull:
		f, want := args[0], e.Op == OpIsNull
		return func(vals []graph.Value) graph.Value { return graph.BoolValue((f(vals).Kind == graph.Null) == want) }, nil
	case OpAnd:
		return and(args[0], args[1]), nil
	case OpOr:
		return or(args[0], args[1]), nil
	case OpEq, OpNe, OpLt, OpLe, OpGt, OpGe:
		f, g, op := args[0], args[1], e.Op
		return func(vals []graph.Value) graph.Value { return compare(op, f(vals), g(vals)) }, nil
	case OpAdd, OpSub, OpMul, OpDiv:
		f, g, op := args[0], args[1], e.Op
		return func(vals []graph.Value) graph.Value { return arith(op, f(vals), g(vals)) }, nil
	case OpIn:
		if set, ok := literalSet(e.Args[1:]); ok && len(e.Args) > 1+linearIn {
			return set.in(args[0]), nil
		}
		return in(args[0], args[1:]), nil
	}
	panic("BUG: query: unchecked operator " + e.Op.String())
}

// prop returns the index in props of property name of the variable that e
// (an OpProp or OpVar) names.
func (c *predCompiler) prop(e *Expr, name string) (int, *Error) {
	if v, ok := c.scope.vertices[e.Var]; ok {
		return c.ref(PropRef{Index: v, Name: name}), nil
	}
	b, ok := c.byName[e.Var]
	if !ok {
		return 0, &Error{Pos: e.Pos, Reason: "unknown variable " + e.Var}
	}
	if why := c.unbindable(c.first[b]); why != "" {
		return 0, &Error{Pos: e.Pos, Reason: e.source() + ": " + why}
	}
	if b >= MaxBindings {
		return 0, &Error{Pos: e.Pos, Reason: fmt.Sprintf("%s: predicates read at most %d edges' transfers, and %s is edge %d", e.source(), MaxBindings, e.Var, b+1)}
	}
	return c.ref(PropRef{OnEdge: true, Index: b, Name: name}), nil
}

// sum adds the values at idx, skipping nulls: numbers give a number and
// durations a duration; none gives null, and so do other kinds or a mix.
func sum(idx []int) evalFn {
	return func(vals []graph.Value) graph.Value {
		out := null
		for _, i := range idx {
			switch v := vals[i]; {
			case v.Kind == graph.Null:
			case v.Kind != graph.Number && v.Kind != DurationKind, out.Kind != graph.Null && out.Kind != v.Kind:
				return null
			default:
				out = graph.Value{Kind: v.Kind, Num: out.Num + v.Num}
			}
		}
		return out
	}
}

// extreme is min (or, with least false, max) of the values at idx,
// skipping nulls: numbers, strings, times or durations, all of one kind, as
// compare orders them, the first of equals, and NaN if a number is NaN.
// None gives null, and so do booleans or a mix of kinds.
func extreme(least bool, idx []int) evalFn {
	return func(vals []graph.Value) graph.Value {
		out := null
		for _, i := range idx {
			v := vals[i]
			switch {
			case v.Kind == graph.Null:
				continue
			case out.Kind == graph.Null:
				if kindType(v.Kind)&(tNumber|tString|tTime|tDuration) == 0 {
					return null
				}
				out = v
				continue
			case v.Kind != out.Kind:
				return null
			}
			switch {
			case v.Kind == graph.String:
				if (v.Str < out.Str) == least && v.Str != out.Str {
					out = v
				}
			case math.IsNaN(v.Num), least && v.Num < out.Num, !least && v.Num > out.Num:
				out.Num = v.Num // a NaN stays, as nothing is less or greater
			}
		}
		return out
	}
}

func isFalse(v graph.Value) bool { return v.Kind == graph.Bool && v.Num == 0 }
func isTrue(v graph.Value) bool  { return v.Kind == graph.Bool && v.Num != 0 }

// and is false if either side is, true if both are, and unknown otherwise.
func and(f, g evalFn) evalFn {
	return func(vals []graph.Value) graph.Value {
		l := f(vals)
		if isFalse(l) {
			return l
		}
		r := g(vals)
		switch {
		case isFalse(r):
			return r
		case isTrue(l) && isTrue(r):
			return l
		}
		return null
	}
}

// or is true if either side is, false if both are, and unknown otherwise.
func or(f, g evalFn) evalFn {
	return func(vals []graph.Value) graph.Value {
		l := f(vals)
		if isTrue(l) {
			return l
		}
		r := g(vals)
		switch {
		case isTrue(r):
			return r
		case isFalse(l) && isFalse(r):
			return l
		}
		return null
	}
}

// compare applies a comparison; values of different kinds, or null, compare
// as unknown.
func compare(op Op, l, r graph.Value) graph.Value {
	if l.Kind != r.Kind || binaryType(op, kindType(l.Kind), kindType(r.Kind)) == 0 {
		return null
	}
	c := 0
	if l.Kind == graph.String {
		switch {
		case l.Str < r.Str:
			c = -1
		case l.Str > r.Str:
			c = 1
		}
	} else {
		switch {
		case l.Num < r.Num:
			c = -1
		case l.Num > r.Num:
			c = 1
		case l.Num != r.Num: // NaN
			return graph.BoolValue(op == OpNe)
		}
	}
	switch op {
	case OpEq:
		return graph.BoolValue(c == 0)
	case OpNe:
		return graph.BoolValue(c != 0)
	case OpLt:
		return graph.BoolValue(c < 0)
	case OpLe:
		return graph.BoolValue(c <= 0)
	case OpGt:
		return graph.BoolValue(c > 0)
	}
	return graph.BoolValue(c >= 0)
}

// arith applies an arithmetic operator; kinds it is not defined on, and
// division by zero, give unknown. Times and durations are both in
// milliseconds, so the arithmetic is the same as on numbers.
func arith(op Op, l, r graph.Value) graph.Value {
	var k graph.Kind
	switch binaryType(op, kindType(l.Kind), kindType(r.Kind)) {
	case tNumber:
		k = graph.Number
	case tTime:
		k = graph.Time
	case tDuration:
		k = DurationKind
	default:
		return null
	}
	switch op {
	case OpAdd:
		return graph.Value{Kind: k, Num: l.Num + r.Num}
	case OpSub:
		return graph.Value{Kind: k, Num: l.Num - r.Num}
	case OpMul:
		return graph.Value{Kind: k, Num: l.Num * r.Num}
	}
	if r.Num == 0 {
		return null
	}
	return graph.Value{Kind: k, Num: l.Num / r.Num}
}

// in is true if the value equals an element of the list, false if it is
// unequal to every element, and unknown otherwise: when it or an element is
// null or of another kind. So x IN [] is false.
func in(f evalFn, list []evalFn) evalFn {
	return func(vals []graph.Value) graph.Value {
		v := f(vals)
		unknown := false
		for _, g := range list {
			switch eq := compare(OpEq, v, g(vals)); {
			case isTrue(eq):
				return eq
			case eq.Kind == graph.Null:
				unknown = true
			}
		}
		if unknown {
			return null
		}
		return graph.BoolValue(false)
	}
}

// linearIn is the longest list of literals that IN scans; a longer one, such
// as a watch list of account ids, is looked up in a set.
const linearIn = 8

// valueSet is a list of literals for IN, as sets by kind.
type valueSet struct {
	strs  map[string]bool
	nums  map[graph.Kind]map[float64]bool // Number, Bool and durations
	kinds map[graph.Kind]bool             // the kinds of the elements
}

// literalSet returns the set of list's elements if they are all literals.
func literalSet(list []*Expr) (valueSet, bool) {
	s := valueSet{strs: make(map[string]bool), nums: make(map[graph.Kind]map[float64]bool), kinds: make(map[graph.Kind]bool)}
	for _, e := range list {
		v := e.Lit
		switch e.Op {
		case OpLit:
		case OpDuration:
			v.Kind = DurationKind
		default:
			return valueSet{}, false
		}
		s.kinds[v.Kind] = true
		if v.Kind == graph.String {
			s.strs[v.Str] = true
			continue
		}
		if s.nums[v.Kind] == nil {
			s.nums[v.Kind] = make(map[float64]bool)
		}
		s.nums[v.Kind][v.Num] = true
	}
	return s, true
}

// in is the function in over a non-empty list of literals, with the same
// results: an element of another kind than the value's compares as unknown.
func (s valueSet) in(f evalFn) evalFn {
	return func(vals []graph.Value) graph.Value {
		v := f(vals)
		var found bool
		switch v.Kind {
		case graph.Null:
			return null
		case graph.String:
			found = s.strs[v.Str]
		default:
			found = s.nums[v.Kind][v.Num] // a NaN is in no set, as it equals nothing
		}
		switch {
		case found:
			return graph.BoolValue(true)
		case len(s.kinds) > 1 || !s.kinds[v.Kind]:
			return null
		}
		return graph.BoolValue(false)
	}
}

// ReadsTransfers says whether q reads what only the transfers of package
// bundle keep: a property, an event time or an id in its predicates or its
// RETURN, or two parallel transfers of one pair.
func (q *Query) ReadsTransfers() bool {
	return q.Pred != nil || q.Return != nil || len(q.Bindings) > len(q.Edges)
}
