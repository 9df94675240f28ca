package query

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/graph"
)

func TestParseReturn(t *testing.T) {
	type item struct{ expr, name string }
	tests := []struct {
		clauses string // after ring
		want    []item
	}{
		{"RETURN a, t1, t1.amount, sum([t1, t2, t3].amount) AS total", []item{
			{"a", "a"}, {"t1", "t1"}, {"t1.amount", "t1.amount"}, {"sum([t1, t2, t3].amount)", "total"}}},
		// Without AS, anything but a variable or a property is named by its
		// source text, as written.
		{"return MAX([a,b].score), Min( [ t1 , t2 ] . ts )", []item{
			{"max([a, b].score)", "MAX([a,b].score)"}, {"min([t1, t2].ts)", "Min( [ t1 , t2 ] . ts )"}}},
		{"RETURN t2.ts - t1.ts AS gap, t1.amount * 2, (b), (a.x)", []item{
			{"(t2.ts - t1.ts)", "gap"}, {"(t1.amount * 2)", "t1.amount * 2"}, {"b", "b"}, {"a.x", "a.x"}}},
		{"RETURN t1.`odd name`, sum([t1].`odd name`) AS `the ``sum```, a AS as, b AS return", []item{
			{"t1.`odd name`", "t1.odd name"}, {"sum([t1].`odd name`)", "the `sum`"}, {"a", "as"}, {"b", "return"}}},
		{"WHERE t1.amount > 1 WITHIN 1h\nRETURN // the accounts\n  a,\n  b // and no more\n", []item{{"a", "a"}, {"b", "b"}}},
		{"WITHIN 1h RETURN sum([t1, t2].amount) >= 2 * t3.amount AS big, t1.fee IS NULL AS free", []item{
			{"(sum([t1, t2].amount) >= (2 * t3.amount))", "big"}, {"(t1.fee IS NULL)", "free"}}},
		{"RETURN 1h30m, 'x', true", []item{{"5.4e+06ms", "1h30m"}, {"'x'", "'x'"}, {"true", "true"}}},
	}
	for _, tc := range tests {
		t.Run(tc.clauses, func(t *testing.T) {
			text := ring + " " + tc.clauses
			p, err := ParseCypher("fuzz", text) // the source that roundTrip gives
			if err != nil {
				t.Fatal(err)
			}
			var got []item
			for _, it := range p.Return {
				got = append(got, item{it.Expr.String(), it.Name})
				checkSource(t, text, it.Expr)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			roundTrip(t, text, p)
		})
	}
	// Function names are not reserved: a variable may be named sum.
	p, err := ParseCypher("q", "(sum:A)-[max:T]->(b:A) RETURN sum, max, sum.x, sum([sum, b].x)")
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{p.Return[0].Name, p.Return[1].Name, p.Return[2].Name, p.Return[3].Expr.String()}; !reflect.DeepEqual(got, []string{"sum", "max", "sum.x", "sum([sum, b].x)"}) {
		t.Errorf("variables named like functions: got %q", got)
	}
}

func TestParseReturnErrors(t *testing.T) {
	tests := []struct {
		name, items string // after ring + "\nRETURN "
		pos         Pos
		reason      string
	}{
		{"empty RETURN", "", Pos{2, 8}, "unexpected end of input: expected an item to return, such as a, t1.amount or sum([t1, t2].amount)"},
		{"trailing comma", "a,", Pos{2, 10}, "unexpected end of input: expected an item to return"},
		{"RETURN twice", "a RETURN b", Pos{2, 10}, "a second RETURN: list every item in one, separated by commas"},
		{"WHERE after RETURN", "a WHERE t1.amount > 1", Pos{2, 10}, "WHERE after RETURN: RETURN is the last clause, so write WHERE before it"},
		{"WITHIN after RETURN", "a within 1h", Pos{2, 10}, "within after RETURN: RETURN is the last clause, so write WITHIN before it"},
		{"junk after an item", "a b", Pos{2, 10}, `unexpected "b": expected an operator, AS, ',' or the end of the query`},
		{"junk after a name", "a AS x y", Pos{2, 15}, `unexpected "y": expected ',' or the end of the query`},
		{"AS without a name", "a AS", Pos{2, 12}, "unexpected end of input: expected a name after AS"},
		{"AS an empty name", "a AS ``", Pos{2, 13}, "empty name after AS"},
		{"AS a string", "a AS 'x'", Pos{2, 13}, `unexpected '\'': expected a name after AS`},
		{"AS alone", "AS x", Pos{2, 8}, `unexpected "AS": expected a value`},
		{"two items of one name", "a, b AS a", Pos{2, 11}, "RETURN: two items named a; give one another name with AS"},
		{"two items of one default name", "t1.amount, t2.amount, t1.amount", Pos{2, 30}, "RETURN: two items named t1.amount; give one another name with AS"},
		{"unknown variable", "d", Pos{2, 8}, "unknown variable d: name a vertex, as in (d), or a relationship, as in -[d:TYPE]->"},
		{"unknown property variable", "d.x", Pos{2, 8}, "d.x: unknown variable d"},
		{"unknown variable in a list", "sum([t1, d].amount)", Pos{2, 17}, "unknown variable d"},
		{"vertices and relationships in one list", "sum([t1, a].amount)", Pos{2, 17}, "sum([t1, a].amount): sum lists vertices and relationships together: list only vertices or only relationships"},
		{"an empty list", "sum([].amount)", Pos{2, 12}, "sum of an empty list: list the variables, as in sum([t1, t2].amount)"},
		{"sum of times", "sum([t1, t2].ts)", Pos{2, 8}, "sum([t1, t2].ts): sum of times: sum adds numbers; subtract two times for a duration, as in t2.ts - t1.ts"},
		{"sum of ids", "SUM([t1].id)", Pos{2, 8}, "SUM([t1].id): sum of strings: sum adds numbers"},
		{"sum plus a string", "sum([t1,t2].amount) + 'x'", Pos{2, 8}, "sum([t1,t2].amount) + 'x': cannot apply + to a number and a string"},
		{"min of times plus a string", "min([t1,t2].ts) + 'x'", Pos{2, 8}, "cannot apply + to a time and a string"},
		{"a vertex in arithmetic", "a + 1", Pos{2, 8}, "a is a vertex, not a value: RETURN a gives its account id as an item of its own; elsewhere name a property, as in a.amount"},
		{"a relationship compared", "t1 = 'x'", Pos{2, 8}, "t1 is a relationship, not a value: RETURN t1 gives its transfer id as an item of its own; elsewhere name a property, as in t1.amount or t1.id"},
		{"a variable in a list", "a.x IN [b]", Pos{2, 16}, "b is a vertex, not a value"},
		{"an unknown function", "count([t1].amount)", Pos{2, 8}, "unknown function count: the functions are min, max and sum, as in sum([t1, t2].amount)"},
		{"a function of a property", "sum(t1.amount)", Pos{2, 12}, `unexpected "t1": expected '[' to start the list of variables, as in sum([t1, t2].amount)`},
		{"a list of properties", "sum([t1.amount])", Pos{2, 15}, `unexpected '.': expected ',' or ']'`},
		{"a list of literals", "max([1, 2].x)", Pos{2, 13}, "invalid name 1: a name starts with a letter or an underscore"},
		{"a list without its property", "sum([t1, t2])", Pos{2, 20}, `unexpected ')': expected '.' and the property to aggregate after the list, as in [t1, t2].amount`},
		{"a list without a property name", "sum([t1]. )", Pos{2, 18}, `unexpected ')': expected a property name after the list's '.'`},
		{"an unterminated list", "sum([t1, t2", Pos{2, 12}, "unterminated list: expected ']'"},
		{"an unterminated call", "sum([t1].amount", Pos{2, 11}, "unterminated call of sum: expected ')'"},
		{"two arguments", "sum([t1].amount, [t2].amount)", Pos{2, 23}, `unexpected ',': expected ')'`},
		{"a clause keyword as an item", "WHERE", Pos{2, 8}, `unexpected "WHERE": expected a value`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCypher("q", ring+"\nRETURN "+tc.items)
			wantError(t, err, "q", tc.pos, tc.reason)
		})
	}
	_, err := ParseCypher("q", ring+" WHERE sum([t1, a].amount) > 1")
	wantError(t, err, "q", Pos{1, 101}, "sum lists vertices and relationships together")
}

