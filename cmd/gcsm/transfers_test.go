package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// transferStreamFile is a ring of three transfers that satisfies ringWhere,
// a fourth transfer that closes the ring again too small, a replacement
// that makes the first transfer too small, and a deletion by id.
const transferStreamFile = `{"op":"+","src":"a","dst":"b","label":"T","id":"tx1","ts":1000,"props":{"amount":200,"memo":"not kept"}}
{"op":"+","src":"b","dst":"c","label":"T","id":"tx2","ts":2000,"props":{"amount":190}}
{"op":"+","src":"c","dst":"a","label":"T","id":"tx3","ts":3000,"props":{"amount":185}}
{"op":"+","src":"c","dst":"a","label":"T","id":"tx4","ts":4000,"props":{"amount":5}}
{"op":"+","src":"a","dst":"b","label":"T","id":"tx1","ts":1000,"props":{"amount":50}}
{"op":"-","src":"c","dst":"a","label":"T","id":"tx3"}
`

const ringWhere = "ring=(x)-[t1:T]->(y)-[t2:T]->(z)-[t3:T]->(x) WHERE t1.amount > 100 AND t1.ts < t2.ts AND t2.ts < t3.ts AND t3.amount >= 0.9 * t2.amount"

func TestReplayTransfers(t *testing.T) {
	dir := t.TempDir()
	stream := filepath.Join(dir, "transfers.jsonl")
	if err := os.WriteFile(stream, []byte(transferStreamFile), 0o600); err != nil {
		t.Fatal(err)
	}
	// Batch by batch: the ring appears with tx1..tx3, tx4 closes no second
	// one (too small), and replacing tx1 makes the ring disappear.
	out := gcsmOK(t, "replay", "-u", stream, "-q", ringWhere, "--batch", "1", "--emit")
	want := []string{"+ ring a b c [tx1 tx2 tx3]", "- ring a b c [tx1 tx2 tx3]"}
	if got := emitted(out); !slices.Equal(got, want) {
		t.Fatalf("emitted %q, want %q\n%s", got, want, out)
	}
	// The bare ring binds every transfer: two rings, and the one through
	// tx3 goes with it. No query reads amounts, so tx1 sent again with
	// another amount is the same transfer, and changes nothing.
	out = gcsmOK(t, "replay", "-u", stream, "-q", "bare=(x)-[t1:T]->(y)-[t2:T]->(z)-[t3:T]->(x)", "--batch", "1", "--emit", "--semantics", "instances")
	got := emitted(out)
	want = []string{
		"+ bare a b c [tx1 tx2 tx3]",
		"+ bare a b c [tx1 tx2 tx4]",
		"- bare a b c [tx1 tx2 tx3]",
	}
	if !sameLines(got, want) {
		t.Fatalf("emitted %q, want %q", got, want)
	}
	// match sees the final graph: one bare ring, through tx4.
	out = gcsmOK(t, "match", "-d", stream, "-q", "bare=(x)-[t1:T]->(y)-[t2:T]->(z)-[t3:T]->(x)", "--emit", "--semantics", "instances")
	if !strings.HasPrefix(out, "bare a b c [tx1 tx2 tx4]\n") || strings.Count(out, "bare a b c") != 1 {
		t.Fatalf("match output:\n%s", out)
	}
}

// TestReplayTransfersWildcardEdge: an edge of any label binds its pair, not
// a transfer, and --emit shows it as "-".
func TestReplayTransfersWildcardEdge(t *testing.T) {
	stream := filepath.Join(t.TempDir(), "transfers.jsonl")
	if err := os.WriteFile(stream, []byte(transferStreamFile), 0o600); err != nil {
		t.Fatal(err)
	}
	out := gcsmOK(t, "replay", "-u", stream, "-q", "w=(x)-[t1:T]->(y)-[]->(z)", "--batch", "1", "--emit")
	if !strings.Contains(out, "+ w a b c [tx1 -]") {
		t.Fatalf("no match binding the wildcard edge's pair:\n%s", out)
	}
}

// sameLines compares as multisets: lines of one batch come in any order.
func sameLines(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestReplayReturn: --emit lines end with the RETURN row, and --json lines
// carry it as "return"; the disappearing ring keeps the amounts it had
// when it appeared, though the replacement of tx1 changed one. match
// prints the rows of the final graph.
func TestReplayReturn(t *testing.T) {
	stream := filepath.Join(t.TempDir(), "transfers.jsonl")
	if err := os.WriteFile(stream, []byte(transferStreamFile), 0o600); err != nil {
		t.Fatal(err)
	}
	q := ringWhere + " RETURN x, t1.amount + t2.amount + t3.amount AS total, t3.ts - t1.ts AS span, t2"
	out := gcsmOK(t, "replay", "-u", stream, "-q", q, "--batch", "1", "--emit")
	want := []string{
		`+ ring a b c [tx1 tx2 tx3] {"x":"a","total":575,"span":"2s","t2":"tx2"}`,
		`- ring a b c [tx1 tx2 tx3] {"x":"a","total":575,"span":"2s","t2":"tx2"}`,
	}
	if got := emitted(out); !slices.Equal(got, want) {
		t.Fatalf("emitted %q, want %q\n%s", got, want, out)
	}
	out = gcsmOK(t, "replay", "-u", stream, "-q", q, "--batch", "1", "--emit", "--json")
	if !strings.Contains(out, `"transfers":["tx1","tx2","tx3"],"return":{"x":"a","total":575,"span":"2s","t2":"tx2"}}`) {
		t.Fatalf("--json lines without the return row:\n%s", out)
	}
	out = gcsmOK(t, "match", "-d", stream, "-q", "bare=(x)-[t1:T]->(y)-[t2:T]->(z)-[t3:T]->(x) WHERE x.id IS NULL RETURN sum([t1, t2, t3].amount) AS moved", "--emit")
	if !strings.Contains(out, `[tx1 tx2 tx4] {"moved":245}`) {
		t.Fatalf("match output:\n%s", out)
	}
}
