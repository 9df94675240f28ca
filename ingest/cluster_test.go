package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzParseCut: a cut record either parses to a start and ends that
// AppendCut writes back to a record parsing to the same, or is refused
// with an error saying it is a cut record.
func FuzzParseCut(f *testing.F) {
	for _, s := range []string{`{"ends":{}}`, `{"ends":{"0":120,"1":97}}`, `{"ends":{"01":5}}`, `{"ends":{"-1":5}}`,
		`{"ends":{"0":-5}}`, `{"ends":{"x":1}}`, `{"ends":null}`, `{}`, `{"ends":{"0":1}} {}`, `{"ends":{"0":1},"v":2}`,
		`{"ends":{"0":1.5}}`, `[]`, ``, `{"ends":{"99999999999999999999":1}}`, `{"from":{},"ends":{"0":4}}`,
		`{"from":{"0":4,"2":7},"ends":{"0":8}}`, `{"from":{"0":-1},"ends":{}}`, `{"from":null,"ends":{}}`, `{"from":{"a":1},"ends":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		from, ends, err := ParseCut(b)
		if err != nil {
			if from != nil || ends != nil || !strings.HasPrefix(err.Error(), "cut record") {
				t.Fatalf("%q: %v, %v, %v", b, from, ends, err)
			}
			return
		}
		for _, m := range []map[int]int64{from, ends} {
			for p, o := range m {
				if p < 0 || o < 0 {
					t.Fatalf("%q: partition %d offset %d", b, p, o)
				}
			}
		}
		from2, ends2, err := ParseCut(AppendCut(nil, from, ends))
		if err != nil || !maps.Equal(ends2, ends) || !maps.Equal(from2, from) || (from2 == nil) != (from == nil) {
			t.Fatalf("%q: %v %v written back reads as %v %v, %v", b, from, ends, from2, ends2, err)
		}
		for _, txn := range []bool{false, true} {
			rec := AppendCut(nil, from, ends)
			if txn {
				rec = AppendTxnCut(nil, from, ends)
			}
			from3, ends3, txn3, err := ParseLoggedCut(rec)
			if err != nil || txn3 != txn || !maps.Equal(ends3, ends) || !maps.Equal(from3, from) {
				t.Fatalf("%q: %v %v (txn %v) written back reads as %v %v (txn %v), %v", b, from, ends, txn, from3, ends3, txn3, err)
			}
		}
	})
}

func TestCutRoundTrip(t *testing.T) {
	ends := map[int]int64{0: 120, 3: 0, 17: 1 << 40}
	b := AppendCut(nil, nil, ends)
	if string(b) != `{"ends":{"0":120,"3":0,"17":1099511627776}}` {
		t.Fatalf("cut record %s", b)
	}
	from, got, err := ParseCut(b)
	if err != nil || from != nil || !maps.Equal(got, ends) {
		t.Fatalf("%v %v, %v", from, got, err)
	}
	start := map[int]int64{0: 100, 3: 0}
	b = AppendCut(nil, start, ends)
	if string(b) != `{"from":{"0":100,"3":0},"ends":{"0":120,"3":0,"17":1099511627776}}` {
		t.Fatalf("cut record %s", b)
	}
	from, got, err = ParseCut(b)
	if err != nil || !maps.Equal(from, start) || !maps.Equal(got, ends) {
		t.Fatalf("%v %v, %v", from, got, err)
	}
}

// members makes group members whose user data say which shards they own.
func members(owned ...[]int) []groupMember {
	var ms []groupMember
	for i, o := range owned {
		data, _ := json.Marshal(o)
		ms = append(ms, groupMember{ID: fmt.Sprintf("m%d", i), UserData: data})
	}
	return ms
}

func shardParts(n int) []int {
	ps := make([]int, n)
	for i := range ps {
		ps[i] = i
	}
	return ps
}

// checkAssignment checks that every shard has one owner and shares differ
// by at most one, and returns the assignment per member id.
func checkAssignment(t *testing.T, a map[string][]int, n int) map[string][]int {
	t.Helper()
	out := map[string][]int{}
	owner := map[int]string{}
	lo, hi := n, 0
	for id, got := range a {
		out[id] = got
		lo, hi = min(lo, len(got)), max(hi, len(got))
		for _, p := range got {
			if o, ok := owner[p]; ok {
				t.Fatalf("shard %d given to %s and %s", p, o, id)
			}
			owner[p] = id
		}
	}
	if len(owner) != n {
		t.Fatalf("%d of %d shards assigned: %v", len(owner), n, out)
	}
	if hi-lo > 1 {
		t.Fatalf("shares from %d to %d: %v", lo, hi, out)
	}
	return out
}

// TestAssignSticky: shares are even, and a member that joins or leaves
// moves only the shards it must.
func TestAssignSticky(t *testing.T) {
	const n = 64
	first := checkAssignment(t, assignSticky(members(nil, nil), shardParts(n)), n)
	// A third member joins: the first two keep all but what it takes.
	third := checkAssignment(t, assignSticky(members(first["m0"], first["m1"], nil), shardParts(n)), n)
	for _, id := range []string{"m0", "m1"} {
		for _, p := range third[id] {
			if !slices.Contains(first[id], p) {
				t.Fatalf("%s gained shard %d when a member joined", id, p)
			}
		}
	}
	if moved := len(third["m2"]); moved != n/3 && moved != n/3+1 {
		t.Fatalf("the new member got %d shards", moved)
	}
	// m0 leaves: m1 and m2 keep theirs.
	left := checkAssignment(t, assignSticky(members(third["m1"], third["m2"])[:2], shardParts(n)), n)
	for i, id := range []string{"m1", "m2"} {
		mine := left[fmt.Sprintf("m%d", i)]
		for _, p := range third[id] {
			if !slices.Contains(mine, p) {
				t.Fatalf("%s lost shard %d when another member left", id, p)
			}
		}
	}
	// Two members claiming the same shard, and one claiming a shard that
	// does not exist: each shard still has one owner.
	checkAssignment(t, assignSticky(members([]int{1, 2, 3}, []int{3, 4, 99}, []int{-1}), shardParts(8)), 8)
	// Undecodable user data keeps nothing but is a member.
	ms := members(nil)
	ms[0].UserData = []byte("{")
	checkAssignment(t, assignSticky(ms, shardParts(5)), 5)
}

// TestEnsureTopic: a missing topic is created with its partitions and
// configs; an existing one with as many partitions is fine, and one with
// another number is refused with the topic named.
func TestEnsureTopic(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "taken"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	conn := kafkaconn.Plaintext(c.ListenAddrs()...)
	ctx := context.Background()
	if err := EnsureTopic(ctx, conn, "cuts", 1, map[string]string{"retention.ms": "-1"}); err != nil {
		t.Fatal(err)
	}
	if n, err := Partitions(ctx, conn, "cuts"); err != nil || n != 1 {
		t.Fatalf("cuts: %d partitions, %v", n, err)
	}
	cl, err := conn.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeTopic, "cuts", []string{"retention.ms"}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Resources) != 1 || len(resp.Resources[0].Configs) != 1 || resp.Resources[0].Configs[0].Value == nil ||
		*resp.Resources[0].Configs[0].Value != "-1" {
		t.Fatalf("cuts' retention.ms: %+v, %v", resp, err)
	}
	if err := EnsureTopic(ctx, conn, "taken", 3, nil); err != nil {
		t.Fatalf("an existing topic of as many partitions: %v", err)
	}
	err = EnsureTopic(ctx, conn, "taken", 8, nil)
	if err == nil || !strings.Contains(err.Error(), `topic "taken" has 3 partitions, want 8`) {
		t.Fatalf("an existing topic of 3 partitions for 8 shards: %v", err)
	}
}