// TestValidateReturn checks the rules that only a pattern built in code can
// break.
func TestValidateReturn(t *testing.T) {
	v := func(name string) *Expr { return &Expr{Op: OpVar, Var: name} }
	tests := []struct {
		name   string
		items  []ReturnItem
		reason string
	}{
		{"no expression", []ReturnItem{{Name: "x"}}, "RETURN x: an item without an expression"},
		{"no name", []ReturnItem{{Expr: v("a")}}, "RETURN a: an item needs a name"},
		{"a list of properties", []ReturnItem{{Expr: &Expr{Op: OpSum, Name: "x", Args: []*Expr{{Op: OpProp, Var: "t", Name: "x"}}}, Name: "s"}}, "sum reads a property of a list of variables"},
		{"no property", []ReturnItem{{Expr: &Expr{Op: OpMax, Args: []*Expr{v("t")}}, Name: "m"}}, "empty property name"},
		{"an empty list", []ReturnItem{{Expr: &Expr{Op: OpMin, Name: "x"}, Name: "m"}}, "min of an empty list"},
		{"a vertex and an edge of one name", []ReturnItem{{Expr: v("b"), Name: "b"}}, "b names both a vertex and a relationship"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Pattern{
				Vertices: []Vertex{vtx("a", "A"), vtx("b", "A")},
				Edges:    []Edge{named(edg(0, 1, "T", true), "t")},
				Return:   tc.items,
			}
			if tc.name == "a vertex and an edge of one name" {
				p.Edges[0].Name = "b"
			}
			if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("got %v, want %q", err, tc.reason)
			}
		})
	}
}

