// Package lint holds repository-wide checks that are not about any one
// package's behaviour.
package lint

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/gcsm/gcsm/"

// allowed lists, for each package of ours, the packages of ours it may
// import (docs/architecture.md: data flows ingest → dyngraph → (sampler → cache) →
// incremental/kernels → output, and only service knows that order). A
// package missing from this table fails the test, so a new package has to
// take a place in the order before it can land.
var allowed = map[string][]string{
	"graph":              {},
	"internal/hostmem":   {},
	"internal/lint":      {},
	"internal/statedir":  {},
	"internal/jsonstr":   {},
	"internal/testtls":   {},
	"internal/kafkaconn": {"internal/testtls"},
	"query":              {"graph"},
	"dyngraph":           {"graph", "internal/hostmem"},
	"bundle":             {"graph", "dyngraph"},
	"ingest":             {"graph", "internal/jsonstr", "internal/kafkaconn", "internal/testtls"},
	"incremental":        {"graph", "query", "dyngraph", "bundle", "internal/hostmem"},
	"sampler":            {"graph", "query", "dyngraph"},
	"cache":              {"graph", "query", "dyngraph", "sampler", "internal/hostmem"},
	"kernels":            {"graph", "query", "dyngraph", "bundle", "incremental", "sampler", "cache", "internal/hostmem", "kernels/cuda"},
	"kernels/cuda":       {},
	"output":             {"graph", "query", "internal/jsonstr", "internal/kafkaconn", "internal/testtls"},
	"bench":              {"graph", "query", "dyngraph", "bundle", "ingest", "incremental", "sampler", "cache", "kernels", "internal/hostmem"},
	"service":            {"graph", "query", "dyngraph", "bundle", "ingest", "incremental", "sampler", "cache", "kernels", "kernels/cuda", "output", "internal/hostmem", "internal/kafkaconn", "internal/statedir", "internal/testtls", "bench"},
	"deploy":             {"service"},
	"cmd/gcsm":           nil, // may import everything; nothing imports it
}

func TestImportDirection(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		may, known := allowed[pkg]
		if !known {
			t.Errorf("%s: package %q has no entry in the import table of internal/lint", path, pkg)
			return nil
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module) {
				continue
			}
			dep := strings.TrimPrefix(p, module)
			if dep == "cmd/gcsm" {
				t.Errorf("%s imports %s: nothing may import cmd", path, p)
			}
			if may != nil && !slices.Contains(may, dep) && dep != pkg {
				t.Errorf("%s: %s may not import %s (allowed: %v)", path, pkg, dep, may)
			}
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}
