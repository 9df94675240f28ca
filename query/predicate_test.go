package query

import (
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gcsm/gcsm/graph"
)

func compileText(t *testing.T, text string, directed bool, sem Semantics) *Query {
	t.Helper()
	p, err := Parse("q", text)
	if err != nil {
		t.Fatal(err)
	}
	q, err := Compile(p, graph.NewDict(), directed, sem)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestCompileBindings(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		directed bool
		edges    int
		bindings []Binding
	}{
		{"one per named edge", ring, true, 3, []Binding{{0, "t1"}, {1, "t2"}, {2, "t3"}}},
		{"unnamed edges", "(a)-[:T]->(b)-->(c)", true, 2, []Binding{{0, ""}, {1, ""}}},
		{"CSM edge listed both ways, undirected", "v 0 1\nv 1 1\ne 0 1\ne 1 0\n", false, 1, []Binding{{0, ""}}},
		{"CSM edge listed both ways, directed", "v 0 1\nv 1 1\ne 0 1\ne 1 0\n", true, 2, []Binding{{0, ""}, {1, ""}}},
		{"a repeated unnamed edge", "(a)-[:T]->(b), (a)-[:T]->(b)", true, 1, []Binding{{0, ""}}},
		{"parallel named edges", "(a)-[x:T]->(b), (a)-[y:T]->(b)", true, 1, []Binding{{0, "x"}, {0, "y"}}},
		{"a named and an unnamed edge", "(a)-[x:T]->(b), (a)-[:T]->(b)", true, 1, []Binding{{0, "x"}, {0, ""}}},
		{"parallel edges on an undirected graph", "(a)-[x:T]-(b), (b)-[y:T]-(a)", false, 1, []Binding{{0, "x"}, {0, "y"}}},
		{"opposite edges on a directed graph", "(a)-[x:T]->(b), (b)-[y:T]->(a)", true, 2, []Binding{{0, "x"}, {1, "y"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := compileText(t, tc.text, tc.directed, Embeddings)
			if len(q.Edges) != tc.edges || !reflect.DeepEqual(q.Bindings, tc.bindings) {
				t.Errorf("got %d edges and bindings %v, want %d and %v", len(q.Edges), q.Bindings, tc.edges, tc.bindings)
			}
			if q.Pred != nil {
				t.Errorf("a pattern without WHERE or WITHIN has predicates %+v", q.Pred)
			}
		})
	}
}

// TestCompileBindingsInCode covers patterns that no parser writes: one
// variable on several edges.
func TestCompileBindingsInCode(t *testing.T) {
	p := &Pattern{
		Name:     "q",
		Vertices: []Vertex{vtx("a", "A"), vtx("b", "A"), vtx("c", "A")},
		Edges:    []Edge{named(edg(0, 1, "T", true), "x"), named(edg(0, 1, "T", true), "x"), named(edg(1, 2, "T", true), "y")},
	}
	q, err := Compile(p, graph.NewDict(), true, Embeddings)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Binding{{0, "x"}, {1, "y"}}; !reflect.DeepEqual(q.Bindings, want) {
		t.Errorf("got bindings %v, want %v", q.Bindings, want)
	}
	p.Edges[2].Name = "x"
	p.Edges[2].Pos = Pos{1, 9}
	_, err = Compile(p, graph.NewDict(), true, Embeddings)
	wantError(t, err, "q", Pos{1, 9}, "relationship variable x names two different edges")
}

func TestCompileSymmetry(t *testing.T) {
	const cycle = "(a:A)-[x:T]->(b:A)-[y:T]->(c:A)-[z:T]->(a)"
	tests := []struct {
		name   string
		text   string
		aut    uint64
		factor uint64
		images int // maps the walk's one map per orbit stands for
	}{
		{"bare", cycle, 3, 3, 0},
		{"WITHIN keeps the group", cycle + " WITHIN 1h", 3, 3, 0},
		{"WHERE breaks it, the walk takes every image", cycle + " WHERE x.amount > 1", 1, 1, 3},
		{"an always-true WHERE too", cycle + " WHERE true", 1, 1, 3},
		{"parallel bindings break it", "(a:A)-[x:T]->(b:A), (a)-[y:T]->(b), (b)-[:T]->(a)", 1, 1, 0},
		{"parallel unnamed edges do not", "(a:A)-[:T]->(b:A), (a)-[:T]->(b), (b)-[:T]->(a)", 2, 2, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := compileText(t, tc.text, true, Embeddings)
			if q.Automorphisms != tc.aut || q.CountFactor != tc.factor {
				t.Errorf("got %d automorphisms and count factor %d, want %d and %d", q.Automorphisms, q.CountFactor, tc.aut, tc.factor)
			}
			q = compileText(t, tc.text, true, Instances)
			if len(q.Images) != tc.images {
				t.Errorf("%d images, want %d", len(q.Images), tc.images)
			}
			if wantLess := tc.aut > 1 || tc.images > 1; (len(q.Less) > 0) != wantLess {
				t.Errorf("Instances: symmetry-breaking conditions %v, want some: %v", q.Less, wantLess)
			}
			if got := len(q.AutomorphismList(100)); uint64(got) != tc.aut {
				t.Errorf("AutomorphismList has %d maps, want %d", got, tc.aut)
			}
			for _, pl := range q.Terms {
				for _, lv := range pl.Levels {
					if tc.aut == 1 && tc.images == 0 && (len(lv.Above) > 0 || len(lv.Below) > 0) {
						t.Errorf("a trivial group, yet the plan breaks symmetry: %+v", pl)
					}
				}
			}
		})
	}
}

