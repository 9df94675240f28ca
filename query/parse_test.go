package query

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

// Shorthands for expected patterns.
func vtx(name, label string) Vertex { return Vertex{Name: name, Label: label, Wildcard: label == ""} }

func edg(from, to int, label string, directed bool) Edge {
	return Edge{From: from, To: to, Label: label, Wildcard: label == "", Directed: directed}
}

// withoutPos returns a copy of p with every Pos zeroed, for tests that
// compare structure and check positions separately.
func withoutPos(p *Pattern) *Pattern {
	q := &Pattern{Name: p.Name}
	for _, x := range p.Vertices {
		x.Pos = Pos{}
		q.Vertices = append(q.Vertices, x)
	}
	for _, x := range p.Edges {
		x.Pos = Pos{}
		q.Edges = append(q.Edges, x)
	}
	q.Where, q.Within = withoutText(p.Where), p.Within
	for _, it := range p.Return {
		q.Return = append(q.Return, ReturnItem{Expr: withoutText(it.Expr), Name: it.Name})
	}
	return q
}

// withoutText returns a copy of e with every Pos and Text zeroed.
func withoutText(e *Expr) *Expr {
	if e == nil {
		return nil
	}
	c := *e
	c.Pos, c.Text, c.Args = Pos{}, "", nil
	for _, a := range e.Args {
		c.Args = append(c.Args, withoutText(a))
	}
	return &c
}

// named returns e with the relationship variable name.
func named(e Edge, name string) Edge {
	e.Name = name
	return e
}

// csmChain returns a CSM path of n vertices.
func csmChain(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "v %d 0\n", i)
	}
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "e %d %d\n", i-1, i)
	}
	return b.String()
}

// cypherChain returns a Cypher path of n vertices.
func cypherChain(n int) string {
	var b strings.Builder
	b.WriteString("(v0)")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "-->(v%d)", i)
	}
	return b.String()
}

