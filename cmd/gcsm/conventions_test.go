package main

import (
	"strings"
	"testing"
)

// This file tests the command line's conventions: what -q, --json, help,
// --version, exit codes and flag values promise across commands.

// An inline -q that is empty, or NAME= with nothing or no pattern after
// it, says what is wrong with the query rather than "no such file".
func TestQuerySpecErrors(t *testing.T) {
	_, data, stream := tinyFiles(t)
	for _, c := range []struct{ spec, want string }{
		{"", `-q "": empty query`},
		{"  ", `-q "  ": empty query`},
		{"x=", "query x: empty pattern"},
		{"x= ", "query x: empty pattern"},
		{"=(a)--(b)", `-q "=(a)--(b)": empty query name before '='`},
		{"x=a--b", `query x: pattern "a--b" starts with neither '(' nor MATCH`},
	} {
		for _, cmd := range [][]string{{"replay", "-d", data, "-u", stream}, {"match", "-d", data}} {
			_, errs := wantFailure(t, 1, append(cmd, "-q", c.spec), c.want)
			if strings.Contains(errs, "no such file") && c.spec != "x=a--b" {
				t.Errorf("-q %q: %s", c.spec, errs)
			}
		}
	}
	// NAME=PATTERN and a bare pattern still work.
	if s := matchJSON(t, "-d", data, "-q", " tri = (a)--(b)--(c)--(a)"); len(s.Queries) != 1 || s.Queries[0] != (matchQuery{"tri", 6}) {
		t.Errorf("-q with spaces around the name: %+v", s.Queries)
	}
}

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
