package statedir

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

const (
	magic       = "GCSMCKPT"
	version     = 1
	headerSize  = len(magic) + 4 + 8
	trailerSize = 4

	namePrefix = "ckpt-"
	seqDigits  = 20 // enough for any uint64, so the lexical order is the numeric one
	tmpSuffix  = ".tmp"

	// bufSize is the write and read buffer: large enough that a checkpoint
	// of hundreds of MB costs few system calls, small enough not to matter.
	bufSize = 256 << 10
)

// ErrNoCheckpoint is returned (wrapped) by Load when the directory holds no
// checkpoint that verifies and reads.
var ErrNoCheckpoint = errors.New("no usable checkpoint")

// ErrCorrupt is wrapped by the errors Load reports for checkpoints that fail
// verification (framing or checksum), as opposed to those whose read failed.
var ErrCorrupt = errors.New("corrupt checkpoint")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Dir is a directory of checkpoints named so that the lexical order is the
// write order: ckpt- and a 20-digit sequence number. Its methods are safe for
// concurrent use; they run one at a time.
type Dir struct {
	path string
	keep int
	lock *Lock

	mu   sync.Mutex
	next uint64 // sequence number of the next checkpoint
}

// Open opens the state directory at path, creating it (mode 0o750) if needed,
// locks it (LockName) for this process until Close, and removes the
// temporary files that a crash during Save left behind. Save keeps the
// newest keep checkpoints, at least one.
//
// A directory that another process has open is refused at once with an
// error wrapping a *LockedError, which names the holder: a second process
// would remove the first one's temporary files and write checkpoints of
// another graph under the same sequence of names.
func Open(path string, keep int) (_ *Dir, err error) {
	if keep < 1 {
		return nil, fmt.Errorf("statedir: keep must be at least 1, got %d", keep)
	}
	if err := os.MkdirAll(path, 0o750); err != nil {
		return nil, fmt.Errorf("statedir: %w", err)
	}
	lock, err := LockFile(filepath.Join(path, LockName))
	if err != nil {
		var held *LockedError
		if errors.As(err, &held) {
			return nil, fmt.Errorf("statedir: %s is in use: %w; one process per state directory: stop that process, or give this one another directory", path, err)
		}
		return nil, fmt.Errorf("statedir: %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			lock.Unlock()
		}
	}()
	d := &Dir{path: path, keep: keep, lock: lock}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("statedir: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if isTemp(name) && e.Type().IsRegular() {
			if err := os.Remove(filepath.Join(path, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("statedir: removing a leftover temporary file: %w", err)
			}
			continue
		}
		if seq, ok := parseName(name); ok {
			if seq == math.MaxUint64 {
				return nil, fmt.Errorf("statedir: %s: the sequence numbers are exhausted", filepath.Join(path, name))
			}
			d.next = max(d.next, seq+1)
		}
	}
	return d, nil
}

// Close releases the directory's lock. The Dir must not be used after.
func (d *Dir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lock == nil {
		return nil
	}
	err := d.lock.Unlock()
	d.lock = nil
	return err
}

func checkpointName(seq uint64) string { return fmt.Sprintf("%s%0*d", namePrefix, seqDigits, seq) }

// parseName returns the sequence number of a checkpoint's file name.
func parseName(name string) (uint64, bool) {
	digits, ok := strings.CutPrefix(name, namePrefix)
	if !ok || len(digits) != seqDigits {
		return 0, false
	}
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	seq, err := strconv.ParseUint(digits, 10, 64)
	return seq, err == nil
}

func isTemp(name string) bool {
	return strings.HasPrefix(name, namePrefix) && strings.HasSuffix(name, tmpSuffix)
}

