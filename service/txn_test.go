package service

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/output"
)

// TestExactlyOnceFenced: a service whose transactional id another writer
// opens (the member that became active after this one stalled) stops with
// errFenced, and nothing it matched after the fence becomes visible to a
// read_committed consumer.
func TestExactlyOnceFenced(t *testing.T) {
	addrs := cluster(t, 1, 1)
	cfg := testConfig(t, addrs)
	out := consume(t, addrs, "matches", true)
	_, vals := transferStream(1500, 7)
	half := len(vals) / 2
	produce(t, addrs, "edges", vals[:half])
	r := start(t, cfg)
	waitFor(t, "the first half", time.Minute, func() bool { return r.s.Progress().Position[0] == int64(half) })
	before := r.s.Progress().Events
	waitFor(t, "its events", time.Minute, func() bool { return int64(out.count()) == before })
	if before == 0 {
		t.Fatal("the first half gave no events: the test would show nothing")
	}

	sink, err := output.NewKafka(output.KafkaConfig{Conn: kafkaconn.Plaintext(addrs...), Topic: "matches"})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	successor, err := sink.(output.Transactor).Transactional(context.Background(), cfg.transactionalID())
	if err != nil {
		t.Fatal(err)
	}
	defer successor.Close()

	produce(t, addrs, "edges", vals[half:])
	select {
	case err := <-r.done:
		close(r.done)
		if !errors.Is(err, errFenced) {
			t.Fatalf("Run: %v, want errFenced", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the fenced service went on")
	}
	end := topicEnd(t, addrs, "matches")
	waitFor(t, "the output's end", time.Minute, func() bool { return out.reached(end) })
	if n := int64(out.count()); n != before {
		t.Fatalf("%d events visible after the fence, %d before: a fenced service's output was committed", n, before)
	}
}
