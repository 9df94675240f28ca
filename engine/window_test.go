package engine

import (
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gcsm/gcsm/graph"
)

// expiryModel is Expiry done the obvious way: a map, scanned in full.
type expiryModel struct {
	size, lateness int64
	directed       bool
	maxTime        int64
	live           map[graph.Edge]int64
}

func (m *expiryModel) key(e graph.Edge) graph.Edge {
	if !m.directed && e.Src > e.Dst {
		e.Src, e.Dst = e.Dst, e.Src
	}
	return e
}

func (m *expiryModel) observe(e graph.Edge, ts int64) {
	m.maxTime = max(m.maxTime, ts)
	if m.size == 0 {
		return
	}
	k := m.key(e)
	if last, ok := m.live[k]; !ok || ts > last {
		m.live[k] = ts
	}
}

// cutoff needs no saturation: the test's times are far from overflow.
func (m *expiryModel) cutoff() (int64, bool) {
	if m.size == 0 || m.maxTime == math.MinInt64 {
		return 0, false
	}
	return m.maxTime - m.lateness - m.size, true
}

func (m *expiryModel) expire() []graph.Update {
	cut, ok := m.cutoff()
	if !ok {
		return nil
	}
	var old []expiryEntry
	for e, t := range m.live {
		if t < cut {
			old = append(old, expiryEntry{t, e})
			delete(m.live, e)
		}
	}
	slices.SortFunc(old, entryCompare)
	var out []graph.Update
	for _, en := range old {
		out = append(out, graph.Update{Op: graph.Delete, Src: en.e.Src, Dst: en.e.Dst, Label: en.e.Label, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel})
	}
	return out
}

// checkBounds checks the memory bound: stale heap entries never outnumber
// the live edges (beyond minStale), and a map that has shrunk to a quarter
// of its peak has been rebuilt.
func checkBounds(t *testing.T, x *Expiry) {
	t.Helper()
	live, stale := len(x.live), len(x.heap)-len(x.live)
	if stale > max(live, minStale) {
		t.Fatalf("%d stale heap entries for %d live edges", stale, live)
	}
	if x.peak > 4*minStale && live < x.peak/4 {
		t.Fatalf("%d live edges of a peak of %d, and the map is not rebuilt", live, x.peak)
	}
}

// TestExpiryModel runs random streams of inserts, refreshes, deletes and
// out-of-order times through an Expiry and the model, checkpointing and
// restoring the Expiry now and then.
func TestExpiryModel(t *testing.T) {
	windows := []Window{{}, {Size: time.Millisecond}, {Size: 100 * time.Millisecond}, {Size: 100 * time.Millisecond, Lateness: 30 * time.Millisecond}}
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		w := windows[seed%uint64(len(windows))]
		directed := seed%3 == 0
		x := NewExpiry(w, directed)
		m := &expiryModel{size: w.Size.Milliseconds(), lateness: w.Lateness.Milliseconds(), directed: directed,
			maxTime: math.MinInt64, live: map[graph.Edge]int64{}}
		// Few vertices and labels, so that edges come back; a clock that
		// drifts forward with events up to 60 ms out of order.
		nv := 2 + rng.IntN(30)
		clock := rng.Int64N(1e12) - 5e11
		expired := 0
		for step := range 3000 {
			e := graph.Edge{Src: graph.VertexID(rng.IntN(nv)), Dst: graph.VertexID(rng.IntN(nv)), Label: graph.Label(rng.IntN(2))}
			clock += rng.Int64N(5)
			ts := clock - rng.Int64N(60)
			switch r := rng.IntN(10); {
			case r < 6:
				x.Observe(e, ts)
				m.observe(e, ts)
			case r < 8:
				x.Forget(e)
				delete(m.live, m.key(e))
			case r < 9:
				x.Advance(ts)
				m.maxTime = max(m.maxTime, ts)
			default:
				got, want := x.Expire(nil), m.expire()
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: Expire\n got %v\nwant %v", seed, step, got, want)
				}
				expired += len(got)
			}
			if x.Len() != len(m.live) {
				t.Fatalf("seed %d step %d: Len %d, want %d", seed, step, x.Len(), len(m.live))
			}
			wantWM := int64(math.MinInt64)
			if m.maxTime != math.MinInt64 {
				wantWM = m.maxTime - m.lateness
			}
			if x.Watermark() != wantWM {
				t.Fatalf("seed %d step %d: Watermark %d, want %d", seed, step, x.Watermark(), wantWM)
			}
			probe := clock - rng.Int64N(300)
			cut, ok := m.cutoff()
			if late := ok && probe < cut; x.Late(probe) != late {
				t.Fatalf("seed %d step %d: Late(%d) = %v, want %v", seed, step, probe, !late, late)
			}
			checkBounds(t, x)
			if step%500 == 499 {
				y := NewExpiry(w, directed)
				if err := y.UnmarshalBinary(x.AppendBinary(nil)); err != nil {
					t.Fatalf("seed %d step %d: %v", seed, step, err)
				}
				x = y
			}
		}
		if w.Size == 0 && (x.Len() != 0 || expired != 0) {
			t.Fatalf("seed %d: no window, yet %d edges tracked and %d expired", seed, x.Len(), expired)
		}
	}
}

