package query

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gcsm/gcsm/graph"
)

// PropertyWarnings checks the properties p's WHERE and RETURN read against
// those a stream has given so far (seen), and describes what will likely
// never hold: a property that no edge or vertex of its label has carried (a typo,
// most often: t1.amont), and a comparison of a property with a literal, or
// with another property, of a kind its values never had (t1.amount >
// "10000" where amounts have been numbers), which is unknown, never true,
// for every value seen. Neither is an error: the stream may yet carry them.
//
// An edge's ts and id are every transfer's, never warned about. Labels for
// which skip reports true are not checked (the caller warns that the graph
// has not seen them at all); skip may be nil. A wildcard is checked against
// every label. Where the catalog is partial (its bounds), absent names are
// not warned about.
func (p *Pattern) PropertyWarnings(seen *graph.Catalog, skip func(vertex bool, label string) bool) []string {
	if (p.Where == nil && len(p.Return) == 0) || seen == nil {
		return nil
	}
	c := propChecker{p: p, s: p.scope(), seen: seen, skip: skip, done: map[string]bool{}}
	c.walk(p.Where)
	for _, it := range p.Return {
		c.walk(it.Expr)
	}
	return c.warnings
}

type propChecker struct {
	p        *Pattern
	s        scope
	seen     *graph.Catalog
	skip     func(vertex bool, label string) bool
	done     map[string]bool // warnings given, so each is given once
	warnings []string
}

// ref is what the catalog says of a property reference.
type ref struct {
	e        *Expr
	vertex   bool
	where    string // "TRANSFER edges", "vertices"
	kinds    graph.Kinds
	checked  bool // the label is checked and the reference is no builtin
	complete bool
	known    map[string]graph.Kinds
}

// resolve looks e, an OpProp, up in the catalog.
func (c *propChecker) resolve(e *Expr) ref {
	r := ref{e: e}
	var label string
	var wildcard bool
	if v, ok := c.s.vertices[e.Var]; ok {
		r.vertex, label, wildcard = true, c.p.Vertices[v].Label, c.p.Vertices[v].Wildcard
	} else if i, ok := c.s.edges[e.Var]; ok {
		if e.Name == PropTime || e.Name == PropID {
			return r
		}
		label, wildcard = c.p.Edges[i].Label, c.p.Edges[i].Wildcard
	} else {
		return r // checkWhere refused it; not reached on a parsed Pattern
	}
	if !wildcard && c.skip != nil && c.skip(r.vertex, label) {
		return r
	}
	kind := "edges"
	if r.vertex {
		kind = "vertices"
	}
	r.where = kind
	if !wildcard {
		r.where = label + " " + kind
	}
	r.known, r.complete = c.seen.Props(r.vertex, label, wildcard)
	r.kinds, r.checked = r.known[e.Name], true
	return r
}

func (c *propChecker) warn(msg string) {
	if !c.done[msg] {
		c.done[msg] = true
		c.warnings = append(c.warnings, msg)
	}
}

func (c *propChecker) walk(e *Expr) {
	if e == nil {
		return
	}
	switch e.Op {
	case OpProp:
		if r := c.resolve(e); r.checked && r.kinds == 0 && r.complete {
			c.warn(fmt.Sprintf("property %s.%s never seen on %s; known: %s", e.Var, e.Name, r.where, knownList(r)))
		}
		return
	case OpMin, OpMax, OpSum:
		for _, a := range e.Args {
			c.walk(&Expr{Op: OpProp, Var: a.Var, Name: e.Name, Pos: a.Pos})
		}
		return
	case OpEq, OpNe, OpLt, OpLe, OpGt, OpGe:
		if len(e.Args) == 2 {
			if msg := c.mismatch(e.Args[0], e.Args[1]); msg != "" {
				c.warn(e.source() + " is never true: " + msg)
			}
		}
	case OpIn:
		for _, item := range e.Args[1:] {
			if msg := c.mismatch(e.Args[0], item); msg != "" {
				c.warn(fmt.Sprintf("%s: the item %s never matches: %s", e.source(), item.source(), msg))
			}
		}
	}
	for _, a := range e.Args {
		c.walk(a)
	}
}

// mismatch describes why comparing a with b is unknown for every value
// seen: a property whose values have had no kind of the other side's; ""
// when it may hold, or when nothing is known of either side.
func (c *propChecker) mismatch(a, b *Expr) string {
	ka, da := c.operand(a)
	kb, db := c.operand(b)
	if ka == 0 || kb == 0 || ka&kb != 0 || a.Op != OpProp && b.Op != OpProp {
		return ""
	}
	if a.Op != OpProp {
		da, db = db, da // the property first
	}
	return da + ", and " + db
}

// operand returns the kinds e has been seen to hold, and says so, when e
// is a literal or a property the catalog knows; 0 otherwise.
func (c *propChecker) operand(e *Expr) (graph.Kinds, string) {
	switch e.Op {
	case OpLit:
		return graph.KindsOf(e.Lit.Kind), e.source() + " is a " + e.Lit.Kind.String()
	case OpProp:
		if r := c.resolve(e); r.checked && r.kinds != 0 {
			return r.kinds, fmt.Sprintf("%s.%s has carried only %s on %s", e.Var, e.Name, r.kinds.Plural(), r.where)
		}
	}
	return 0, ""
}

// maxKnown bounds the names a warning lists.
const maxKnown = 20

// knownList lists the names r's label has carried, sorted, an edge's ts
// and id among them, and suggests the closest to r's when it is near.
func knownList(r ref) string {
	names := slices.Sorted(maps.Keys(r.known))
	if !r.vertex {
		for _, b := range []string{PropID, PropTime} {
			if _, ok := r.known[b]; !ok {
				names = append(names, b)
			}
		}
		slices.Sort(names)
	}
	if len(names) == 0 {
		return "none yet"
	}
	list := names
	if len(list) > maxKnown {
		list = list[:maxKnown]
	}
	out := strings.Join(list, ", ")
	if len(names) > maxKnown {
		out += fmt.Sprintf(" and %d more", len(names)-maxKnown)
	}
	if near := closest(r.e.Name, names); near != "" {
		out += fmt.Sprintf(" (did you mean %s?)", near)
	}
	return out
}

// closest returns the name of names nearest to s by edit distance, when
// it is at most a third of s's length (at least 1), as a typo would be;
// "" otherwise.
func closest(s string, names []string) string {
	best, bestD := "", max(1, len(s)/3)+1
	for _, n := range names {
		if d := editDistance(strings.ToLower(s), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
