package graph

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestDict(t *testing.T) {
	d := NewDict()
	if a, b := d.Intern("Account"), d.Intern("Merchant"); a != 0 || b != 1 {
		t.Fatalf("first labels got %d, %d", a, b)
	}
	if l := d.Intern("Account"); l != 0 {
		t.Fatalf("re-interning gave %d", l)
	}
	if l, ok := d.Lookup("Merchant"); !ok || l != 1 {
		t.Fatalf("Lookup = %d, %v", l, ok)
	}
	if _, ok := d.Lookup("nope"); ok {
		t.Fatal("Lookup found an unknown name")
	}
	if d.Name(1) != "Merchant" || d.Name(Wildcard) != "*" || d.Len() != 2 {
		t.Fatalf("Name/Len: %q %q %d", d.Name(1), d.Name(Wildcard), d.Len())
	}
}

// TestIDs covers both id spaces: small integers (the dense slice), large
// integers (the map) and strings, which must agree on spelling rules.
func TestIDs(t *testing.T) {
	m := NewIDs()
	names := []string{"0", "5", "acct:17", "4000000000", "5", "07", "7", "", "18446744073709551615"}
	want := map[string]VertexID{}
	next := VertexID(0)
	for _, n := range names {
		id, isNew, err := m.Intern(n)
		if err != nil {
			t.Fatal(err)
		}
		if old, seen := want[n]; seen {
			if isNew || id != old {
				t.Fatalf("Intern(%q) again: id %d new %v, want %d", n, id, isNew, old)
			}
			continue
		}
		if !isNew || id != next {
			t.Fatalf("Intern(%q) = %d new %v, want %d", n, id, isNew, next)
		}
		want[n] = id
		next++
	}
	// "07" is not the integer 7: leading zeros make it a string id.
	if want["07"] == want["7"] {
		t.Fatal(`"07" and "7" are one vertex`)
	}
	for n, id := range want {
		if got, ok := m.Lookup(n); !ok || got != id {
			t.Fatalf("Lookup(%q) = %d %v, want %d", n, got, ok, id)
		}
		if m.Name(id) != n {
			t.Fatalf("Name(%d) = %q, want %q", id, m.Name(id), n)
		}
	}
	if m.Len() != len(want) {
		t.Fatalf("Len = %d, want %d", m.Len(), len(want))
	}
	if _, ok := m.Lookup("123456"); ok {
		t.Fatal("Lookup found an unknown integer")
	}
}

// TestIDsDenseGrowth interns many integers out of order and checks the
// round trip, so that the dense slice's growth rule and the map fallback
// both run.
func TestIDsDenseGrowth(t *testing.T) {
	m := NewIDs()
	for i := 0; i < 5000; i++ {
		n := uint64((i * 7919) % 5000)
		if i%100 == 0 {
			n += 1 << 40 // sparse: must go to the map
		}
		id, _, err := m.InternInt(n)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := m.Lookup(strconv.FormatUint(n, 10)); !ok || got != id {
			t.Fatalf("Lookup(%d) = %d %v, want %d", n, got, ok, id)
		}
	}
	if len(m.dense) > 4*m.Len()+1024 {
		t.Fatalf("dense slice of %d for %d ids", len(m.dense), m.Len())
	}
}

// TestInternCopiesNames: the dictionaries keep their own copy of a new
// name, not the caller's string, which may be a small part of a large
// allocation (a decoded event's strings share one) that would otherwise
// stay alive as long as the name is known.
func TestInternCopiesNames(t *testing.T) {
	const n, size = 64, 1 << 20
	ids, labels := NewIDs(), NewDict()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		big := strings.Repeat("x", size) + "acct:" + strconv.Itoa(i)
		if _, _, err := ids.Intern(big[size:]); err != nil {
			t.Fatal(err)
		}
		labels.Intern(big[size-3:])
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > n*size/8 {
		t.Errorf("interning %d short names kept %d bytes alive", 2*n, grown)
	}
	for i := range n {
		if _, ok := ids.Lookup("acct:" + strconv.Itoa(i)); !ok {
			t.Fatalf("acct:%d is not found", i)
		}
	}
	runtime.KeepAlive(ids)
	runtime.KeepAlive(labels)
}