// TestExpiryMemory refreshes a fixed set of edges over and over, then
// expires most of them: the heap must stay within twice the live edges
// and give memory back once they are gone.
func TestExpiryMemory(t *testing.T) {
	x := NewExpiry(Window{Size: time.Second}, true)
	const n = 1000
	for ts := range int64(50) {
		for i := range n {
			x.Observe(graph.Edge{Src: graph.VertexID(i), Dst: graph.VertexID(i + 1)}, ts)
			checkBounds(t, x)
		}
	}
	if x.Len() != n || len(x.heap) > 2*n {
		t.Fatalf("%d edges in a heap of %d entries, want %d in at most %d", x.Len(), len(x.heap), n, 2*n)
	}
	x.Observe(graph.Edge{Src: 0, Dst: 1}, 10_000)
	if got := x.Expire(nil); len(got) != n-1 {
		t.Fatalf("expired %d edges, want %d", len(got), n-1)
	}
	checkBounds(t, x)
	if x.Len() != 1 || cap(x.heap) > 4*minStale {
		t.Fatalf("%d edge left in a heap of capacity %d", x.Len(), cap(x.heap))
	}
}

func TestExpiryEdges(t *testing.T) {
	x := NewExpiry(Window{Size: 10 * time.Millisecond, Lateness: 5 * time.Millisecond}, false)
	if x.Watermark() != math.MinInt64 || x.Late(math.MinInt64) || len(x.Expire(nil)) != 0 {
		t.Fatalf("an Expiry without events has watermark %d", x.Watermark())
	}
	ab, ba := graph.Edge{Src: 1, Dst: 2, Label: 3}, graph.Edge{Src: 2, Dst: 1, Label: 3}
	x.Observe(ba, 100)
	x.Observe(ab, 90) // the same edge, out of order: its time stays 100
	x.Observe(graph.Edge{Src: 5, Dst: 4}, 110)
	x.Advance(120)
	// Watermark 115, cutoff 105: (1,2,3) at 100 goes, (4,5,0) at 110 stays.
	if x.Watermark() != 115 || !x.Late(104) || x.Late(105) {
		t.Fatalf("watermark %d, Late(104) %v, Late(105) %v", x.Watermark(), x.Late(104), x.Late(105))
	}
	want := []graph.Update{{Op: graph.Delete, Src: 1, Dst: 2, Label: 3, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}}
	prefix := []graph.Update{{Op: graph.Insert}}
	if got := x.Expire(prefix); !slices.Equal(got[1:], want) || got[0] != prefix[0] {
		t.Fatalf("Expire = %v, want %v after the prefix", got, want)
	}
	x.Forget(graph.Edge{Src: 4, Dst: 5})
	if x.Len() != 0 {
		t.Fatalf("Len %d after forgetting every edge", x.Len())
	}

	// At the bottom of int64 the watermark and the cutoff saturate rather
	// than wrap around to the top, which would expire everything.
	y := NewExpiry(Window{Size: time.Hour, Lateness: time.Hour}, true)
	e1, e2 := graph.Edge{Src: 1, Dst: 2}, graph.Edge{Src: 2, Dst: 3}
	y.Observe(e2, math.MinInt64+5)
	y.Observe(e1, math.MinInt64+1)
	if y.Watermark() != math.MinInt64 || y.Late(math.MinInt64) || len(y.Expire(nil)) != 0 {
		t.Fatalf("watermark %d near the bottom of int64", y.Watermark())
	}
	y.Observe(graph.Edge{Src: 3, Dst: 4}, math.MaxInt64)
	want = []graph.Update{
		{Op: graph.Delete, Src: 1, Dst: 2, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel},
		{Op: graph.Delete, Src: 2, Dst: 3, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel},
	}
	if got := y.Expire(nil); !slices.Equal(got, want) || y.Watermark() != math.MaxInt64-3600_000 {
		t.Fatalf("at the top of int64: Expire = %v, watermark %d", got, y.Watermark())
	}

	// The largest window, rounded up to whole milliseconds, and the smallest.
	if x := NewExpiry(Window{Size: time.Duration(math.MaxInt64), Lateness: time.Nanosecond}, true); x.size != math.MaxInt64/int64(time.Millisecond)+1 || x.lateness != 1 {
		t.Fatalf("window of %d ms, lateness %d ms", x.size, x.lateness)
	}
}

