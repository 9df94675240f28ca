package graph

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
)

// Count is a number of matches, an unsigned 128-bit integer. Counted
// rather than enumerated, a dense pattern's matches pass 2^63 (the largest
// count seen is 3.2×10^14, and a hub of 2,000 neighbours has 6.4×10^19
// ordered picks of 6 leaves), so a count is never an int64 that could wrap.
//
// Arithmetic saturates: a result of 2^128-1 or more is the all-ones value,
// which stays put under Add and Mul and which Overflowed reports, so that
// a count too large is an error where it is reported (Err), never a
// wrapped number. Counts up to 2^128-2 are exact.
type Count struct{ Hi, Lo uint64 }

// overflowed is the saturated Count.
var overflowed = Count{math.MaxUint64, math.MaxUint64}

// ErrCountOverflow is what Err returns for a saturated count.
var ErrCountOverflow = errors.New("graph: a match count reached 2^128-1: too large to report exactly")

// CountOf is n as a Count.
func CountOf(n uint64) Count { return Count{Lo: n} }

// SaturatedCount is the count past 2^128-2, for an executor that can only
// tell that a count passed it.
func SaturatedCount() Count { return overflowed }

// Overflowed says whether c saturated: its true value is 2^128-1 or more.
func (c Count) Overflowed() bool { return c == overflowed }

// Err is ErrCountOverflow when c saturated, nil otherwise.
func (c Count) Err() error {
	if c.Overflowed() {
		return ErrCountOverflow
	}
	return nil
}

// IsZero says whether c is 0.
func (c Count) IsZero() bool { return c == Count{} }

// Add is c+d, saturated.
func (c Count) Add(d Count) Count {
	lo, carry := bits.Add64(c.Lo, d.Lo, 0)
	hi, carry := bits.Add64(c.Hi, d.Hi, carry)
	if carry != 0 || (Count{hi, lo}) == overflowed {
		return overflowed
	}
	return Count{hi, lo}
}

// AddUint64 is c+n, saturated: the counting loops' add, inlined in them,
// a carry into Hi and one compare, the saturation checks left to Add for
// the counts of 2^128-2^64 and more, whose Hi is all ones.
func (c Count) AddUint64(n uint64) Count {
	if c.Hi == math.MaxUint64 {
		return c.Add(Count{Lo: n})
	}
	lo, carry := bits.Add64(c.Lo, n, 0)
	return Count{c.Hi + carry, lo}
}

// MulUint64 is c×k, saturated (a saturated c times 0 is 0: nothing times
// no arrangements).
func (c Count) MulUint64(k uint64) Count {
	if k == 0 {
		return Count{}
	}
	if c.Overflowed() {
		return overflowed
	}
	hi1, lo := bits.Mul64(c.Lo, k)
	hi2, hhi := bits.Mul64(c.Hi, k)
	hi, carry := bits.Add64(hi1, hhi, 0)
	if hi2 != 0 || carry != 0 || (Count{hi, lo}) == overflowed {
		return overflowed
	}
	return Count{hi, lo}
}

// Mul is c×d, saturated.
func (c Count) Mul(d Count) Count {
	if c.IsZero() || d.IsZero() {
		return Count{}
	}
	if c.Hi != 0 && d.Hi != 0 {
		return overflowed // at least 2^128
	}
	if c.Hi != 0 {
		c, d = d, c
	}
	return d.MulUint64(c.Lo) // c < 2^64 now
}

// Cmp is -1, 0 or +1 as c is less than, equal to or greater than d.
func (c Count) Cmp(d Count) int {
	switch {
	case c.Hi != d.Hi:
		if c.Hi < d.Hi {
			return -1
		}
		return 1
	case c.Lo < d.Lo:
		return -1
	case c.Lo > d.Lo:
		return 1
	}
	return 0
}

// Uint64 is c as a uint64; ok is false when c is 2^64 or more.
func (c Count) Uint64() (n uint64, ok bool) { return c.Lo, c.Hi == 0 }

// Float64 is c rounded to a float64, for rates and plots, never for a
// reported count.
func (c Count) Float64() float64 { return float64(c.Hi)*(1<<64) + float64(c.Lo) }

// CountOfBig is b as a Count, saturated; b must not be negative.
func CountOfBig(b *big.Int) Count {
	if b.Sign() < 0 {
		panic("graph: CountOfBig of a negative number")
	}
	if b.BitLen() > 128 {
		return overflowed
	}
	lo := new(big.Int).And(b, new(big.Int).SetUint64(math.MaxUint64))
	hi := new(big.Int).Rsh(b, 64)
	return Count{hi.Uint64(), lo.Uint64()}
}

// String is c in decimal, exactly. A saturated count reads as a bound, so
// that a table that prints one without checking Err misleads no one.
func (c Count) String() string {
	if c.Overflowed() {
		return ">=340282366920938463463374607431768211455"
	}
	return string(c.appendDecimal(nil))
}

// Format makes %d, %v and %s print c's exact decimal digits (String),
// with a width and the '-' flag honoured, so that report tables written
// for int64 counts print a Count as they did.
func (c Count) Format(f fmt.State, verb rune) {
	switch verb {
	case 'd', 'v', 's':
	default:
		fmt.Fprintf(f, "%%!%c(graph.Count=%s)", verb, c.String())
		return
	}
	s := c.String()
	w, ok := f.Width()
	pad := ""
	if ok && w > len(s) {
		pad = strings.Repeat(" ", w-len(s))
	}
	if f.Flag('-') {
		s += pad
	} else {
		s = pad + s
	}
	io.WriteString(f, s)
}

// appendDecimal appends c's exact decimal digits to b.
func (c Count) appendDecimal(b []byte) []byte {
	if c.Hi == 0 {
		return strconv.AppendUint(b, c.Lo, 10)
	}
	// Split off 19 digits at a time, 10^19 being the largest power of ten
	// below 2^64.
	const e19 = 10_000_000_000_000_000_000
	var parts [3]uint64
	n := 0
	for c.Hi != 0 {
		qhi := c.Hi / e19
		qlo, r := bits.Div64(c.Hi%e19, c.Lo, e19)
		c.Hi, c.Lo = qhi, qlo
		parts[n] = r
		n++
	}
	b = strconv.AppendUint(b, c.Lo, 10)
	for i := n - 1; i >= 0; i-- {
		digits := strconv.FormatUint(parts[i], 10)
		for range 19 - len(digits) {
			b = append(b, '0')
		}
		b = append(b, digits...)
	}
	return b
}

// MarshalJSON writes c as a JSON number of its exact decimal digits, at
// any size: a JSON number is arbitrary-precision text (RFC 8259), and a
// number keeps the reports' schema what it was for int64 counts, where a
// string past 2^53 would change a field's type with its value. Consumers
// that may see counts past 2^53 must parse them as big integers (Go's
// json.Number or this type, Python's int, jq 1.7) rather than as doubles.
// A saturated count is an error, never a number.
func (c Count) MarshalJSON() ([]byte, error) {
	if c.Overflowed() {
		return nil, ErrCountOverflow
	}
	return c.appendDecimal(nil), nil
}

// UnmarshalJSON reads a JSON number of decimal digits, as MarshalJSON
// writes it.
func (c *Count) UnmarshalJSON(b []byte) error {
	n, ok := new(big.Int).SetString(string(b), 10)
	if !ok || n.Sign() < 0 || n.BitLen() > 128 {
		return errors.New("graph: a count is a JSON number of at most 128 bits, not " + strconv.Quote(string(b)))
	}
	*c = CountOfBig(n)
	return nil
}
