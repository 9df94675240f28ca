package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
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
	if shards != memberShards || share < 99.5 || share > 100.5 {
		t.Errorf("the members own %d shards (want %d) and %.1f%% of the units:\n%s", shards, memberShards, share, out)
	}
}

// TestMembersFlags: --members takes 1 to 64, and bench service's only
// measures a backlog.
func TestMembersFlags(t *testing.T) {
	wantFailure(t, 2, []string{"demo", "--members", "0"}, "--members 0: want 1 to 64")
	wantFailure(t, 2, []string{"bench", "service", "--members", "2", "--rate", "100"}, "--members measures a backlog's throughput")
}
