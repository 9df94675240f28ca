package query

import (
	"os"
	"path/filepath"
	"strings"
)

// Parse parses a pattern in either syntax, telling them apart by the first
// token that is not blank or in a comment line: a '(' or the keyword MATCH
// starts a Cypher-style pattern (see ParseCypher), a t, v or e line a CSM
// file (see ParseCSM). Comment lines before the pattern may start with # or
// //, whichever the syntax; after that each syntax allows only its own. The
// pattern is named source.
func Parse(source, text string) (*Pattern, error) {
	lines := strings.Split(stripBOM(text), "\n")
	for i, line := range lines {
		f := lineTokens(line, i+1)
		if len(f) == 0 || strings.HasPrefix(f[0].s, "#") || strings.HasPrefix(f[0].s, "//") {
			continue
		}
		// Blank out the lines skipped, whose comments the chosen syntax
		// may not know, keeping the line breaks so that positions hold.
		rest := strings.Repeat("\n", i) + strings.Join(lines[i:], "\n")
		switch first := f[0].s; {
		case strings.HasPrefix(first, "(") || strings.EqualFold(leadingWord(first), "MATCH"):
			return ParseCypher(source, rest)
		case first == "t" || first == "v" || first == "e":
			return parseCSM(source, rest)
		}
		err := f[0].errorf("unknown query syntax: expected a CSM file (t/v/e lines) or a Cypher-style pattern")
		err.Source = source
		return nil, err
	}
	return nil, &Error{Source: source, Reason: "empty query: expected a CSM file (t/v/e lines) or a Cypher-style pattern"}
}

// ParseFile parses the query file at path with Parse. Errors name the path;
// the pattern is named after the file, less an extension that only says it
// is a query (.graph, .g, .txt or .cypher), so that query_dense_16_1.graph
// gives query_dense_16_1 and Q_1 stays Q_1.
func ParseFile(path string) (*Pattern, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := Parse(path, string(b))
	if err != nil {
		return nil, err
	}
	name := filepath.Base(path)
	switch ext := filepath.Ext(name); ext {
	case ".graph", ".g", ".txt", ".cypher":
		if len(name) > len(ext) {
			name = strings.TrimSuffix(name, ext)
		}
	}
	p.Name = name
	return p, nil
}

// stripBOM drops the byte order mark that some Windows editors put at the
// start of a UTF-8 file, which would otherwise be read as part of the first
// token.
func stripBOM(text string) string { return strings.TrimPrefix(text, "\uFEFF") }
