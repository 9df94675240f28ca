// Package lint holds repository-wide checks that are not about any one
// package's behaviour.
package lint

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
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
// take a place in the order before it can land; so does an entry no file
// uses (tests included), so that the table says what the code does and an
// import that drifts in is caught.
var allowed = map[string][]string{
	"graph":              {},
	"internal/hostmem":   {},
	"internal/lint":      {},
	"internal/statedir":  {},
	"internal/jsonstr":   {},
	"internal/par":       {},
	"internal/testtls":   {},
	"internal/kafkaconn": {"internal/testtls"},
	"query":              {"graph", "internal/jsonstr"},
	"dyngraph":           {"graph", "internal/hostmem"},
	"engine":             {"graph", "query", "dyngraph", "bundle", "ingest", "incremental", "internal/hostmem", "internal/par"},
	"bundle":             {"graph", "dyngraph"},
	"ingest":             {"graph", "internal/jsonstr", "internal/kafkaconn", "internal/testtls"},
	"incremental":        {"graph", "query", "dyngraph", "bundle", "internal/hostmem"},
	"sampler":            {"graph", "query", "dyngraph"},
	"cache":              {"graph", "query", "dyngraph", "sampler", "internal/hostmem"},
	"kernels":            {"graph", "query", "dyngraph", "bundle", "incremental", "cache", "internal/hostmem", "kernels/cuda"},
	"kernels/cuda":       {},
	"output":             {"ingest", "internal/jsonstr", "internal/kafkaconn", "internal/testtls"},
	"bench":              {"graph", "query", "dyngraph", "ingest", "incremental", "sampler", "cache", "kernels", "device", "internal/hostmem"},
	"service":            {"graph", "query", "dyngraph", "bundle", "ingest", "engine", "incremental", "kernels", "output", "internal/hostmem", "internal/kafkaconn", "internal/par", "internal/statedir", "bench"},
	"bench/servicebench": {"bench", "ingest", "incremental", "output", "service", "internal/hostmem", "internal/kafkaconn", "engine", "query", "graph", "bundle"},
	"device":             {"incremental", "kernels", "kernels/cuda", "internal/hostmem"},
	"replay":             {"graph", "query", "dyngraph", "bundle", "ingest", "engine", "incremental", "bench", "internal/hostmem"},
	"demo":               {"graph", "bench", "bench/servicebench", "ingest", "service", "internal/kafkaconn"},
	"deploy":             {"service"},
	"cmd/gcsm":           nil, // may import everything; nothing imports it
}

func TestImportDirection(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	used := map[string]map[string]bool{} // package → the packages of ours it imports
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
			if used[pkg] == nil {
				used[pkg] = map[string]bool{}
			}
			used[pkg][dep] = true
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
	for _, pkg := range slices.Sorted(maps.Keys(allowed)) {
		for _, dep := range allowed[pkg] {
			if !used[pkg][dep] {
				t.Errorf("%s may import %s but no file does: take it out of the table", pkg, dep)
			}
		}
	}
}
