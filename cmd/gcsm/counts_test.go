package main

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"
)

// TestCountsPastInt64 runs gcsm match and gcsm replay, counting only, on
// a hub with 2,000 neighbours of label 0 (one of them joined by the
// stream) and 2,000 of label 1, for a star of four legs of each label:
// P(1999,4)·P(2000,4) ≈ 2.5×10^26 embeddings before the stream, and
// 4·P(1999,3)·P(2000,4) ≈ 5.1×10^23 appear with the edge. Both pass 2^64,
// and the table and the --json line must print them digit for digit.
func TestCountsPastInt64(t *testing.T) {
	const leaves = 2000
	var g strings.Builder
	fmt.Fprintf(&g, "t %d %d\nv 1 2\n", 2*leaves+1, 2*leaves-1)
	for v := 2; v <= 2*leaves+1; v++ {
		fmt.Fprintf(&g, "v %d %d\n", v, (v-2)/leaves)
	}
	last := leaves + 1 // the last vertex of label 0, which the stream joins
	for v := 2; v <= 2*leaves+1; v++ {
		if v != last {
			fmt.Fprintf(&g, "e 1 %d 0\n", v)
		}
	}
	dir := t.TempDir()
	data := writeFile(t, dir, "hub.graph", g.String())
	stream := writeFile(t, dir, "hub.stream", fmt.Sprintf("e 1 %d 0\n", last))
	var legs []string
	for i := range 8 {
		legs = append(legs, fmt.Sprintf("(h)--(l%d:%d)", i, i/4))
	}
	star := "star=(h:2), " + strings.Join(legs, ", ")

	falling := func(n, k int64) *big.Int {
		p := big.NewInt(1)
		for i := range k {
			p.Mul(p, big.NewInt(n-i))
		}
		return p
	}
	static := new(big.Int).Mul(falling(leaves-1, 4), falling(leaves, 4))
	appeared := new(big.Int).Mul(big.NewInt(4), new(big.Int).Mul(falling(leaves-1, 3), falling(leaves, 4)))

	out := gcsmOK(t, "match", "--count-only", "-d", data, "-q", star)
	if row := tableRows(out, "query")["star"]; len(row) != 3 || row[1] != static.String() {
		t.Errorf("match table row %q, want star %v\n%s", row, static, out)
	}
	line := jsonLines(t, gcsmOK(t, "match", "--count-only", "--json", "-d", data, "-q", star))
	var m struct {
		Queries []struct {
			Name    string
			Matches json.Number
		}
	}
	if err := json.Unmarshal([]byte(line[len(line)-1]), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Queries) != 1 || m.Queries[0].Matches.String() != static.String() {
		t.Errorf("match --json %+v, want star %v", m.Queries, static)
	}

	args := []string{"replay", "--count-only", "-d", data, "-u", stream, "-q", star}
	out = gcsmOK(t, args...)
	if row := tableRows(out, "query")["star"]; len(row) != 3 || row[1] != appeared.String() || row[2] != "0" {
		t.Errorf("replay table row %q, want star %v 0\n%s", row, appeared, out)
	}
	line = jsonLines(t, gcsmOK(t, append(args, "--json")...))
	var r struct {
		Queries []struct {
			Name               string
			Positive, Negative json.Number
		}
	}
	if err := json.Unmarshal([]byte(line[len(line)-1]), &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Queries) != 1 || r.Queries[0].Positive.String() != appeared.String() || r.Queries[0].Negative.String() != "0" {
		t.Errorf("replay --json %+v, want star +%v -0", r.Queries, appeared)
	}
}