func TestParseCSM(t *testing.T) {
	tests := []struct {
		name, text string
		vertices   []Vertex
		edges      []Edge
	}{
		{
			name:     "header and degrees",
			text:     "t 3 2\nv 0 14 1\nv 1 14 2\nv 2 36 1\ne 0 1 0\ne 1 2 0\n",
			vertices: []Vertex{vtx("0", "14"), vtx("1", "14"), vtx("2", "36")},
			edges:    []Edge{edg(0, 1, "0", true), edg(1, 2, "0", true)},
		},
		{
			name:     "no edge labels",
			text:     "v 0 8\nv 1 38\ne 0 1",
			vertices: []Vertex{vtx("0", "8"), vtx("1", "38")},
			edges:    []Edge{edg(0, 1, "", true)},
		},
		{
			name:     "comments, blank lines, tabs, CRLF and trailing space",
			text:     "# t 0\r\n\r\n  # indented comment\r\nv\t0\t0 \t\r\nv 1  1   \r\n\r\ne 0\t1 7 \r\n",
			vertices: []Vertex{vtx("0", "0"), vtx("1", "1")},
			edges:    []Edge{edg(0, 1, "7", true)},
		},
		{
			name:     "each edge in both directions",
			text:     "v 0 0\nv 1 1\ne 1 0 1\ne 0 1 1\n",
			vertices: []Vertex{vtx("0", "0"), vtx("1", "1")},
			edges:    []Edge{edg(1, 0, "1", true), edg(0, 1, "1", true)},
		},
		{
			name:     "header counts distinct pairs of a doubled edge list",
			text:     "t 2 1\nv 0 0\nv 1 1\ne 1 0\ne 0 1\n",
			vertices: []Vertex{vtx("0", "0"), vtx("1", "1")},
			edges:    []Edge{edg(1, 0, "", true), edg(0, 1, "", true)},
		},
		{
			name:     "t 0 N header is not checked",
			text:     "t 0 3\nv 0 5\nv 1 5\ne 0 1 0\n",
			vertices: []Vertex{vtx("0", "5"), vtx("1", "5")},
			edges:    []Edge{edg(0, 1, "0", true)},
		},
		{
			name:     "gSpan header",
			text:     "t # 0\nv 0 5\nv 1 5\ne 0 1\n",
			vertices: []Vertex{vtx("0", "5"), vtx("1", "5")},
			edges:    []Edge{edg(0, 1, "", true)},
		},
		{
			name:     "ids are tokens and need not be dense",
			text:     "v alice Person\nv 42 Person\nv 007 Bank\ne alice 42 knows\ne 42 007\n",
			vertices: []Vertex{vtx("alice", "Person"), vtx("42", "Person"), vtx("007", "Bank")},
			edges:    []Edge{edg(0, 1, "knows", true), edg(1, 2, "", true)},
		},
		{
			name:     "byte order mark",
			text:     "\uFEFFv 0 1\nv 1 1\ne 0 1\n",
			vertices: []Vertex{vtx("0", "1"), vtx("1", "1")},
			edges:    []Edge{edg(0, 1, "", true)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseCSM("q", strings.NewReader(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			want := &Pattern{Name: "q", Vertices: tc.vertices, Edges: tc.edges}
			if got := withoutPos(p); !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestParseCSMPositions(t *testing.T) {
	p, err := ParseCSM("q", strings.NewReader("# query\nt 2 1\n  v 0 a\nv\t1 b\n\ne 0 1 x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Vertices[0].Pos, (Pos{3, 5}); got != want {
		t.Errorf("vertex 0 at %v, want %v", got, want)
	}
	if got, want := p.Vertices[1].Pos, (Pos{4, 3}); got != want {
		t.Errorf("vertex 1 at %v, want %v", got, want)
	}
	if got, want := p.Edges[0].Pos, (Pos{6, 1}); got != want {
		t.Errorf("edge at %v, want %v", got, want)
	}
}

func TestParseCSMErrors(t *testing.T) {
	const pair = "v 0 a\nv 1 a\n"
	tests := []struct {
		name, text string
		pos        Pos
		reason     string
	}{
		{"empty", "", Pos{}, "empty pattern"},
		{"only comments", "# nothing\n\n", Pos{}, "empty pattern"},
		{"unknown line type", pair + "x 0 1\n", Pos{3, 1}, `unknown line type "x"`},
		{"update stream line", pair + "-e 0 1 0\n", Pos{3, 1}, `unknown line type "-e"`},
		{"vertex without label", "v 0\n", Pos{1, 5}, "too few fields: expected v <id> <label>"},
		{"bare vertex line", "v\n", Pos{1, 3}, "too few fields"},
		{"edge with one end", pair + "e 0\n", Pos{3, 5}, "too few fields: expected e <u> <v>"},
		{"vertex with extra field", "v 0 a 1 2\n", Pos{1, 9}, "unexpected field 2"},
		{"edge with extra field", pair + "e 0 1 a b\n", Pos{3, 9}, "unexpected field b"},
		{"non-integer degree", "v 0 a x\n", Pos{1, 7}, "degree x is not a non-negative integer"},
		{"negative degree", "v 0 a -1\n", Pos{1, 7}, "degree -1"},
		{"duplicate vertex id", pair + "v 0 b\n", Pos{3, 3}, "duplicate vertex id 0 (first declared on line 1)"},
		{"edge before its vertex", "v 0 a\ne 0 1\nv 1 a\n", Pos{2, 5}, "unknown vertex 1"},
		{"self-loop", pair + "e 0 1\ne 1 1\n", Pos{4, 1}, "self-loop on vertex 1"},
		{"header vertex count", "t 3 1\n" + pair + "e 0 1\n", Pos{1, 3}, "the header says 3 vertices, the file has 2"},
		{"header edge count", "t 2 2\n" + pair + "e 0 1\n", Pos{1, 5}, "the header says 2 edges, the file has 1"},
		{"header after vertices", pair + "t 2 1\ne 0 1\n", Pos{3, 1}, "t line comes first"},
		{"second graph", "t # 0\n" + pair + "e 0 1\nt # 1\n", Pos{5, 1}, "holds one pattern"},
		{"no edges", pair, Pos{1, 3}, "no edges"},
		{"one vertex", "v 0 a\n", Pos{1, 3}, "too small: 1 vertex"},
		{"disconnected", pair + "v 2 a\nv 3 a\ne 0 1\ne 2 3\n", Pos{3, 3}, "disconnected: vertex 2 is not reachable from 0"},
		{"too large", csmChain(40), Pos{33, 3}, "too large: 40 vertices, the limit is 32"},
		{"column counts runes", "v ä a\nv ö a\ne ä ü\n", Pos{3, 5}, "unknown vertex ü"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCSM("q.graph", strings.NewReader(tc.text))
			wantError(t, err, "q.graph", tc.pos, tc.reason)
		})
	}
}

func TestParseCSMLimit(t *testing.T) {
	p, err := ParseCSM("q", strings.NewReader(csmChain(MaxVertices)))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Vertices) != MaxVertices {
		t.Errorf("got %d vertices, want %d", len(p.Vertices), MaxVertices)
	}
}

func TestParseCSMReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := ParseCSM("q", iotest.ErrReader(boom))
	if !errors.Is(err, boom) {
		t.Errorf("got %v, want the reader's error", err)
	}
}

func TestParseCypher(t *testing.T) {
	tests := []struct {
		name, text string
		vertices   []Vertex
		edges      []Edge
	}{
		{
			name:     "directed cycle",
			text:     "(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a)",
			vertices: []Vertex{vtx("a", "Account"), vtx("b", "Account"), vtx("c", "Account")},
			edges:    []Edge{edg(0, 1, "TRANSFER", true), edg(1, 2, "TRANSFER", true), edg(2, 0, "TRANSFER", true)},
		},
		{
			name:     "every relationship form",
			text:     "(a)--(b)-->(c)<--(d)-[]-(e)-[:L]-(f)-[:L]->(g)<-[:L]-(h)-[r]->(i)<-[s:L]-(j)",
			vertices: []Vertex{vtx("a", ""), vtx("b", ""), vtx("c", ""), vtx("d", ""), vtx("e", ""), vtx("f", ""), vtx("g", ""), vtx("h", ""), vtx("i", ""), vtx("j", "")},
			edges: []Edge{
				edg(0, 1, "", false), edg(1, 2, "", true), edg(3, 2, "", true), edg(3, 4, "", false), edg(4, 5, "L", false),
				edg(5, 6, "L", true), edg(7, 6, "L", true), named(edg(7, 8, "", true), "r"), named(edg(9, 8, "L", true), "s"),
			},
		},
		{
			name:     "MATCH, newlines, comments and spaces inside tokens",
			text:     "match\n  // the fork\n  ( a : A ) - [ r : T ] -> ( b ),\n\t(a) < - - (c:C) // done\r\n",
			vertices: []Vertex{vtx("a", "A"), vtx("b", ""), vtx("c", "C")},
			edges:    []Edge{named(edg(0, 1, "T", true), "r"), edg(2, 0, "", true)},
		},
		{
			name:     "MATCH without a space",
			text:     "MATCH(a)--(b)",
			vertices: []Vertex{vtx("a", ""), vtx("b", "")},
			edges:    []Edge{edg(0, 1, "", false)},
		},
		{
			name:     "label given at a later appearance",
			text:     "(a)--(b:B), (b)--(a:A), (a:A)--(c)",
			vertices: []Vertex{vtx("a", "A"), vtx("b", "B"), vtx("c", "")},
			edges:    []Edge{edg(0, 1, "", false), edg(1, 0, "", false), edg(0, 2, "", false)},
		},
		{
			name:     "anonymous nodes skip names in use",
			text:     "(:A)--(_1)--()--(_3)",
			vertices: []Vertex{vtx("_2", "A"), vtx("_1", ""), vtx("_4", ""), vtx("_3", "")},
			edges:    []Edge{edg(0, 1, "", false), edg(1, 2, "", false), edg(2, 3, "", false)},
		},
		{
			name:     "numeric and backquoted labels",
			text:     "(a:0)-[:`LIVES IN`]->(b:`Foo ``Bar```)-[:12]-(c:`é`)",
			vertices: []Vertex{vtx("a", "0"), vtx("b", "Foo `Bar`"), vtx("c", "é")},
			edges:    []Edge{edg(0, 1, "LIVES IN", true), edg(1, 2, "12", false)},
		},
		{
			name:     "unicode and underscore names",
			text:     "(_x1:Ä)-->(ÿ)",
			vertices: []Vertex{vtx("_x1", "Ä"), vtx("ÿ", "")},
			edges:    []Edge{edg(0, 1, "", true)},
		},
		{
			name:     "parallel edges are kept",
			text:     "(a)-->(b), (a)-->(b), (b)-[:X]->(a)",
			vertices: []Vertex{vtx("a", ""), vtx("b", "")},
			edges:    []Edge{edg(0, 1, "", true), edg(0, 1, "", true), edg(1, 0, "X", true)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseCypher("q", tc.text)
			if err != nil {
				t.Fatal(err)
			}
			want := &Pattern{Name: "q", Vertices: tc.vertices, Edges: tc.edges}
			if got := withoutPos(p); !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestParseCypherPositions(t *testing.T) {
	p, err := ParseCypher("q", "MATCH (a)\n  <-[:T]- (b),\n\t(b)-->(ä:X)")
	if err != nil {
		t.Fatal(err)
	}
	want := &Pattern{
		Name: "q",
		Vertices: []Vertex{
			{Name: "a", Wildcard: true, Pos: Pos{1, 7}},
			{Name: "b", Wildcard: true, Pos: Pos{2, 11}},
			{Name: "ä", Label: "X", Pos: Pos{3, 8}},
		},
		Edges: []Edge{
			{From: 1, To: 0, Label: "T", Directed: true, Pos: Pos{2, 3}},
			{From: 1, To: 2, Wildcard: true, Directed: true, Pos: Pos{3, 5}},
		},
	}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got  %+v\nwant %+v", p, want)
	}
}

func TestParseCypherErrors(t *testing.T) {
	tests := []struct {
		name, text string
		pos        Pos
		reason     string
	}{
		{"empty", "", Pos{1, 1}, "empty input"},
		{"only space and comments", "  // nothing\n ", Pos{2, 2}, "empty input"},
		{"MATCH alone", "MATCH ", Pos{1, 7}, "unexpected end of input: expected '(' to start a node"},
		{"not a node", "a-->b", Pos{1, 1}, `unexpected "a": expected '('`},
		{"unterminated node", "(a:A", Pos{1, 1}, "unterminated node: expected ')'"},
		{"unterminated relationship", "(a)-[:T", Pos{1, 5}, "unterminated relationship: expected ']'"},
		{"relationship without its second dash", "(a)-[:T]", Pos{1, 4}, "unterminated relationship: expected '-'"},
		{"relationship without a node", "(a)-->  ", Pos{1, 4}, "relationship with no node after it"},
		{"half an arrow", "(a)->(b)", Pos{1, 5}, "unexpected '>': expected '-'"},
		{"lone left arrow", "(a)<(b)", Pos{1, 5}, "unexpected '(': expected '-'"},
		{"both ways", "(a)<-->(b)", Pos{1, 4}, "cannot point both ways"},
		{"trailing clause", "(a)-->(b) ORDER BY a", Pos{1, 11}, `unexpected "ORDER": expected ',', WHERE, WITHIN, RETURN or the end of the pattern`},
		{"trailing comma", "(a)-->(b),", Pos{1, 11}, "unexpected end of input: expected '('"},
		{"junk in a node", "(a b)", Pos{1, 4}, `unexpected "b": expected ')'`},
		{"junk in a relationship", "(a)-[r;]->(b)", Pos{1, 7}, `unexpected ';': expected ']'`},
		{"missing label", "(a:)-->(b)", Pos{1, 4}, "unexpected ')': expected a label"},
		{"name starting with a digit", "(1a)-->(b)", Pos{1, 2}, "invalid name 1a"},
		{"numeric name", "(0)-->(1)", Pos{1, 2}, "invalid name 0"},
		{"label starting with a digit", "(a:1x)-->(b)", Pos{1, 4}, "invalid label 1x"},
		{"two labels on a node", "(a:A:B)-->(b)", Pos{1, 5}, "a node has at most one label"},
		{"two types on a relationship", "(a)-[:A:B]->(b)", Pos{1, 8}, "a relationship has at most one label"},
		{"label alternatives", "(a)-[:A|B]->(b)", Pos{1, 8}, "alternative labels"},
		{"properties", "(a {id: 1})-->(b)", Pos{1, 4}, "property maps are not supported"},
		{"variable length", "(a)-[*1..3]->(b)", Pos{1, 6}, "variable-length relationships are not supported"},
		{"unterminated backquote", "(a:`A B)-->(b)", Pos{1, 4}, "unterminated label"},
		{"empty backquotes", "(a:``)-->(b)", Pos{1, 4}, "empty label"},
		{"two labels for one vertex", "(a:A)-->(b), (b)-->(a:B)", Pos{1, 23}, `vertex a has two labels, "A" and "B"`},
		{"relationship variable twice", "(a)-[r]->(b)-[r]->(c)", Pos{1, 15}, "relationship variable r is used twice"},
		{"relationship variable as a vertex", "(a)-[r]->(b), (r)-->(a)", Pos{1, 15}, "r is already a relationship variable"},
		{"vertex as a relationship variable", "(b)-[b]->(c)", Pos{1, 6}, "b is already a vertex"},
		{"self-loop", "(a)-->\n  (b)\n\t-[:T]->(b)", Pos{3, 2}, "self-loop on vertex b"},
		{"self-loop after a non-ASCII name", "(ä)-->(ä)", Pos{1, 4}, "self-loop on vertex ä"},
		{"single node", "(a:A)", Pos{1, 1}, "too small: 1 vertex"},
		{"no edges", "(a), (b)", Pos{1, 1}, "no edges"},
		{"disconnected", "(a)-->(b), (c)--(d)", Pos{1, 12}, "disconnected: vertex c is not reachable from a"},
		{"too large", cypherChain(33), Pos{1, 247}, "too large: 33 vertices, the limit is 32"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseCypher("q", tc.text)
			wantError(t, err, "q", tc.pos, tc.reason)
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, text string
		vertices   int // 0 when Parse must fail
		pos        Pos
		reason     string
	}{
		{name: "cypher", text: "(a)-->(b)", vertices: 2},
		{name: "cypher after comments", text: "// fork\n\n  (a)-->(b), (a)-->(c)", vertices: 3},
		{name: "MATCH", text: "Match (a)-->(b)", vertices: 2},
		{name: "cypher after a CSM comment", text: "# fork\n(a)-->(b), (a)-->(c)", vertices: 3},
		{name: "csm after a Cypher comment", text: "// pair\nv 0 1\nv 1 1\ne 0 1\n", vertices: 2},
		{name: "csm", text: "v 0 1\nv 1 1\ne 0 1\n", vertices: 2},
		{name: "csm with header and comments", text: "# t 0\n\r\nt 2 1\nv 0 1\nv 1 1\ne 0 1\n", vertices: 2},
		{name: "byte order mark", text: "\uFEFF(a)-->(b)", vertices: 2},
		{name: "unknown", text: "\n  graph { a -> b }", pos: Pos{2, 3}, reason: "unknown query syntax: expected a CSM file (t/v/e lines) or a Cypher-style pattern"},
		{name: "MATCH-like word", text: "MATCHES (a)-->(b)", pos: Pos{1, 1}, reason: "unknown query syntax"},
		{name: "empty", text: " \n# only a comment\n", reason: "empty query"},
		{name: "cypher error", text: "# loop\n\n (a)-->(a)", pos: Pos{3, 5}, reason: "self-loop"},
		{name: "comment inside cypher", text: "(a)-->(b)\n# not cypher", pos: Pos{2, 1}, reason: "unexpected '#'"},
		{name: "csm error", text: "v 0 1\nv 1 1\ne 0 2\n", pos: Pos{3, 5}, reason: "unknown vertex 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("q", tc.text)
			if tc.vertices == 0 {
				wantError(t, err, "q", tc.pos, tc.reason)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Name != "q" || len(p.Vertices) != tc.vertices {
				t.Errorf("got pattern %q of %d vertices, want q of %d", p.Name, len(p.Vertices), tc.vertices)
			}
		})
	}
}

func TestParseFile(t *testing.T) {
	dir := t.TempDir()
	const csm = "v 0 1\nv 1 1\ne 0 1\n"
	for file, want := range map[string]string{
		"Q_1":                    "Q_1",
		"query_dense_16_1.graph": "query_dense_16_1",
		"7.g":                    "7",
		"fraud.cypher":           "fraud",
		"notes.txt":              "notes",
		"q.v2.graph":             "q.v2",
		"q.csm":                  "q.csm",
		".graph":                 ".graph",
	} {
		path := filepath.Join(dir, file)
		text := csm
		if strings.HasSuffix(file, ".cypher") {
			text = "(a)-->(b)"
		}
		if err := os.WriteFile(path, []byte(text), 0o666); err != nil {
			t.Fatal(err)
		}
		p, err := ParseFile(path)
		if err != nil {
			t.Errorf("%s: %v", file, err)
			continue
		}
		if p.Name != want {
			t.Errorf("%s: named %q, want %q", file, p.Name, want)
		}
	}

	bad := filepath.Join(dir, "bad.graph")
	if err := os.WriteFile(bad, []byte("v 0 1\nv 1 1\ne 0 0\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	_, err := ParseFile(bad)
	wantError(t, err, bad, Pos{3, 1}, "self-loop")

	if _, err := ParseFile(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v, want a not-exist error", err)
	}
}

func TestValidate(t *testing.T) {
	two := []Vertex{{Name: "a", Wildcard: true, Pos: Pos{1, 1}}, {Name: "b", Wildcard: true, Pos: Pos{2, 1}}}
	link := []Edge{{From: 0, To: 1, Wildcard: true, Pos: Pos{3, 1}}}
	tests := []struct {
		name   string
		p      Pattern
		pos    Pos
		reason string
	}{
		{"valid", Pattern{Vertices: two, Edges: link}, Pos{}, ""},
		{"empty", Pattern{}, Pos{}, "empty pattern"},
		{"unnamed vertex", Pattern{Vertices: []Vertex{two[0], {Wildcard: true, Pos: Pos{2, 1}}}, Edges: link}, Pos{2, 1}, "vertex 1 has no name"},
		{"duplicate name", Pattern{Vertices: []Vertex{two[0], {Name: "a", Wildcard: true, Pos: Pos{2, 1}}}, Edges: link}, Pos{2, 1}, "duplicate vertex name a"},
		{"wildcard vertex with a label", Pattern{Vertices: []Vertex{two[0], {Name: "b", Label: "L", Wildcard: true, Pos: Pos{2, 1}}}, Edges: link}, Pos{2, 1}, `vertex b is a wildcard but has label "L"`},
		{"vertex with an empty label", Pattern{Vertices: []Vertex{two[0], {Name: "b", Pos: Pos{2, 1}}}, Edges: link}, Pos{2, 1}, "vertex b has an empty label"},
		{"edge out of range", Pattern{Vertices: two, Edges: []Edge{{From: 0, To: 2, Wildcard: true, Pos: Pos{3, 1}}}}, Pos{3, 1}, "edge 0 joins vertices 0 and 2, outside [0, 2)"},
		{"negative endpoint", Pattern{Vertices: two, Edges: []Edge{{From: -1, To: 1, Wildcard: true}}}, Pos{}, "outside [0, 2)"},
		{"edge with an empty label", Pattern{Vertices: two, Edges: []Edge{{From: 0, To: 1, Pos: Pos{3, 1}}}}, Pos{3, 1}, "edge a-b has an empty label"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.p.Validate()
			if tc.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			wantError(t, err, "", tc.pos, tc.reason)
		})
	}
}

// wantError checks that err is an *Error from source at pos whose reason
// contains reason.
func wantError(t *testing.T, err error, source string, pos Pos, reason string) {
	t.Helper()
	var qe *Error
	if !errors.As(err, &qe) {
		t.Fatalf("got %v, want an *Error", err)
	}
	if qe.Source != source || qe.Pos != pos || !strings.Contains(qe.Reason, reason) {
		t.Errorf("got %q at %q:%v,\nwant %q at %q:%v", qe.Reason, qe.Source, qe.Pos, reason, source, pos)
	}
}

// TestDatasetQueries parses every query file of the shared benchmark
// datasets, which sit beside the checkout in the project's workspace and are
// absent from a user's clone.
func TestDatasetQueries(t *testing.T) {
	const root = "../../shared/datasets"
	if _, err := os.Stat(root); err != nil {
		t.Skipf("no datasets: %v", err)
	}
	var files []string
	for _, glob := range []string{"*/query_graph/*", "*/*/query_graph/*", "stmatch_patterns/*"} {
		m, err := filepath.Glob(filepath.Join(root, glob))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Skip("no query files under " + root)
	}
	parsed := make(map[string]*Pattern)
	for _, path := range files {
		p, err := ParseFile(path)
		if err != nil {
			t.Error(err)
			continue
		}
		parsed[strings.TrimPrefix(filepath.ToSlash(path), root+"/")] = p
	}
	t.Logf("parsed %d query files", len(parsed))

	// Spot checks of each suite's conventions, where the suite is present.
	for path, want := range map[string]struct{ name, edges string }{
		// t 16 24 header, v id label degree, unlabelled edges.
		"static_hprd_subgraphmatching/query_graph/query_dense_16_1.graph": {"query_dense_16_1", "16 vertices, 24 edges, edge 0: 0-2 *"},
		// Each edge listed in both directions, edge label 1.
		"stmatch_patterns/1.g": {"1", "5 vertices, 12 edges, edge 0: 1-0 1"},
		// No header, edge label 0.
		"csm_eucore_generated/query_graph/Q_1": {"Q_1", "4 vertices, 3 edges, edge 0: 0-1 0"},
		// t 0 N header.
		"labeled_snu/yeast/query_graph/query_dense_32_1.graph": {"query_dense_32_1", "32 vertices, "},
	} {
		p, ok := parsed[path]
		if !ok {
			continue
		}
		e := p.Edges[0]
		label := e.Label
		if e.Wildcard {
			label = "*"
		}
		got := fmt.Sprintf("%d vertices, %d edges, edge 0: %s-%s %s",
			len(p.Vertices), len(p.Edges), p.Vertices[e.From].Name, p.Vertices[e.To].Name, label)
		if p.Name != want.name || !strings.HasPrefix(got, want.edges) {
			t.Errorf("%s: got %s: %s, want %s: %s", path, p.Name, got, want.name, want.edges)
		}
	}
}
