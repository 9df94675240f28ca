package query

import "testing"

// TestPatternForm: a key's pattern part ignores how a pattern is spaced
// and tells apart every change to what it matches.
func TestPatternForm(t *testing.T) {
	form := func(pattern string) string {
		t.Helper()
		p, err := Parse("q", pattern)
		if err != nil {
			t.Fatalf("%s: %v", pattern, err)
		}
		return p.Form()
	}
	base := "(a:Account)-[t:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account) WHERE t.amount > 10000 WITHIN 1h"
	same := []string{
		"(a:Account) -[t:TRANSFER]-> (b:Account) -[:TRANSFER]-> (c:Account)\n  WHERE t.amount>10000\n  WITHIN 60m",
		"(a:Account)-[t:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account) WHERE (t.amount > 10000) WITHIN 3600s",
	}
	for _, p := range same {
		if form(p) != form(base) {
			t.Errorf("%q and %q differ:\n%s\n%s", p, base, form(p), form(base))
		}
	}
	other := []string{
		"(a:Account)-[t:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account) WHERE t.amount > 10001 WITHIN 1h",
		"(a:Account)-[t:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account) WHERE t.amount >= 10000 WITHIN 1h",
		"(a:Account)-[t:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account) WHERE t.amount > 10000 WITHIN 2h",
		"(a:Account)-[t:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account) WHERE t.amount > 10000",
		"(a:Account)-[t:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account) WITHIN 1h",
		"(a:Account)-[t:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Merchant) WHERE t.amount > 10000 WITHIN 1h",
		"(a:Account)-[t:TRANSFER]->(b:Account)-[:PAYMENT]->(c:Account) WHERE t.amount > 10000 WITHIN 1h",
		"(a:Account)-[t:TRANSFER]->(b:Account)<-[:TRANSFER]-(c:Account) WHERE t.amount > 10000 WITHIN 1h",
		"(a:Account)-[t:TRANSFER]->(b:Account)-[:TRANSFER]-(c:Account) WHERE t.amount > 10000 WITHIN 1h",
		"(a:Account)-[t:TRANSFER]->(b:Account)-[u:TRANSFER]->(c:Account) WHERE t.amount > 10000 WITHIN 1h",
		"(a:Account)-[t:TRANSFER]->(b:Account)-[]->(c:Account) WHERE t.amount > 10000 WITHIN 1h",
		"(a:Account)-[t:TRANSFER]->(b)-[:TRANSFER]->(c:Account) WHERE t.amount > 10000 WITHIN 1h",
		"(a:Account)-[t:TRANSFER]->(x:Account)-[:TRANSFER]->(c:Account) WHERE t.amount > 10000 WITHIN 1h",
		"(a:Account)-[t:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a) WHERE t.amount > 10000 WITHIN 1h",
	}
	seen := map[string]string{form(base): base}
	for _, p := range other {
		f := form(p)
		if q, ok := seen[f]; ok {
			t.Errorf("%q and %q have one form:\n%s", p, q, f)
		}
		seen[f] = p
	}
}

// TestPatternFormGolden: the form is the pattern part of every key, so a
// change to it changes every key that consumers and compacted topics hold,
// as a change to output.Key does (output's TestKeyGolden hashes this text).
func TestPatternFormGolden(t *testing.T) {
	p, err := Parse("ring3", "(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a)")
	if err != nil {
		t.Fatal(err)
	}
	const want = "v \"a\" \"Account\"\nv \"b\" \"Account\"\nv \"c\" \"Account\"\n" +
		"e 0 1 \"\" \"TRANSFER\" ->\ne 1 2 \"\" \"TRANSFER\" ->\ne 2 0 \"\" \"TRANSFER\" ->\n"
	if got := p.Form(); got != want {
		t.Fatalf("Form = %q, want %q", got, want)
	}
	p, err = Parse("big", "(a:Account)-[t:TRANSFER]->(b) WHERE t.amount > 10000 AND a.country IN ['DE', 'it'] WITHIN 1h30m")
	if err != nil {
		t.Fatal(err)
	}
	const want2 = "v \"a\" \"Account\"\nv \"b\" *\ne 0 1 \"t\" \"TRANSFER\" ->\n" +
		"where ((t.amount > 10000) AND (a.country IN ['DE', 'it']))\nwithin 5400000000000ns\n"
	if got := p.Form(); got != want2 {
		t.Fatalf("Form = %q, want %q", got, want2)
	}
}
