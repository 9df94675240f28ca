package output

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Txn is a Franz sink whose records are written in Kafka transactions:
// what one transaction holds becomes visible to read_committed consumers
// all at once when it commits, and never if it aborts. Its transactional
// id fences: opening a Txn with an id aborts the transaction that an
// earlier holder of the id left open, and makes that holder's next
// transactional request fail (kerr.ProducerFenced or InvalidProducerEpoch),
// so a process that lost its place can write nothing more.
type Txn struct {
	*Franz
	id string
	// Watch, if set, is told of each Send's events before they go out; the
	// function it returns is called once the transaction that holds them
	// ends, committed or not. A benchmark measures alert latency so.
	Watch    func(events []Event) func(committed bool)
	watching []func(bool)
}

// TxnTimeout is how long the coordinator lets a transaction stay open
// before aborting it. A crashed writer's open transaction holds back
// read_committed consumers until its successor opens the id, or this long;
// a transaction a live writer keeps open longer, waiting out an outage,
// aborts and is written again.
const TxnTimeout = 30 * time.Second

// Transactional opens a transactional sink with k's configuration under
// id, and fences the id's earlier holder before it returns.
func (k *Franz) Transactional(ctx context.Context, id string) (*Txn, error) {
	// The transaction's offsets go out as a raw TxnOffsetCommit
	// (ingest.Generation.CommitInTxn): v6 names topics by id alone, which
	// kgo fills in only for its own group's commits; v5 names them.
	vers := kversion.Stable()
	vers.SetMaxKeyVersion(int16(kmsg.TxnOffsetCommit), 5)
	f, err := newFranz(k.cfg, kgo.TransactionalID(id), kgo.TransactionTimeout(TxnTimeout), kgo.MaxVersions(vers))
	if err != nil {
		return nil, err
	}
	// InitProducerID: the coordinator completes the id's open transaction
	// (aborting it) and bumps its epoch.
	if _, _, err := f.cl.ProducerID(ctx); err != nil {
		f.Close()
		return nil, fmt.Errorf("output: transactional id %q: %w", id, err)
	}
	return &Txn{Franz: f, id: id}, nil
}

// A Transactor opens transactional sinks: Franz, or a sink that wraps one.
type Transactor interface {
	Transactional(ctx context.Context, id string) (*Txn, error)
}

var _ Transactor = (*Franz)(nil)

// ID is the transactional id.
func (t *Txn) ID() string { return t.id }

// Client is the transactional client, for the offsets a transaction
// commits (ingest.Generation.CommitInTxn).
func (t *Txn) Client() *kgo.Client { return t.cl }

// Begin opens a transaction; Send's records and Produce's go into it.
func (t *Txn) Begin() error {
	t.produced.Store(0)
	return t.cl.BeginTransaction()
}

// Send is Franz.Send in the open transaction, told to Watch.
func (t *Txn) Send(ctx context.Context, letters []DeadLetter, events []Event) Pending {
	if t.Watch != nil {
		t.watching = append(t.watching, t.Watch(events))
	}
	return t.Franz.Send(ctx, letters, events)
}

// Produce sends r in the open transaction; done runs when it is
// acknowledged or failed.
func (t *Txn) Produce(ctx context.Context, r *kgo.Record, done func(*kgo.Record, error)) {
	t.produce(ctx, r, done)
}

// Produced says whether the open transaction has records. kgo ends a
// transaction without records without a word to the brokers, so offsets
// added to one by raw requests (ingest's CommitInTxn) would stay pending
// until the transaction timed out, and then be lost: commit those outside.
func (t *Txn) Produced() bool { return t.produced.Load() > 0 }

// End commits the open transaction, or aborts it; every record sent in it
// must be acknowledged or failed first. A commit that fails leaves the
// transaction to be aborted (End again with commit false).
func (t *Txn) End(ctx context.Context, commit bool) error {
	err := t.cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
	for _, w := range t.watching {
		w(commit && err == nil)
	}
	t.watching = t.watching[:0]
	return err
}
