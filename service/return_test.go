package service

import (
	"fmt"
	"testing"
	"time"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
)

// TestReturnAlerts checks that alerts carry their query's RETURN row: a
// ring's accounts, its total and its span when it appears, and the same
// values when a deletion takes it away; a query without RETURN has none.
func TestReturnAlerts(t *testing.T) {
	addrs := cluster(t, 1, 1)
	cfg := testConfig(t, addrs)
	cfg.Queries = []QueryConfig{
		{Name: "ringr", Pattern: "(a:Account)-[t1:TRANSFER]->(b:Account)-[t2:TRANSFER]->(c:Account)-[t3:TRANSFER]->(a) " +
			"WHERE t1.ts < t2.ts AND t2.ts < t3.ts " +
			"RETURN a, t1.amount + t2.amount + t3.amount AS total, t3.ts - t1.ts AS span, max([t1, t2, t3].amount) AS top, t2"},
		{Name: "ring3", Pattern: "(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a)"},
	}
	ms := int64(1_700_000_000_000)
	rec := func(op graph.Op, src, dst, id string, amount float64, at int64) []byte {
		r := ingest.Record{Op: op, Src: src, Dst: dst, Label: "TRANSFER", ID: id, Time: ms + at}
		if op == graph.Insert {
			r.Props = []graph.Prop{{Name: "amount", Value: graph.NumberValue(amount)}}
		}
		return ingest.AppendEvent(nil, r)
	}
	out := consume(t, addrs, "matches", true)
	r := start(t, cfg)
	produce(t, addrs, "edges", [][]byte{
		rec(graph.Insert, "acct:1", "acct:2", "tx-1", 9000, 0),
		rec(graph.Insert, "acct:2", "acct:3", "tx-2", 8500, 60_000),
		rec(graph.Insert, "acct:3", "acct:1", "tx-3", 8100, 5_400_000),
	})
	waitFor(t, "the ring", time.Minute, func() bool { return out.count() >= 2 })
	produce(t, addrs, "edges", [][]byte{rec(graph.Delete, "acct:2", "acct:3", "tx-2", 0, 0)})
	waitFor(t, "its end", time.Minute, func() bool { return out.count() >= 4 })
	r.shutdown(t)
	events, _ := out.snapshot(t)
	want := map[string]any{"a": "acct:1", "total": 25600.0, "span": "1h30m", "top": 9000.0, "t2": "tx-2"}
	var changes []string
	for _, ev := range events {
		switch ev.Query {
		case "ringr":
			if fmt.Sprint(ev.Return) != fmt.Sprint(want) {
				t.Errorf("%s ringr return %v, want %v", ev.Change, ev.Return, want)
			}
			changes = append(changes, ev.Change)
		case "ring3":
			if ev.Return != nil {
				t.Errorf("ring3 has no RETURN, and its alert returns %v", ev.Return)
			}
		}
	}
	if fmt.Sprint(changes) != "[appeared disappeared]" {
		t.Fatalf("ringr changes %v, want it to appear and disappear", changes)
	}
}
