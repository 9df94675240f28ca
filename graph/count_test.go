package graph

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"testing"
)

func pow2(n uint) *big.Int { return new(big.Int).Lsh(big.NewInt(1), n) }

func bigOf(s string) *big.Int {
	b, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic(s)
	}
	return b
}

// TestCountArithmetic checks Add, AddUint64, MulUint64 and Mul against
// math/big around the edges of 2^63, 2^64, 2^127 and 2^128.
func TestCountArithmetic(t *testing.T) {
	edges := []*big.Int{big.NewInt(0), big.NewInt(1), big.NewInt(3)}
	for _, e := range []uint{63, 64, 127, 128} {
		for _, d := range []int64{-2, -1, 0, 1} {
			edges = append(edges, new(big.Int).Add(pow2(e), big.NewInt(d)))
		}
	}
	limit := new(big.Int).Sub(pow2(128), big.NewInt(1)) // saturated from here
	want := func(b *big.Int) Count {
		if b.Cmp(limit) >= 0 {
			return overflowed
		}
		return CountOfBig(b)
	}
	for _, a := range edges {
		ca := want(a)
		if ca.Overflowed() {
			continue // not an input a count can hold
		}
		if got := ca.String(); got != a.String() {
			t.Fatalf("String(%v) = %v", a, got)
		}
		for _, b := range edges {
			cb := want(b)
			if cb.Overflowed() {
				continue
			}
			if got, w := ca.Add(cb), want(new(big.Int).Add(a, b)); got != w {
				t.Errorf("%v + %v = %v, want %v", a, b, got, w)
			}
			if got, w := ca.Mul(cb), want(new(big.Int).Mul(a, b)); got != w {
				t.Errorf("%v × %v = %v, want %v", a, b, got, w)
			}
			if lo, ok := cb.Uint64(); ok {
				if got, w := ca.AddUint64(lo), want(new(big.Int).Add(a, b)); got != w {
					t.Errorf("%v + uint64 %v = %v, want %v", a, b, got, w)
				}
				if got, w := ca.MulUint64(lo), want(new(big.Int).Mul(a, b)); got != w {
					t.Errorf("%v × uint64 %v = %v, want %v", a, b, got, w)
				}
			}
			if got, w := ca.Cmp(cb), a.Cmp(b); got != w {
				t.Errorf("Cmp(%v, %v) = %d, want %d", a, b, got, w)
			}
		}
	}
	// Saturation sticks.
	if !overflowed.AddUint64(0).Overflowed() || !overflowed.MulUint64(2).Overflowed() || !overflowed.Add(CountOf(1)).Overflowed() {
		t.Error("a saturated count left saturation")
	}
	if !overflowed.MulUint64(0).IsZero() {
		t.Error("a saturated count times 0 is not 0")
	}
	if !errors.Is(overflowed.Err(), ErrCountOverflow) || CountOf(math.MaxUint64).Err() != nil {
		t.Error("Err does not tell a saturated count")
	}
}

// TestCountFormat checks String and JSON at 2^63, 2^64, 2^127 and near
// 2^128, and that a saturated count does not marshal.
func TestCountFormat(t *testing.T) {
	for _, s := range []string{
		"0", "9223372036854775807", "9223372036854775808", "18446744073709551615",
		"18446744073709551616", "10000000000000000000", "100000000000000000000000000000000000000",
		"170141183460469231731687303715884105728", "340282366920938463463374607431768211454",
	} {
		c := CountOfBig(bigOf(s))
		if got := c.String(); got != s {
			t.Errorf("String = %s, want %s", got, s)
		}
		b, err := json.Marshal(struct{ N Count }{c})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"N":` + s + `}`; string(b) != want {
			t.Errorf("JSON %s, want %s", b, want)
		}
		var back struct{ N Count }
		if err := json.Unmarshal(b, &back); err != nil || back.N != c {
			t.Errorf("JSON round trip of %s: %v, %v", s, back.N, err)
		}
	}
	if got := fmt.Sprintf("%d|%5d|%-5v|%s", CountOf(7), CountOf(42), CountOf(3), CountOf(9)); got != "7|   42|3    |9" {
		t.Errorf("Format: %q", got)
	}
	if _, err := json.Marshal(overflowed); err == nil {
		t.Error("a saturated count marshalled")
	}
	if got := CountOfBig(pow2(130)); !got.Overflowed() {
		t.Errorf("CountOfBig(2^130) = %v, not saturated", got)
	}
	var c Count
	if err := json.Unmarshal([]byte(`"12"`), &c); err == nil {
		t.Error("a string unmarshalled as a count")
	}
}
