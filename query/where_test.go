package query

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gcsm/gcsm/graph"
)

// ring is the pattern the WHERE tests read: three named transfers in a
// cycle, so that every construct can name edges and vertices.
const ring = "(a:Account)-[t1:TRANSFER]->(b:Account)-[t2:TRANSFER]->(c:Account)-[t3:TRANSFER]->(a)"

func TestParseWhere(t *testing.T) {
	tests := []struct{ where, want string }{
		// Comparisons, each operator.
		{"t1.amount = 1", "(t1.amount = 1)"},
		{"t1.amount <> 1", "(t1.amount <> 1)"},
		{"t1.amount != 1", "(t1.amount <> 1)"},
		{"t1.amount < 1", "(t1.amount < 1)"},
		{"t1.amount <= 1", "(t1.amount <= 1)"},
		{"t1.amount > 1", "(t1.amount > 1)"},
		{"t1.amount >= 1", "(t1.amount >= 1)"},
		{"t1.amount>=1", "(t1.amount >= 1)"},
		// Logic: NOT binds looser than a comparison, AND tighter than OR.
		{"NOT t1.amount = 1", "(NOT (t1.amount = 1))"},
		{"not not a.ok", "(NOT (NOT a.ok))"},
		{"a.x = 1 OR a.x = 2 AND a.y = 3", "((a.x = 1) OR ((a.x = 2) AND (a.y = 3)))"},
		{"(a.x = 1 OR a.x = 2) AND a.y = 3", "(((a.x = 1) OR (a.x = 2)) AND (a.y = 3))"},
		{"a.p AND b.p AND c.p", "((a.p AND b.p) AND c.p)"},
		{"a.p or b.p Or c.p", "((a.p OR b.p) OR c.p)"},
		// Arithmetic: * and / before + and -, left to right, unary minus first.
		{"t2.amount >= 0.9 * t1.amount", "(t2.amount >= (0.9 * t1.amount))"},
		{"a.x + b.x * c.x - 1 > 0", "(((a.x + (b.x * c.x)) - 1) > 0)"},
		{"a.x / 2 / 2 = 1", "(((a.x / 2) / 2) = 1)"},
		{"(a.x + b.x) * 2 = 1", "(((a.x + b.x) * 2) = 1)"},
		{"-a.x * 2 = - -1", "(((-a.x) * 2) = (-(-1)))"},
		{"a.x - -1 = 0", "((a.x - (-1)) = 0)"},
		// Numbers.
		{"a.x = 1e6", "(a.x = 1e+06)"},
		{"a.x = 2.5E-3", "(a.x = 0.0025)"},
		{"a.x = 007", "(a.x = 7)"},
		// Durations, alone and compound, and time arithmetic.
		{"t3.ts - t1.ts < 1h", "((t3.ts - t1.ts) < 3.6e+06ms)"},
		{"t3.ts - t1.ts <= 30s", "((t3.ts - t1.ts) <= 30000ms)"},
		{"t3.ts - t1.ts <= 15m", "((t3.ts - t1.ts) <= 900000ms)"},
		{"t3.ts - t1.ts <= 2d", "((t3.ts - t1.ts) <= 1.728e+08ms)"},
		{"t3.ts - t1.ts <= 500ms", "((t3.ts - t1.ts) <= 500ms)"},
		{"t3.ts - t1.ts <= 1h30m", "((t3.ts - t1.ts) <= 5.4e+06ms)"},
		{"t3.ts - t1.ts <= 1.5h", "((t3.ts - t1.ts) <= 5.4e+06ms)"},
		{"t2.ts <= t1.ts + 2 * 1m", "(t2.ts <= (t1.ts + (2 * 60000ms)))"},
		// Strings, with both quotes and escapes, and booleans.
		{"t1.currency = 'EUR'", "(t1.currency = 'EUR')"},
		{`t1.currency = "EUR"`, "(t1.currency = 'EUR')"},
		{`t1.note = 'it\'s "x"\\\n\t\r'`, `(t1.note = 'it\'s "x"\\\n\t\r')`},
		{`t1.note = "it's \"x\""`, `(t1.note = 'it\'s "x"')`},
		{"t1.note = ''", "(t1.note = '')"},
		{"t1.note = 'é\xff'", "(t1.note = 'é\xff')"},
		{"a.ok = true AND b.ok = FALSE", "((a.ok = true) AND (b.ok = false))"},
		{"a.ok", "a.ok"},
		{"true", "true"},
		// IN lists, IS NULL.
		{"t1.currency IN ['EUR', 'USD']", "(t1.currency IN ['EUR', 'USD'])"},
		{"a.x IN []", "(a.x IN [])"},
		{"a.x in [1 + 1, b.x]", "(a.x IN [(1 + 1), b.x])"},
		{"a.x IS NULL", "(a.x IS NULL)"},
		{"a.x is not null OR t1.id IS NULL", "((a.x IS NOT NULL) OR (t1.id IS NULL))"},
		// Property names: backquoted, keywords; variables named like keywords.
		{"t1.`the amount` > 1", "(t1.`the amount` > 1)"},
		{"t1.`a``b` > 1", "(t1.`a``b` > 1)"},
		{"t1.and > 1", "(t1.and > 1)"},
		{"t1 . amount > 1", "(t1.amount > 1)"},
		// Spaces, newlines and comments anywhere.
		{"\n  t1.amount // big\n  >\t10000 // done\n", "(t1.amount > 10000)"},
	}
	for _, tc := range tests {
		t.Run(tc.where, func(t *testing.T) {
			p, err := ParseCypher("q", ring+" WHERE "+tc.where)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Where.String(); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			again, err := ParseCypher("q", ring+" WHERE "+p.Where.String())
			if err != nil {
				t.Fatalf("reparsing %s: %v", p.Where, err)
			}
			if !reflect.DeepEqual(withoutText(again.Where), withoutText(p.Where)) {
				t.Errorf("the round trip of %s changed it to %s", p.Where, again.Where)
			}
		})
	}
}