// Save writes one checkpoint: write streams the content, which Save frames
// with the header and the CRC-32C trailer, then publishes atomically and
// deletes all but the newest keep checkpoints. The content is never held in
// memory; only the length in the header is filled in once it is known.
//
// A non-empty path means the checkpoint is durable. If only the removal of
// older checkpoints failed, Save returns the path and an error that says so;
// the next Save tries the removal again. If the rename happened but the
// directory's fsync failed, Save returns an error and no path: the
// checkpoint may or may not survive a power loss, so the caller must not
// rely on it (it is valid, and Load may still use it).
func (d *Dir) Save(write func(w io.Writer) error) (path string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	seq := d.next
	if seq == math.MaxUint64 {
		return "", errors.New("statedir: the sequence numbers are exhausted")
	}
	d.next++

	f, err := os.CreateTemp(d.path, namePrefix+"*"+tmpSuffix)
	if err != nil {
		return "", fmt.Errorf("statedir: cannot create a checkpoint: %w", err)
	}
	tmp := f.Name()
	published := false
	defer func() {
		// Also on a panic in write: no temporary file outlives Save.
		if !published {
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()

	var hdr [headerSize]byte
	copy(hdr[:], magic)
	binary.LittleEndian.PutUint32(hdr[len(magic):], version)
	bw := bufio.NewWriterSize(f, bufSize)
	_, _ = bw.Write(hdr[:]) // an error sticks in bw and Flush reports it
	cw := &crcWriter{w: bw}
	if err := write(cw); err != nil {
		return "", fmt.Errorf("statedir: writing checkpoint: %w", err)
	}
	var tr [trailerSize]byte
	binary.LittleEndian.PutUint32(tr[:], cw.crc)
	_, _ = bw.Write(tr[:])
	if err := bw.Flush(); err != nil {
		return "", fmt.Errorf("statedir: writing checkpoint: %w", err)
	}
	// The length goes in last, so that the content could stream; the fsync
	// below covers it with the rest.
	binary.LittleEndian.PutUint64(hdr[len(magic)+4:], cw.n)
	if _, err := f.WriteAt(hdr[len(magic)+4:], int64(len(magic)+4)); err != nil {
		return "", fmt.Errorf("statedir: writing checkpoint header: %w", err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("statedir: syncing checkpoint: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("statedir: closing checkpoint: %w", err)
	}
	final := filepath.Join(d.path, checkpointName(seq))
	if err := os.Rename(tmp, final); err != nil {
		return "", fmt.Errorf("statedir: publishing checkpoint: %w", err)
	}
	published = true
	if err := syncDir(d.path); err != nil {
		return "", fmt.Errorf("statedir: checkpoint %s published but not durable: %w", final, err)
	}
	if err := d.prune(); err != nil {
		return final, fmt.Errorf("statedir: checkpoint %s saved, but %w", final, err)
	}
	return final, nil
}

// crcWriter passes the content on and checksums and counts it on the way.
type crcWriter struct {
	w   io.Writer
	crc uint32
	n   uint64
}

func (c *crcWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	c.n += uint64(n)
	return n, err
}

// syncDir makes a rename in dir durable: the new name lives in the
// directory, which the file's own fsync does not cover.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// list returns the checkpoint file names, oldest first.
func (d *Dir) list() ([]string, error) {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return nil, fmt.Errorf("statedir: %w", err)
	}
	var names []string
	for _, e := range entries {
		if _, ok := parseName(e.Name()); ok && e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names) // ReadDir sorts already; the order is load-bearing, so say it
	return names, nil
}

// removeFile is os.Remove; tests replace it to make pruning fail, which no
// file permission does for root.
var removeFile = os.Remove

// prune deletes all but the newest keep checkpoints.
func (d *Dir) prune() error {
	names, err := d.list()
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names[:max(0, len(names)-d.keep)] {
		if err := removeFile(filepath.Join(d.path, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cannot remove old checkpoints: %w", errors.Join(errs...))
	}
	return nil
}

// Load calls read with the content of the newest checkpoint whose framing and
// checksum are valid, and returns its path. The checksum is verified in a
// first streaming pass, so read never sees a byte of a corrupt checkpoint;
// the second pass hands read a *bufio.Reader (an io.ByteReader) that ends at
// the content's end.
//
// A checkpoint that fails verification (the error wraps ErrCorrupt), or
// whose read returns an error, is reported in skipped, each error naming the
// file and why, and the next older one is tried. read must therefore build
// its state afresh on each call, not into what an earlier failed call left.
// When none is usable Load returns an error wrapping ErrNoCheckpoint.
func (d *Dir) Load(read func(r io.Reader) error) (path string, skipped []error, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	names, err := d.list()
	if err != nil {
		return "", nil, err
	}
	for i := len(names) - 1; i >= 0; i-- {
		p := filepath.Join(d.path, names[i])
		if err := load(p, read); err != nil {
			skipped = append(skipped, fmt.Errorf("checkpoint %s: %w", p, err))
			continue
		}
		return p, skipped, nil
	}
	return "", skipped, fmt.Errorf("statedir: %w in %s (%d skipped)", ErrNoCheckpoint, d.path, len(skipped))
}

func load(path string, read func(r io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := verify(f)
	if err != nil {
		return err
	}
	if err := read(bufio.NewReaderSize(io.NewSectionReader(f, int64(headerSize), n), bufSize)); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	return nil
}

// verify checks a checkpoint's framing and checksum and returns the length
// of its content.
func verify(f *os.File) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	if size < int64(headerSize+trailerSize) {
		return 0, corrupt("%d bytes, shorter than the %d of an empty checkpoint", size, headerSize+trailerSize)
	}
	var hdr [headerSize]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return 0, err
	}
	if string(hdr[:len(magic)]) != magic {
		return 0, corrupt("bad magic %q", hdr[:len(magic)])
	}
	if v := binary.LittleEndian.Uint32(hdr[len(magic):]); v != version {
		return 0, corrupt("unsupported version %d (this build reads %d)", v, version)
	}
	n := binary.LittleEndian.Uint64(hdr[len(magic)+4:])
	if want := uint64(size) - uint64(headerSize+trailerSize); n != want {
		return 0, corrupt("the header gives %d bytes of content, the file's size leaves room for %d", n, want)
	}
	h := crc32.New(castagnoli)
	buf := make([]byte, bufSize)
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, int64(headerSize), int64(n)), buf); err != nil {
		return 0, err
	}
	var tr [trailerSize]byte
	if _, err := f.ReadAt(tr[:], int64(headerSize)+int64(n)); err != nil {
		return 0, err
	}
	if stored, got := binary.LittleEndian.Uint32(tr[:]), h.Sum32(); stored != got {
		return 0, corrupt("checksum mismatch: stored %08x, content %08x", stored, got)
	}
	return int64(n), nil
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}