// returnVals gives the values of q's RETURN properties from props, by
// "var.name"; the rest are null.
func returnVals(q *Query, props map[string]graph.Value) []graph.Value {
	vals := make([]graph.Value, len(q.Return.Props))
	for i, r := range q.Return.Props {
		name := q.Pattern.Vertices[r.Index].Name
		if r.OnEdge {
			name = q.Bindings[r.Index].Name
		}
		vals[i] = props[name+"."+r.Name]
	}
	return vals
}

func TestCompileReturn(t *testing.T) {
	q := compileText(t, ring+" WHERE t1.amount > 1 RETURN a, t1, t1.amount AS first, sum([t1, t2, t3].amount) AS total, b.x", true, Embeddings)
	wantProps := []PropRef{{true, 0, "id"}, {true, 0, "amount"}, {true, 1, "amount"}, {true, 2, "amount"}, {false, 1, "x"}}
	if !reflect.DeepEqual(q.Return.Props, wantProps) {
		t.Errorf("got props %v\nwant %v", q.Return.Props, wantProps)
	}
	type col struct {
		Name   string
		Vertex int
		Props  []int
	}
	var got []col
	for _, c := range q.Return.Items {
		got = append(got, col{c.Name, c.Vertex, c.Props})
	}
	want := []col{{"a", 0, nil}, {"t1", -1, []int{0}}, {"first", -1, []int{1}}, {"total", -1, []int{1, 2, 3}}, {"b.x", -1, []int{4}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got items %+v\nwant %+v", got, want)
	}
	if len(q.Pred.Props) != 1 {
		t.Errorf("RETURN's properties leak into WHERE's: %v", q.Pred.Props)
	}

	// A bare relationship on an edge that binds no transfer, as in WHERE.
	p, err := Parse("q", "(a:A)-[t]->(b:A) RETURN t")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(p, graph.NewDict(), true, Embeddings)
	wantError(t, err, "q", Pos{1, 25}, "t: the edge (a)-(b) at 1:6 has no label")
	p, err = Parse("q", "(a:A)-[t:T]-(b:A) RETURN max([t].amount)")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(p, graph.NewDict(), true, Embeddings)
	wantError(t, err, "q", Pos{1, 31}, "has no direction")
	if _, err = Compile(p, graph.NewDict(), false, Embeddings); err != nil {
		t.Errorf("on an undirected graph: %v", err)
	}
}

func TestReturnEval(t *testing.T) {
	num, str, tm := graph.NumberValue, graph.StringValue, graph.TimeValue
	dur := func(ms float64) graph.Value { return graph.Value{Kind: DurationKind, Num: ms} }
	null := graph.Value{}
	tests := []struct {
		item  string
		props map[string]graph.Value
		want  graph.Value
	}{
		{"sum([t1, t2, t3].amount)", map[string]graph.Value{"t1.amount": num(1), "t2.amount": num(2), "t3.amount": num(4)}, num(7)},
		{"sum([t1, t2, t3].amount)", map[string]graph.Value{"t1.amount": num(1), "t3.amount": num(4)}, num(5)},
		{"sum([t1, t2, t3].amount)", nil, null},
		{"sum([t1, t2].amount)", map[string]graph.Value{"t1.amount": num(1), "t2.amount": str("2")}, null},
		{"sum([t1, t2].amount)", map[string]graph.Value{"t1.amount": tm(1), "t2.amount": tm(2)}, null},
		{"sum([t1, t2].amount)", map[string]graph.Value{"t1.amount": graph.BoolValue(true)}, null},
		{"min([t1, t2, t3].amount)", map[string]graph.Value{"t1.amount": num(3), "t3.amount": num(-4)}, num(-4)},
		{"max([t1, t2, t3].amount)", map[string]graph.Value{"t1.amount": num(3), "t2.amount": num(math.Inf(1))}, num(math.Inf(1))},
		{"max([t1, t2].amount)", map[string]graph.Value{"t1.amount": num(3), "t2.amount": num(math.NaN())}, num(math.NaN())},
		{"max([t1, t2, t3].ts)", map[string]graph.Value{"t1.ts": tm(30), "t2.ts": tm(10), "t3.ts": tm(20)}, tm(30)},
		{"min([t1, t2, t3].ts)", map[string]graph.Value{"t1.ts": tm(30), "t2.ts": tm(10), "t3.ts": tm(20)}, tm(10)},
		{"min([a, b, c].country)", map[string]graph.Value{"a.country": str("FR"), "b.country": str("DE"), "c.country": str("IT")}, str("DE")},
		{"max([a, b, c].country)", map[string]graph.Value{"a.country": str("FR"), "b.country": str("DE"), "c.country": str("IT")}, str("IT")},
		{"max([t1, t2].id)", map[string]graph.Value{"t1.id": str("tx-9"), "t2.id": str("tx-10")}, str("tx-9")},
		{"min([a, b].x)", map[string]graph.Value{"a.x": num(1), "b.x": str("1")}, null},
		{"min([a, b].x)", map[string]graph.Value{"a.x": graph.BoolValue(false), "b.x": graph.BoolValue(true)}, null},
		{"min([a].x)", map[string]graph.Value{"a.x": graph.BoolValue(false)}, null},
		{"max([t1, t2, t3].ts) - min([t1, t2, t3].ts)", map[string]graph.Value{"t1.ts": tm(1000), "t2.ts": tm(61000), "t3.ts": tm(4000)}, dur(60000)},
		{"sum([t1, t2].amount) / 2", map[string]graph.Value{"t1.amount": num(1), "t2.amount": num(2)}, num(1.5)},
		{"t1", map[string]graph.Value{"t1.id": str("tx-1")}, str("tx-1")},
		{"t1.ts", map[string]graph.Value{"t1.ts": tm(5)}, tm(5)},
		{"a.x IN ['a', 'b']", map[string]graph.Value{"a.x": str("b")}, graph.BoolValue(true)},
		{"a", map[string]graph.Value{"a.x": str("b")}, null},
	}
	for _, tc := range tests {
		q := compileText(t, ring+" RETURN "+tc.item, true, Embeddings)
		vals := returnVals(q, tc.props)
		if got := q.Return.Items[0].Eval(vals); !got.Equal(tc.want) {
			t.Errorf("RETURN %s on %v = %v, want %v", tc.item, tc.props, got, tc.want)
		}
	}
}

func TestReturnEvalAllocs(t *testing.T) {
	q := compileText(t, ring+" RETURN a, t1, sum([t1, t2, t3].amount) AS s, min([a, b, c].country) AS m, t3.ts - t1.ts AS gap, t1.amount > 2 * t2.amount AS big", true, Embeddings)
	vals := returnVals(q, map[string]graph.Value{
		"t1.id": graph.StringValue("tx-1"), "t1.amount": graph.NumberValue(5), "t2.amount": graph.NumberValue(2),
		"a.country": graph.StringValue("FR"), "c.country": graph.StringValue("DE"), "t1.ts": graph.TimeValue(1), "t3.ts": graph.TimeValue(2),
	})
	var buf []byte
	if n := testing.AllocsPerRun(100, func() {
		buf = buf[:0]
		for _, c := range q.Return.Items {
			buf = AppendJSONValue(buf, c.Eval(vals))
		}
	}); n != 0 {
		t.Errorf("%v allocations to evaluate and write the items", n)
	}
	if got, want := string(buf), `null"tx-1"7"DE""1ms"true`; got != want {
		t.Errorf("wrote %s, want %s", got, want)
	}
}

// TestReturnSymmetry: a RETURN tells automorphic maps apart as a WHERE does,
// and reads transfers.
func TestReturnSymmetry(t *testing.T) {
	const cycle = "(a:A)-[x:T]->(b:A)-[y:T]->(c:A)-[z:T]->(a)"
	for _, sem := range []Semantics{Embeddings, Instances} {
		where := compileText(t, cycle+" WHERE true", true, sem)
		for _, ret := range []string{" RETURN a", " RETURN 1 AS one", " WITHIN 1h RETURN x.amount"} {
			q := compileText(t, cycle+ret, true, sem)
			if !reflect.DeepEqual(q.Images, where.Images) || !reflect.DeepEqual(q.Less, where.Less) || q.Automorphisms != 1 || q.CountFactor != 1 {
				t.Errorf("%s%s under %v: images %v, less %v, |Aut| %d, factor %d; want those of a WHERE: %v, %v",
					cycle, ret, sem, q.Images, q.Less, q.Automorphisms, q.CountFactor, where.Images, where.Less)
			}
			if !q.ReadsTransfers() {
				t.Errorf("%s%s does not read transfers", cycle, ret)
			}
		}
	}
	if q := compileText(t, cycle, true, Embeddings); q.Return != nil || q.ReadsTransfers() {
		t.Errorf("without RETURN: Return %+v, ReadsTransfers %v", q.Return, q.ReadsTransfers())
	}
}

func TestReturnProperties(t *testing.T) {
	p, err := ParseCypher("q", ring+" WHERE t1.amount > 1 RETURN a, t2, c.risk, max([a, b].score), sum([t2, t3].fee) + t1.amount, min([t1, t2].ts)")
	if err != nil {
		t.Fatal(err)
	}
	vertex, edge := p.Properties()
	if want := []string{"risk", "score"}; !reflect.DeepEqual(vertex, want) {
		t.Errorf("vertex properties %q, want %q", vertex, want)
	}
	if want := []string{"amount", "fee"}; !reflect.DeepEqual(edge, want) {
		t.Errorf("edge properties %q, want %q", edge, want)
	}
}

func TestReturnForm(t *testing.T) {
	form := func(text string) string {
		t.Helper()
		p, err := Parse("q", text)
		if err != nil {
			t.Fatal(err)
		}
		return p.Form()
	}
	base := form(ring)
	with := form(ring + " RETURN a, sum([t1, t2].amount) AS `the total`")
	if want := base + "return a AS \"a\"\nreturn sum([t1, t2].amount) AS \"the total\"\n"; with != want {
		t.Errorf("Form = %q, want %q", with, want)
	}
	if other := form(ring + " RETURN a, sum([t1, t2].amount) AS total"); other == with {
		t.Errorf("a renamed item keeps the form")
	}
	if same := form(ring + "\nreturn a,SUM([t1,t2].amount) as `the total`"); same != with {
		t.Errorf("spacing changes the form: %q", same)
	}
}

func TestAppendJSONValue(t *testing.T) {
	dur := func(ms float64) graph.Value { return graph.Value{Kind: DurationKind, Num: ms} }
	tests := []struct {
		v    graph.Value
		want string
	}{
		{graph.Value{}, "null"},
		{graph.NumberValue(12000), "12000"},
		{graph.NumberValue(-3), "-3"},
		{graph.NumberValue(0.1), "0.1"},
		{graph.NumberValue(1.5e300), "1.5e+300"},
		{graph.NumberValue(1e20), "100000000000000000000"},
		{graph.NumberValue(1e21), "1e+21"},
		{graph.NumberValue(1e-7), "1e-7"},
		{graph.NumberValue(math.NaN()), "null"},
		{graph.NumberValue(math.Inf(-1)), "null"},
		{graph.StringValue("tx-1"), `"tx-1"`},
		{graph.StringValue("a\"b\\\n\x01é\xff"), `"a\"b\\\n\u0001é\ufffd"`},
		{graph.BoolValue(true), "true"},
		{graph.BoolValue(false), "false"},
		{graph.TimeValue(1795168800000), `"2026-11-20T10:00:00.000Z"`},
		{graph.TimeValue(1795168800123), `"2026-11-20T10:00:00.123Z"`},
		{graph.TimeValue(-1), `"1969-12-31T23:59:59.999Z"`},
		{graph.Value{Kind: graph.Time, Num: 1.5}, `"1970-01-01T00:00:00.001Z"`},
		{graph.Value{Kind: graph.Time, Num: math.Inf(1)}, "null"},
		{dur(5400e3), `"1h30m"`},
		{dur(500), `"500ms"`},
		{dur(-300e3), `"-5m"`},
		{dur(0), `"0s"`},
		{dur(-1e-9), `"0s"`},
		{dur(0.5), `"0.5ms"`},
		{dur(1e20), `"1e+20ms"`},
		{dur(math.NaN()), "null"},
		{graph.Value{Kind: 99}, "null"},
	}
	for _, tc := range tests {
		got := string(AppendJSONValue([]byte("x"), tc.v))
		if got != "x"+tc.want {
			t.Errorf("AppendJSONValue(%v) = %s, want %s", tc.v, got[1:], tc.want)
		}
		if !json.Valid([]byte(got[1:])) {
			t.Errorf("AppendJSONValue(%v) = %s, not JSON", tc.v, got[1:])
		}
	}
	// Numbers as encoding/json writes them.
	for _, f := range []float64{0, 1, -0.5, 123456789.125, 1e-6, 9.99e-7, 2e21, 1 << 53, 3.14159, 1e-300} {
		want, _ := json.Marshal(f)
		if got := AppendJSONValue(nil, graph.NumberValue(f)); string(got) != string(want) {
			t.Errorf("%v: %s, encoding/json %s", f, got, want)
		}
	}
	// A duration reads back in WHERE as itself.
	for _, ms := range []float64{5400e3, 1, 0.25, 86400e3 + 1, 1e20} {
		s := strings.Trim(string(AppendJSONValue(nil, dur(ms))), `"`)
		p, err := ParseCypher("q", "(a)-[t:T]->(b) WHERE t.ts - t.ts = "+s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if got := p.Where.Args[1].Lit.Num; got != ms {
			t.Errorf("%v ms is written %s, which reads as %v ms", ms, s, got)
		}
	}
}

func TestReturnPropertyWarnings(t *testing.T) {
	p, err := Parse("q", ring+" WHERE max([t1, t2].amont) > 1 RETURN a, t1, t1.amount, a.contry, sum([t2, t3].amount) AS s, min([a, b].vip) = 1 AS v")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"property t1.amont never seen on TRANSFER edges; known: amount, currency, id, ts (did you mean amount?)",
		"property t2.amont never seen on TRANSFER edges; known: amount, currency, id, ts (did you mean amount?)",
		"property a.contry never seen on Account vertices; known: category, country, vip (did you mean country?)",
	}
	if got := p.PropertyWarnings(catalog(), nil); !slices.Equal(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
