package service

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestShutdownCommitsOnEmbeddedBroker stops a service that runs on its
// embedded broker, as SIGTERM does, after it applied input that no periodic
// checkpoint covers: the final checkpoint must be committed before the
// broker closes, so the group's offsets, read from the broker's log after a
// restart, cover all of the input, and no commit is refused.
func TestShutdownCommitsOnEmbeddedBroker(t *testing.T) {
	cfg := testConfig(t, nil)
	cfg.Brokers = nil
	cfg.Embedded.Listen = "127.0.0.1:0"
	cfg.State.CheckpointEvery = time.Hour
	// The embedded broker keeps Kafka's least session timeout, 6s.
	cfg.Input.SessionTimeout = DefaultConfig().Input.SessionTimeout
	var logs syncBuilder
	s, err := New(Options{Config: cfg, Log: zerolog.New(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	_, vals := transferStream(500, 1)
	produce(t, s.Brokers(), cfg.Input.Topic, vals)
	waitFor(t, "the input to be applied", time.Minute, func() bool {
		return s.Progress().Position[0] == int64(len(vals))
	})
	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of its context's end")
	}
	for _, bad := range []string{"closed network connection", "commit refused"} {
		if strings.Contains(logs.String(), bad) {
			t.Errorf("the log mentions %q:\n%s", bad, logs.String())
		}
	}

	s2, err := New(Options{Config: cfg, Log: zerolog.New(io.Discard)})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.close()
	if got := committed(t, s2.Brokers(), cfg.Input.Group); got != int64(len(vals)) {
		t.Errorf("committed offset after the restart is %d, want %d (all of the input)", got, len(vals))
	}
}