// seal ends an encoding with its CRC-32C, as AppendBinary does.
func seal(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

// TestExpiryEncoding pins the encoding, byte by byte.
func TestExpiryEncoding(t *testing.T) {
	x := NewExpiry(Window{Size: time.Second}, false)
	x.Observe(graph.Edge{Src: 300, Dst: 2, Label: 1}, 1000)
	x.Observe(graph.Edge{Src: 1, Dst: 2, Label: 0}, 1002)
	x.Observe(graph.Edge{Src: 1, Dst: 2, Label: 0}, 999) // no change
	x.Advance(1005)
	const want = "" +
		"4743455801" + // "GCEX", version 1
		"02" + // flags: undirected, an event seen
		"da0f" + // max time 1005, zigzag
		"02" + // two edges
		"d00f" + "02" + "ac02" + "01" + // time 1000 (zigzag), 2, 300, label 1
		"02" + "01" + "02" + "00" // time +2, 1, 2, label 0
	enc := x.AppendBinary([]byte("prefix"))
	if !strings.HasPrefix(string(enc), "prefix") {
		t.Fatalf("AppendBinary overwrote dst: %q", enc)
	}
	enc = enc[len("prefix"):]
	wantBytes, _ := hex.DecodeString(want)
	if got := hex.EncodeToString(enc); got != hex.EncodeToString(seal(wantBytes)) {
		t.Fatalf("encoding\n got %s\nwant %s + CRC", got, want)
	}
	y := NewExpiry(Window{Size: time.Second}, false)
	if err := y.UnmarshalBinary(enc); err != nil {
		t.Fatal(err)
	}
	if string(y.AppendBinary(nil)) != string(enc) || y.Watermark() != 1005 || y.Len() != 2 {
		t.Fatalf("decoded state differs: watermark %d, %d edges", y.Watermark(), y.Len())
	}
	// A receiver without a window keeps the watermark and drops the edges.
	z := NewExpiry(Window{}, false)
	if err := z.UnmarshalBinary(enc); err != nil || z.Len() != 0 || z.Watermark() != 1005 {
		t.Fatalf("no window: %v, %d edges, watermark %d", err, z.Len(), z.Watermark())
	}
	// An empty Expiry encodes as magic, version, flags and CRC.
	if got := hex.EncodeToString(NewExpiry(Window{}, true).AppendBinary(nil)); got != hex.EncodeToString(seal([]byte("GCEX\x01\x01\x00"))) {
		t.Fatalf("empty: %s", got)
	}
}

func TestExpiryUnmarshalErrors(t *testing.T) {
	h := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			panic(err)
		}
		return b
	}
	good := seal(h("4743455801" + "02" + "da0f" + "02" + "d00f02ac0201" + "02010200"))
	corrupt := slices.Clone(good)
	corrupt[8] ^= 1
	tests := []struct {
		in   []byte
		want string
	}{
		{h("474345"), "3 bytes, fewer than the 11 of an empty one"},
		{seal(h("5845434701" + "00" + "00")), `magic "XECG", want "GCEX"`},
		{corrupt, "it is corrupt"},
		{seal(h("4743455802" + "00" + "00")), "version 2; this gcsm reads version 1"},
		{seal(h("4743455801" + "04" + "00")), "unknown flags 0x4"},
		{seal(h("4743455801" + "01" + "00")), "it is of a directed graph, this Expiry of an undirected one"},
		{seal(h("4743455801" + "02" + "ffffffffffffffffffff01" + "00")), "max time at byte 6: truncated or overflowing varint"},
		{seal(h("4743455801" + "02" + "8100" + "00")), "max time at byte 6: varint not in its shortest form"},
		{seal(h("4743455801" + "02" + "ffffffffffffffffff01" + "00")), "max time is the no-event marker"},
		{seal(h("4743455801" + "00" + "01")), "1 edges cannot fit in the 0 bytes left"},
		{seal(h("4743455801" + "00" + "01" + "00000000")), "1 edges but no event seen"},
		{seal(h("4743455801" + "02" + "14" + "01" + "00" + "02" + "01" + "00")), "edge 0: undirected edge (2, 1) is not in canonical order"},
		{seal(h("4743455801" + "02" + "14" + "01" + "16" + "00" + "01" + "00")), "edge 0: time 11 is after the max time 10"},
		{seal(h("4743455801" + "02" + "14" + "01" + "00" + "8080808010" + "00" + "00")), "src at byte 9: 4294967296 is over 32 bits"},
		{seal(h("4743455801" + "02" + "14" + "02" + "00" + "01" + "02" + "00" + "00" + "01" + "02" + "00")), "edge 1: not after edge 0"},
		{seal(h("4743455801" + "02" + "14" + "02" + "00" + "01" + "02" + "00" + "feffffffffffffffff01" + "01" + "02" + "00")), "edge 1: time overflows"},
		{seal(h("4743455801" + "02" + "14" + "00" + "00")), "1 bytes after the last edge"},
		{seal(h("4743455801" + "02" + "14" + "02" + "00" + "01" + "02" + "00" + "01" + "01" + "02" + "00")), "edge 1: (1, 2, 0) is given twice"},
	}
	for _, tt := range tests {
		x := NewExpiry(Window{Size: time.Second}, false)
		x.Observe(graph.Edge{Src: 7, Dst: 8}, 42)
		before := x.AppendBinary(nil)
		err := x.UnmarshalBinary(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "ingest: bad expiry checkpoint: ") {
			t.Errorf("UnmarshalBinary(%x) = %v, want an error with %q", tt.in, err, tt.want)
		}
		if string(x.AppendBinary(nil)) != string(before) {
			t.Errorf("UnmarshalBinary(%x) failed but changed the Expiry", tt.in)
		}
	}
}

