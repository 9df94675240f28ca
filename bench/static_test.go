package bench_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/graph"
)

func TestParseAnswers(t *testing.T) {
	in := "# yeast, from SubgraphMatching\n\nquery_dense_16_1 222777\n  q2\t0 # none\nq3 9223372036854775807\nq4 340282366920938463463374607431768211454\n"
	got, err := bench.ParseAnswers("a.answers", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := bench.Answers{"query_dense_16_1": graph.CountOf(222777), "q2": {}, "q3": graph.CountOf(math.MaxInt64), "q4": {Hi: math.MaxUint64, Lo: math.MaxUint64 - 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, c := range []struct{ in, err string }{
		{"q1 5\nq2\n", "a.answers:2: want QUERY COUNT, got 1 fields"},
		{"q1 5 6\n", "a.answers:1: want QUERY COUNT, got 3 fields"},
		{"q1 -1\n", `a.answers:1: count "-1" of q1 is not a non-negative integer`},
		{"q1 1e3\n", `a.answers:1: count "1e3" of q1 is not a non-negative integer`},
		{"q1 340282366920938463463374607431768211455\n", "a.answers:1: count 340282366920938463463374607431768211455 of q1 is past 2^128-2"},
		{"# c\nq1 1\n\nq1 1\n", "a.answers:4: q1 was already given on line 2"},
	} {
		_, err := bench.ParseAnswers("a.answers", strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: got error %v, want %q", c.in, err, c.err)
		}
	}
}

// FuzzParseAnswers: whatever the input, the parser returns answers or an
// error naming a line of the file, never both, and what it accepts reads
// back the same when written out again.
func FuzzParseAnswers(f *testing.F) {
	for _, s := range []string{"q 1\n", "# c\nq1 5 # x\n\nq2 0", "q 1 2", "q -1", "q 1\nq 2", "\xff 3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		a, err := bench.ParseAnswers("f", strings.NewReader(in))
		if err != nil {
			if a != nil || !strings.HasPrefix(err.Error(), "f:") {
				t.Fatalf("error %v with answers %v", err, a)
			}
			return
		}
		var b strings.Builder
		for k, v := range a {
			if k == "" || strings.ContainsAny(k, "# \t\n") || v.Overflowed() {
				t.Fatalf("accepted name %q count %d", k, v)
			}
			fmt.Fprintf(&b, "%s %d\n", k, v)
		}
		back, err := bench.ParseAnswers("f", strings.NewReader(b.String()))
		if err != nil || fmt.Sprint(back) != fmt.Sprint(a) {
			t.Fatalf("%v read back as %v, %v", a, back, err)
		}
	})
}

func TestGeoMeanAndHeavyHalf(t *testing.T) {
	if g := bench.GeoMean([]float64{1, 4, 16}); math.Abs(g-4) > 1e-12 {
		t.Errorf("GeoMean(1,4,16) = %v, want 4", g)
	}
	if g := bench.GeoMean([]float64{0, 1}); math.Abs(g-1e-3) > 1e-12 {
		t.Errorf("GeoMean(0,1) = %v, want 1e-3 (zero counted as a microsecond)", g)
	}
	if g := bench.GeoMean(nil); g != 0 {
		t.Errorf("GeoMean() = %v", g)
	}
	for _, c := range []struct {
		secs []float64
		want []int
	}{
		{[]float64{0.1, 3, 0.2, 2}, []int{1, 3}},
		{[]float64{0.1, 3, 0.2}, []int{1, 2}},
		{[]float64{1, 1, 1}, []int{0, 1}},
		{[]float64{5}, []int{0}},
		{nil, []int{}},
	} {
		if got := bench.HeavyHalf(c.secs); !slices.Equal(got, c.want) {
			t.Errorf("HeavyHalf(%v) = %v, want %v", c.secs, got, c.want)
		}
	}
}
