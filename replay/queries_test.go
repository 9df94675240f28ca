package replay

import "testing"

// FuzzParseQuerySpec: a -q argument compiles to a named pattern or fails
// with an error; it never panics and never yields a nameless query.
func FuzzParseQuerySpec(f *testing.F) {
	for _, s := range []string{"", " ", "x=", "=x", "=(a)", "x=(a)--(b)", "(a)-[]-(b)", "MATCH (a)--(b)", "Q_1", "a=b=c", "(a {x=1})"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		p, err := parseQuerySpec(spec, 0)
		if err != nil {
			return
		}
		if p.Name == "" {
			t.Fatalf("%q: a pattern without a name", spec)
		}
	})
}
