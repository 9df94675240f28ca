package servicebench

import (
	"strings"
	"testing"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/query"
)

// The mixes taken before transfers had ids stream bare pairs: no id, no
// amount, so their figures stay comparable.
func TestBenchServiceBareStream(t *testing.T) {
	for name, m := range Mixes {
		if m.Transfers != (name == "rings-where") {
			t.Errorf("mix %s streams transfers: %v", name, m.Transfers)
		}
	}
	for _, ev := range bench.Transfers(100, 500, 1) {
		if r := TransferRecord(ev, false); r.ID != "" || r.Props != nil || r.Src != ev.Src || r.Time != ev.Time {
			t.Fatalf("%+v as a bare record: %+v", ev, r)
		}
		if r := TransferRecord(ev, true); r.ID != ev.ID || r.ID == "" {
			t.Fatalf("%+v as a transfer: %+v", ev, r)
		}
	}
}

// TestWithReturn: the predicated rings of rings-where get a RETURN of three
// fields that compiles; the bare ones are left as they are.
func TestWithReturn(t *testing.T) {
	specs := WithReturn(Mixes["rings-where"].Queries)
	want := "ring3w=(a:Account)-[t1:TRANSFER]->(b:Account)-[t2:TRANSFER]->(c:Account)-[t3:TRANSFER]->(a)" + layering3 +
		" RETURN a, sum([t1, t2, t3].amount) AS total, max([t1, t2, t3].ts) - min([t1, t2, t3].ts) AS span"
	if specs[1] != want {
		t.Fatalf("ring3w with RETURN:\n%s\nwant\n%s", specs[1], want)
	}
	if specs[0] != Mixes["rings-where"].Queries[0] || specs[2] != Mixes["rings-where"].Queries[2] {
		t.Fatalf("the bare rings changed: %q", specs)
	}
	for _, spec := range specs {
		_, pattern, _ := strings.Cut(spec, "=")
		p, err := query.ParseCypher("q", pattern)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(spec, "RETURN") && len(p.Return) != 3 {
			t.Fatalf("%s: %d RETURN items, want 3", spec, len(p.Return))
		}
	}
}
