package replay

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/engine"
	"github.com/gcsm/gcsm/graph"
)

// TestRefusalLines: an update the graph refuses is named by its line,
// wherever comments, blank lines and skipped lines put it.
func TestRefusalLines(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.graph")
	lines := []string{"t 3 1", "v 1 A", "# c", "", "v 2 A", "v 3 B", "e 1 2 0", "%", "v 2 B"}
	if err := os.WriteFile(data, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Config{Cmd: "test", Warn: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := s.Read(data)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{2, 5, 6, 7, 9} {
		if got := st.line(i); got != want {
			t.Errorf("update %d: line %d, want %d", i, got, want)
		}
	}
	if err := s.LoadGraph(data); err == nil || !strings.Contains(err.Error(), data+":9: label conflict") {
		t.Errorf("LoadGraph: %v, want a label conflict on line 9", err)
	}
}

// TestLoadGraphDeletion: a CSM data graph with deletions, built up to the
// first and applied from there, loads as Apply of the whole file does,
// with its refusals named by line.
func TestLoadGraphDeletion(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, lines ...string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	graphLines := []string{"v 1 A", "v 2 A", "v 3 B", "e 1 2", "e 2 3", "e 1 3", "e 1 2", "-e 1 3", "e 3 4", "-e 9 8", "e 1 3", "-e 2 3"}
	for _, skipBad := range []bool{false, true} {
		data := write("data.graph", graphLines...)
		loaded := load(t, Config{Cmd: "test", Warn: io.Discard, SkipBad: skipBad}, data, false)
		applied := load(t, Config{Cmd: "test", Warn: io.Discard, SkipBad: skipBad}, data, true)
		if loaded != applied {
			t.Errorf("skip-bad %v: LoadGraph gave %s, Apply %s", skipBad, loaded, applied)
		}
		bad := write("bad.graph", append(graphLines, "v 1 B", "v 2 C")...)
		loaded = load(t, Config{Cmd: "test", Warn: io.Discard, SkipBad: skipBad}, bad, false)
		applied = load(t, Config{Cmd: "test", Warn: io.Discard, SkipBad: skipBad}, bad, true)
		if loaded != applied || !skipBad && !strings.Contains(loaded, bad+":13: label conflict") {
			t.Errorf("skip-bad %v: LoadGraph gave %s, Apply %s", skipBad, loaded, applied)
		}
	}
}

// load loads the data graph at path with LoadGraph or, with apply, with
// Apply of all its updates, and describes the graph, or the error.
func load(t *testing.T, c Config, path string, apply bool) string {
	s, err := Open(c)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if apply {
		st, err := s.Read(path)
		if err == nil {
			_, err = s.step(st, 0, st.Len(), engine.Batch{})
		}
		if err != nil {
			return err.Error()
		}
	} else if err := s.LoadGraph(path); err != nil {
		return err.Error()
	}
	var edges []string
	for v := range graph.VertexID(s.g.NumVertices()) {
		for _, w := range s.g.Out(v).Sorted {
			edges = append(edges, s.ids.Name(v)+"-"+s.ids.Name(w))
		}
	}
	return fmt.Sprintf("%d edges %v, %d skipped", s.g.NumEdges(), edges, s.Skipped())
}
