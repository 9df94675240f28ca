package query

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The fuzz targets check that the parsers never panic, that whatever they
// accept is a valid pattern, and that what they accept survives being
// written out and parsed again: a parser that dropped or mangled part of a
// query would fail the round trip.

func FuzzParseCSM(f *testing.F) {
	for _, s := range []string{
		"v 0 1\nv 1 2\ne 0 1\n",
		"t 3 2\nv 0 14 1\nv 1 14 2\nv 2 36 1\ne 0 1 0\ne 1 2 0\n",
		"# t 0\nv 0 0\nv 1 1\ne 1 0 1\ne 0 1 1\n",
		"v a x\nv b y\ne a b\ne a a\n",
		"t 2 5\nv 0 1\nv 1 1\ne 0 1\n",
		"v 0 1 x\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := ParseCSM("fuzz", strings.NewReader(text))
		if !checkParsed(t, p, err) {
			return
		}
		if !p.ImpliedDirection || p.CheckUndirected("fix") != nil {
			t.Fatalf("a CSM pattern from %q is refused on an undirected graph", text)
		}
		again, err := ParseCSM("fuzz", strings.NewReader(formatCSM(p)))
		if err != nil {
			t.Fatalf("%v\nwhen parsing %q written out as\n%s", err, text, formatCSM(p))
		}
		if !reflect.DeepEqual(withoutPos(again), withoutPos(p)) {
			t.Fatalf("round trip of %q\ngave %+v\nwant %+v", text, again, p)
		}
	})
}

func FuzzParseCypher(f *testing.F) {
	for _, s := range []string{
		"(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a)",
		"MATCH (a)--(b)<--(c)-[r]-(d), (d)-[:`X Y`]->(a)",
		"(:A)--()--(_1)",
		"(a:0)-[:1]-(b:0)",
		"(a)-->(a)",
		"(a:A)-->(b), (b)-->(a:B)",
		"(a)-[r:T]->(b)-[r]->(c)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := ParseCypher("fuzz", text)
		if !checkParsed(t, p, err) {
			return
		}
		checkArrows(t, p)
		again, err := ParseCypher("fuzz", formatCypher(p))
		if err != nil {
			t.Fatalf("%v\nwhen parsing %q written out as\n%s", err, text, formatCypher(p))
		}
		if !reflect.DeepEqual(withoutPos(again), withoutPos(p)) {
			t.Fatalf("round trip of %q\ngave %+v\nwant %+v", text, again, p)
		}
	})
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"(a)-->(b)",
		"match (a)--(b)",
		"// comment\n(a)--(b)",
		"v 0 1\nv 1 1\ne 0 1\n",
		"# comment\nt 2 1\nv 0 1\nv 1 1\ne 0 1\n",
		"graph",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := Parse("fuzz", text)
		checkParsed(t, p, err)
	})
}

// checkParsed checks the result of a parser and reports whether it is a
// pattern, as opposed to an error.
func checkParsed(t *testing.T, p *Pattern, err error) bool {
	t.Helper()
	if err != nil {
		var qe *Error
		if !errors.As(err, &qe) || p != nil {
			t.Fatalf("got pattern %v and error %#v, want no pattern and an *Error", p, err)
		}
		if qe.Source != "fuzz" || qe.Reason == "" {
			t.Fatalf("error %q lacks its source or reason", qe)
		}
		return false
	}
	if err := p.Validate(); err != nil {
		t.Fatalf("accepted an invalid pattern: %v", err)
	}
	// Restate the invariants that the compiler and matchers rely on, in case
	// Validate itself is wrong.
	if n := len(p.Vertices); n < MinVertices || n > MaxVertices || len(p.Edges) == 0 {
		t.Fatalf("accepted a pattern of %d vertices and %d edges", n, len(p.Edges))
	}
	for _, e := range p.Edges {
		if e.From < 0 || e.From >= len(p.Vertices) || e.To < 0 || e.To >= len(p.Vertices) || e.From == e.To {
			t.Fatalf("accepted edge %+v among %d vertices", e, len(p.Vertices))
		}
	}
	return true
}

// checkArrows checks that a Cypher-style pattern is refused on an
// undirected graph exactly when it draws an arrow, with an *Error at one.
func checkArrows(t *testing.T, p *Pattern) {
	t.Helper()
	arrow := slices.ContainsFunc(p.Edges, func(e Edge) bool { return e.Directed })
	err := p.CheckUndirected("fix")
	var qe *Error
	switch {
	case p.ImpliedDirection:
		t.Fatalf("a Cypher-style pattern has ImpliedDirection")
	case arrow != (err != nil):
		t.Fatalf("arrow %v, CheckUndirected: %v", arrow, err)
	case err != nil && (!errors.As(err, &qe) || qe.Source != "fuzz" || qe.Pos.Line == 0 || !strings.Contains(qe.Reason, "fix")):
		t.Fatalf("CheckUndirected's error %#v lacks its source, position or fix", err)
	}
}

// formatCSM writes p in the CSM format. Names and labels from ParseCSM
// contain no spaces, so they need no quoting.
func formatCSM(p *Pattern) string {
	var b strings.Builder
	for _, v := range p.Vertices {
		fmt.Fprintf(&b, "v %s %s\n", v.Name, v.Label)
	}
	for _, e := range p.Edges {
		fmt.Fprintf(&b, "e %s %s", p.Vertices[e.From].Name, p.Vertices[e.To].Name)
		if !e.Wildcard {
			b.WriteString(" " + e.Label)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// formatCypher writes p in Cypher syntax: every vertex first, in order, so
// that parsing it again numbers them the same, then one path per edge.
// Every label is backquoted, which exercises the quoting.
func formatCypher(p *Pattern) string {
	quote := func(label string) string { return ":`" + strings.ReplaceAll(label, "`", "``") + "`" }
	var parts []string
	for _, v := range p.Vertices {
		if v.Wildcard {
			parts = append(parts, "("+v.Name+")")
		} else {
			parts = append(parts, "("+v.Name+quote(v.Label)+")")
		}
	}
	for _, e := range p.Edges {
		rel := "-[" + e.Name + "]-"
		if !e.Wildcard {
			rel = "-[" + e.Name + quote(e.Label) + "]-"
		}
		if e.Directed {
			rel += ">"
		}
		parts = append(parts, "("+p.Vertices[e.From].Name+")"+rel+"("+p.Vertices[e.To].Name+")")
	}
	text := strings.Join(parts, ",\n")
	if p.Where != nil {
		text += "\nWHERE " + p.Where.String()
	}
	if p.Within != 0 {
		text += "\nWITHIN " + strconv.FormatFloat(p.Within.Seconds()*1000, 'g', -1, 64) + "ms"
	}
	return text
}
