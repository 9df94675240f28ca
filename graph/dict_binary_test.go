package graph

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestDictBinaryRoundTrip(t *testing.T) {
	for _, names := range [][]string{
		nil,
		{"Account"},
		{"Account", "Merchant", "", "*", "?3", "日本", "with\x00nul", strings.Repeat("x", 300)},
	} {
		d := NewDict()
		for _, n := range names {
			d.Intern(n)
		}
		prefix := []byte("keep me")
		b := d.AppendBinary(bytes.Clone(prefix))
		if !bytes.HasPrefix(b, prefix) {
			t.Fatalf("AppendBinary overwrote dst: %q", b)
		}
		b = b[len(prefix):]
		got := NewDict()
		got.Intern("stale") // UnmarshalBinary replaces, it does not merge
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("%q: %v", names, err)
		}
		if !slices.Equal(got.Names(), d.Names()) {
			t.Fatalf("names %q, want %q", got.Names(), d.Names())
		}
		if got.Len() != len(names) {
			t.Fatalf("Len %d, want %d", got.Len(), len(names))
		}
		for i, n := range names {
			if l, ok := got.Lookup(n); !ok || l != Label(i) || got.Name(Label(i)) != n {
				t.Fatalf("Lookup(%q) = %d %v, Name = %q", n, l, ok, got.Name(Label(i)))
			}
		}
		if _, ok := got.Lookup("stale"); ok {
			t.Fatal("a name from before UnmarshalBinary survived")
		}
		if l := got.Intern("brand new"); l != Label(len(names)) {
			t.Fatalf("the next label after a load is %d, want %d", l, len(names))
		}
		if again := d.AppendBinary(nil); !bytes.Equal(again, b) {
			t.Fatal("encoding is not deterministic")
		}
	}
}

// randomIDs interns a mix of the id kinds the dictionary distinguishes:
// dense integers in and out of order, sparse integers that go to the map,
// integers near 2^64 (the delta wraps), and strings, some of which look like
// integers but are not ("07", "-1", "+3").
func randomIDs(r *rand.Rand, n int) (*IDs, []string) {
	m := NewIDs()
	var order []string
	for len(order) < n {
		var s string
		switch r.IntN(8) {
		case 0, 1, 2:
			s = strconv.Itoa(len(order) + r.IntN(3))
		case 3:
			s = strconv.FormatUint(r.Uint64(), 10)
		case 4:
			s = strconv.FormatUint(^uint64(0)-uint64(r.IntN(4)), 10)
		case 5:
			s = fmt.Sprintf("acct:%d", r.IntN(n))
		case 6:
			s = []string{"07", "-1", "+3", "", " 5", "1e3", "0x10", "18446744073709551616"}[r.IntN(8)]
		default:
			s = strconv.Itoa(r.IntN(5000))
		}
		if _, isNew, err := m.Intern(s); err != nil {
			panic(err)
		} else if isNew {
			order = append(order, s)
		}
	}
	return m, order
}

// idsDiff says how a and b differ in what they hold and where they hold it
// (dense slice or table), or "" when they do not.
func idsDiff(a, b *IDs) string {
	switch {
	case a.Len() != b.Len():
		return fmt.Sprintf("%d ids, want %d", a.Len(), b.Len())
	case !slices.Equal(a.dense, b.dense):
		return fmt.Sprintf("dense slices of %d and %d differ", len(a.dense), len(b.dense))
	case a.inTable != b.inTable:
		return fmt.Sprintf("%d ids in the table, want %d", a.inTable, b.inTable)
	case !slices.Equal(a.free, b.free):
		return fmt.Sprintf("free lists %v and %v differ", a.free, b.free)
	}
	for id := range VertexID(a.Len()) {
		if a.entry(id) != b.entry(id) {
			return fmt.Sprintf("id %d is %q, want %q", id, a.Name(id), b.Name(id))
		}
	}
	return ""
}

