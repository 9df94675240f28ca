package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/gcsm/gcsm/bench/servicebench"
	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/service"
)

// secureBroker runs gcsm broker with TLS and SCRAM-SHA-512 from the files
// of a fresh servicebench.SecureLocal in dir, and returns its address and the setup.
func secureBroker(t *testing.T, dir string) (string, *servicebench.SecureLocal) {
	t.Helper()
	local, err := servicebench.NewSecureLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	var stderr syncBuffer
	go func() {
		done <- serveBroker(ctx, []string{"--listen", "127.0.0.1:0", "--data", filepath.Join(dir, "broker"),
			"--tls-cert", filepath.Join(dir, "ca.pem"), "--tls-key", filepath.Join(dir, "key.pem"),
			"--sasl", kafkaconn.ScramSHA512 + ":" + servicebench.BenchUser + ":" + local.User.Password}, pw, &stderr)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("gcsm broker: %v", err)
		}
	})
	addr, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatalf("gcsm broker printed no address: %v; stderr:\n%s", err, stderr.String())
	}
	go io.Copy(io.Discard, pr)
	if strings.Contains(stderr.String(), local.User.Password) {
		t.Errorf("gcsm broker's stderr shows the password:\n%s", stderr.String())
	}
	return strings.TrimSpace(addr), local
}

// secureConfig writes gcsm run's configuration for the broker at addr with
// the given CA and password files.
func secureConfig(t *testing.T, dir, name, addr, ca, password string) string {
	t.Helper()
	return writeFile(t, dir, name, fmt.Sprintf(`brokers: [%q]
tls: {ca_file: %q}
sasl: {mechanism: SCRAM-SHA-512, username: %s, password_file: %q}
state: {dir: %q}
http: {listen: ""}
batch: {linger: 10ms}
graph: {default_edge_label: TRANSFER, default_vertex_label: Account}
queries:
  - {name: ring3, pattern: "(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a)"}
`, addr, ca, servicebench.BenchUser, password, filepath.Join(dir, "state-"+name)))
}

