package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gcsm/gcsm/service"
)

// readmeBlocks returns the fenced code blocks of the README's section that
// starts at the heading start, in order, each with its info string.
func readmeBlocks(t *testing.T, start string) (info, text []string) {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), start+"\n")
	if !ok {
		t.Fatalf("README.md has no heading %q", start)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	lines := strings.Split(section, "\n")
	for i := 0; i < len(lines); i++ {
		tag, ok := strings.CutPrefix(lines[i], "```")
		if !ok {
			continue
		}
		j := i + 1
		for j < len(lines) && lines[j] != "```" {
			j++
		}
		info = append(info, tag)
		text = append(text, strings.Join(lines[i+1:j], "\n"))
		i = j
	}
	return info, text
}

// shellWords splits a command line as sh would split this README's: words
// apart at spaces, single quotes keeping what they enclose.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, w.String())
				w.Reset()
			}
			inWord = false
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unterminated quote in %q", line)
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// jsonValues decodes a stream of JSON values, as the README wraps them
// over lines or as tail prints them one a line.
func jsonValues(t *testing.T, what, text string) []any {
	t.Helper()
	var vs []any
	dec := json.NewDecoder(strings.NewReader(text))
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return vs
		}
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, text)
		}
		vs = append(vs, v)
	}
}

// TestReadmeService runs the README's service example as written: its
// transfers.jsonl and its three commands, gcsm run in a process of its
// own. Only the places change: the embedded broker listens on a free port,
// the state goes to a temporary directory and the HTTP API is off, so that
// the test never meets another gcsm. The alerts tail prints must be the
// README's, to the byte of every field, and no others.
func TestReadmeService(t *testing.T) {
	info, blocks := readmeBlocks(t, "## A worked example")
	var stream, commands, alerts string
	for i, b := range blocks {
		switch {
		case strings.HasPrefix(b, `{"op":`):
			stream = b + "\n"
		case info[i] == "sh":
			commands = b
			if i+1 < len(blocks) {
				alerts = blocks[i+1]
			}
		}
	}
	if stream == "" || commands == "" || alerts == "" {
		t.Fatalf("README.md's worked example: want the transfers, a sh block of commands and the alerts after it; found %d blocks", len(blocks))
	}
	dir := t.TempDir()
	path := writeFile(t, dir, "transfers.jsonl", stream)
	listen := freeAddr(t)
	cfg := writeFile(t, dir, "gcsm.yaml", fmt.Sprintf("embedded: {listen: %q}\nstate: {dir: %q}\nhttp: {listen: \"\"}\n", listen, dir+"/state"))

	var run, produce, tailArgs []string
	for _, line := range strings.Split(commands, "\n") {
		w := shellWords(t, line)
		if len(w) < 4 || !slices.Equal(w[:3], []string{"go", "run", "./cmd/gcsm"}) {
			t.Fatalf("README command %q: want go run ./cmd/gcsm COMMAND ...", line)
		}
		switch w[3] {
		case "run":
			run = w[3:]
		case "produce":
			produce = w[3:]
		case "tail":
			tailArgs = w[3:]
		default:
			t.Fatalf("README command %q: not run, produce or tail", line)
		}
	}
	if run == nil || produce == nil || tailArgs == nil {
		t.Fatalf("README's commands lack run, produce or tail:\n%s", commands)
	}
	// The README says run and tail use the built-in defaults, and produce
	// names the embedded broker's default address: those are what move.
	for _, args := range [][]string{run, tailArgs} {
		for _, a := range args {
			if a == "--config" || a == "--brokers" || a == "--state" {
				t.Fatalf("README's %s gives %s, beyond the built-in defaults the test moves", args[0], a)
			}
		}
	}
	def := service.DefaultConfig().Embedded.Listen
	replaced := 0
	for i := 1; i < len(produce); i++ {
		switch {
		case produce[i-1] == "--brokers" && produce[i] == def:
			produce[i] = listen
			replaced++
		case produce[i-1] == "-u" && produce[i] == "transfers.jsonl":
			produce[i] = path
			replaced++
		}
	}
	if replaced != 2 {
		t.Fatalf("README's produce %q: want -u transfers.jsonl and --brokers %s", produce, def)
	}

	var errs lockedBuffer
	child, _ := startGcsm(t, "embedded Kafka broker started", &errs, append(run, "--config", cfg, "--device", "cpu")...)
	waitFor(t, "the service to consume", func() bool { return strings.Contains(errs.String(), "active: consuming") })
	gcsmOK(t, produce...)

	// tail --follow prints until interrupted; --limit ends it after as
	// many alerts as the README shows, or the deadline fails the test.
	want := jsonValues(t, "README.md's alerts", alerts)
	followed := make(chan string, 1)
	go func() {
		out, _, _ := gcsm(t, append(tailArgs, "--config", cfg, "--limit", fmt.Sprint(len(want)))...)
		followed <- out
	}()
	var got string
	select {
	case got = <-followed:
	case <-time.After(time.Minute):
		all, _, _ := gcsm(t, "tail", "--config", cfg, "--from-beginning", "--format", "json")
		t.Fatalf("gcsm %s printed no %d alerts within a minute; the topic holds:\n%s\ngcsm run:\n%s", strings.Join(tailArgs, " "), len(want), all, errs.String())
	}
	if g := jsonValues(t, "tail", got); !reflect.DeepEqual(g, want) {
		t.Fatalf("the README's service example prints\n%s\nwhere the README shows\n%s", got, alerts)
	}
	// Every event is matched by now: the topic holds these alerts alone.
	all := gcsmOK(t, "tail", "--config", cfg, "--from-beginning", "--format", "json")
	if g := jsonValues(t, "tail --from-beginning", all); !reflect.DeepEqual(g, want) {
		t.Fatalf("the output topic holds\n%s\nwhere the README shows\n%s", all, alerts)
	}
	stopGcsm(t, child)
	if regexp.MustCompile(`(?m) (ERR|WRN) `).MatchString(errs.String()) {
		t.Errorf("gcsm run logged errors or warnings:\n%s", errs.String())
	}
}
