package replay

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// SpecError is a -q argument, or a set of them, that names no query as a
// command line must: a usage error, answered as a flag value outside its
// range is, so that the user is pointed at the flags.
type SpecError struct{ Err error }

func (e *SpecError) Error() string { return e.Err.Error() }
func (e *SpecError) Unwrap() error { return e.Err }

func specError(err error) error { return &SpecError{err} }

// LoadQueries compiles each -q argument: a file (CSM or Cypher-style), an
// inline Cypher-style pattern, or NAME=PATTERN. With unlabeled every vertex
// and edge of the patterns matches any label. On an undirected graph a
// pattern that draws an arrow is refused, with fix in the message.
func LoadQueries(specs []string, labels *graph.Dict, directed bool, fix string, sem query.Semantics, unlabeled bool) ([]*query.Query, error) {
	if len(specs) == 0 {
		return nil, specError(errors.New("no query: give at least one -q"))
	}
	var qs []*query.Query
	names := map[string]bool{}
	for i, spec := range specs {
		p, err := parseQuerySpec(spec, i)
		if err != nil {
			return nil, err
		}
		if names[p.Name] {
			return nil, specError(fmt.Errorf("two queries are named %q", p.Name))
		}
		names[p.Name] = true
		if unlabeled {
			for i := range p.Vertices {
				p.Vertices[i].Label, p.Vertices[i].Wildcard = "", true
			}
			for i := range p.Edges {
				p.Edges[i].Label, p.Edges[i].Wildcard = "", true
			}
		}
		if !directed {
			if err := p.CheckUndirected(fix); err != nil {
				return nil, err
			}
		}
		q, err := query.Compile(p, labels, directed, sem)
		if err != nil {
			return nil, err
		}
		qs = append(qs, q)
	}
	return qs, nil
}

func parseQuerySpec(spec string, i int) (*query.Pattern, error) {
	if fi, err := os.Stat(spec); err == nil && !fi.IsDir() {
		return query.ParseFile(spec)
	}
	if strings.TrimSpace(spec) == "" {
		return nil, specError(fmt.Errorf("-q %q: empty query", spec))
	}
	name, text, named := SplitQuerySpec(spec, i)
	if named && name == "" {
		return nil, specError(fmt.Errorf("-q %q: empty query name before '='", spec))
	}
	// Inline queries are Cypher-style; anything else names a file, such as
	// the peers' extensionless Q_1, unless NAME= said it was inline.
	t := strings.TrimSpace(text)
	switch {
	case named && t == "":
		return nil, specError(fmt.Errorf("query %s: empty pattern", name))
	case strings.HasPrefix(t, "(") || strings.HasPrefix(strings.ToUpper(t), "MATCH"):
	case named:
		return nil, specError(fmt.Errorf("query %s: pattern %q starts with neither '(' nor MATCH, and no file %s exists", name, t, spec))
	default:
		return nil, fmt.Errorf("query file %s: no such file (an inline query starts with '(' or MATCH)", spec)
	}
	return query.Parse(name, text)
}

// SplitQuerySpec splits the i-th -q argument NAME=PATTERN into its name and
// pattern; named is false for a bare pattern or file, which is named qI. An
// '=' after a bracket or dash is the pattern's own.
func SplitQuerySpec(spec string, i int) (name, text string, named bool) {
	if k := strings.Index(spec, "="); k >= 0 && !strings.ContainsAny(spec[:k], "()[]-") {
		return strings.TrimSpace(spec[:k]), spec[k+1:], true
	}
	return fmt.Sprintf("q%d", i+1), spec, false
}

// QueryFiles lists the query files of --queries v: every regular file of a
// directory, or the files a glob matches, in name order.
func QueryFiles(v string) ([]string, error) {
	var files []string
	if fi, err := os.Stat(v); err == nil && fi.IsDir() {
		ents, err := os.ReadDir(v)
		if err != nil {
			return nil, fmt.Errorf("--queries: %w", err)
		}
		for _, e := range ents {
			if e.Type().IsRegular() {
				files = append(files, filepath.Join(v, e.Name()))
			}
		}
	} else {
		m, err := filepath.Glob(v)
		if err != nil {
			return nil, fmt.Errorf("--queries %q: %w", v, err)
		}
		for _, f := range m {
			if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
				files = append(files, f)
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("--queries %q: no query files there", v)
	}
	return files, nil
}
