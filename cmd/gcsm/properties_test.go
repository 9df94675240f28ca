package main

import (
	"slices"
	"strings"
	"testing"
)

// TestPropertyWarned: replay checks the properties each WHERE reads against
// what the data graph and the whole stream gave, once the stream is read:
// a property that first comes late in the stream is known, a misspelled
// one is warned about with the names known, and so is a comparison with a
// literal of another kind than the property's values. The replay still
// runs. match checks against the data graph alone.
func TestPropertyWarned(t *testing.T) {
	dir := t.TempDir()
	data := writeFile(t, dir, "g.jsonl", `{"op":"+","src":"a","dst":"b","label":"TRANSFER","src_label":"Account","dst_label":"Account","ts":1700000000000}`+"\n")
	stream := writeFile(t, dir, "s.jsonl", strings.Join([]string{
		`{"op":"+","src":"b","dst":"c","label":"TRANSFER","src_label":"Account","dst_label":"Account","ts":1700000001000}`,
		// The amounts and the country come last.
		`{"op":"+","src":"c","dst":"a","label":"TRANSFER","src_label":"Account","dst_label":"Account","ts":1700000002000,"props":{"amount":20000},"dst_props":{"country":"DE"}}`,
	}, "\n")+"\n")
	queries := []string{
		"-q", "good=(a:Account)-[t:TRANSFER]->(b:Account) WHERE t.amount > 10000 AND b.country = 'DE'",
		"-q", "typo=(a:Account)-[t1:TRANSFER]->(b:Account) WHERE t1.amont > 10000",
		"-q", `kind=(a:Account)-[t1:TRANSFER]->(b:Account) WHERE t1.amount > "10000"`,
	}
	out, errs, code := gcsm(t, append([]string{"replay", "-d", data, "-u", stream}, queries...)...)
	if code != 0 {
		t.Fatalf("replay: exit %d\n%s", code, errs)
	}
	want := []string{
		"gcsm replay: warning: query typo: property t1.amont never seen on TRANSFER edges; known: amount, id, ts (did you mean amount?)",
		`gcsm replay: warning: query kind: t1.amount > "10000" is never true: t1.amount has carried only numbers on TRANSFER edges, and "10000" is a string`,
	}
	if got := warnings(errs); !slices.Equal(got, want) {
		t.Errorf("replay warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(out, "good ") || !strings.Contains(out, "typo ") {
		t.Errorf("replay did not report every query:\n%s", out)
	}

	// The data graph alone has no amount.
	_, errs, code = gcsm(t, append([]string{"match", "-d", data}, queries[:2]...)...)
	if code != 0 {
		t.Fatalf("match: exit %d\n%s", code, errs)
	}
	want = []string{
		"gcsm match: warning: query good: property t.amount never seen on TRANSFER edges; known: id, ts",
		"gcsm match: warning: query good: property b.country never seen on Account vertices; known: none yet",
	}
	if got := warnings(errs); !slices.Equal(got, want) {
		t.Errorf("match warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The demo's queries read what its generated stream carries.
	_, errs, code = gcsm(t, "replay", "--demo", "--progress=false")
	if w := warnings(errs); code != 0 || len(w) != 0 {
		t.Errorf("replay --demo: exit %d, warnings %q", code, w)
	}
}