func TestParseWhereKeywordVariables(t *testing.T) {
	p, err := ParseCypher("q", "(not)-[in:T]->(and) WHERE not.x = 1 AND in.y IN [and.z] AND NOT true.w")
	if err == nil {
		t.Fatalf("true is not a variable here, yet %s parsed", p.Where)
	}
	p, err = ParseCypher("q", "(not)-[in:T]->(and) WHERE not.x = 1 AND in.y IN [and.z] AND NOT and.w")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Where.String(), "(((not.x = 1) AND (in.y IN [and.z])) AND (NOT and.w))"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestParseWithin(t *testing.T) {
	tests := []struct {
		text   string
		within time.Duration
		pos    Pos
		where  string
	}{
		{ring + " WITHIN 1h", time.Hour, Pos{1, 86}, ""},
		{ring + "\nwithin 90s", 90 * time.Second, Pos{2, 1}, ""},
		{ring + " WITHIN 1h30m WHERE t1.amount > 1", 90 * time.Minute, Pos{1, 86}, "(t1.amount > 1)"},
		{ring + " WHERE t1.amount > 1 WITHIN 0.5ms", 500 * time.Microsecond, Pos{1, 106}, "(t1.amount > 1)"},
		{ring + " WITHIN 2d", 48 * time.Hour, Pos{1, 86}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.text, func(t *testing.T) {
			p, err := ParseCypher("q", tc.text)
			if err != nil {
				t.Fatal(err)
			}
			where := ""
			if p.Where != nil {
				where = p.Where.String()
			}
			if p.Within != tc.within || p.WithinPos != tc.pos || where != tc.where {
				t.Errorf("got WITHIN %v at %v and WHERE %q, want %v at %v and %q", p.Within, p.WithinPos, where, tc.within, tc.pos, tc.where)
			}
		})
	}
}

func TestFormatDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{time.Hour, "1h"}, {90 * time.Minute, "1h30m"}, {48 * time.Hour, "2d"}, {500 * time.Millisecond, "500ms"},
		{time.Second + 500*time.Microsecond, "1s0.5ms"}, {time.Nanosecond, "0.000001ms"},
		{25*time.Hour + time.Minute + time.Second + time.Millisecond, "1d1h1m1s1ms"}, {0, "0s"},
	} {
		if got := formatDuration(tc.d); got != tc.want {
			t.Errorf("formatDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
		if tc.d <= 0 {
			continue
		}
		p, err := ParseCypher("q", "(a)-[:T]->(b) WITHIN "+tc.want)
		if err != nil {
			t.Fatal(err)
		}
		if p.Within != tc.d {
			t.Errorf("WITHIN %s parsed as %v, want %v", tc.want, p.Within, tc.d)
		}
	}
}

func TestParseWherePositions(t *testing.T) {
	p, err := ParseCypher("q", "(a)-[t:T]->(b)\nWHERE t.x > 1 AND\n  (a.y = 'é' OR NOT b.z)")
	if err != nil {
		t.Fatal(err)
	}
	and := p.Where
	or := and.Args[1]
	not := or.Args[1]
	for _, tc := range []struct {
		e    *Expr
		pos  Pos
		text string
	}{
		{and, Pos{2, 7}, "t.x > 1 AND\n  (a.y = 'é' OR NOT b.z)"},
		{and.Args[0], Pos{2, 7}, "t.x > 1"},
		{and.Args[0].Args[0], Pos{2, 7}, "t.x"},
		{and.Args[0].Args[1], Pos{2, 13}, "1"},
		{or, Pos{3, 3}, "(a.y = 'é' OR NOT b.z)"},
		{or.Args[0], Pos{3, 4}, "a.y = 'é'"},
		{or.Args[0].Args[1], Pos{3, 10}, "'é'"},
		{not, Pos{3, 17}, "NOT b.z"},
		{not.Args[0], Pos{3, 21}, "b.z"},
	} {
		if tc.e.Pos != tc.pos || tc.e.Text != tc.text {
			t.Errorf("%s: at %v, %q; want %v, %q", tc.e, tc.e.Pos, tc.e.Text, tc.pos, tc.text)
		}
	}
}

func TestParseWhereErrors(t *testing.T) {
	tests := []struct {
		name, text string
		pos        Pos
		reason     string
	}{
		{"empty WHERE", ring + " WHERE", Pos{1, 91}, "unexpected end of input: expected a value"},
		{"WHERE twice", ring + " WHERE a.x = 1 WHERE a.y = 1", Pos{1, 100}, "a second WHERE: join the conditions with AND"},
		{"WITHIN twice", ring + " WITHIN 1h WITHIN 2h", Pos{1, 96}, "a second WITHIN"},
		{"junk after WHERE", ring + " WHERE a.x = 1 ORDER BY a", Pos{1, 100}, `unexpected "ORDER": expected an operator, WITHIN, RETURN or the end of the query`},
		{"junk after WITHIN", ring + " WITHIN 1h + 1s", Pos{1, 96}, `unexpected '+': expected WHERE, RETURN or the end of the query`},
		{"junk after a value", ring + " WHERE a.x = 1 b.x", Pos{1, 100}, `unexpected "b": expected an operator`},
		{"unknown variable", ring + " WHERE d.x = 1", Pos{1, 92}, "d.x: unknown variable d"},
		{"variable alone", ring + " WHERE a = 1", Pos{1, 92}, "a is a vertex, not a value: RETURN a gives its account id as an item of its own; elsewhere name a property, as in a.amount"},
		{"no property name", ring + " WHERE a. = 1", Pos{1, 95}, "unexpected '=': expected a property name after a."},
		{"empty backquoted property", ring + " WHERE a.`` = 1", Pos{1, 94}, "empty property name"},
		{"unterminated backquoted property", ring + " WHERE a.`x = 1", Pos{1, 94}, "unterminated property name"},
		{"unterminated parenthesis", ring + " WHERE (a.x = 1", Pos{1, 92}, "unterminated parenthesis: expected ')'"},
		{"junk in parentheses", ring + " WHERE (a.x = 1 ]", Pos{1, 101}, "unexpected ']': expected an operator or ')'"},
		{"unterminated string", ring + " WHERE a.x = 'abc", Pos{1, 98}, "unterminated string: expected a closing '"},
		{"unterminated double-quoted string", ring + " WHERE a.x = \"abc'", Pos{1, 98}, `unterminated string: expected a closing "`},
		{"bad escape", ring + " WHERE a.x = 'a\\qb'", Pos{1, 100}, `unknown escape \q`},
		{"missing operand", ring + " WHERE a.x = ", Pos{1, 98}, "unexpected end of input: expected a value"},
		{"missing operand of AND", ring + " WHERE a.x = 1 AND", Pos{1, 103}, "unexpected end of input: expected a value"},
		{"operator as a value", ring + " WHERE a.x = AND", Pos{1, 98}, `unexpected "AND": expected a value`},
		{"null literal", ring + " WHERE a.x = null", Pos{1, 98}, "null is not a value here: test for a missing property with IS NULL"},
		{"IS without NULL", ring + " WHERE a.x IS 1", Pos{1, 99}, `unexpected "1": expected NULL or NOT NULL after IS`},
		{"chained comparison", ring + " WHERE 1 < a.x < 3", Pos{1, 100}, "a comparison cannot follow 1 < a.x: join comparisons with AND"},
		{"comparison after IN", ring + " WHERE a.x IN [1] = true", Pos{1, 103}, "a comparison cannot follow a.x IN [1]"},
		{"IN without a list", ring + " WHERE a.x IN 1", Pos{1, 99}, `unexpected "1": expected '[' to start the list after IN`},
		{"unterminated list", ring + " WHERE a.x IN [1, 2", Pos{1, 99}, "unterminated list: expected ']'"},
		{"trailing comma in a list", ring + " WHERE a.x IN [1,]", Pos{1, 102}, `unexpected ']': expected a value`},
		{"list without commas", ring + " WHERE a.x IN [1 2]", Pos{1, 102}, `unexpected "2": expected ',' or ']'`},
		{"decimal point without digits", ring + " WHERE a.x = 1.", Pos{1, 98}, "a number needs digits after its decimal point"},
		{"number out of range", ring + " WHERE a.x = 1e999", Pos{1, 98}, "number 1e999 is out of range"},
		{"unknown unit", ring + " WHERE t1.ts - t2.ts < 10y", Pos{1, 110}, `unknown unit "y" after a number`},
		{"duration part without a unit", ring + " WHERE t1.ts - t2.ts < 1h30", Pos{1, 112}, "1h30: every part of a duration needs a unit"},
		{"duration out of range", ring + " WHERE t1.ts - t2.ts < 1e308d", Pos{1, 108}, "duration 1e308d is out of range"},
		{"time compared with a string", ring + " WHERE t1.ts > 'x'", Pos{1, 92}, "t1.ts > 'x': cannot apply > to a time and a string"},
		{"time compared with a number", ring + " WHERE t1.ts > 17", Pos{1, 92}, "cannot apply > to a time and a number"},
		{"property plus a string", ring + " WHERE a.x + 'y' = 1", Pos{1, 92}, "a.x + 'y': cannot apply + to a property of any kind and a string"},
		{"duration compared with a string", ring + " WHERE 1h = 'x'", Pos{1, 92}, "cannot apply = to a duration and a string"},
		{"ordered booleans", ring + " WHERE a.x < true", Pos{1, 92}, "cannot apply < to a property of any kind and a boolean"},
		{"time plus a time", ring + " WHERE t1.ts + t2.ts > t3.ts", Pos{1, 92}, "t1.ts + t2.ts: cannot apply + to a time and a time"},
		{"duration times a duration", ring + " WHERE 1h * 1h > 1", Pos{1, 92}, "cannot apply * to a duration and a duration"},
		{"NOT of a number", ring + " WHERE NOT 1", Pos{1, 92}, "NOT needs a boolean, and 1 is a number"},
		{"minus a string", ring + " WHERE -'x' = a.x", Pos{1, 92}, "- needs a number or a duration, and 'x' is a string"},
		{"AND of a number", ring + " WHERE a.x AND 1", Pos{1, 92}, "cannot apply AND to a property of any kind and a number"},
		{"IN list of another kind", ring + " WHERE t1.ts IN [1h]", Pos{1, 92}, "t1.ts is a time, and the list's 1h is a duration: IN compares values of one kind"},
		{"condition not a boolean", ring + " WHERE a.x + 1", Pos{1, 92}, "WHERE a.x + 1: a condition must be a boolean, not a number"},
		{"condition a string", ring + " WHERE t1.id", Pos{1, 92}, "a condition must be a boolean, not a string"},
		{"WITHIN without a duration", ring + " WITHIN", Pos{1, 92}, "unexpected end of input: expected a duration such as 1h or 30m after WITHIN"},
		{"WITHIN a number", ring + " WITHIN 5", Pos{1, 93}, "WITHIN 5: give a unit, as in 5m"},
		{"WITHIN zero", ring + " WITHIN 0s", Pos{1, 93}, "WITHIN 0s: the bound must be positive"},
		{"WITHIN too long", ring + " WITHIN 300000d", Pos{1, 93}, "WITHIN 300000d: the bound is too long"},
		{"WITHIN an expression", ring + " WITHIN t1.ts", Pos{1, 93}, `unexpected "t1": expected a duration`},
		{"nesting too deep", ring + " WHERE " + strings.Repeat("(", 199) + "a.x" + strings.Repeat(")", 199) + " = 1", Pos{}, ""},
		{"parentheses too deep", ring + " WHERE " + strings.Repeat("(", 200) + "a.x" + strings.Repeat(")", 200) + " = 1", Pos{1, 292}, "the condition nests deeper than 200 levels"},
		{"NOT too deep", ring + " WHERE " + strings.Repeat("NOT ", 200) + "a.x", Pos{1, 888}, "the condition nests deeper than 200 levels"},
		{"minus too deep", ring + " WHERE a.x = " + strings.Repeat("-", 200) + "1", Pos{1, 297}, "the condition nests deeper than 200 levels"},
		{"error on a later line", ring + "\nWHERE t1.amount > 1\n  AND t2.ts > 'x'", Pos{3, 7}, "t2.ts > 'x': cannot apply >"},
		{"relationship variable is a vertex", "(a)-[t:T]->(b), (b)-[t2:T]->(a) WHERE a.x = 1", Pos{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCypher("q", tc.text)
			if tc.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantError(t, err, "q", tc.pos, tc.reason)
		})
	}
}

// TestValidateWhere checks the rules that only a pattern built in code can
// break.
func TestValidateWhere(t *testing.T) {
	base := func() *Pattern {
		return &Pattern{
			Vertices: []Vertex{vtx("a", "A"), vtx("b", "A")},
			Edges:    []Edge{named(edg(0, 1, "T", true), "t")},
		}
	}
	prop := func(v, name string) *Expr { return &Expr{Op: OpProp, Var: v, Name: name} }
	lit := func(v graph.Value) *Expr { return &Expr{Op: OpLit, Lit: v} }
	tests := []struct {
		name   string
		change func(p *Pattern)
		reason string
	}{
		{"negative WITHIN", func(p *Pattern) { p.Within = -time.Second }, "WITHIN -1s: the bound must be positive"},
		{"a vertex and an edge of one name", func(p *Pattern) {
			p.Edges[0].Name = "a"
			p.Where = &Expr{Op: OpEq, Args: []*Expr{prop("a", "x"), lit(graph.NumberValue(1))}}
		}, "a names both a vertex and a relationship"},
		{"missing operand", func(p *Pattern) { p.Where = &Expr{Op: OpEq, Args: []*Expr{prop("a", "x")}} }, "= has 1 operands"},
		{"nil operand", func(p *Pattern) { p.Where = &Expr{Op: OpNot, Args: []*Expr{nil}} }, "NOT has a missing operand"},
		{"time literal", func(p *Pattern) { p.Where = lit(graph.TimeValue(1)) }, "a literal is a number, a string or a boolean, not time"},
		{"duration of a string", func(p *Pattern) { p.Where = &Expr{Op: OpDuration, Lit: graph.StringValue("x")} }, "a duration literal holds a number of milliseconds"},
		{"unknown operator", func(p *Pattern) { p.Where = &Expr{Op: 99, Args: []*Expr{prop("a", "x"), prop("a", "y")}} }, "unknown operator Op(99)"},
		{"empty property name", func(p *Pattern) { p.Where = prop("t", "") }, "empty property name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := base()
			tc.change(p)
			err := p.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("got %v, want %q", err, tc.reason)
			}
		})
	}
}

func TestPatternProperties(t *testing.T) {
	p, err := ParseCypher("q", ring+" WHERE t1.amount > 1 AND t1.ts < t2.ts AND t2.id <> t3.id AND (a.country = c.country OR b.risk IN [t3.currency, t1.amount]) WITHIN 1h")
	if err != nil {
		t.Fatal(err)
	}
	vertex, edge := p.Properties()
	if want := []string{"country", "risk"}; !reflect.DeepEqual(vertex, want) {
		t.Errorf("vertex properties %q, want %q", vertex, want)
	}
	if want := []string{"amount", "currency"}; !reflect.DeepEqual(edge, want) {
		t.Errorf("edge properties %q, want %q", edge, want)
	}
	p, err = ParseCypher("q", ring+" WITHIN 1h")
	if err != nil {
		t.Fatal(err)
	}
	if vertex, edge := p.Properties(); vertex != nil || edge != nil {
		t.Errorf("WITHIN alone reads properties %q and %q", vertex, edge)
	}
}