// TestIDsManyNames interns enough string and sparse integer ids to grow the
// table and the arena many times, with names long enough to need their own
// arena chunk, and checks every id both ways.
func TestIDsManyNames(t *testing.T) {
	m := NewIDs()
	long := strings.Repeat("z", 2<<20)
	var names []string
	for i := range 200_000 {
		switch {
		case i%3 == 0:
			names = append(names, "acct:"+strconv.Itoa(i))
		case i%3 == 1:
			names = append(names, strconv.FormatUint(1<<40+uint64(i)*7919, 10))
		case i == 5:
			names = append(names, long)
		default:
			names = append(names, "m"+strconv.Itoa(i))
		}
	}
	for i, n := range names {
		if id, isNew, err := m.Intern(n); err != nil || !isNew || id != VertexID(i) {
			t.Fatalf("Intern(%.20q) = %d %v %v, want %d, new", n, id, isNew, err, i)
		}
	}
	for i, n := range names {
		if id, isNew, _ := m.Intern(n); isNew || id != VertexID(i) {
			t.Fatalf("Intern(%.20q) again = %d %v, want %d", n, id, isNew, i)
		}
		if m.Name(VertexID(i)) != n {
			t.Fatalf("Name(%d) = %.20q, want %.20q", i, m.Name(VertexID(i)), n)
		}
	}
	if _, ok := m.Lookup("acct:1"); ok {
		t.Fatal("Lookup found an id never interned")
	}
}

