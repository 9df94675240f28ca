package jsonstr

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestAppendMatchesEncodingJSON pins Append to encoding/json's bytes (with
// HTML escaping off), not just its meaning: every single byte, awkward
// strings, and fuzzed ones.
func TestAppendMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", `"quoted"`, `back\slash`, "new\nline\ttab\rcr\bbs\fff", "\x00\x01\x1f\x7f",
		"ünïcödé ✓ 漢字 🦀", "\u2028\u2029 line separators", "<html>&amp;</html>", "\xff\xfe invalid",
		"trunc\xe2\x82", "\xed\xa0\x80 surrogate", "\xc0\xaf overlong", `\u0041 escaped-looking`,
	} {
		check(t, s)
	}
	for c := range 256 {
		check(t, string([]byte{byte(c)}))
	}
}

func FuzzAppend(f *testing.F) {
	f.Add("plain")
	f.Add("\xff\u2028\"\\\x00")
	f.Fuzz(func(t *testing.T, s string) { check(t, s) })
}

func check(t *testing.T, s string) {
	t.Helper()
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	if got := Append(nil, s); string(got) != string(bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
		t.Fatalf("Append(%q) = %s, encoding/json writes %s", s, got, want.Bytes())
	}
}

func TestAppendAllocs(t *testing.T) {
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { buf = Append(buf[:0], "needs \"escaping\"\n\xff") }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
