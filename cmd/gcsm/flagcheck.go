package main

import (
	"errors"
	"flag"
	"fmt"
	"math"

	"github.com/gcsm/gcsm/ingest"
)

// flagError is a flag value outside its range or set of choices. run
// answers it as a usage error, exit 2, like a value the flag package could
// not parse, with the message and a pointer to -h.
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

// badFlags joins the failed checks into one flagError, nil if none failed,
// so that a command line with several bad values hears of all of them.
func badFlags(checks ...error) error {
	if err := errors.Join(checks...); err != nil {
		return &flagError{err}
	}
	return nil
}

// intIn checks that --name's value v lies in [lo, hi]; hi of math.MaxInt64
// means no upper bound.
func intIn(name string, v, lo, hi int64) error {
	switch {
	case v >= lo && v <= hi:
		return nil
	case hi == math.MaxInt64:
		return fmt.Errorf("--%s %d: want %d or more", name, v, lo)
	}
	return fmt.Errorf("--%s %d: want %d to %d", name, v, lo, hi)
}

// floatIn checks that --name's value v is a number in [lo, hi]; infinite
// bounds leave that side open. NaN and the infinities are never a value.
func floatIn(name string, v, lo, hi float64) error {
	if !math.IsNaN(v) && !math.IsInf(v, 0) && v >= lo && v <= hi {
		return nil
	}
	switch {
	case math.IsInf(hi, 1):
		return fmt.Errorf("--%s %v: want a number of %v or more", name, v, lo)
	case math.IsInf(lo, -1):
		return fmt.Errorf("--%s %v: want a number up to %v", name, v, hi)
	}
	return fmt.Errorf("--%s %v: want a number from %v to %v", name, v, lo, hi)
}

// choice checks that --name's value v is one of choices.
func choice(name, v string, choices ...string) error {
	for _, c := range choices {
		if v == c {
			return nil
		}
	}
	want := choices[0]
	for i, c := range choices[1:] {
		if i == len(choices)-2 {
			want += " or " + c
		} else {
			want += ", " + c
		}
	}
	return fmt.Errorf("--%s %q: want %s", name, v, want)
}

// workersFlag checks --workers: 0 is every core.
func workersFlag(v int) error {
	if v < 0 {
		return fmt.Errorf("--workers %d: want 0 (every core) or more", v)
	}
	return nil
}

// tsUnitFlag registers --ts-unit on fs: what a numeric ts of the input
// counts since 1970 (ingest.TimeUnit).
func tsUnitFlag(fs *flag.FlagSet) *string {
	return fs.String("ts-unit", "ms", "what a numeric ts of the input counts since 1970: s, ms, us or ns; times outside 1990-2100 get a warning")
}

// tsUnit checks --ts-unit's value v.
func tsUnit(v string) (ingest.TimeUnit, error) {
	u, err := ingest.ParseTimeUnit(v)
	if err != nil {
		return 0, badFlags(choice("ts-unit", v, "s", "ms", "us", "ns"))
	}
	return u, nil
}

// flagGiven reports whether the command line set the flag name.
func flagGiven(fs *flag.FlagSet, name string) (given bool) {
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
