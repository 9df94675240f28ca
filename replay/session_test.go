package replay

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
