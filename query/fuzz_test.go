package query

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gcsm/gcsm/graph"
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
		ring + " WHERE t1.amount > 10000 AND t1.ts < t2.ts AND t3.ts - t1.ts < 1h AND t2.amount >= 0.9 * t1.amount",
		"(a)-[t:T]->(b) WITHIN 1h30m WHERE a.country IN ['FR', \"DE\"] OR NOT t.`x y` IS NULL",
		"(a)-[t:T]->(b) WHERE t.ts > 'x'",
		ring + " WHERE sum([t1, t2].amount) > 1 RETURN a, t1, max([a, b].`risk score`) AS `top risk`, t3.ts - min([t1, t2].ts)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := ParseCypher("fuzz", text)
		if !checkParsed(t, p, err) {
			return
		}
		checkArrows(t, p)
		roundTrip(t, text, p)
	})
}

// FuzzParseWhere fuzzes the condition after WHERE (and a WITHIN after it).
// Beyond FuzzParseCypher, it checks that every node's Pos and Text point at
// its source, and that a condition and its round trip compile to conjuncts
// that agree on every match.
func FuzzParseWhere(f *testing.F) {
	for _, s := range []string{
		"t1.amount > 10000 AND t1.ts < t2.ts AND t2.ts < t3.ts AND t3.ts - t1.ts < 1h AND t2.amount >= 0.9 * t1.amount",
		"(a.country = c.country OR NOT b.vip) AND t1.currency IN ['EUR', \"USD\", t2.currency]",
		"t1.note = 'it\\'s\\n' AND t2.`odd name` <> -1.5e3 / 2",
		"t1.fee IS NULL OR t1.fee IS NOT NULL AND a.x != 007",
		"t3.ts - t1.ts <= 1h30m AND 2 * (t2.ts - t1.ts) > 500ms WITHIN 2d",
		"true WITHIN 1.5h",
		"t1.ts > 'x'",
		"a.x < 1 < 2",
		"NOT not.x",
		"sum([t1, t2, t3].amount) >= 3 * max([t1,t2].amount) AND MIN([a, c].x) = 'x' AND max([t1, t3].ts) - t2.ts < 1h",
	} {
		f.Add(s)
	}
	vals := wherePool()
	f.Fuzz(func(t *testing.T, where string) {
		text := ring + " WHERE " + where
		p, err := ParseCypher("fuzz", text)
		if !checkParsed(t, p, err) {
			return
		}
		checkSource(t, text, p.Where)
		again := roundTrip(t, text, p)
		q1, err := Compile(p, graph.NewDict(), true, Embeddings)
		if err != nil {
			t.Fatalf("%q parsed but does not compile: %v", text, err)
		}
		q2, err := Compile(again, graph.NewDict(), true, Embeddings)
		if err != nil {
			t.Fatalf("the round trip of %q does not compile: %v", text, err)
		}
		if !reflect.DeepEqual(q1.Pred.Props, q2.Pred.Props) || len(q1.Pred.Conjuncts) != len(q2.Pred.Conjuncts) {
			t.Fatalf("%q and its round trip compile to different predicates:\n%+v\n%+v", text, q1.Pred, q2.Pred)
		}
		// The negation tells false from unknown, which the condition alone
		// cannot: neither holds.
		neg := *p
		neg.Where, neg.Within = &Expr{Op: OpNot, Args: []*Expr{p.Where}}, 0
		qn, err := Compile(&neg, graph.NewDict(), true, Embeddings)
		if err != nil {
			t.Fatalf("NOT (%s) does not compile: %v", p.Where, err)
		}
		r := rand.New(rand.NewPCG(uint64(len(text)), 1))
		for range 16 {
			in := make([]graph.Value, len(q1.Pred.Props))
			for i := range in {
				in[i] = vals[r.IntN(len(vals))]
			}
			holds := true
			for i, c := range q1.Pred.Conjuncts {
				if c.Eval(in) != q2.Pred.Conjuncts[i].Eval(in) {
					t.Fatalf("conjunct %s of %q and of its round trip disagree on %v", c.Text, text, in)
				}
				holds = holds && c.Eval(in)
			}
			if want := refHolds(q1, in); holds != want {
				t.Fatalf("%q on %v: the conjuncts give %v, the reference interpreter %v", text, in, holds, want)
			}
			checkConjuncts(t, q1, in)
			checkConjuncts(t, qn, permute(q1, qn, in))
		}
	})
}

