package query

import (
	"slices"
	"testing"

	"github.com/gcsm/gcsm/graph"
)

// catalog is what a stream of transfers between accounts gave: numeric
// amounts, a currency, and an account's country, as well as a merchant's
// category on one event that named no vertex label.
func catalog() *graph.Catalog {
	c := &graph.Catalog{DefaultEdgeLabel: "TRANSFER"}
	c.Note(false, "TRANSFER", []byte("amount"), graph.Number)
	c.Note(false, "", []byte("currency"), graph.String) // an unlabelled edge: TRANSFER
	c.Note(false, "PAYS", []byte("fee"), graph.Number)
	c.Note(false, "PAYS", []byte("fee"), graph.String)
	c.Note(true, "Account", []byte("country"), graph.String)
	c.Note(true, "Account", []byte("vip"), graph.Bool)
	c.Note(true, "", []byte("category"), graph.String)
	return c
}

func TestPropertyWarnings(t *testing.T) {
	tests := []struct {
		pattern, where string
		want           []string
	}{
		// What the stream gave, and the builtins, are silent.
		{ring, "t1.amount > 10000 AND t1.ts < t2.ts AND t1.id <> 'x' AND a.country = 'DE' AND t2.currency = 'EUR'", nil},
		// A vertex property given without a label may be any vertex's.
		{ring, "a.category = 'x'", nil},
		{ring, "t1.amont > 10000",
			[]string{"property t1.amont never seen on TRANSFER edges; known: amount, currency, id, ts (did you mean amount?)"}},
		{ring, "a.contry = 'DE' AND b.contry = 'DE'",
			[]string{"property a.contry never seen on Account vertices; known: category, country, vip (did you mean country?)",
				"property b.contry never seen on Account vertices; known: category, country, vip (did you mean country?)"}},
		// Nothing near: no suggestion. Each reference once.
		{ring, "t1.zzz > 1 OR t1.zzz < 0", []string{"property t1.zzz never seen on TRANSFER edges; known: amount, currency, id, ts"}},
		// Wildcard vertices are checked against every label. (Predicates
		// on edges need a labelled edge.)
		{"(a)-[t:PAYS]->(b)", "a.country = 'DE' AND a.category = 'x' AND a.bogus = 2", []string{
			"property a.bogus never seen on vertices; known: category, country, vip"}},
		// Kinds: a literal of another kind than the values carried.
		{ring, `t1.amount > "10000"`, []string{`t1.amount > "10000" is never true: t1.amount has carried only numbers on TRANSFER edges, and "10000" is a string`}},
		{ring, `"10000" <= t1.amount`, []string{`"10000" <= t1.amount is never true: t1.amount has carried only numbers on TRANSFER edges, and "10000" is a string`}},
		{ring, `a.vip = 'yes'`, []string{`a.vip = 'yes' is never true: a.vip has carried only booleans on Account vertices, and 'yes' is a string`}},
		{ring, `a.country IN ['DE', 49, true]`, []string{
			`a.country IN ['DE', 49, true]: the item 49 never matches: a.country has carried only strings on Account vertices, and 49 is a number`,
			`a.country IN ['DE', 49, true]: the item true never matches: a.country has carried only strings on Account vertices, and true is a boolean`}},
		// Two properties of disjoint kinds.
		{ring, `t1.amount = a.country`, []string{`t1.amount = a.country is never true: t1.amount has carried only numbers on TRANSFER edges, and a.country has carried only strings on Account vertices`}},
		// A property that has carried both kinds compares with either.
		{"(a)-[p:PAYS]->(b)", `p.fee > 1 AND p.fee = 'none'`, nil},
		// Arithmetic is left to the static check.
		{ring, `t1.amount * 2 > 1`, nil},
	}
	for _, tt := range tests {
		p, err := Parse("q", tt.pattern+" WHERE "+tt.where)
		if err != nil {
			t.Fatalf("%s: %v", tt.where, err)
		}
		if got := p.PropertyWarnings(catalog(), nil); !slices.Equal(got, tt.want) {
			t.Errorf("WHERE %s:\n got %q\nwant %q", tt.where, got, tt.want)
		}
	}
}

// TestPropertyWarningsSkip: labels the caller skips (it warns that the
// graph has none of them) and an empty catalog's labels are handled apart.
func TestPropertyWarningsSkip(t *testing.T) {
	p, err := Parse("q", "(a:Acount)-[t:TRANSFER]->(b:Account) WHERE a.x = 1 AND t.y = 1 AND b.z = 1")
	if err != nil {
		t.Fatal(err)
	}
	skip := func(vertex bool, label string) bool { return vertex && label == "Acount" }
	want := []string{
		"property t.y never seen on TRANSFER edges; known: amount, currency, id, ts",
		"property b.z never seen on Account vertices; known: category, country, vip",
	}
	if got := p.PropertyWarnings(catalog(), skip); !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	// A label with nothing seen lists no names but the builtins.
	want = []string{
		"property a.x never seen on Acount vertices; known: none yet",
		"property t.y never seen on TRANSFER edges; known: id, ts",
		"property b.z never seen on Account vertices; known: none yet",
	}
	if got := p.PropertyWarnings(&graph.Catalog{}, nil); !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if got := p.PropertyWarnings(nil, nil); got != nil {
		t.Errorf("without a catalog: %q", got)
	}
}

// TestPropertyWarningsPartial: past the catalog's bound on names, a label
// may have carried any name, so none is warned about; kinds still are.
func TestPropertyWarningsPartial(t *testing.T) {
	c := catalog()
	for i := range graph.MaxCatalogNames + 1 {
		c.Note(false, "TRANSFER", []byte{'p', byte('a' + i%26), byte('a' + i/26)}, graph.Number)
	}
	p, err := Parse("q", ring+` WHERE t1.amont > 1 AND t1.amount = "x"`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`t1.amount = "x" is never true: t1.amount has carried only numbers on TRANSFER edges, and "x" is a string`}
	if got := p.PropertyWarnings(c, nil); !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"amount", "amont", 1}, {"amont", "amount", 1}, {"ts", "st", 2}, {"kitten", "sitting", 3}, {"", "abc", 3}} {
		if d := editDistance(tt.a, tt.b); d != tt.d {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, d, tt.d)
		}
	}
}