func TestCompilePredicates(t *testing.T) {
	q := compileText(t, ring+`
WHERE t1.amount > 10000 AND t1.ts < t2.ts AND t2.ts < t3.ts AND t3.ts - t1.ts < 1h
  AND t2.amount >= 0.9 * t1.amount AND (a.country = c.country OR b.risk IN ['high'])
  AND 1 < 2
WITHIN 2h`, true, Embeddings)
	wantProps := []PropRef{
		{true, 0, "amount"}, {true, 0, "ts"}, {true, 1, "ts"}, {true, 2, "ts"}, {true, 1, "amount"},
		{false, 0, "country"}, {false, 2, "country"}, {false, 1, "risk"},
	}
	if !reflect.DeepEqual(q.Pred.Props, wantProps) {
		t.Errorf("got props %v\nwant %v", q.Pred.Props, wantProps)
	}
	want := []Conjunct{
		{Bindings: 0b001, Props: []int{0}, Text: "t1.amount > 10000", Pos: Pos{2, 7}},
		{Bindings: 0b011, Props: []int{1, 2}, Text: "t1.ts < t2.ts", Pos: Pos{2, 29}},
		{Bindings: 0b110, Props: []int{2, 3}, Text: "t2.ts < t3.ts", Pos: Pos{2, 47}},
		{Bindings: 0b101, Props: []int{3, 1}, Text: "t3.ts - t1.ts < 1h", Pos: Pos{2, 65}},
		{Bindings: 0b011, Props: []int{4, 0}, Text: "t2.amount >= 0.9 * t1.amount", Pos: Pos{3, 7}},
		{Vertices: 0b111, Props: []int{5, 6, 7}, Text: "(a.country = c.country OR b.risk IN ['high'])", Pos: Pos{3, 40}},
		{Bindings: 0b111, Props: []int{1, 2, 3}, Text: "WITHIN 2h", Pos: Pos{5, 1}},
	}
	if len(q.Pred.Conjuncts) != len(want) {
		t.Fatalf("got %d conjuncts, want %d (the constant 1 < 2 dropped)", len(q.Pred.Conjuncts), len(want))
	}
	for i, c := range q.Pred.Conjuncts {
		if c.Eval == nil {
			t.Errorf("conjunct %d has no Eval", i)
		}
		c.Eval = nil
		if !reflect.DeepEqual(c, want[i]) {
			t.Errorf("conjunct %d:\ngot  %+v\nwant %+v", i, c, want[i])
		}
	}

	// A constant that is not true stays, reading nothing: nothing matches.
	q = compileText(t, ring+" WHERE t1.x = 1 AND NOT true", true, Embeddings)
	if n := len(q.Pred.Conjuncts); n != 2 {
		t.Fatalf("got %d conjuncts, want 2", n)
	}
	if c := q.Pred.Conjuncts[1]; c.Bindings != 0 || c.Vertices != 0 || c.Eval(nil) {
		t.Errorf("the constant NOT true compiled to %+v, holding %v", c, c.Eval(nil))
	}

	// WITHIN alone.
	q = compileText(t, "(a)-[:T]->(b)<-[:T]-(c) WITHIN 10m", true, Embeddings)
	if len(q.Pred.Conjuncts) != 1 || q.Pred.Conjuncts[0].Bindings != 0b11 || len(q.Pred.Props) != 2 {
		t.Errorf("got %+v", q.Pred)
	}
}