// FuzzReturnItems fuzzes the items after RETURN. Beyond FuzzParseCypher,
// it checks every node's Pos and Text, that each compiled item agrees with
// its round trip's and with the reference interpreter on every match, and
// that its value is valid JSON.
func FuzzReturnItems(f *testing.F) {
	for _, s := range []string{
		"a, t1, t1.amount, sum([t1, t2, t3].amount) AS total",
		"max([a, b, c].score), min([t1,t2].ts) AS first, t3.ts - t1.ts AS gap",
		"MIN([t1, t2, t3].currency) AS `lowest currency`, Max([t3].id)",
		"sum([t1, t2].amount) / 2 > t3.amount AS halves, t1.amount IS NULL",
		"(a), b AS `b``s id`, 1h30m AS window, 'x' AS `x`",
		"sum([t1].amount) + sum([t2].amount) AS s, t1.note",
	} {
		f.Add(s)
	}
	vals := append(wherePool(), graph.NumberValue(math.NaN()), graph.NumberValue(math.Inf(-1)), graph.StringValue("ZZ"), graph.NumberValue(12000))
	f.Fuzz(func(t *testing.T, items string) {
		text := ring + " RETURN " + items
		p, err := ParseCypher("fuzz", text)
		if !checkParsed(t, p, err) {
			return
		}
		names := make(map[string]bool)
		for _, it := range p.Return {
			checkSource(t, text, it.Expr)
			if it.Pos != it.Expr.Pos || it.Name == "" || names[it.Name] {
				t.Fatalf("item %s is at %v, its expression at %v, and named %q among %v", it.Expr, it.Pos, it.Expr.Pos, it.Name, names)
			}
			names[it.Name] = true
		}
		again := roundTrip(t, text, p)
		q1, err := Compile(p, graph.NewDict(), true, Embeddings)
		if err != nil {
			t.Fatalf("%q parsed but does not compile: %v", text, err)
		}
		q2, err := Compile(again, graph.NewDict(), true, Embeddings)
		if err != nil {
			t.Fatalf("the round trip of %q does not compile: %v", text, err)
		}
		if q1.Images == nil || !q1.ReadsTransfers() {
			t.Fatalf("%q: RETURN leaves automorphic maps one match", text)
		}
		if !reflect.DeepEqual(q1.Return.Props, q2.Return.Props) {
			t.Fatalf("%q and its round trip read different properties:\n%v\n%v", text, q1.Return.Props, q2.Return.Props)
		}
		r := rand.New(rand.NewPCG(uint64(len(text)), 2))
		var buf []byte
		for range 16 {
			in := make([]graph.Value, len(q1.Return.Props))
			for i := range in {
				in[i] = vals[r.IntN(len(vals))]
			}
			prop := refProps(q1, q1.Return.Props, in)
			for i, col := range q1.Return.Items {
				it := p.Return[i]
				got := col.Eval(in)
				if again := q2.Return.Items[i].Eval(in); col.Name != it.Name || !got.Equal(again) {
					t.Fatalf("item %s (%s) of %q on %v gives %v, its round trip %v", it.Name, col.Name, text, in, got, again)
				}
				var want any
				switch {
				case col.Vertex >= 0:
					if it.Expr.Op != OpVar || p.Vertices[col.Vertex].Name != it.Expr.Var {
						t.Fatalf("item %s is vertex %d", it.Expr, col.Vertex)
					}
				case it.Expr.Op == OpVar:
					want = prop(it.Expr.Var, PropID)
				default:
					want = refEval(it.Expr, prop)
				}
				if !refSame(refValue(got), want) {
					t.Fatalf("item %s of %q on %v: compiled %v, the reference interpreter %v", it.Expr, text, in, got, want)
				}
				if buf = AppendJSONValue(buf[:0], got); !json.Valid(buf) {
					t.Fatalf("item %s of %q on %v: %v is written as %s", it.Expr, text, in, got, buf)
				}
			}
		}
	})
}

