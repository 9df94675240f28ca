package ingest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/gcsm/gcsm/internal/kafkaconn"
)

// TestCommitInTxn: offsets committed in a transaction count once it
// commits and never if it aborts, and a generation the group has moved on
// from is fenced, both where this member knows it and where only the
// coordinator does.
func TestCommitInTxn(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "edges", "out"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	conn := kafkaconn.Plaintext(c.ListenAddrs()...)
	cfg := ConsumerConfig{Conn: conn, Topic: "edges", Group: "g", SessionTimeout: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cons, err := NewConsumer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	gen, err := cons.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	vers := kversion.Stable()
	vers.SetMaxKeyVersion(int16(kmsg.TxnOffsetCommit), 5)
	cl, err := conn.NewClient(kgo.TransactionalID("t"), kgo.MaxVersions(vers))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	txn := func(offsets map[int]int64, commit bool) error {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "out", Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		err := gen.CommitInTxn(ctx, cl, "t", offsets)
		if eerr := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit && err == nil)); eerr != nil {
			t.Fatal(eerr)
		}
		return err
	}
	committed := func() map[int]int64 {
		t.Helper()
		got, err := gen.g.committed(ctx, []int{0, 1})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if err := txn(map[int]int64{0: 5, 1: 3}, true); err != nil {
		t.Fatal(err)
	}
	if got := committed(); got[0] != 5 || got[1] != 3 {
		t.Fatalf("after a commit: %v, want 0:5 1:3", got)
	}
	if err := txn(map[int]int64{0: 9}, false); err != nil {
		t.Fatal(err)
	}
	if got := committed(); got[0] != 5 {
		t.Fatalf("after an abort: %v, want 0:5 still", got)
	}

	// The coordinator refuses a generation it has moved on from.
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "out", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	err = commitInTxn(ctx, cl, "t", "g", gen.ID+1, gen.m.memberID, "edges", map[int]int64{0: 11})
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("a commit in generation %d of the group's %d: %v, want ErrFenced", gen.ID+1, gen.ID, err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	// And this member knows once its generation ended.
	cons.Close()
	if err := txn(map[int]int64{0: 12}, true); !errors.Is(err, ErrFenced) {
		t.Fatalf("a commit after the generation ended: %v, want ErrFenced", err)
	}
}
