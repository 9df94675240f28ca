package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gcsm/gcsm/replay"
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
			_, errs := wantFailure(t, 2, append(cmd, "-q", c.spec), c.want)
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

// Help that was asked for is the output: stdout, exit 0. The GPU tuning
// flags stay out of -h and are all in --help-all.
func TestHelp(t *testing.T) {
	for _, h := range []string{"help", "-h", "--help", "--help-all"} {
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
	for _, f := range []string{"gpu-placement", "gpu-mem", "gpu-cache", "gpu-cache-lookup", "gpu-estimate-share", "gpu-fill", "gpu-walks", "gpu-cache-min-kernel", "gpu-cache-lists", "gpu-static-keep", "gpu-static-space"} {
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

// Every --json mode writes JSON alone to stdout, one object a line, so that
// `gcsm ... --json | jq` works; the human report goes to stderr.
func TestJSONStdoutOnly(t *testing.T) {
	dir, data, stream := tinyFiles(t)
	bad := writeFile(t, dir, "bad.stream", "e 2 4 0\ne 1 x 0\n-e 1 2 0\n")
	for _, c := range []struct {
		args   []string
		report string // a line of the human report, now on stderr
	}{
		{[]string{"replay", "-d", data, "-u", stream, "-q", triQuery}, "stream: 3 updates"},
		{[]string{"replay", "-d", data, "-u", stream, "-q", triQuery, "--emit", "--batch", "1"}, "stream: 3 updates"},
		{[]string{"replay", "-d", data, "-u", stream, "-q", triQuery, "--count-only"}, "initial graph: 4 vertices"},
		{[]string{"replay", "-d", data, "-u", bad, "-q", triQuery, "--skip-bad"}, "skipped: 1"},
		{[]string{"replay", "--demo", "--count-only"}, "query"},
		{[]string{"match", "-d", data, "-q", triQuery, "-q", abQuery}, "time:"},
		{[]string{"match", "-d", data, "-q", triQuery, "--emit"}, "time:"},
	} {
		args := append(c.args, "--json")
		out, errs := gcsmOut(t, args...)
		lines := jsonLines(t, out)
		var summary map[string]json.RawMessage
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &summary); err != nil || summary["queries"] == nil {
			t.Errorf("gcsm %s: the last line is not the summary: %s", strings.Join(args, " "), lines[len(lines)-1])
		}
		for _, l := range lines[:len(lines)-1] {
			var e replay.EmitJSON
			dec := json.NewDecoder(strings.NewReader(l))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&e); err != nil || e.Query == "" || len(e.Match) == 0 {
				t.Errorf("gcsm %s: line %q is not a match: %v", strings.Join(args, " "), l, err)
			}
		}
		if !strings.Contains(errs, c.report) {
			t.Errorf("gcsm %s: the report (%q) is not on stderr:\n%s", strings.Join(args, " "), c.report, errs)
		}
	}
}

// childArgsEnv carries the arguments of a gcsm run in a child process,
// separated by newlines, to TestChildGcsm.
const childArgsEnv = "GCSM_TEST_CHILD_ARGS"

// TestChildGcsm is gcsm itself when a test re-executes the test binary
// with childArgsEnv set; otherwise there is nothing to do.
func TestChildGcsm(t *testing.T) {
	args, ok := os.LookupEnv(childArgsEnv)
	if !ok {
		t.Skip("the child of tests that signal gcsm")
	}
	os.Exit(run(strings.Split(args, "\n"), os.Stdout, os.Stderr))
}

// Ctrl-C during replay stops it between batches, prints the counts so far
// marked as interrupted (in the table and in --json), and exits 130; the
// counts are those of a replay of the stream's replayed prefix alone.
func TestReplayInterrupt(t *testing.T) {
	dir := t.TempDir()
	// 300,000 insertions among 3,000 vertices replayed one at a time take
	// seconds: the signal, sent once the replay starts, comes long before
	// the end.
	var b strings.Builder
	rng := rand.New(rand.NewPCG(1, 2))
	var lines []string
	for len(lines) < 300000 {
		u, v := rng.IntN(3000), rng.IntN(3000)
		if u != v {
			lines = append(lines, fmt.Sprintf("e %d %d 0\n", u, v))
		}
	}
	for _, l := range lines {
		b.WriteString(l)
	}
	stream := writeFile(t, dir, "long.stream", b.String())
	for _, jsonOut := range []bool{true, false} {
		args := []string{"replay", "-u", stream, "-q", triQuery, "--batch", "1"}
		if jsonOut {
			args = append(args, "--json")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestChildGcsm$")
		cmd.Env = append(os.Environ(), childArgsEnv+"="+strings.Join(args, "\n"))
		// The report's first line comes on stdout, or on stderr under
		// --json; the signal goes once it has. The watched stream is
		// copied into its buffer as it is read.
		var out, errs bytes.Buffer
		pr, pw := io.Pipe()
		cmd.Stdout, cmd.Stderr = pw, &errs
		watched := &out
		if jsonOut {
			cmd.Stdout, cmd.Stderr, watched = &out, pw, &errs
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		seen := make(chan struct{})
		copied := make(chan struct{})
		go func() {
			defer close(copied)
			sc := bufio.NewScanner(pr)
			once := false
			for sc.Scan() {
				watched.Write(append(sc.Bytes(), '\n'))
				if !once && strings.HasPrefix(sc.Text(), "initial graph:") {
					once = true
					close(seen)
				}
			}
			io.Copy(io.Discard, pr)
		}()
		select {
		case <-seen:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			t.Fatal("the replay did not start within a minute")
		}
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		pw.Close()
		<-copied
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
			t.Fatalf("json=%v: %v, want exit %d\nstdout:\n%s\nstderr:\n%s", jsonOut, err, exitInterrupted, out.String(), errs.String())
		}
		report, final := out.String(), errs.String()
		if jsonOut {
			report = errs.String()
		}
		head := regexp.MustCompile(`stream: INTERRUPTED after (\d+) of 300000 updates, in (\d+) batches`).FindStringSubmatch(report)
		if head == nil {
			t.Fatalf("json=%v: the report does not say it was interrupted:\n%s", jsonOut, report)
		}
		n, _ := strconv.Atoi(head[1])
		if head[2] != head[1] || n >= len(lines) {
			t.Fatalf("json=%v: %s; want as many batches as updates, fewer than the stream's", jsonOut, head[0])
		}
		if !strings.Contains(final, fmt.Sprintf("gcsm replay: interrupted after %d of 300000 updates", n)) {
			t.Errorf("json=%v: stderr does not end with the interruption:\n%s", jsonOut, final)
		}
		// The counts so far are those of the prefix replayed alone.
		prefix := writeFile(t, dir, "prefix.stream", strings.Join(lines[:n], ""))
		want := replayJSON(t, "-u", prefix, "-q", triQuery, "--batch", "1")
		if jsonOut {
			got := lastJSON[replaySummary](t, out.String())
			if !got.Interrupted || got.Updates != n || got.Batches != n || !slices.Equal(got.Queries, want.Queries) {
				t.Errorf("interrupted summary %+v; want interrupted after %d updates with %+v", got, n, want.Queries)
			}
		} else if row := tableRows(report, "query")["tri"]; !slices.Equal(row, []string{"tri", fmt.Sprint(want.Queries[0].Positive), "0"}) {
			t.Errorf("interrupted table row %q; want the prefix's %+v\n%s", row, want.Queries[0], report)
		}
	}
}

// A flag value outside its range or choices is a usage error, exit 2,
// whose message names the flag, the value and what is allowed, before any
// work starts.
func TestFlagValues(t *testing.T) {
	_, data, stream := tinyFiles(t)
	replay := []string{"replay", "-d", data, "-u", stream, "-q", triQuery}
	match := []string{"match", "-d", data, "-q", triQuery}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{append(replay, "--workers", "-3"), []string{"--workers -3: want 0 (every core) or more"}},
		{append(replay, "--batch", "0"), []string{"--batch 0: want 1 or more"}},
		{append(replay, "--semantics", "all"), []string{`--semantics "all": want embeddings or instances`}},
		{append(match, "--workers", "-1"), []string{"--workers -1: want 0 (every core) or more"}},
		{append(match, "--semantics", "bogus"), []string{`--semantics "bogus": want embeddings or instances`}},
		{append(match, "--device", "tpu"), []string{`--device "tpu": want auto, cpu or gpu`}},
		// The GPU flags are checked under --device cpu too.
		{append(match, "--device", "cpu", "--gpu-mem", "-1"), []string{"--gpu-mem -1: want 0 or more"}},
		{append(match, "--device", "cpu", "--gpu-cache", "-5"), []string{"--gpu-cache -5: want 0 or more"}},
		{append(match, "--device", "cpu", "--gpu-estimate-share", "2"), []string{"--gpu-estimate-share 2: want a number up to 1"}},
		{append(match, "--device", "cpu", "--gpu-estimate-share", "NaN"), []string{"--gpu-estimate-share NaN: want a number up to 1"}},
		{append(match, "--device", "cpu", "--gpu-placement", "nowhere"), []string{`--gpu-placement "nowhere": want one of device, zero-copy`}},
		{append(match, "--device", "cpu", "--gpu-walks", "bogus"), []string{`--gpu-walks "bogus": want paper or weighted`}},
		// The engine's flags are checked together: every bad one is named.
		{append(match, "--workers", "-3", "--gpu-fill", "some", "--gpu-mem", "-2"),
			[]string{"--workers -3", `--gpu-fill "some": want on or off`, "--gpu-mem -2"}},
		{[]string{"run", "--workers", "-3"}, []string{"--workers -3: want 0 (every core) or more"}},
		{append(replay, "--ts-unit", "sec"), []string{`--ts-unit "sec": want s, ms, us or ns`}},
		{append(match, "--ts-unit", "MS"), []string{`--ts-unit "MS": want s, ms, us or ns`}},
		{[]string{"run", "--ts-unit", ""}, []string{`--ts-unit "": want s, ms, us or ns`}},
		{[]string{"produce", "-u", stream, "--topic", "t", "--ts-unit", "1000"}, []string{`--ts-unit "1000": want s, ms, us or ns`}},
		{[]string{"bench", "static", "-d", data, "-q", triQuery, "--ts-unit", "min"}, []string{`--ts-unit "min": want s, ms, us or ns`}},
		{[]string{"demo", "--events", "2"}, []string{"--events 2: want 3 or more"}},
		{[]string{"demo", "--show", "-1", "--batch", "0", "--rate", "-5"}, []string{"--show -1: want 0 or more", "--batch 0: want 1 or more", "--rate -5: want 0 or more"}},
		{[]string{"bench", "--scale", "40"}, []string{"--scale 40: want 1 to 31"}},
		{[]string{"bench", "--scale", "0"}, []string{"--scale 0: want 1 to 31"}},
		{[]string{"bench", "--scale", "4", "--edge-factor", "16"}, []string{"--edge-factor 16: want 1 to 15"}},
		{[]string{"bench", "--labels", "0", "--per-size", "0", "--workers", "-2"}, []string{"--labels 0: want 1 or more", "--per-size 0: want 1 or more", "--workers -2"}},
		{[]string{"bench", "--label-skew", "0.5"}, []string{"--label-skew 0.5: want 0 (uniform) or a Zipf exponent above 1"}},
		{[]string{"bench", "--gpu-cache-fraction", "1.5", "--gpu-mem", "-1", "--gpu-estimate-share", "+Inf"},
			[]string{"--gpu-cache-fraction 1.5: want a number from 0 to 1", "--gpu-mem -1", "--gpu-estimate-share +Inf"}},
		{[]string{"bench", "--gpu-walks", "bogus"}, []string{`--gpu-walks "bogus"`}},
		{[]string{"bench", "--engines", "gcsm:hash"}, []string{`"gcsm:hash": "hash" is not :search`}},
		{[]string{"produce", "-u", stream, "--topic", "t", "--rate", "-1"}, []string{"--rate -1: want a number of 0 or more"}},
		{[]string{"produce", "-u", stream, "--topic", "t", "--rate", "NaN"}, []string{"--rate NaN: want a number of 0 or more"}},
		{[]string{"produce", "-u", stream, "--topic", "t", "--format", "xml"}, []string{`--format "xml"`}},
	} {
		name := c.args[0]
		out, _ := wantFailure(t, 2, c.args, append(c.want, "gcsm "+name+": ", "Run 'gcsm "+name+" -h' for its flags.")...)
		if out != "" {
			t.Errorf("gcsm %s: stdout %q, want nothing", strings.Join(c.args, " "), out)
		}
	}
}

// The progress bar draws only on a terminal: /dev/null is a character
// device, but carriage returns there are waste, and in a pipe a mess.
func TestProgressOffTerminal(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for name, f := range map[string]*os.File{"/dev/null": null, "a pipe": w} {
		if p := newProgress(f, 100, true); p.on {
			t.Errorf("the progress bar is on for %s", name)
		}
	}
}
