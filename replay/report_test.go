package replay

import (
	"bufio"
	"errors"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// TestReportMatchOverflow: a count that saturated fails the report, and
// no JSON line carries it; one just below prints its 39 digits.
func TestReportMatchOverflow(t *testing.T) {
	qs := []*query.Query{{Name: "big"}}
	below := graph.Count{Hi: ^uint64(0), Lo: ^uint64(0) - 1} // 2^128-2
	for _, tc := range []struct {
		count graph.Count
		fails bool
		want  string
	}{
		{below, false, `"matches":340282366920938463463374607431768211454`},
		{graph.SaturatedCount(), true, ""},
	} {
		var human, js strings.Builder
		out := bufio.NewWriter(&js)
		err := ReportMatch(&human, out, true, qs, []graph.Count{tc.count}, []float64{1}, 1, 0)
		out.Flush()
		if tc.fails {
			if !errors.Is(err, graph.ErrCountOverflow) || !strings.Contains(err.Error(), "query big") || js.Len() > 0 {
				t.Errorf("a saturated count: error %v, JSON %q", err, js.String())
			}
			continue
		}
		if err != nil || !strings.Contains(js.String(), tc.want) || !strings.Contains(human.String(), "340282366920938463463374607431768211454") {
			t.Errorf("count %v: error %v, table %q, JSON %q", tc.count, err, human.String(), js.String())
		}
	}
}