// TestSecuredKafka runs produce, the service and tail end to end against a
// broker that requires TLS and SCRAM, all configured by one file; then a
// wrong password and an untrusted CA fail each of them within 15 s, with
// one line naming the broker and the cause, and the password shows in no
// error and no log line.
func TestSecuredKafka(t *testing.T) {
	dir := t.TempDir()
	addr, local := secureBroker(t, dir)
	cfgFile := secureConfig(t, dir, "good.yaml", addr, local.TLS.CAFile, local.SASL.PasswordFile)
	stream := writeFile(t, dir, "ring.jsonl", `{"op":"+","src":"a1","dst":"a2","ts":"2026-11-21T10:00:00Z"}
{"op":"+","src":"a2","dst":"a3","ts":"2026-11-21T10:00:05Z"}
{"op":"+","src":"a3","dst":"a1","ts":"2026-11-21T10:00:09Z"}
`)
	var logs syncBuffer
	out := gcsmOK(t, "produce", "--config", cfgFile, "-u", stream, "--topic", "edges")
	if !strings.Contains(out, "produced 3 events") {
		t.Fatalf("produce: %s", out)
	}

	cfg, err := service.LoadConfig(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	s, err := service.New(service.Options{Config: cfg, Log: zerolog.New(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		out, _, _ := gcsm(t, "tail", "--config", cfgFile, "--from-beginning", "--format", "json")
		var ev struct{ Query, Change string }
		if line, _, _ := strings.Cut(out, "\n"); json.Unmarshal([]byte(line), &ev) == nil && ev.Query == "ring3" && ev.Change == "appeared" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ring3 alert through the secured broker after a minute; tail printed %q; logs:\n%s", out, logs.String())
		}
		time.Sleep(200 * time.Millisecond)
	}

	other, err := servicebench.NewSecureLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	wrong := writeFile(t, dir, "wrong-password", "not-"+local.User.Password+"\n")
	for _, c := range []struct {
		name, file string
		cause      error
	}{
		{"wrong password", secureConfig(t, dir, "wrong.yaml", addr, local.TLS.CAFile, wrong), kafkaconn.ErrAuthentication},
		{"untrusted CA", secureConfig(t, dir, "untrusted.yaml", addr, other.TLS.CAFile, local.SASL.PasswordFile), kafkaconn.ErrCertificate},
	} {
		t.Run(c.name, func(t *testing.T) {
			check := func(what, msg string, took time.Duration) {
				t.Helper()
				if took > kafkaconn.CheckTimeout+5*time.Second {
					t.Errorf("%s took %v", what, took)
				}
				line := strings.TrimSpace(msg)
				if !strings.Contains(line, c.cause.Error()) || !strings.Contains(line, addr) || strings.Contains(line, "\n") {
					t.Errorf("%s: want one line naming %s and %q, got:\n%s", what, addr, c.cause, msg)
				}
				if strings.Contains(msg, local.User.Password) {
					t.Errorf("%s shows the password: %s", what, msg)
				}
			}
			for _, args := range [][]string{
				{"produce", "--config", c.file, "-u", stream, "--topic", "edges"},
				{"tail", "--config", c.file, "--from-beginning"},
			} {
				start := time.Now()
				_, stderr, code := gcsm(t, args...)
				if code == 0 {
					t.Fatalf("gcsm %s succeeded", strings.Join(args, " "))
				}
				check("gcsm "+args[0], stderr, time.Since(start))
			}
			cfg, err := service.LoadConfig(c.file)
			if err != nil {
				t.Fatal(err)
			}
			var logs syncBuffer
			s, err := service.New(service.Options{Config: cfg, Log: zerolog.New(&logs)})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err = s.Run(context.Background())
			if err == nil {
				t.Fatal("the service ran")
			}
			check("the service", err.Error(), time.Since(start))
			if strings.Contains(logs.String(), local.User.Password) {
				t.Errorf("the service's log shows the password:\n%s", logs.String())
			}
		})
	}
	if strings.Contains(logs.String(), local.User.Password) {
		t.Errorf("the service's log shows the password:\n%s", logs.String())
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 || strings.Contains(rec.Body.String(), local.User.Password) {
		t.Errorf("/metrics: status %d, or it shows the password", rec.Code)
	}
}

// TestSASLUsersFlag checks gcsm broker's --sasl parser.
func TestSASLUsersFlag(t *testing.T) {
	var u saslUsers
	if err := u.Set("SCRAM-SHA-256:alice:pa:ss"); err != nil || len(u) != 1 || u[0].User != "alice" || u[0].Password != "pa:ss" {
		t.Fatalf("Set: %v, %+v", err, u)
	}
	if strings.Contains(u.String(), "pa:ss") {
		t.Errorf("String() shows the password: %s", u.String())
	}
	for _, bad := range []string{"", "PLAIN", "PLAIN:bob", "GSSAPI:bob:pw", "PLAIN::pw", "PLAIN:bob:"} {
		if err := u.Set(bad); err == nil {
			t.Errorf("Set(%q) accepted", bad)
		}
	}
}

// FuzzSASLUsers: a --sasl value either parses to a login whose parts give
// the value back, or is refused.
func FuzzSASLUsers(f *testing.F) {
	for _, s := range []string{"PLAIN:a:b", "SCRAM-SHA-512:u:p:q", "x", "PLAIN::", ":::", "SCRAM-SHA-256:a:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		var u saslUsers
		if err := u.Set(v); err != nil {
			return
		}
		got := u[0].Mechanism + ":" + u[0].User + ":" + u[0].Password
		if got != v || u[0].User == "" || u[0].Password == "" || strings.Contains(u[0].User, ":") {
			t.Fatalf("Set(%q) gave %+v", v, u[0])
		}
	})
}
