package query

import (
	"strconv"
	"strings"
)

// Form is p written out in one canonical text, the pattern part of every
// key of its query's alerts (output.Key): the vertices and edges in the order
// written, each name and label quoted, then WHERE fully parenthesized,
// WITHIN in nanoseconds and each RETURN item with its name. Spacing, comments and the syntax used (Cypher or
// CSM) do not count, so a configuration reformatted at a restart keeps its
// keys, while any change to what the pattern matches gives other keys.
func (p *Pattern) Form() string {
	var b strings.Builder
	for _, v := range p.Vertices {
		b.WriteString("v " + strconv.Quote(v.Name) + " ")
		if v.Wildcard {
			b.WriteString("*\n")
		} else {
			b.WriteString(strconv.Quote(v.Label) + "\n")
		}
	}
	for _, e := range p.Edges {
		b.WriteString("e " + strconv.Itoa(e.From) + " " + strconv.Itoa(e.To) + " " + strconv.Quote(e.Name) + " ")
		if e.Wildcard {
			b.WriteString("*")
		} else {
			b.WriteString(strconv.Quote(e.Label))
		}
		if e.Directed {
			b.WriteString(" ->")
		}
		b.WriteByte('\n')
	}
	if p.ImpliedDirection {
		b.WriteString("implied\n")
	}
	if p.Where != nil {
		b.WriteString("where " + p.Where.String() + "\n")
	}
	if p.Within != 0 {
		b.WriteString("within " + strconv.FormatInt(p.Within.Nanoseconds(), 10) + "ns\n")
	}
	// RETURN changes what each alert says and, like WHERE, which maps are
	// alerts of their own.
	for _, it := range p.Return {
		b.WriteString("return " + it.Expr.String() + " AS " + strconv.Quote(it.Name) + "\n")
	}
	return b.String()
}