func TestIDsBinaryRoundTrip(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 1))
		n := []int{0, 1, 10, 3000}[seed%4]
		m, order := randomIDs(r, n)
		b := m.AppendBinary(nil)
		got := NewIDs()
		if _, _, err := got.Intern("stale"); err != nil {
			t.Fatal(err)
		}
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		// Replaying Intern must rebuild the very same structure, dense
		// slice included: that is what keeps the fast path after a load.
		if d := idsDiff(got, m); d != "" {
			t.Fatalf("seed %d: loaded IDs differ from the original: %s", seed, d)
		}
		if got.Len() != m.Len() {
			t.Fatalf("seed %d: Len %d, want %d", seed, got.Len(), m.Len())
		}
		for id, s := range order {
			if v, ok := got.Lookup(s); !ok || v != VertexID(id) || got.Name(VertexID(id)) != s {
				t.Fatalf("seed %d: Lookup(%q) = %d %v, Name(%d) = %q", seed, s, v, ok, id, got.Name(VertexID(id)))
			}
		}
		// The two must go on assigning the same ids.
		for range 200 {
			s := strconv.Itoa(r.IntN(2 * (n + 1)))
			a, an, _ := m.Intern(s)
			b, bn, _ := got.Intern(s)
			if a != b || an != bn {
				t.Fatalf("seed %d: after a load Intern(%q) = %d %v, original %d %v", seed, s, b, bn, a, an)
			}
		}
		if d := idsDiff(got, m); d != "" {
			t.Fatalf("seed %d: loaded IDs diverge after more Interns: %s", seed, d)
		}
	}
}

// TestIDsBinaryDense checks the common dataset case: ids 0..n-1 in order
// cost two bytes each and load into the dense slice.
func TestIDsBinaryDense(t *testing.T) {
	m := NewIDs()
	const n = 100_000
	for i := range uint64(n) {
		if _, _, err := m.InternInt(i); err != nil {
			t.Fatal(err)
		}
	}
	b := m.AppendBinary(nil)
	if len(b) > 2*n+16 {
		t.Fatalf("%d bytes for %d sequential ids", len(b), n)
	}
	got := NewIDs()
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if got.inTable != 0 || len(got.dense) != n {
		t.Fatalf("sequential ids loaded into %d table entries and a dense slice of %d", got.inTable, len(got.dense))
	}
}

// TestBinaryBytes pins both formats byte by byte, so that a change to them
// cannot go unnoticed (and needs a new version).
func TestBinaryBytes(t *testing.T) {
	d := NewDict()
	d.Intern("Account")
	d.Intern("")
	if got, want := d.AppendBinary(nil), []byte("GLBL\x01\x02\x07Account\x00"); !bytes.Equal(got, want) {
		t.Fatalf("Dict: %q, want %q", got, want)
	}
	m := NewIDs()
	for _, s := range []string{"0", "1", "acct:7", "18446744073709551615", "3"} {
		if _, _, err := m.Intern(s); err != nil {
			t.Fatal(err)
		}
	}
	want := []byte("GIDS\x02\x05" +
		"\x00\x00" + // 0: delta 0
		"\x00\x02" + // 1: delta +1
		"\x01\x06acct:7" +
		"\x00\x03" + // 2^64-1: delta -2 modulo 2^64
		"\x00\x08" + // 3: delta +4 modulo 2^64
		"\x00") // no free ids
	if got := m.AppendBinary(nil); !bytes.Equal(got, want) {
		t.Fatalf("IDs: %q, want %q", got, want)
	}
	m.Release(2)
	m.Release(0)
	want = []byte("GIDS\x02\x05" +
		"\x02" + // 0: released
		"\x00\x02" + // 1: delta +1 from 0, the start
		"\x02" + // 2: released
		"\x00\x03" + // 2^64-1: delta -2 from 1 modulo 2^64
		"\x00\x08" + // 3
		"\x02\x02\x00") // free list: 2, then 0
	if got := m.AppendBinary(nil); !bytes.Equal(got, want) {
		t.Fatalf("IDs with released ids: %q, want %q", got, want)
	}
	// Version 1, which had no released ids, still loads.
	v1 := []byte("GIDS\x01\x05\x00\x00\x00\x02\x01\x06acct:7\x00\x03\x00\x08")
	got := NewIDs()
	if err := got.UnmarshalBinary(v1); err != nil {
		t.Fatal(err)
	}
	if got.Len() != 5 || got.Name(2) != "acct:7" || got.Name(3) != "18446744073709551615" {
		t.Fatalf("version 1 loaded %d ids: %q %q", got.Len(), got.Name(2), got.Name(3))
	}
}

