package bench

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"slices"
	"strings"

	"github.com/gcsm/gcsm/graph"
)

// Answers are the expected match counts of a query set, by query name.
type Answers map[string]graph.Count

// ReadAnswers reads an answers file (see ParseAnswers).
func ReadAnswers(path string) (Answers, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseAnswers(path, f)
}

// ParseAnswers reads expected counts, one query a line: its name and its
// count (a non-negative integer), separated by blanks. A '#' starts a comment
// that runs to the end of the line; blank lines are skipped. A line with
// other than two fields, a count that is not a non-negative integer, or a
// name given twice is refused with name:line and why, since an answer read
// wrongly would pass or fail a benchmark for nothing.
func ParseAnswers(name string, r io.Reader) (Answers, error) {
	out := Answers{}
	where := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for ln := 1; sc.Scan(); ln++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: want QUERY COUNT, got %d fields", name, ln, len(f))
		}
		n, ok := new(big.Int).SetString(f[1], 10)
		if !ok || n.Sign() < 0 {
			return nil, fmt.Errorf("%s:%d: count %q of %s is not a non-negative integer", name, ln, f[1], f[0])
		}
		c := graph.CountOfBig(n)
		if c.Overflowed() {
			return nil, fmt.Errorf("%s:%d: count %s of %s is past 2^128-2, the largest count gcsm reports", name, ln, f[1], f[0])
		}
		if at, ok := where[f[0]]; ok {
			return nil, fmt.Errorf("%s:%d: %s was already given on line %d", name, ln, f[0], at)
		}
		where[f[0]] = ln
		out[f[0]] = c
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

// minSeconds stands in for a time of zero in a geometric mean, whose log
// would otherwise be minus infinity: a microsecond, below any timer step
// that matters for a whole query.
const minSeconds = 1e-6

// GeoMean is the geometric mean of secs, each at least a microsecond; 0 for
// none.
func GeoMean(secs []float64) float64 {
	if len(secs) == 0 {
		return 0
	}
	var sum float64
	for _, s := range secs {
		sum += math.Log(max(s, minSeconds))
	}
	return math.Exp(sum / float64(len(secs)))
}

// HeavyHalf returns the indices of the slower half of secs (the larger
// half when their number is odd), slowest first, ties in index order.
func HeavyHalf(secs []float64) []int {
	idx := make([]int, len(secs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case secs[a] > secs[b]:
			return -1
		case secs[a] < secs[b]:
			return 1
		}
		return 0
	})
	return idx[:(len(secs)+1)/2]
}
