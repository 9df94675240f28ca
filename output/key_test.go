package output

import (
	"fmt"
	"strings"
	"testing"
)

func TestKeyGolden(t *testing.T) {
	// Computed independently: sha256(b"\x01a\x07acct:17\x01b\x07acct:42\x01c\x06acct:9")[:16] in Python.
	// A changed value here changes every key that consumers and compacted topics hold: do it on purpose.
	got := Key("ring3", []Binding{{"a", "acct:17"}, {"b", "acct:42"}, {"c", "acct:9"}})
	const want = "ring3/147911d9496a74674d373482ba6cb16c"
	if got != want {
		t.Fatalf("Key = %q, want %q", got, want)
	}
}

func TestKeyOrderIndependent(t *testing.T) {
	m := []Binding{{"a", "1"}, {"b", "2"}, {"c", "3"}, {"d", "4"}}
	want := Key("q", m)
	perms := [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 0, 3, 2}, {2, 3, 0, 1}, {0, 2, 1, 3}, {3, 0, 2, 1}}
	for _, p := range perms {
		var pm []Binding
		for _, i := range p {
			pm = append(pm, m[i])
		}
		if got := Key("q", pm); got != want {
			t.Errorf("Key(%v) = %q, want %q as for %v", pm, got, want, m)
		}
	}
	// Key must not reorder the caller's slice.
	r := []Binding{{"b", "2"}, {"a", "1"}}
	Key("q", r)
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
	if Key("q", m) != Key("q", rev) {
		t.Fatal("key of 40 bindings depends on their order")
	}
}

func TestKeyDistinct(t *testing.T) {
	base := []Binding{{"a", "acct:17"}, {"b", "acct:42"}}
	cases := []struct {
		query string
		match []Binding
	}{
		{"ring3", base},
		{"ring4", base},
		{"ring3", []Binding{{"a", "acct:17"}, {"b", "acct:43"}}},
		{"ring3", []Binding{{"a", "acct:42"}, {"b", "acct:17"}}}, // same vertex set, other map
		{"ring3", []Binding{{"a", "acct:17"}, {"c", "acct:42"}}},
		{"ring3", []Binding{{"a", "acct:17"}}},
		{"ring3", []Binding{{"a", "acct:17"}, {"b", "acct:42"}, {"c", "acct:9"}}},
		{"ring3", nil},
		// Concatenation ambiguities: "var=id" joined naively would collide among these.
		{"q", []Binding{{"a", "b=c"}}},
		{"q", []Binding{{"a=b", "c"}}},
		{"q", []Binding{{"a", "bc"}}},
		{"q", []Binding{{"ab", "c"}}},
		{"q", []Binding{{"a", "b"}, {"c", "d"}}},
		{"q", []Binding{{"a", "b\x00c\x00d"}}},
		{"q", []Binding{{"a", "b\x01c\x01d"}}},
		{"q", []Binding{{"a", "\x01b"}}},
		{"q", []Binding{{"a\x01", "b"}}},
		{"q", []Binding{{"", "ab"}}},
		{"q", []Binding{{"", ""}}},
		{"q", []Binding{{"", ""}, {"", ""}}},
	}
	seen := map[string]int{}
	for i, c := range cases {
		k := Key(c.query, c.match)
		if j, ok := seen[k]; ok {
			t.Errorf("case %d %q %v and case %d %q %v share key %q", i, c.query, c.match, j, cases[j].query, cases[j].match, k)
		}
		seen[k] = i
		if !strings.HasPrefix(k, c.query+"/") || len(k) != len(c.query)+1+2*keyHashBytes {
			t.Errorf("Key(%q, %v) = %q, want query/32 hex digits", c.query, c.match, k)
		}
	}
}

func TestKeyAllocs(t *testing.T) {
	m := []Binding{{"c", "acct:9"}, {"a", "acct:17"}, {"b", "acct:42"}}
	if n := testing.AllocsPerRun(100, func() { Key("ring3", m) }); n > 1 {
		t.Errorf("Key allocates %v times, want only its result", n)
	}
}

func BenchmarkKey(b *testing.B) {
	m := []Binding{{"d", "acct:1000017"}, {"a", "acct:17"}, {"c", "acct:9"}, {"b", "acct:42"}}
	b.ReportAllocs()
	for b.Loop() {
		Key("diamond", m)
	}
}