func TestCompilePredicateErrors(t *testing.T) {
	tests := []struct {
		name     string
		text     string
		directed bool
		pos      Pos
		reason   string
	}{
		{"property of a wildcard edge", "(a)-[t]->(b) WHERE t.amount > 1", true, Pos{1, 20}, "t.amount: the edge (a)-(b) at 1:4 has no label: predicates need a labelled edge"},
		{"time of a wildcard edge", "(a)-[t]->(b) WHERE t.ts > t.ts", true, Pos{1, 20}, "has no label"},
		{"property of an undirected edge", "(a)-[t:T]-(b) WHERE t.amount > 1", true, Pos{1, 21}, "the edge (a)-(b) at 1:4 has no direction: on a directed graph predicates need a directed edge, as in -[t:T]->"},
		{"WITHIN over a wildcard edge", "(a)-[:T]->(b)-->(c) WITHIN 1h", true, Pos{1, 21}, "WITHIN reads the time of every edge, and the edge (b)-(c) at 1:14 has no label"},
		{"WITHIN over an undirected edge", "(a)-[:T]->(b)-[:T]-(c) WITHIN 1h", true, Pos{1, 24}, "the edge (b)-(c) at 1:14 has no direction"},
		{"undirected edges on an undirected graph", "(a)-[t:T]-(b)-[:T]-(c) WHERE t.amount > 1 WITHIN 1h", false, Pos{}, ""},
		{"vertex properties need no label", "(a)-->(b) WHERE a.x = b.x", true, Pos{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseCypher("q", tc.text)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Compile(p, graph.NewDict(), tc.directed, Embeddings)
			if tc.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantError(t, err, "q", tc.pos, tc.reason)
		})
	}

	// Predicates read at most MaxBindings transfers.
	var b strings.Builder
	b.WriteString("(a:A)")
	for i := range MaxBindings + 1 {
		b.WriteString("-[t" + string(rune('0'+i/10)) + string(rune('0'+i%10)) + ":T]->(")
		if i%2 == 0 {
			b.WriteString("b)")
		} else {
			b.WriteString("a)")
		}
	}
	many := b.String()
	q := compileText(t, many+" WHERE t63.x = 1", true, Embeddings)
	if q.Pred.Conjuncts[0].Bindings != 1<<63 {
		t.Errorf("t63 reads bindings %b", q.Pred.Conjuncts[0].Bindings)
	}
	for _, where := range []string{" WHERE t64.x = 1", " WITHIN 1h"} {
		p, err := ParseCypher("q", many+where)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Compile(p, graph.NewDict(), true, Embeddings); err == nil || !strings.Contains(err.Error(), "at most 64") {
			t.Errorf("%s over %d bindings: got %v, want a limit of 64", where, MaxBindings+1, err)
		}
	}
}

// values maps "var.prop" to a value; a property missing from it is null.
type values map[string]graph.Value

// evalWhere compiles the ring with the condition and reports whether a match
// with the given values satisfies it.
func evalWhere(t *testing.T, where string, vs values) bool {
	t.Helper()
	q := compileText(t, ring+" WHERE "+where, true, Embeddings)
	vals := make([]graph.Value, len(q.Pred.Props))
	for i, r := range q.Pred.Props {
		name := q.Pattern.Vertices[r.Index].Name
		if r.OnEdge {
			name = q.Bindings[r.Index].Name
		}
		vals[i] = vs[name+"."+r.Name]
	}
	for _, c := range q.Pred.Conjuncts {
		if !c.Eval(vals) {
			return false
		}
	}
	return true
}

