package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/gcsm/gcsm/internal/kafkaconn"
)

// TestGroupActiveStandby: of two members, the first holds every partition
// and the second stands by; a commit of the active one is the group's
// committed offset; when the active one leaves, the standby's generation
// ends and its next one holds every partition, whose committed offsets the
// shard group's fetch reads back.
func TestGroupActiveStandby(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "edges"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := ConsumerConfig{Conn: kafkaconn.Plaintext(c.ListenAddrs()...), Topic: "edges", Group: "g", SessionTimeout: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	first, err := NewConsumer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g1, err := first.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(g1.Partitions) != 3 {
		t.Fatalf("the only member holds %v, want 3 partitions", g1.Partitions)
	}
	second, err := NewConsumer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	// The second's join rebalances the group: the first's generation ends,
	// and both join the next one, in which the active member keeps all.
	joined := make(chan *Generation, 1)
	go func() {
		g, err := second.Next(ctx)
		if err != nil {
			t.Error(err)
		}
		joined <- g
	}()
	g1.Wait(ctx)
	if err := g1.Commit(map[int]int64{0: 5}); err == nil {
		t.Error("a commit in an ended generation succeeded")
	}
	g1, err = first.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	g2 := <-joined
	if len(g1.Partitions) != 3 || len(g2.Partitions) != 0 {
		t.Fatalf("active %v, standby %v; want 3 and none", g1.Partitions, g2.Partitions)
	}
	if err := g1.Commit(map[int]int64{0: 7, 2: 9}); err != nil {
		t.Fatal(err)
	}
	first.Close()
	g2.Wait(ctx)
	g2, err = second.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(g2.Partitions) != 3 {
		t.Fatalf("after the active member left, the standby holds %v", g2.Partitions)
	}
	got, err := g2.g.committed(ctx, g2.Partitions)
	if err != nil || len(got) != 2 || got[0] != 7 || got[2] != 9 {
		t.Fatalf("committed offsets %v, %v; want 0:7 and 2:9", got, err)
	}
}
