package statedir

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func save(t *testing.T, d *Dir, content []byte) string {
	t.Helper()
	p, err := d.Save(func(w io.Writer) error {
		// Several writes, as a real encoder makes them.
		for len(content) > 0 {
			n := min(len(content), 1000)
			if _, err := w.Write(content[:n]); err != nil {
				return err
			}
			content = content[n:]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// loadAll loads the newest usable checkpoint and returns its content.
func loadAll(d *Dir) (path string, content []byte, skipped []error, err error) {
	path, skipped, err = d.Load(func(r io.Reader) error {
		if _, ok := r.(io.ByteReader); !ok {
			return errors.New("Load's reader is not an io.ByteReader")
		}
		b, err := io.ReadAll(r)
		content = b
		return err
	})
	return path, content, skipped, err
}

// names lists the directory.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n []string
	for _, e := range es {
		if e.Name() != LockName { // there from Open to the end
			n = append(n, e.Name())
		}
	}
	return n
}

func TestSaveLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "nested")
	d, err := Open(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o750 {
		t.Fatalf("state directory: %v, mode %v", err, st.Mode())
	}
	for _, content := range [][]byte{
		nil,
		[]byte("hello"),
		bytes.Repeat([]byte("0123456789abcdef"), 3<<16), // 3 MiB: several buffers
	} {
		p := save(t, d, content)
		if filepath.Dir(p) != dir || !strings.HasPrefix(filepath.Base(p), "ckpt-") {
			t.Fatalf("saved as %s", p)
		}
		st, err := os.Stat(p)
		if err != nil || st.Size() != int64(len(content)+headerSize+trailerSize) {
			t.Fatalf("%s: %v, size %d for %d bytes of content", p, err, st.Size(), len(content))
		}
		got, b, skipped, err := loadAll(d)
		if err != nil || got != p || len(skipped) != 0 || !bytes.Equal(b, content) {
			t.Fatalf("Load: %s, %d bytes, skipped %v, %v; want %s and %d bytes", got, len(b), skipped, err, p, len(content))
		}
	}
}

// TestFormat pins the framing of a small checkpoint byte by byte.
func TestFormat(t *testing.T) {
	d, err := Open(t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(save(t, d, []byte("abc")))
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Concat([]byte("GCSMCKPT"), []byte{1, 0, 0, 0}, []byte{3, 0, 0, 0, 0, 0, 0, 0}, []byte("abc"),
		binary.LittleEndian.AppendUint32(nil, crc32.Checksum([]byte("abc"), crc32.MakeTable(crc32.Castagnoli))))
	if !bytes.Equal(b, want) {
		t.Fatalf("file\n%x\nwant\n%x", b, want)
	}
}

func TestKeep(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i := range 7 {
		paths = append(paths, save(t, d, []byte{byte(i)}))
		if n := len(names(t, dir)); n != min(i+1, 3) {
			t.Fatalf("after %d saves %d files: %v", i+1, n, names(t, dir))
		}
	}
	if got := names(t, dir); !slices.Equal(got, []string{filepath.Base(paths[4]), filepath.Base(paths[5]), filepath.Base(paths[6])}) {
		t.Fatalf("kept %v, want the newest three of %v", got, paths)
	}
	if !slices.IsSorted(paths) {
		t.Fatalf("names not in write order: %v", paths)
	}
	// A reopened directory goes on with the sequence.
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, err = Open(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := save(t, d, []byte{7})
	if p <= paths[6] {
		t.Fatalf("after reopening, saved as %s, not after %s", p, paths[6])
	}
	if got := names(t, dir); !slices.Equal(got, []string{filepath.Base(p)}) {
		t.Fatalf("keep 1 left %v", got)
	}
	if _, err := Open(dir, 0); err == nil {
		t.Fatal("Open accepted keep 0")
	}
}

// TestCorruptFallsBack damages the newest checkpoint in every way that
// verification must catch; Load must report it and return the previous one,
// and read must see only the previous one's bytes.
func TestCorruptFallsBack(t *testing.T) {
	content := []byte("the newest checkpoint's content")
	for _, c := range []struct {
		name   string
		damage func([]byte) []byte
		want   string
	}{
		{"flipped content byte", func(b []byte) []byte { b[headerSize+3] ^= 0x10; return b }, "checksum mismatch"},
		{"flipped checksum", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, "checksum mismatch"},
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }, "the header gives 31 bytes of content, the file's size leaves room for 30"},
		{"truncated header", func(b []byte) []byte { return b[:10] }, "10 bytes, shorter than"},
		{"zero-length", func(b []byte) []byte { return nil }, "0 bytes, shorter than"},
		{"wrong magic", func(b []byte) []byte { b[0] = 'X'; return b }, `bad magic "XCSMCKPT"`},
		{"wrong version", func(b []byte) []byte { b[8] = 2; return b }, "unsupported version 2"},
		{"wrong length", func(b []byte) []byte { b[12]--; return b }, "the header gives 30 bytes of content, the file's size leaves room for 31"},
		{"appended byte", func(b []byte) []byte { return append(b, 0) }, "leaves room for 32"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := Open(t.TempDir(), 5)
			if err != nil {
				t.Fatal(err)
			}
			old := save(t, d, []byte("previous"))
			p := save(t, d, content)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, c.damage(b), 0o600); err != nil {
				t.Fatal(err)
			}
			got, data, skipped, err := loadAll(d)
			if err != nil || got != old || string(data) != "previous" {
				t.Fatalf("Load: %s %q %v, want %s", got, data, err, old)
			}
			if len(skipped) != 1 || !errors.Is(skipped[0], ErrCorrupt) ||
				!strings.Contains(skipped[0].Error(), p) || !strings.Contains(skipped[0].Error(), c.want) {
				t.Fatalf("skipped %v, want one error naming %s and saying %q", skipped, p, c.want)
			}
		})
	}
}