func TestDictBinaryErrors(t *testing.T) {
	good := NewDict()
	good.Intern("a")
	good.Intern("bc")
	enc := good.AppendBinary(nil) // GLBL 01 02 01 'a' 02 'b' 'c'
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"empty", nil, `at byte 0: missing magic "GLBL"`},
		{"wrong magic", []byte("GIDS\x01\x00"), `at byte 0: missing magic`},
		{"version", []byte("GLBL\x02\x00"), "at byte 4: unsupported version 2"},
		{"no count", []byte("GLBL\x01"), "at byte 5: truncated varint"},
		{"non-minimal", []byte("GLBL\x01\x80\x00"), "at byte 5: varint not minimally encoded"},
		{"overflow", []byte("GLBL\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f"), "at byte 5: varint overflows"},
		{"huge count", []byte("GLBL\x01\xff\xff\xff\xff\x7f"), "more than the"},
		{"short name", enc[:len(enc)-1], "at byte 8: name of 2 bytes, only 1 left"},
		{"missing name", []byte("GLBL\x01\x03\x01a"), "at byte 8: truncated varint"},
		{"duplicate", []byte("GLBL\x01\x02\x01a\x01a"), `at byte 8: label 1 repeats the name "a"`},
		{"trailing", append(bytes.Clone(enc), 0), "at byte 11: 1 trailing bytes"},
	} {
		d := NewDict()
		d.Intern("before")
		err := d.UnmarshalBinary(c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrFormat) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
		if d.Len() != 1 || d.Name(0) != "before" {
			t.Errorf("%s: a failed UnmarshalBinary changed the dictionary", c.name)
		}
	}
}

func TestIDsBinaryErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		b    []byte
		want string
	}{
		{"wrong magic", []byte("GLBL\x01\x00"), `at byte 0: missing magic "GIDS"`},
		{"version", []byte("GIDS\x00\x00"), "at byte 4: unsupported version 0"},
		{"future version", []byte("GIDS\x03\x00"), "at byte 4: unsupported version 3 (this build reads 1 to 2)"},
		{"released in version 1", []byte("GIDS\x01\x01\x02"), "at byte 6: id 0: unknown entry kind 0x2"},
		{"free list too short", []byte("GIDS\x02\x01\x02\x00"), "at byte 7: a free list of 0 ids for 1 released ones"},
		{"free id in use", []byte("GIDS\x02\x02\x02\x00\x00\x01\x01"), "at byte 10: free id 1 is not a released id, or repeats"},
		{"free id repeats", []byte("GIDS\x02\x02\x02\x02\x02\x00\x00"), "at byte 10: free id 0 is not a released id, or repeats"},
		{"huge count", []byte("GIDS\x01\xff\xff\xff\xff\x7f"), "more than the 2147483648 vertices"},
		{"unknown kind", []byte("GIDS\x01\x01\x07"), "at byte 6: id 0: unknown entry kind 0x7"},
		{"missing entry", []byte("GIDS\x01\x02\x00\x02"), "at byte 8: truncated"},
		// 5, then a delta of 0 from it: 5 again.
		{"duplicate int", []byte("GIDS\x01\x02\x00\x0a\x00\x00"), "at byte 8: id 1 repeats the integer 5 of id 0"},
		{"duplicate string", []byte("GIDS\x01\x02\x01\x01x\x01\x01x"), `at byte 9: id 1 repeats the name "x" of id 0`},
		{"string spells int", []byte("GIDS\x01\x01\x01\x0242"), `at byte 6: id 0: the string "42" spells an integer id`},
		{"string too long", []byte("GIDS\x01\x01\x01\x05ab"), "at byte 7: name of 5 bytes, only 2 left"},
		{"trailing", []byte("GIDS\x01\x00\x00"), "at byte 6: 1 trailing bytes"},
		{"trailing after the free list", []byte("GIDS\x02\x00\x00\x00"), "at byte 7: 1 trailing bytes"},
	} {
		m := NewIDs()
		if _, _, err := m.Intern("before"); err != nil {
			t.Fatal(err)
		}
		err := m.UnmarshalBinary(c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrFormat) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
		if m.Len() != 1 || m.Name(0) != "before" {
			t.Errorf("%s: a failed UnmarshalBinary changed the map", c.name)
		}
	}
	// A string that is not canonical decimal stays a string: "07" is fine.
	m := NewIDs()
	if err := m.UnmarshalBinary([]byte("GIDS\x01\x01\x01\x0207")); err != nil {
		t.Fatal(err)
	}
	if id, ok := m.Lookup("07"); !ok || id != 0 {
		t.Fatalf(`Lookup("07") = %d %v`, id, ok)
	}
	if _, ok := m.Lookup("7"); ok {
		t.Fatal(`"07" loaded as the integer 7`)
	}
}

