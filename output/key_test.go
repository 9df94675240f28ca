package output

import (
	"fmt"
	"strings"
	"testing"
)

// ring3Form is the canonical form (query.Pattern.Form, whose TestPatternFormGolden holds the same text) of
// (a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a).
const ring3Form = "v \"a\" \"Account\"\nv \"b\" \"Account\"\nv \"c\" \"Account\"\n" +
	"e 0 1 \"\" \"TRANSFER\" ->\ne 1 2 \"\" \"TRANSFER\" ->\ne 2 0 \"\" \"TRANSFER\" ->\n"

func TestKeyGolden(t *testing.T) {
	// Computed independently, in Python:
	// sha256(bytes([len(form)]) + form + b"\x01a\x07acct:17\x01b\x07acct:42\x01c\x06acct:9")[:16], form 117 bytes.
	// A changed value here changes every key that consumers and compacted topics hold: do it on purpose.
	m := []Binding{{"a", "acct:17"}, {"b", "acct:42"}, {"c", "acct:9"}}
	if got, want := Key("ring3", ring3Form, m), "ring3/e822317f07755e45464aca07f800ca03"; got != want {
		t.Fatalf("Key = %q, want %q", got, want)
	}
	// An empty pattern still writes its length, a 0 byte.
	if got, want := Key("ring3", "", m), "ring3/ff8281fc3aa2edd9513ef343f4697a18"; got != want {
		t.Fatalf("Key with no pattern = %q, want %q", got, want)
	}
}

func TestKeyOrderIndependent(t *testing.T) {
	m := []Binding{{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}}
	want := Key("q", "p", m)
	perms := [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 0, 3, 2}, {2, 3, 0, 1}, {0, 2, 1, 3}, {3, 0, 2, 1}}
	for _, p := range perms {
		var pm []Binding
		for _, i := range p {
			pm = append(pm, m[i])
		}
		if got := Key("q", "p", pm); got != want {
			t.Errorf("Key(%v) = %q, want %q as for %v", pm, got, want, m)
		}
	}
	// Key must not reorder the caller's slice.
	r := []Binding{{"b", "2"}, {"a", "1"}}
	Key("q", "p", r)
	if r[0].Var != "b" {
		t.Errorf("Key reordered its argument: %v", r)
	}
}

func TestKeyManyBindings(t *testing.T) {
	// More bindings than the stack buffers hold, and an encoding longer than 512 bytes.
	var m, rev []Binding
	for i := 0; i < 40; i++ {
		m = append(m, Binding{fmt.Sprintf("v%02d", i), strings.Repeat("x", 20) + fmt.Sprint(i)})
	}
	for i := len(m) - 1; i >= 0; i-- {
		rev = append(rev, m[i])
	}
	if Key("q", "p", m) != Key("q", "p", rev) {
		t.Fatal("key of 40 bindings depends on their order")
	}
}

func TestKeyDistinct(t *testing.T) {
	base := []Binding{{"a", "acct:17"}, {"b", "acct:42"}}
	cases := []struct {
		query, pattern string
		match          []Binding
	}{
		{"ring3", "p", base},
		{"ring4", "p", base},
		{"ring3", "p", []Binding{{"a", "acct:17"}, {"b", "acct:43"}}},
		{"ring3", "p", []Binding{{"a", "acct:42"}, {"b", "acct:17"}}}, // same vertex set, other map
		{"ring3", "p", []Binding{{"a", "acct:17"}, {"c", "acct:42"}}},
		{"ring3", "p", []Binding{{"a", "acct:17"}}},
		{"ring3", "p", []Binding{{"a", "acct:17"}, {"b", "acct:42"}, {"c", "acct:9"}}},
		{"ring3", "p", nil},
		// The same name and match under another pattern, and pattern bytes
		// that could run into the bindings without the length prefix.
		{"ring3", "p2", base},
		{"ring3", "", base},
		{"q", "p\x01a", []Binding{{"", "x"}}},
		{"q", "p", []Binding{{"a", "x"}}},
		// Concatenation ambiguities: "var=id" joined naively would collide among these.
		{"q", "p", []Binding{{"a", "b=c"}}},
		{"q", "p", []Binding{{"a=b", "c"}}},
		{"q", "p", []Binding{{"a", "bc"}}},
		{"q", "p", []Binding{{"ab", "c"}}},
		{"q", "p", []Binding{{"a", "b"}, {"c", "d"}}},
		{"q", "p", []Binding{{"a", "b\x00c\x00d"}}},
		{"q", "p", []Binding{{"a", "b\x01c\x01d"}}},
		{"q", "p", []Binding{{"a", "\x01b"}}},
		{"q", "p", []Binding{{"a\x01", "b"}}},
		{"q", "p", []Binding{{"", "ab"}}},
		{"q", "p", []Binding{{"", ""}}},
		{"q", "p", []Binding{{"", ""}, {"", ""}}},
	}
	seen := map[string]int{}
	for i, c := range cases {
		k := Key(c.query, c.pattern, c.match)
		if j, ok := seen[k]; ok {
			t.Errorf("case %d %q %q %v and case %d share key %q", i, c.query, c.pattern, c.match, j, k)
		}
		seen[k] = i
		if !strings.HasPrefix(k, c.query+"/") || len(k) != len(c.query)+1+2*keyHashBytes {
			t.Errorf("Key(%q, %q, %v) = %q, want query/32 hex digits", c.query, c.pattern, c.match, k)
		}
	}
}

func TestKeyAllocs(t *testing.T) {
	m := []Binding{{"c", "acct:9"}, {"a", "acct:17"}, {"b", "acct:42"}}
	if n := testing.AllocsPerRun(100, func() { Key("ring3", ring3Form, m) }); n > 1 {
		t.Errorf("Key allocates %v times, want only its result", n)
	}
}

func BenchmarkKey(b *testing.B) {
	m := []Binding{{"d", "acct:1000017"}, {"a", "acct:17"}, {"c", "acct:9"}, {"b", "acct:42"}}
	b.ReportAllocs()
	for b.Loop() {
		Key("diamond", ring3Form, m)
	}
}