const (
	isTrueV  = "true"
	isFalseV = "false"
	unknown  = "unknown"
)

func TestEval(t *testing.T) {
	num, str, boolean := graph.NumberValue, graph.StringValue, graph.BoolValue
	ts := func(s string) graph.Value {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return graph.TimeValue(tm.UnixMilli())
	}
	ring := values{
		"t1.amount": num(12000), "t2.amount": num(11000), "t3.amount": num(5),
		"t1.ts": ts("2026-11-20T10:00:00Z"), "t2.ts": ts("2026-11-20T10:20:00Z"), "t3.ts": ts("2026-11-20T10:50:00Z"),
		"t1.currency": str("EUR"), "t2.currency": str("USD"), "t1.id": str("tx-1"),
		"a.country": str("FR"), "b.country": str("FR"), "c.country": str("DE"),
		"a.vip": boolean(true), "b.vip": boolean(false), "a.score": num(0.5),
	}
	tests := []struct {
		where string
		want  string // true, false or unknown
	}{
		// Comparisons of numbers, strings, booleans and times.
		{"t1.amount > 10000", isTrueV},
		{"t3.amount > 10000", isFalseV},
		{"t1.amount = 12000 AND t1.amount <> 1 AND t1.amount != 1 AND t1.amount >= 12000 AND t1.amount <= 12000 AND t1.amount < 12001", isTrueV},
		{"t1.amount < 12000", isFalseV},
		{"t2.amount >= 0.9 * t1.amount", isTrueV},
		{"t3.amount >= 0.9 * t1.amount", isFalseV},
		{"t1.currency = 'EUR'", isTrueV},
		{"t1.currency < t2.currency", isTrueV},
		{"t1.currency = \"USD\"", isFalseV},
		{"a.country = b.country", isTrueV},
		{"a.country = c.country", isFalseV},
		{"a.vip = true", isTrueV},
		{"a.vip", isTrueV},
		{"b.vip", isFalseV},
		{"a.vip <> b.vip", isTrueV},
		{"t1.id = 'tx-1'", isTrueV},
		{"t1.ts < t2.ts AND t2.ts < t3.ts", isTrueV},
		{"t3.ts < t2.ts", isFalseV},
		{"t1.ts = t1.ts", isTrueV},
		// Time and duration arithmetic.
		{"t3.ts - t1.ts < 1h", isTrueV},
		{"t3.ts - t1.ts < 50m", isFalseV},
		{"t3.ts - t1.ts <= 50m", isTrueV},
		{"t3.ts - t1.ts = 3000s", isTrueV},
		{"t2.ts = t1.ts + 20m", isTrueV},
		{"t2.ts = 20m + t1.ts", isTrueV},
		{"t1.ts = t2.ts - 1200000ms", isTrueV},
		{"t3.ts - t1.ts = 2.5 * (t2.ts - t1.ts)", isTrueV},
		{"t3.ts - t1.ts = (t2.ts - t1.ts) * 2.5", isTrueV},
		{"(t3.ts - t1.ts) / (t2.ts - t1.ts) = 2.5", isTrueV},
		{"(t3.ts - t1.ts) / 2 = 25m", isTrueV},
		{"-(t2.ts - t1.ts) < 0s", isTrueV},
		{"1h30m = 90m AND 1.5h = 5400s AND 2d = 48h AND 500ms < 1s", isTrueV},
		{"1h - 30m = 30m AND 1h + 30m = 90m", isTrueV},
		// Arithmetic on numbers.
		{"t1.amount + t2.amount = 23000", isTrueV},
		{"t1.amount - t2.amount = 1000", isTrueV},
		{"t1.amount / 4 = 3000", isTrueV},
		{"-t1.amount = -12000", isTrueV},
		{"a.score * 4 = 2", isTrueV},
		// Null: a missing property makes comparisons unknown.
		{"t1.fee > 1", unknown},
		{"t1.fee = t1.fee", unknown},
		{"t1.fee + 1 > 0", unknown},
		{"-t1.fee < 0", unknown},
		{"a.missing", unknown},
		// NOT of unknown is unknown; AND and OR follow Kleene logic.
		{"NOT t1.fee > 1", unknown},
		{"NOT NOT t1.fee > 1", unknown},
		{"t1.fee > 1 AND t1.amount > 1", unknown},
		{"t1.fee > 1 AND t1.amount < 1", isFalseV},
		{"t1.amount < 1 AND t1.fee > 1", isFalseV},
		{"t1.fee > 1 OR t1.amount > 1", isTrueV},
		{"t1.amount > 1 OR t1.fee > 1", isTrueV},
		{"t1.fee > 1 OR t1.amount < 1", unknown},
		{"t1.amount < 1 OR t3.amount < 1", isFalseV},
		// Type mismatches at run time are unknown, not errors.
		{"t1.currency > 1", unknown},
		{"t1.amount = 'x'", unknown},
		{"a.country + 1 > 0", unknown},
		{"NOT t1.amount", unknown},
		{"t1.amount AND true", unknown},
		{"t1.amount OR false", unknown},
		{"t1.amount OR true", isTrueV},
		{"a.country < b.vip", unknown},
		{"t1.amount / 0 > 0", unknown},
		{"(t2.ts - t1.ts) / 0s > 0", unknown},
		// IN lists.
		{"t1.currency IN ['EUR', 'USD']", isTrueV},
		{"t1.currency IN ['GBP']", isFalseV},
		{"t1.currency IN []", isFalseV},
		{"t1.fee IN []", isFalseV},
		{"t1.fee IN [1]", unknown},
		{"t1.currency IN ['GBP', t1.fee]", unknown},
		{"t1.currency IN [t1.fee, 'EUR']", isTrueV},
		{"t1.currency IN [1, 'EUR']", isTrueV},
		{"t1.currency IN [1]", unknown},
		{"t1.amount IN [t2.amount + 1000, 5]", isTrueV},
		{"NOT t1.currency IN ['GBP']", isTrueV},
		// Lists longer than linearIn, which a set looks up.
		{"t1.currency IN ['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'EUR']", isTrueV},
		{"t1.currency IN ['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J']", isFalseV},
		{"t1.currency IN ['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 1]", unknown},
		{"t1.currency IN [1, 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'EUR']", isTrueV},
		{"t1.fee IN ['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'J']", unknown},
		{"t1.amount IN [1, 2, 3, 4, 5, 6, 7, 8, 9, 12000]", isTrueV},
		{"t1.amount IN [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]", isFalseV},
		{"t2.ts - t1.ts IN [1s, 2s, 3s, 4s, 5s, 6s, 7s, 8s, 9s, 20m]", isTrueV},
		{"a.vip IN [false, false, false, false, false, false, false, false, false, true]", isTrueV},
		// IS NULL never is unknown.
		{"t1.fee IS NULL", isTrueV},
		{"t1.amount IS NULL", isFalseV},
		{"t1.fee IS NOT NULL", isFalseV},
		{"t1.amount IS NOT NULL", isTrueV},
		{"(a.country + 1) IS NULL", isTrueV},
		// Constants.
		{"true", isTrueV},
		{"false", isFalseV},
		{"1 < 2 AND t1.amount > 1", isTrueV},
	}
	for _, tc := range tests {
		t.Run(tc.where, func(t *testing.T) {
			holds := evalWhere(t, tc.where, ring)
			notHolds := evalWhere(t, "NOT ("+tc.where+")", ring)
			got := unknown
			switch {
			case holds && notHolds:
				t.Fatalf("both %s and its negation hold", tc.where)
			case holds:
				got = isTrueV
			case notHolds:
				got = isFalseV
			}
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestEvalWithin(t *testing.T) {
	q := compileText(t, ring+" WITHIN 30m", true, Embeddings)
	c := q.Pred.Conjuncts[0]
	min := func(m int64) graph.Value { return graph.TimeValue(m * 60000) }
	tests := []struct {
		vals []graph.Value
		want bool
	}{
		{[]graph.Value{min(0), min(10), min(30)}, true},
		{[]graph.Value{min(30), min(0), min(10)}, true},
		{[]graph.Value{min(0), min(10), min(31)}, false},
		{[]graph.Value{min(31), min(10), min(0)}, false},
		{[]graph.Value{min(5), min(5), min(5)}, true},
		{[]graph.Value{min(0), {}, min(1)}, false},
		{[]graph.Value{min(0), graph.NumberValue(1), min(1)}, false},
	}
	for _, tc := range tests {
		if got := c.Eval(tc.vals); got != tc.want {
			t.Errorf("WITHIN 30m of %v: got %v, want %v", tc.vals, got, tc.want)
		}
	}
}

// TestEvalAllocs checks that evaluation allocates nothing: it runs once per
// candidate match.
func TestEvalAllocs(t *testing.T) {
	q := compileText(t, ring+`
WHERE t1.amount > 10000 AND t1.ts < t2.ts AND t3.ts - t1.ts < 1h AND t2.amount >= 0.9 * t1.amount
  AND (a.country = c.country OR t1.currency IN ['EUR', 'USD', t2.currency]) AND NOT t1.fee IS NULL
  AND -t1.amount / 2 < 0 AND t2.currency IN ['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I', 'EUR']
WITHIN 1h`, true, Embeddings)
	vals := make([]graph.Value, len(q.Pred.Props))
	for i, r := range q.Pred.Props {
		switch r.Name {
		case "ts":
			vals[i] = graph.TimeValue(int64(i) * 1000)
		case "country", "currency":
			vals[i] = graph.StringValue("EUR")
		default:
			vals[i] = graph.NumberValue(float64(20000 - i))
		}
	}
	held := 0
	allocs := testing.AllocsPerRun(100, func() {
		for _, c := range q.Pred.Conjuncts {
			if c.Eval(vals) {
				held++
			}
		}
	})
	if allocs != 0 {
		t.Errorf("Eval allocates %v times per match", allocs)
	}
	if held == 0 {
		t.Error("no conjunct held, so the test measured only early exits")
	}
}

// TestEvalNaN pins what comparisons with NaN, which arithmetic on huge
// numbers can produce, give: = and the orderings are false, <> true.
func TestEvalNaN(t *testing.T) {
	nan := graph.NumberValue(math.NaN())
	for _, tc := range []struct {
		op   Op
		want bool
	}{{OpEq, false}, {OpNe, true}, {OpLt, false}, {OpLe, false}, {OpGt, false}, {OpGe, false}} {
		if got := compare(tc.op, nan, graph.NumberValue(1)); !isTrue(got) != !tc.want || got.Kind != graph.Bool {
			t.Errorf("NaN %s 1 = %v, want %v", tc.op, got, tc.want)
		}
	}
}

// TestInSet checks that IN over a long list of literals, looked up in a set,
// gives what the scan of the list gives.
func TestInSet(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pool := []graph.Value{
		{}, graph.NumberValue(0), graph.NumberValue(math.Copysign(0, -1)), graph.NumberValue(1), graph.NumberValue(math.NaN()),
		graph.StringValue(""), graph.StringValue("a"), graph.StringValue("1"), graph.BoolValue(true), graph.BoolValue(false),
		{Kind: DurationKind, Num: 1}, graph.TimeValue(1),
	}
	literal := func(v graph.Value) *Expr {
		if v.Kind == DurationKind {
			return &Expr{Op: OpDuration, Lit: graph.NumberValue(v.Num)}
		}
		return &Expr{Op: OpLit, Lit: v}
	}
	for range 2000 {
		var list []*Expr
		var scan []evalFn
		for range 1 + r.IntN(12) {
			v := pool[1+r.IntN(len(pool)-2)] // literals: neither null nor a time
			list = append(list, literal(v))
			scan = append(scan, func([]graph.Value) graph.Value { return v })
		}
		set, ok := literalSet(list)
		if !ok {
			t.Fatal("a list of literals is not a set")
		}
		x := pool[r.IntN(len(pool))]
		f := func([]graph.Value) graph.Value { return x }
		if got, want := set.in(f)(nil), in(f, scan)(nil); !got.Equal(want) {
			t.Fatalf("%v IN %v: the set gives %v, the scan %v", x, list, got, want)
		}
	}
	if _, ok := literalSet([]*Expr{{Op: OpProp, Var: "a", Name: "x"}}); ok {
		t.Error("a property is a literal")
	}
}
