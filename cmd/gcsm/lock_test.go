package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer that a child's reader goroutine writes
// while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startGcsm starts gcsm with args as a child process and returns it once a
// line of its stderr contains ready, with that line; all of its stderr goes
// to errs.
func startGcsm(t *testing.T, ready string, errs *lockedBuffer, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildGcsm$")
	cmd.Env = append(os.Environ(), childArgsEnv+"="+strings.Join(args, "\n"))
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	seen := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		once := false
		for sc.Scan() {
			errs.Write(append(sc.Bytes(), '\n'))
			if !once && strings.Contains(sc.Text(), ready) {
				once = true
				seen <- sc.Text()
			}
		}
		io.Copy(io.Discard, pr)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		pw.Close()
	})
	select {
	case line := <-seen:
		return cmd, line
	case <-time.After(time.Minute):
		t.Fatalf("gcsm %s did not say %q within a minute\n%s", strings.Join(args, " "), ready, errs.String())
	}
	return nil, ""
}

// stopGcsm sends SIGTERM and waits for a clean exit.
func stopGcsm(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("gcsm after SIGTERM: %v", err)
	}
}

// TestRunStateLocked: a second gcsm run on a state directory in use exits 1,
// naming the directory and the first one's pid, without waiting for it; once
// the first has stopped, a third starts on the directory.
//
// The refusal is a non-blocking flock taken before the checkpoint loads
// (statedir.Open), so it comes as soon as the process starts. The deadline
// below only catches a hang; no duration is asserted.
func TestRunStateLocked(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	cfg := writeFile(t, dir, "gcsm.yaml", "embedded: {listen: 127.0.0.1:0}\nhttp: {listen: \"\"}\nstate: {dir: "+state+"}\n")
	args := []string{"run", "--config", cfg, "--device", "cpu", "--log-format", "json"}
	var firstErrs lockedBuffer
	first, _ := startGcsm(t, "embedded Kafka broker started", &firstErrs, args...)

	second := exec.Command(os.Args[0], "-test.run=^TestChildGcsm$")
	second.Env = append(os.Environ(), childArgsEnv+"="+strings.Join(args, "\n"))
	var errs bytes.Buffer
	second.Stderr = &errs
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- second.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		second.Process.Kill()
		t.Fatalf("the second gcsm run is still running on a locked state directory\n%s", errs.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("second gcsm run: %v, want exit 1\n%s", err, errs.String())
	}
	for _, want := range []string{state + " is in use", "pid " + strconv.Itoa(first.Process.Pid), "another directory"} {
		if !strings.Contains(errs.String(), want) {
			t.Errorf("the second's stderr does not say %q:\n%s", want, errs.String())
		}
	}

	stopGcsm(t, first)
	var thirdErrs lockedBuffer
	third, _ := startGcsm(t, "embedded Kafka broker started", &thirdErrs, args...)
	stopGcsm(t, third)
}

// TestBrokerStateShared: gcsm broker --data DIR and a gcsm run on DIR with
// that broker as its external broker own different parts of DIR and run
// side by side; a second broker on DIR's log, here the embedded one of a
// gcsm run, is refused with the holder's pid.
func TestBrokerStateShared(t *testing.T) {
	dir := t.TempDir()
	var brokerErrs lockedBuffer
	broker, line := startGcsm(t, "gcsm broker: serving on ", &brokerErrs, "broker", "--listen", "127.0.0.1:0", "--data", dir)
	m := regexp.MustCompile(`serving on (\S+) \(\w+[^)]*\), log in`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("no address in %q", line)
	}
	addr := m[1]

	var runErrs lockedBuffer
	run, _ := startGcsm(t, "active: consuming", &runErrs, "run", "--state", dir, "--brokers", addr, "--http", "off", "--device", "cpu", "--log-format", "json")
	stopGcsm(t, run)

	cfg := writeFile(t, t.TempDir(), "gcsm.yaml", "embedded: {listen: 127.0.0.1:0}\nhttp: {listen: \"\"}\nstate: {dir: "+dir+"}\n")
	out, errOut, code := gcsm(t, "run", "--config", cfg, "--device", "cpu")
	if code != 1 || !strings.Contains(errOut, filepath.Join(dir, "kafka")+" is in use") || !strings.Contains(errOut, "pid "+strconv.Itoa(broker.Process.Pid)) {
		t.Fatalf("gcsm run with its embedded broker on a served log: exit %d\n%s\n%s", code, out, errOut)
	}
	stopGcsm(t, broker)
}

// TestDemoStateNotEmpty: gcsm demo --state refuses a directory from an
// earlier run, with the remedy, rather than mix that run into its report.
func TestDemoStateNotEmpty(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "ckpt-00000000000000000003", "")
	out, errOut, code := gcsm(t, "demo", "--state", dir, "--device", "cpu")
	if code != 1 || !strings.Contains(errOut, "--state "+dir+" is not empty") || !strings.Contains(errOut, "rm -r "+dir) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
}
