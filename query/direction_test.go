package query

import (
	"slices"
	"strings"
	"testing"
)

func TestCheckUndirected(t *testing.T) {
	for _, tc := range []struct {
		text string
		want string // "" when the pattern passes
	}{
		{"(a:A)-[:T]-(b:B)--(c)", ""},
		{"(a)--(b)-[:T]->(c)", "q:1:9: the edge (b)->(c) has a direction, but the graph is undirected: FIX, or write (b)--(c) to match it either way"},
		{"MATCH (a)\n  <-[:T]-(b)", "q:2:3: the edge (b)->(a) has a direction"},
		// A CSM file's edges are directed by the order of their ids, which an
		// undirected graph ignores: the benchmarks' queries are written so.
		{"v 0 A\nv 1 B\ne 0 1\n", ""},
	} {
		p, err := Parse("q", tc.text)
		if err != nil {
			t.Fatalf("%q: %v", tc.text, err)
		}
		err = p.CheckUndirected("FIX")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.text, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%q: got %v, want %q", tc.text, err, tc.want)
		}
	}
}

func TestPatternLabels(t *testing.T) {
	p, err := Parse("q", "(a:A)-[:T]->(b:B)-[:A]->(c:A)-[]-(d)-[:U]-(a)")
	if err != nil {
		t.Fatal(err)
	}
	v, e := p.Labels()
	if want := []string{"A", "B"}; !slices.Equal(v, want) {
		t.Errorf("vertex labels %q, want %q", v, want)
	}
	if want := []string{"T", "A", "U"}; !slices.Equal(e, want) {
		t.Errorf("edge labels %q, want %q", e, want)
	}
}
