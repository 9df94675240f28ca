package main

import (
	"strings"
	"testing"
)

// TestReplayInvalidUTF8 is issue 20's command: two ids that differ only in
// bytes that are not UTF-8 used to become one vertex "a\ufffd" and match
// b-a-c. Each line is now refused with its place, or skipped and counted.
func TestReplayInvalidUTF8(t *testing.T) {
	dir := t.TempDir()
	stream := writeFile(t, dir, "c.jsonl", "{\"op\":\"+\",\"src\":\"a\xff\",\"dst\":\"b\",\"label\":\"T\"}\n"+
		"{\"op\":\"+\",\"src\":\"a\xfe\",\"dst\":\"c\",\"label\":\"T\"}\n")
	args := []string{"replay", "-u", stream, "-q", "(x)-[]-(y)-[]-(z)", "--semantics", "instances", "--emit"}
	out, _ := wantFailure(t, 1, args, stream+`:1: field "src" is not valid UTF-8 at byte 1: "a\xff"`)
	if strings.Contains(out, "\ufffd") {
		t.Errorf("a refused stream printed a match:\n%s", out)
	}

	out = gcsmOK(t, append(args, "--skip-bad", "--json")...)
	s := lastJSON[replaySummary](t, out)
	if s.Skipped != 2 {
		t.Errorf("--skip-bad skipped %d lines, want both:\n%s", s.Skipped, out)
	}
	if s.Updates != 0 || strings.Contains(out, "\ufffd") {
		t.Errorf("--skip-bad replayed %d updates, want 0:\n%s", s.Updates, out)
	}
}