func TestNoCheckpoint(t *testing.T) {
	d, err := Open(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	called := false
	_, skipped, err := d.Load(func(io.Reader) error { called = true; return nil })
	if !errors.Is(err, ErrNoCheckpoint) || skipped != nil || called {
		t.Fatalf("empty directory: %v, skipped %v, read called %v", err, skipped, called)
	}
	for range 3 {
		p := save(t, d, []byte("x"))
		if err := os.WriteFile(p, []byte("garbage"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, skipped, err = d.Load(func(io.Reader) error { called = true; return nil })
	if !errors.Is(err, ErrNoCheckpoint) || len(skipped) != 3 || called {
		t.Fatalf("all corrupt: %v, skipped %v, read called %v", err, skipped, called)
	}
}

// TestCrashLeftovers leaves what a crash during Save leaves, a temporary
// file, and a Save whose write failed or panicked: none may be loaded, and
// Open removes the leftovers.
func TestCrashLeftovers(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	good := save(t, d, []byte("good"))
	// A complete, valid checkpoint under a temporary name: the crash came
	// just before the rename. It must not be used.
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	leftover := filepath.Join(dir, "ckpt-123456.tmp")
	if err := os.WriteFile(leftover, b, 0o600); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(dir, "notes.txt") // not ours: left alone
	if err := os.WriteFile(stray, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}

	errWrite := errors.New("encoder failed")
	if p, err := d.Save(func(w io.Writer) error {
		w.Write([]byte("half a checkpoint"))
		return errWrite
	}); !errors.Is(err, errWrite) || p != "" {
		t.Fatalf("failed write: Save returned %q, %v", p, err)
	}
	func() {
		defer func() { recover() }()
		d.Save(func(w io.Writer) error { panic("encoder bug") })
	}()
	if got := names(t, dir); !slices.Equal(got, []string{filepath.Base(good), "ckpt-123456.tmp", "notes.txt"}) {
		t.Fatalf("after failed saves the directory holds %v", got)
	}
	p, data, skipped, err := loadAll(d)
	if err != nil || p != good || string(data) != "good" || len(skipped) != 0 {
		t.Fatalf("Load: %s %q %v %v", p, data, skipped, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, 3); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{filepath.Base(good), "notes.txt"}) {
		t.Fatalf("Open left %v", got)
	}
}

func TestReadErrorFallsBack(t *testing.T) {
	d, err := Open(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	old := save(t, d, []byte("old"))
	p := save(t, d, []byte("new"))
	errDecode := errors.New("cannot decode")
	var seen []string
	got, skipped, err := d.Load(func(r io.Reader) error {
		b, _ := io.ReadAll(r)
		seen = append(seen, string(b))
		if string(b) == "new" {
			return errDecode
		}
		return nil
	})
	if err != nil || got != old || !slices.Equal(seen, []string{"new", "old"}) {
		t.Fatalf("Load: %s %v, read saw %q", got, err, seen)
	}
	if len(skipped) != 1 || !errors.Is(skipped[0], errDecode) || errors.Is(skipped[0], ErrCorrupt) || !strings.Contains(skipped[0].Error(), p) {
		t.Fatalf("skipped %v", skipped)
	}
}

// TestPruneFailure makes the removal of old checkpoints fail: the new one is
// durable, so Save returns its path with the error, and the next Save
// removes what this one could not.
func TestPruneFailure(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	first := save(t, d, []byte("a"))
	errBusy := errors.New("device busy")
	removeFile = func(string) error { return errBusy }
	p, err := d.Save(func(w io.Writer) error { _, err := w.Write([]byte("b")); return err })
	removeFile = os.Remove
	if p == "" || !errors.Is(err, errBusy) || !strings.Contains(err.Error(), p) {
		t.Fatalf("Save: %q, %v", p, err)
	}
	if got, data, _, err := loadAll(d); err != nil || got != p || string(data) != "b" {
		t.Fatalf("Load after a failed prune: %s %q %v", got, data, err)
	}
	last := save(t, d, []byte("c"))
	if got := names(t, dir); !slices.Equal(got, []string{filepath.Base(last)}) {
		t.Fatalf("the next Save left %v (first was %s)", got, first)
	}
}

// FuzzLoad writes arbitrary bytes as the newest checkpoint, over a valid
// older one. Load must not panic, must never hand read bytes whose checksum
// fails, and must fall back to the older checkpoint exactly when the newest
// does not verify.
func FuzzLoad(f *testing.F) {
	valid := func(content []byte) []byte {
		b := slices.Concat([]byte(magic), binary.LittleEndian.AppendUint32(nil, version),
			binary.LittleEndian.AppendUint64(nil, uint64(len(content))), content)
		return binary.LittleEndian.AppendUint32(b, crc32.Checksum(content, castagnoli))
	}
	f.Add(valid(nil))
	f.Add(valid([]byte("content")))
	f.Add([]byte{})
	f.Add([]byte("GCSMCKPT\x01\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00abcde\x00\x00\x00\x00"))
	older := valid([]byte("older"))
	// One directory for all inputs, rewritten each time: a fresh t.TempDir
	// per input made the target spend nine tenths of its time in mkdir and
	// rm -r. Each fuzz worker is a process of its own with its own directory,
	// and runs its inputs one after another.
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, file []byte) {
		if err := os.WriteFile(filepath.Join(dir, checkpointName(1)), older, 0o600); err != nil {
			t.Fatal(err)
		}
		newest := filepath.Join(dir, checkpointName(2))
		if err := os.WriteFile(newest, file, 0o600); err != nil {
			t.Fatal(err)
		}
		d, err := Open(dir, 2)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		p, skipped, err := d.Load(func(r io.Reader) error {
			b, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			whole := valid(b)
			if !bytes.Equal(whole, older) && !bytes.Equal(whole, file) {
				t.Fatalf("read got %q, which is no verified checkpoint's content", b)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if bytes.Equal(valid(contentOf(file)), file) {
			if p != newest || len(skipped) != 0 {
				t.Fatalf("a valid newest checkpoint was not used: %s, skipped %v", p, skipped)
			}
			return
		}
		if p == newest || len(skipped) != 1 || !errors.Is(skipped[0], ErrCorrupt) {
			t.Fatalf("an invalid newest checkpoint: Load used %s, skipped %v", p, skipped)
		}
	})
}

// contentOf returns what would be the content of a checkpoint file, whether
// or not its framing is valid.
func contentOf(file []byte) []byte {
	if len(file) < headerSize+trailerSize {
		return nil
	}
	return file[headerSize : len(file)-trailerSize]
}
