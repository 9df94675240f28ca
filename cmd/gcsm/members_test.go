package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gcsm/gcsm/bench/servicebench"
)

// TestDemoMembers: gcsm demo --members 3 prints each member's share of the
// units, which add up to all of them, and finds the union of the members'
// alerts equal to one member's over the same batches.
func TestDemoMembers(t *testing.T) {
	out := gcsmOK(t, "demo", "--members", "3", "--events", "6000", "--accounts", "2000", "--rate", "0", "--device", "cpu")
	if !strings.Contains(out, "the union equals one member's output: yes") {
		t.Fatalf("no verdict, or not equal:\n%s", out)
	}
	rows := regexp.MustCompile(`(?m)^(\d)\s+(\d+)\s+(\d+)\s+([\d.]+)%$`).FindAllStringSubmatch(out, -1)
	if len(rows) != 3 {
		t.Fatalf("%d member rows, want 3:\n%s", len(rows), out)
	}
	shards, share := 0, 0.0
	for _, r := range rows {
		n, _ := strconv.Atoi(r[2])
		s, _ := strconv.ParseFloat(r[4], 64)
		if n == 0 || s == 0 {
			t.Errorf("member %s: %s shards, %s%% of the units", r[1], r[2], r[4])
		}
		shards += n
		share += s
	}
	if shards != servicebench.MemberShards || share < 99.5 || share > 100.5 {
		t.Errorf("the members own %d shards (want %d) and %.1f%% of the units:\n%s", shards, servicebench.MemberShards, share, out)
	}
}

// TestMembersFlags: --members takes 1 to 64, and bench service's only
// measures a backlog.
func TestMembersFlags(t *testing.T) {
	wantFailure(t, 2, []string{"demo", "--members", "0"}, "--members 0: want 1 to 64")
	wantFailure(t, 2, []string{"bench", "service", "--members", "2", "--rate", "100"}, "--members measures a backlog's throughput")
}

// TestBenchMembers: gcsm bench service --members 2 times one member, then
// two, on the same backlog; each run reports its members' shares and the
// broker's ceiling under the same traffic, and the two members, held until
// both own shards, match about half the units each. (Not the same units as
// one member, to the unit: a batch's linger may cut it short of the
// backlog, and a change made and undone within one batch folds away.)
func TestBenchMembers(t *testing.T) {
	out := gcsmOK(t, "bench", "service", "--mix", "five", "--device", "cpu", "--members", "2", "--updates", "30000",
		"--accounts", "5000", "--engine=false", "--json")
	res := lastJSON[servicebench.MembersResult](t, out)
	if len(res.Runs) != 2 || res.Runs[0].Members != 1 || res.Runs[1].Members != 2 {
		t.Fatalf("runs %+v, want one member's, then two's", res.Runs)
	}
	for _, r := range res.Runs {
		if r.UpdatesPerSec <= 0 || r.BrokerCeiling <= 0 || r.Events == 0 {
			t.Errorf("%d member(s): %v updates/s, broker ceiling %v, %d events", r.Members, r.UpdatesPerSec, r.BrokerCeiling, r.Events)
		}
	}
	u := res.Runs[1].Units
	if len(u) != 2 || min(u[0], u[1])*3 < u[0]+u[1] {
		t.Errorf("two members matched %v units: want each a third or more", u)
	}
}