// TestIDsNameWhileInterning reads the names of published ids on other
// goroutines while interning goes on, as the service does (run it with
// -race): a published entry and its bytes must never move or change.
func TestIDsNameWhileInterning(t *testing.T) {
	m := NewIDs()
	const readers, n = 3, 50_000
	ch := make([]chan VertexID, readers)
	done := make(chan error, readers)
	for r := range readers {
		ch[r] = make(chan VertexID, 64)
		go func() {
			var err error
			for id := range ch[r] {
				if got, want := m.Name(id), "acct:"+strconv.Itoa(int(id)); got != want && err == nil {
					err = fmt.Errorf("Name(%d) = %q, want %q", id, got, want)
				}
				_ = m.Len()
			}
			done <- err
		}()
	}
	for i := range n {
		id, _, err := m.Intern("acct:" + strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		ch[i%readers] <- id
	}
	for r := range readers {
		close(ch[r])
	}
	for range readers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkIntern interns a million account names, each a few times, in a
// Zipf-like order, as a transfer stream does.
func BenchmarkIntern(b *testing.B) {
	const accounts = 1 << 20
	names := make([]string, 4*accounts)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range names {
		names[i] = "acct:" + strconv.Itoa(int(float64(accounts)*r.Float64()*r.Float64()))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		m := NewIDs()
		for _, n := range names {
			if _, _, err := m.Intern(n); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(names)), "ns/intern")
}

// TestIDsReleaseModel interns and releases ids at random, as a stream whose
// accounts come and go does, and checks the map against a plain Go map after
// every step: lookups, names, reuse of released ids (last released first),
// and Live. Removing from the open-addressing table moves entries back, and
// a mistake there loses ids other than the one released.
func TestIDsReleaseModel(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 3))
		m := NewIDs()
		model := map[string]VertexID{}
		var free []VertexID
		universe := []int{50, 500, 5000}[seed%3]
		name := func() string {
			k := r.IntN(universe)
			switch k % 3 {
			case 0:
				return strconv.Itoa(k) // dense
			case 1:
				return strconv.FormatUint(1<<50+uint64(k), 10) // sparse: the table
			}
			return "acct:" + strconv.Itoa(k)
		}
		for step := range 20_000 {
			n := name()
			if id, ok := model[n]; ok && r.IntN(2) == 0 {
				m.Release(id)
				delete(model, n)
				free = append(free, id)
			} else {
				id, isNew, err := m.Intern(n)
				if err != nil {
					t.Fatal(err)
				}
				if old, ok := model[n]; ok != !isNew || ok && old != id {
					t.Fatalf("seed %d step %d: Intern(%q) = %d new %v, model %d %v", seed, step, n, id, isNew, old, ok)
				}
				if isNew && len(free) > 0 {
					if want := free[len(free)-1]; id != want {
						t.Fatalf("seed %d step %d: new id %d, want the last released %d", seed, step, id, want)
					}
					free = free[:len(free)-1]
				}
				model[n] = id
			}
			if step%997 == 0 || step == 19_999 {
				for n, id := range model {
					if got, ok := m.Lookup(n); !ok || got != id || m.Name(id) != n {
						t.Fatalf("seed %d step %d: Lookup(%q) = %d %v, Name = %q; want %d", seed, step, n, got, ok, m.Name(id), id)
					}
				}
				if m.Live() != len(model) {
					t.Fatalf("seed %d step %d: Live %d, model holds %d", seed, step, m.Live(), len(model))
				}
			}
		}
		// A released name is gone, and the map round-trips with its holes.
		got := NewIDs()
		if err := got.UnmarshalBinary(m.AppendBinary(nil)); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for i := range universe {
			n := strconv.Itoa(i)
			a, aok := m.Lookup(n)
			b, bok := got.Lookup(n)
			if a != b || aok != bok {
				t.Fatalf("seed %d: after a load Lookup(%q) = %d %v, original %d %v", seed, n, b, bok, a, aok)
			}
		}
		for i := range 100 {
			n := "new:" + strconv.Itoa(i)
			a, _, _ := m.Intern(n)
			b, _, _ := got.Intern(n)
			if a != b {
				t.Fatalf("seed %d: after a load %q got %d, original %d", seed, n, b, a)
			}
		}
	}
}

// TestIDsLookupMany checks LookupMany against Lookup on a dictionary of
// string, dense and sparse integer ids with some released, for names
// present, released and never seen, in groups that end mid-way.
func TestIDsLookupMany(t *testing.T) {
	m := NewIDs()
	var names []string
	for i := range 5000 {
		var n string
		switch i % 4 {
		case 0, 1:
			n = "acct:" + strconv.Itoa(i)
		case 2:
			n = strconv.Itoa(i)
		default:
			n = strconv.FormatUint(1<<40+uint64(i)*7919, 10)
		}
		if _, _, err := m.Intern(n); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	for i := 0; i < len(names); i += 7 {
		id, _ := m.Lookup(names[i])
		m.Release(id)
	}
	// The empty name, interned, and unknown names of every kind.
	if _, _, err := m.Intern(""); err != nil {
		t.Fatal(err)
	}
	names = append(names, "", "acct:x", "123456789", "1099511627776999", "acct:5000")
	r := rand.New(rand.NewPCG(3, 4))
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	for _, n := range []int{0, 1, lookupGroup - 1, lookupGroup, lookupGroup + 1, len(names)} {
		ids, found := make([]VertexID, n), make([]bool, n)
		m.LookupMany(names[:n], ids, found)
		for i, name := range names[:n] {
			if id, ok := m.Lookup(name); ok != found[i] || ok && id != ids[i] {
				t.Fatalf("LookupMany(%q) = %d %v, Lookup = %d %v", name, ids[i], found[i], id, ok)
			}
		}
	}
	ids, found := []VertexID{7}, []bool{true}
	NewIDs().LookupMany([]string{"a"}, ids, found)
	if found[0] {
		t.Fatal("LookupMany found a name in an empty dictionary")
	}
}