// FuzzExpiryUnmarshal decodes arbitrary bytes, as they are and with a
// valid CRC appended, which gets them past the checksum. Decoding must not
// panic, and what decodes must encode back to the same bytes.
func FuzzExpiryUnmarshal(f *testing.F) {
	x := NewExpiry(Window{Size: time.Second}, false)
	f.Add(x.AppendBinary(nil), false)
	for i := range 20 {
		x.Observe(graph.Edge{Src: graph.VertexID(i * 37 % 11), Dst: graph.VertexID(i*101%13 + 11), Label: graph.Label(i % 3)}, int64(i*i*1000))
	}
	f.Add(x.AppendBinary(nil), false)
	enc := x.AppendBinary(nil)
	f.Add(enc[:len(enc)-4], false)
	d := NewExpiry(Window{Size: time.Second}, true)
	d.Observe(graph.Edge{Src: 9, Dst: 1}, -5)
	f.Add(d.AppendBinary(nil), true)
	f.Fuzz(func(t *testing.T, b []byte, directed bool) {
		for _, in := range [][]byte{b, seal(slices.Clone(b))} {
			x := NewExpiry(Window{Size: time.Second}, directed)
			if err := x.UnmarshalBinary(in); err != nil {
				continue
			}
			if got := x.AppendBinary(nil); string(got) != string(in) {
				t.Fatalf("decoded %x, encodes as %x", in, got)
			}
			checkBounds(t, x)
			x.Expire(nil)
		}
	})
}

// BenchmarkExpiry observes a stream over a steady population of edges,
// half of them refreshed, expiring after each batch of 1024 events. A
// steady population should cost no allocation amortised, and only the
// map's growth in bytes.
func BenchmarkExpiry(b *testing.B) {
	const live = 1 << 16
	x := NewExpiry(Window{Size: time.Duration(live) * time.Millisecond}, false)
	rng := rand.New(rand.NewPCG(1, 2))
	var dst []graph.Update
	b.ReportAllocs()
	ts := int64(0)
	for b.Loop() {
		ts++
		v := graph.VertexID(ts)
		if rng.IntN(2) == 0 {
			v = graph.VertexID(ts - rng.Int64N(live)) // a refresh
		}
		x.Observe(graph.Edge{Src: v, Dst: v + 1}, ts)
		if ts%1024 == 0 {
			dst = x.Expire(dst[:0])
		}
	}
}