// refHolds says whether the reference interpreter finds q's WHERE and
// WITHIN true for a match whose properties Predicates.Props have values in.
func refHolds(q *Query, in []graph.Value) bool {
	p, prop := q.Pattern, refProps(q, q.Pred.Props, in)
	if p.Where != nil && refEval(p.Where, prop) != true {
		return false
	}
	if p.Within == 0 {
		return true
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, b := range q.Bindings {
		ts, ok := prop(b.Name, PropTime).(refTime)
		if !ok {
			return false
		}
		lo, hi = min(lo, float64(ts)), max(hi, float64(ts))
	}
	return hi-lo <= float64(p.Within)/1e6
}

// checkConjuncts checks each conjunct of q's WHERE against the reference
// interpreter; a conjunct that the compiler dropped must be always true.
func checkConjuncts(t *testing.T, q *Query, in []graph.Value) {
	t.Helper()
	prop := refProps(q, q.Pred.Props, in)
	for _, e := range splitAnd(q.Pattern.Where, nil) {
		want := refEval(e, prop) == true
		i := slices.IndexFunc(q.Pred.Conjuncts, func(c Conjunct) bool { return c.Text == e.source() })
		switch {
		case i < 0 && !want:
			t.Fatalf("the compiler dropped %s, which is not true on %v", e.source(), in)
		case i >= 0 && q.Pred.Conjuncts[i].Eval(in) != want:
			t.Fatalf("%s on %v: the conjunct gives %v, the reference interpreter %v", e.source(), in, !want, want)
		}
	}
}

// permute gives the values in, which are those of q's Props, in the order
// of to's Props, which must be among them.
func permute(q, to *Query, in []graph.Value) []graph.Value {
	out := make([]graph.Value, len(to.Pred.Props))
	for i, r := range to.Pred.Props {
		out[i] = in[slices.Index(q.Pred.Props, r)]
	}
	return out
}

// refProps looks up the properties of q's match whose props (q.Pred's or
// q.Return's) have values in.
func refProps(q *Query, props []PropRef, in []graph.Value) func(v, name string) any {
	return func(v, name string) any {
		for i, r := range props {
			if r.Name != name {
				continue
			}
			if (r.OnEdge && q.Bindings[r.Index].Name == v) || (!r.OnEdge && q.Pattern.Vertices[r.Index].Name == v) {
				return refValue(in[i])
			}
		}
		panic("the compiler did not list property " + v + "." + name)
	}
}

// wherePool is the values FuzzParseWhere evaluates conditions on.
func wherePool() []graph.Value {
	return []graph.Value{
		{}, graph.NumberValue(0), graph.NumberValue(10000), graph.NumberValue(-1.5), graph.StringValue("EUR"),
		graph.StringValue(""), graph.BoolValue(true), graph.BoolValue(false), graph.TimeValue(0),
		graph.TimeValue(1800000), graph.TimeValue(3600000), graph.TimeValue(1700000000000), graph.NumberValue(math.Inf(1)),
	}
}

// roundTrip checks that p, parsed from text, survives being written out
// and parsed again, and returns what the second parse gave.
func roundTrip(t *testing.T, text string, p *Pattern) *Pattern {
	t.Helper()
	again, err := ParseCypher("fuzz", formatCypher(p))
	if err != nil {
		t.Fatalf("%v\nwhen parsing %q written out as\n%s", err, text, formatCypher(p))
	}
	// WITHIN is written in milliseconds, which may round the nanoseconds
	// of a bound longer than about 26 days.
	if d := again.Within - p.Within; d > p.Within>>50+1 || -d > p.Within>>50+1 {
		t.Fatalf("round trip of %q gave WITHIN %v, want %v", text, again.Within, p.Within)
	}
	w, aw := withoutPos(p), withoutPos(again)
	aw.Within = w.Within
	if !reflect.DeepEqual(aw, w) {
		t.Fatalf("round trip of %q\ngave %+v\nwant %+v", text, aw, w)
	}
	return again
}

// checkSource checks that each node of e starts at its Pos in text with
// its Text.
func checkSource(t *testing.T, text string, e *Expr) {
	t.Helper()
	if e == nil {
		return
	}
	lines := strings.SplitAfter(text, "\n")
	if e.Pos.Line < 1 || e.Pos.Line > len(lines) || e.Pos.Col < 1 || e.Text == "" {
		t.Fatalf("%s is at %v with text %q in %q", e, e.Pos, e.Text, text)
	}
	rest := lines[e.Pos.Line-1]
	for range e.Pos.Col - 1 {
		_, n := utf8.DecodeRuneInString(rest)
		rest = rest[n:]
	}
	rest += strings.Join(lines[e.Pos.Line:], "")
	if !strings.HasPrefix(rest, e.Text) {
		t.Fatalf("%s: the source at %v is %q, not its text %q", e, e.Pos, rest, e.Text)
	}
	for _, a := range e.Args {
		checkSource(t, text, a)
	}
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
		text += "\nWITHIN " + formatDuration(p.Within)
	}
	for i, it := range p.Return {
		var name strings.Builder
		writeName(&name, it.Name)
		if i == 0 {
			text += "\nRETURN "
		} else {
			text += ",\n  "
		}
		text += it.Expr.String() + " AS " + name.String()
	}
	return text
}
