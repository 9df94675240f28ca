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
	if got := committed(t, s2.Brokers(), cfg.Input.Group, 1); got != int64(len(vals)) {
		t.Errorf("committed offset after the restart is %d, want %d (all of the input)", got, len(vals))
	}
}

// TestRetentionGapLogged: input that the embedded broker's retention drops
// while the service is down is named in a warning when it restarts, and
// the service goes on from the records the broker still holds.
func TestRetentionGapLogged(t *testing.T) {
	defer func(d time.Duration) { retentionEvery = d }(retentionEvery)
	retentionEvery = 20 * time.Millisecond
	cfg := testConfig(t, nil)
	cfg.Brokers = nil
	cfg.Embedded.Listen = "127.0.0.1:0"
	cfg.Embedded.RetentionBytes = 1 << 20
	cfg.Input.SessionTimeout = DefaultConfig().Input.SessionTimeout
	run := func(s *Service, until func() bool) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		waitFor(t, "the input to be applied", time.Minute, until)
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}
	}
	s, err := New(Options{Config: cfg, Log: zerolog.New(io.Discard)})
	if err != nil {
		t.Fatal(err)
	}
	_, vals := transferStream(100, 1)
	produce(t, s.Brokers(), cfg.Input.Topic, vals)
	run(s, func() bool { return s.Progress().Position[0] == int64(len(vals)) })

	var logs syncBuilder
	s, err = New(Options{Config: cfg, Log: zerolog.New(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	const n = 200 // 3.2 MB of 16 KiB records, over three times the cap
	fill(t, s.Brokers(), cfg.Input.Topic, n, 16<<10)
	waitFor(t, "retention to drop the applied input", 10*time.Second, func() bool {
		return firstOffset(t, s.Brokers(), cfg.Input.Topic) > int64(len(vals))
	})
	end := int64(len(vals) + n)
	run(s, func() bool { return s.Progress().Position[0] == end })
	if !strings.Contains(logs.String(), `"partition":0,"from":100,"to":`) || !strings.Contains(logs.String(), "never applied") {
		t.Errorf("no warning names the dropped input:\n%.3000s", logs.String())
	}
}