// The fuzz targets feed arbitrary bytes: decoding must not panic, and what
// decodes must encode back to the same bytes (the format is canonical), so a
// decoder that accepted and then dropped or changed something would fail.

func FuzzDictUnmarshal(f *testing.F) {
	f.Add([]byte("GLBL\x01\x00"))
	f.Add([]byte("GLBL\x01\x02\x01a\x02bc"))
	f.Add([]byte("GLBL\x01\x02\x01a\x01a"))
	d := NewDict()
	for _, s := range []string{"Account", "Merchant", "", "TRANSFER"} {
		d.Intern(s)
	}
	f.Add(d.AppendBinary(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Dict
		if err := d.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		if again := d.AppendBinary(nil); !bytes.Equal(again, b) {
			t.Fatalf("decoded %q, re-encoded as %q", b, again)
		}
	})
}

func FuzzIDsUnmarshal(f *testing.F) {
	f.Add([]byte("GIDS\x01\x00"))
	f.Add([]byte("GIDS\x01\x02\x00\x0a\x01\x02ab"))
	f.Add([]byte("GIDS\x01\x01\x01\x0207"))
	f.Add([]byte("GIDS\x02\x03\x02\x00\x0a\x02\x02\x02\x00"))
	for seed := range uint64(3) {
		m, _ := randomIDs(rand.New(rand.NewPCG(seed, 2)), 20)
		f.Add(m.AppendBinary(nil))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m IDs
		if err := m.UnmarshalBinary(b); err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
			return
		}
		// Version 1 re-encodes as version 2 with an empty free list.
		want := b
		if b[4] == 1 {
			want = append(append([]byte("GIDS\x02"), b[5:]...), 0)
		}
		if again := m.AppendBinary(nil); !bytes.Equal(again, want) {
			t.Fatalf("decoded %q, re-encoded as %q", b, again)
		}
		for id := range VertexID(m.Len()) {
			if m.entry(id).kind == idFree {
				continue
			}
			if got, ok := m.Lookup(m.Name(id)); !ok || got != id {
				t.Fatalf("Lookup(Name(%d) = %q) = %d %v", id, m.Name(id), got, ok)
			}
		}
		// Released ids are reused, in the free list's order.
		free := slices.Clone(m.free)
		for i := len(free) - 1; i >= 0; i-- {
			if id, isNew, err := m.Intern("new:" + strconv.Itoa(i)); err != nil || !isNew || id != free[i] {
				t.Fatalf("Intern after load = %d %v %v, want the free id %d", id, isNew, err, free[i])
			}
		}
	})
}
