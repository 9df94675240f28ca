package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
)

// replayPositive runs replay with args and --json, and returns the first
// query's positive count and stderr.
func replayPositive(t *testing.T, args ...string) (int64, string) {
	t.Helper()
	out, errs, code := gcsm(t, append([]string{"replay", "--device", "cpu", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("replay %s: exit %d\n%s", strings.Join(args, " "), code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var sum struct{ Queries []struct{ Positive int64 } }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || len(sum.Queries) != 1 {
		t.Fatalf("summary %q: %v", lines[len(lines)-1], err)
	}
	return sum.Queries[0].Positive, errs
}

// TestReplayTSUnit is the case: transfers 5 h apart, in epoch
// seconds, matched a WITHIN 1h ring when read as milliseconds. Read as
// seconds (--ts-unit s) they do not, while two a minute apart do; the CSV
// data graph and the JSON stream take the same unit. Read as milliseconds,
// one warning names the first odd time and --ts-unit s.
func TestReplayTSUnit(t *testing.T) {
	dir := t.TempDir()
	data := writeFile(t, dir, "data.csv", "src,dst,label,ts,amount\na,b,TRANSFER,1795255200,5\n")
	later := writeFile(t, dir, "later.jsonl", `{"op":"+","src":"b","dst":"a","label":"TRANSFER","ts":1795273200}`+"\n")
	soon := writeFile(t, dir, "soon.jsonl", `{"op":"+","src":"b","dst":"a","label":"TRANSFER","ts":1795255260}`+"\n")
	q := "r=(a)-[t1:TRANSFER]->(b)-[t2:TRANSFER]->(a) WITHIN 1h"

	n, errs := replayPositive(t, "-d", data, "-u", later, "-q", q)
	if n != 2 {
		t.Errorf("read as milliseconds, 5 h apart are 18 s apart: %d matches, want 2", n)
	}
	want := "gcsm replay: warning: " + data + ":2: numeric ts 1795255200 read as milliseconds is 1970-01-21T18:40:55.2Z, outside 1990-2100: if ts counts seconds, give --ts-unit s\n"
	if !strings.Contains(errs, want) || strings.Count(errs, "warning:") != 1 {
		t.Errorf("stderr %q, want the one warning %q", errs, want)
	}
	n, errs = replayPositive(t, "-d", data, "-u", later, "-q", q, "--ts-unit", "s")
	if n != 0 || strings.Contains(errs, "warning") {
		t.Errorf("--ts-unit s, 5 h apart: %d matches, stderr %q; want none and no warning", n, errs)
	}
	if n, _ = replayPositive(t, "-d", data, "-u", soon, "-q", q, "--ts-unit", "s"); n != 2 {
		t.Errorf("--ts-unit s, a minute apart: %d matches, want 2", n)
	}

	neg := writeFile(t, dir, "neg.jsonl", `{"op":"+","src":"b","dst":"a","ts":1795255260}`+"\n"+`{"op":"+","src":"b","dst":"a","ts":-5}`+"\n")
	wantFailure(t, 1, []string{"replay", "--device", "cpu", "-u", neg, "-q", q, "--ts-unit", "s"},
		neg+`:2: field "ts" is negative (-5): a numeric ts counts seconds since 1970`)
	negCSV := writeFile(t, dir, "neg.csv", "dst,src,ts\na,b,-1\n")
	wantFailure(t, 1, []string{"replay", "--device", "cpu", "-u", negCSV, "-q", q},
		negCSV+`:2: field "ts" is negative (-1): a numeric ts counts milliseconds since 1970`)
	// The header, which made the edge a -> TRANSFER.
	byPosition := writeFile(t, dir, "label.csv", "src,label,ts\na,TRANSFER,5\n")
	wantFailure(t, 1, []string{"match", "--device", "cpu", "-d", byPosition, "-q", q},
		byPosition+`:1: CSV header "src,label,ts": no column is named "dst"`)
}

// TestProduceTSUnit: produce reads a CSV file's times in --ts-unit and
// its property columns, and publishes events in milliseconds with every
// property; without the unit it warns of the first odd time.
func TestProduceTSUnit(t *testing.T) {
	broker := produceCluster(t)
	path := writeFile(t, t.TempDir(), "s.csv", "ts,src,dst,amount,note\n1795255200,a,b,12.5,x\n1795255260,b,c,,007\n")
	_, stderr := produceOK(t, "-u", path, "--topic", "secs", "--brokers", broker, "--ts-unit", "s")
	if stderr != "" {
		t.Errorf("stderr %q, want nothing", stderr)
	}
	got := produceReadTopic(t, broker, "secs")
	want := []ingest.Record{
		{Op: graph.Insert, Src: "a", Dst: "b", Time: 1795255200000, Props: []graph.Prop{
			{Name: "amount", Value: graph.NumberValue(12.5)}, {Name: "note", Value: graph.StringValue("x")}}},
		{Op: graph.Insert, Src: "b", Dst: "c", Time: 1795255260000, Props: []graph.Prop{{Name: "note", Value: graph.StringValue("007")}}},
	}
	var recs []ingest.Record
	for _, e := range got {
		recs = append(recs, e.rec)
	}
	if len(recs) == 2 && recs[0].Src == "b" {
		recs[0], recs[1] = recs[1], recs[0] // two keys, maybe two partitions
	}
	if !reflect.DeepEqual(recs, want) {
		t.Errorf("topic holds\n%+v\nwant\n%+v", recs, want)
	}
	_, stderr = produceOK(t, "-u", path, "--topic", "ms", "--brokers", broker)
	if w := "gcsm produce: warning: " + path + ":2: numeric ts 1795255200 read as milliseconds"; !strings.Contains(stderr, w) || !strings.Contains(stderr, "--ts-unit s") {
		t.Errorf("stderr %q, want %q naming --ts-unit s", stderr, w)
	}
}
