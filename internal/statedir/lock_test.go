package statedir

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// lockChildEnv makes the test binary a child that opens the state
// directory it names, says so on stdout, and holds it until killed.
const lockChildEnv = "GCSM_STATEDIR_LOCK_CHILD"

func TestMain(m *testing.M) {
	if dir, ok := os.LookupEnv(lockChildEnv); ok {
		d, err := Open(dir, 1)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("locked")
		io.Copy(io.Discard, os.Stdin) // until the parent goes
		d.Close()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestLockOtherProcess: a directory another process has open is refused
// with an error that names the directory and the holder's pid, and is free
// again once that process is killed, with no clean-up.
func TestLockOtherProcess(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "locked\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q, %v", line, err)
	}

	_, err = Open(dir, 1)
	var held *LockedError
	if !errors.As(err, &held) || held.PID != cmd.Process.Pid || held.Path != filepath.Join(dir, LockName) {
		t.Fatalf("Open of a held directory: %v, want a *LockedError of pid %d", err, cmd.Process.Pid)
	}
	for _, want := range []string{dir, "pid " + strconv.Itoa(cmd.Process.Pid), "another directory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	// SIGKILL: no deferred code runs, and the kernel drops the lock.
	cmd.Process.Kill()
	cmd.Wait()
	d, err := Open(dir, 1)
	if err != nil {
		t.Fatalf("Open after the holder died: %v", err)
	}
	defer d.Close()
	b, err := os.ReadFile(filepath.Join(dir, LockName))
	if err != nil || string(b) != strconv.Itoa(os.Getpid())+"\n" {
		t.Fatalf("lock file holds %q, %v; want this process's pid", b, err)
	}
}

// TestLockSameProcess: the lock belongs to the open Dir, so a second Open
// in one process is refused too, until Close.
func TestLockSameProcess(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	var held *LockedError
	if _, err := Open(dir, 1); !errors.As(err, &held) || held.PID != os.Getpid() {
		t.Fatalf("second Open: %v, want a *LockedError of this pid", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	d, err = Open(dir, 1)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	d.Close()
}

// TestLockFileEmpty: a holder that has not written its pid yet is named
// as another process, not as pid 0.
func TestLockFileEmpty(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	l, err := LockFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	_, err = LockFile(path)
	var held *LockedError
	if !errors.As(err, &held) || held.PID != 0 || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("LockFile: %v", err)
	}
}
