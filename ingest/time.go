package ingest

import (
	"fmt"
	"math"
	"time"
)

// TimeUnit is what a numeric "ts" counts since the Unix epoch, in every
// format alike: JSON events, CSV and SNAP columns. The zero value is
// milliseconds. An RFC 3339 string needs no unit and ignores it.
type TimeUnit int

const (
	Milliseconds TimeUnit = iota
	Seconds
	Microseconds
	Nanoseconds
)

// ParseTimeUnit reads a unit as --ts-unit and input.ts_unit spell it: s, ms,
// us or ns.
func ParseTimeUnit(s string) (TimeUnit, error) {
	for u := Milliseconds; u <= Nanoseconds; u++ {
		if s == u.String() {
			return u, nil
		}
	}
	return 0, fmt.Errorf("time unit %q: want s, ms, us or ns", s)
}

func (u TimeUnit) String() string {
	switch u {
	case Milliseconds:
		return "ms"
	case Seconds:
		return "s"
	case Microseconds:
		return "us"
	case Nanoseconds:
		return "ns"
	}
	return fmt.Sprintf("TimeUnit(%d)", int(u))
}

// word names u for people: "seconds".
func (u TimeUnit) word() string {
	if u < Milliseconds || u > Nanoseconds {
		return u.String()
	}
	return [...]string{"milliseconds", "seconds", "microseconds", "nanoseconds"}[u]
}

// millis converts n, a count of u since the epoch, to unix milliseconds
// (finer units are truncated). ok is false for a negative n and for a
// count of seconds whose milliseconds overflow an int64.
func (u TimeUnit) millis(n int64) (ms int64, ok bool) {
	if n < 0 {
		return 0, false
	}
	switch u {
	case Seconds:
		if n > math.MaxInt64/1000 {
			return 0, false
		}
		return n * 1000, true
	case Microseconds:
		return n / 1000, true
	case Nanoseconds:
		return n / 1_000_000, true
	}
	return n, true
}

// tsError is the refusal of a numeric ts that millis refused.
func tsError(n int64, u TimeUnit) *DecodeError {
	if n < 0 {
		return decodeErrorf(ReasonTSOutOfRange, `field "ts" is negative (%d): a numeric ts counts %s since 1970`, n, u.word())
	}
	return decodeErrorf(ReasonTSOutOfRange, `field "ts" %d in %s is past the largest time gcsm holds (year 292278994)`, n, u.word())
}

// A numeric ts whose time lands outside [plausibleFrom, plausibleTo) is
// most likely in another unit than the one set: epoch seconds read as
// milliseconds land in January 1970, milliseconds read as seconds after
// the year 50000. The units are 1000 apart and the range is a factor of
// 6.5 wide, so at most one unit puts a value inside it.
var (
	plausibleFrom = time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	plausibleTo   = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
)

// OddTime is a numeric ts whose time, in the unit it was read in, lands
// before 1990 or from 2100 on: the likely sign of a stream whose times
// count another unit, which would make every window and WITHIN wrong by a
// factor of 1000 or more. Readers and Decoders keep the first they meet
// (OddTime methods), for the caller to warn about once.
type OddTime struct {
	TS   int64    // the value as given
	Unit TimeUnit // the unit it was read in
	Line int      // the line of a Reader's input; 0 for a Decoder
}

// oddTimes keeps the first odd time a Reader or a Decoder meets.
type oddTimes struct {
	first OddTime
	seen  bool
}

// note keeps ts, read in u as ms, if it is odd and the first.
func (o *oddTimes) note(ts int64, u TimeUnit, ms int64, line int) {
	if !o.seen && (ms < plausibleFrom || ms >= plausibleTo) {
		o.first, o.seen = OddTime{TS: ts, Unit: u, Line: line}, true
	}
}

// String words the warning, naming the flag that sets the unit and the
// unit that would fit where one does.
func (o OddTime) String() string {
	ms, _ := o.Unit.millis(o.TS)
	msg := fmt.Sprintf("numeric ts %d read as %s is %s, outside 1990-2100", o.TS, o.Unit.word(),
		time.UnixMilli(ms).UTC().Format(time.RFC3339Nano))
	for u := Milliseconds; u <= Nanoseconds; u++ {
		if m, ok := u.millis(o.TS); ok && u != o.Unit && m >= plausibleFrom && m < plausibleTo {
			return fmt.Sprintf("%s: if ts counts %s, give --ts-unit %s", msg, u.word(), u)
		}
	}
	return msg + ": if ts counts another unit, give --ts-unit s, ms, us or ns"
}
