package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/service"
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

// Help that was asked for is the output: stdout, exit 0. The GPU tuning
// flags stay out of -h and are all in --help-all.
func TestHelp(t *testing.T) {
	for _, h := range []string{"help", "-h", "--help"} {
		out, errs, code := gcsm(t, h)
		if code != 0 || !strings.Contains(out, "Usage: gcsm COMMAND") || errs != "" {
			t.Errorf("gcsm %s: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout only", h, code, out, errs)
		}
	}
	for _, c := range commands() {
		short, errs, code := gcsm(t, c.name, "-h")
		if code != 0 || errs != "" || !strings.Contains(short, "Usage: gcsm "+c.name+" [flags]") {
			t.Errorf("gcsm %s -h: exit %d, stderr %q, stdout:\n%s", c.name, code, errs, short)
			continue
		}
		all, errs, code := gcsm(t, c.name, "--help-all")
		if code != 0 || errs != "" {
			t.Errorf("gcsm %s --help-all: exit %d, stderr %q", c.name, code, errs)
			continue
		}
		gpuFlags := func(out string) (n int) {
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "  -gpu-") {
					n++
				}
			}
			return n
		}
		if n := gpuFlags(short); n != 0 {
			t.Errorf("gcsm %s -h lists %d GPU tuning flags:\n%s", c.name, n, short)
		}
		n := gpuFlags(all)
		if n > 0 && !strings.Contains(short, fmt.Sprintf("%d GPU tuning flags (--gpu-*) are not shown; 'gcsm %s --help-all' lists them", n, c.name)) {
			t.Errorf("gcsm %s -h does not say that %d GPU tuning flags are hidden:\n%s", c.name, n, short)
		}
		// Everything -h lists, --help-all lists too.
		for _, l := range strings.Split(short, "\n") {
			if strings.HasPrefix(l, "  -") && !strings.Contains(all, l) {
				t.Errorf("gcsm %s --help-all lacks %q", c.name, l)
			}
		}
	}
	all := gcsmOK(t, "replay", "--help-all")
	for _, f := range []string{"gpu-placement", "gpu-mem", "gpu-cache", "gpu-cache-lookup", "gpu-estimate-share", "gpu-fill", "gpu-walks", "gpu-cache-min-kernel", "gpu-cache-lists"} {
		if !strings.Contains(all, "\n  -"+f+" ") && !strings.Contains(all, "\n  -"+f+"\n") {
			t.Errorf("replay --help-all lacks --%s:\n%s", f, all)
		}
	}
	// A mistake gets the error and a hint on stderr, nothing on stdout.
	out, errs := wantFailure(t, 2, []string{"match", "--bogus"}, "-bogus", "Run 'gcsm match -h' for its flags.")
	if out != "" || strings.Contains(errs, "-count-only") {
		t.Errorf("match --bogus: stdout %q, stderr %q; want only the error and the hint on stderr", out, errs)
	}
}

func TestVersion(t *testing.T) {
	a := gcsmOK(t, "--version")
	b := gcsmOK(t, "version")
	if a != b || !strings.HasPrefix(a, "gcsm ") || !strings.HasSuffix(a, runtime.Version()+"\n") || strings.Count(a, "\n") != 1 {
		t.Errorf("--version %q, version %q: want one line, gcsm ... %s", a, b, runtime.Version())
	}
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "ab0d4fd0123"}, {Key: "vcs.time", Value: "2026-11-25T18:00:00Z"}, {Key: "vcs.modified", Value: "true"},
	}}
	if got, want := formatVersion(bi), "gcsm v0.3.0, commit ab0d4fd0123 of 2026-11-25T18:00:00Z (modified), go1.26.0"; got != want {
		t.Errorf("formatVersion: %q, want %q", got, want)
	}
	bi.Settings, bi.Main.Version = nil, ""
	if got, want := formatVersion(bi), "gcsm (devel), go1.26.0"; got != want {
		t.Errorf("formatVersion without VCS: %q, want %q", got, want)
	}
}

// The console log format writes colour codes only to a terminal: a file,
// a pipe or a buffer gets plain text.
func TestConsoleLogNoColorOffTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	for _, w := range []io.Writer{&buf, f} {
		log, err := newLogger(w, service.LogConfig{Level: "info", Format: "console"})
		if err != nil {
			t.Fatal(err)
		}
		log.Warn().Str("query", "ring3").Msg("a warning")
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"buffer": buf.String(), "file": string(b)} {
		if !strings.Contains(out, "a warning") || !strings.Contains(out, "query=ring3") {
			t.Errorf("%s: the log line is missing: %q", name, out)
		}
		if strings.Contains(out, "\x1b[") {
			t.Errorf("%s: the console log has ANSI colour codes off a terminal: %q", name, out)
		}
	}
}
