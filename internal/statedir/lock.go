package statedir

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// LockName is the file in a state directory whose lock Open holds.
const LockName = "LOCK"

// LockedError reports a lock that another process holds.
type LockedError struct {
	Path string // the lock file
	// PID is the holder's process id, as it wrote it into the lock file; 0
	// when the file holds none yet (the holder has locked but not written).
	PID int
}

func (e *LockedError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("%s is locked by another process", e.Path)
	}
	return fmt.Sprintf("%s is locked by pid %d", e.Path, e.PID)
}

// Lock is an exclusive flock(2) on a file, held until Unlock or the end of
// the process. The kernel drops it when the process dies however it dies,
// SIGKILL included, so a crash never leaves a stale lock to clean up by
// hand, as a pid file alone would; the pid in the file only names the
// holder in the error a second process gets.
type Lock struct {
	f *os.File
}

// LockFile takes the lock of the file at path, creating the file if need
// be, without waiting: if another process holds it, the error is a
// *LockedError naming that process. The file is never removed: removing it
// while a second process has it open would let a third lock a new file of
// the same name beside the second.
//
// flock locks belong to the open file, so a second LockFile of the same
// path fails within one process too.
func LockFile(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("cannot open the lock file: %w", err)
	}
	if err := flock(f); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &LockedError{Path: path, PID: readPID(f)}
		}
		return nil, fmt.Errorf("cannot lock %s: %w", path, err)
	}
	// The holder's pid replaces the last holder's. Truncate first: a
	// shorter pid written over a longer one would read as another number.
	pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt(pid, 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("cannot write the pid into %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// flock takes an exclusive lock of f without blocking, retrying when a
// signal interrupts the call.
func flock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			return err
		}
	}
}

// readPID returns the pid in a lock file, or 0 if it holds none.
func readPID(f *os.File) int {
	b, err := io.ReadAll(io.LimitReader(f, 32))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// Unlock releases the lock. The pid stays in the file: the next holder
// overwrites it, and only a process that finds the file locked reads it.
func (l *Lock) Unlock() error {
	// Closing the only descriptor of the open file releases its flock.
	if err := l.f.Close(); err != nil {
		return fmt.Errorf("cannot release the lock of %s: %w", l.f.Name(), err)
	}
	return nil
}
