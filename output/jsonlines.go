package output

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
)

// JSONLines is a Sink that writes one JSON object a line: an event as AppendJSON encodes it, a dead letter
// as {"dead_letter":{...}}. It suits stdout, files and pipes.
type JSONLines struct {
	w   io.Writer
	buf []byte // reused across calls; a batch is written with one w.Write
	err error  // the first error, after which the stream may hold a partial line
}

var _ Sink = (*JSONLines)(nil)

// NewJSONLines returns a sink that writes to w. After each call it flushes w if w has Flush() error (a
// bufio.Writer) and syncs it if w has Sync() error (an *os.File), because Write promises durability to a
// caller that then commits its input. The fsync costs about a disk flush per batch on a regular file;
// writers that cannot sync (pipes, terminals) are accepted without it.
func NewJSONLines(w io.Writer) *JSONLines {
	return &JSONLines{w: w}
}

// Write writes events, one line each.
func (j *JSONLines) Write(ctx context.Context, events []Event) error {
	if len(events) == 0 {
		return j.err
	}
	buf := j.buf[:0]
	for i := range events {
		buf = AppendJSON(buf, &events[i])
		buf = append(buf, '\n')
	}
	j.buf = buf
	return j.flush(ctx, len(events), "events")
}

// WriteDead writes dead letters as {"dead_letter":{...}} lines.
func (j *JSONLines) WriteDead(ctx context.Context, letters []DeadLetter) error {
	if len(letters) == 0 {
		return j.err
	}
	buf := j.buf[:0]
	for i := range letters {
		buf = append(buf, `{"dead_letter":`...)
		buf = appendDeadLetter(buf, &letters[i])
		buf = append(buf, "}\n"...)
	}
	j.buf = buf
	return j.flush(ctx, len(letters), "dead letters")
}

// Close flushes and syncs the writer. It does not close it: the caller opened it, and it may be stdout.
func (j *JSONLines) Close() error {
	if j.err != nil {
		return j.err
	}
	if err := j.sync(); err != nil {
		return fmt.Errorf("cannot close JSON lines output: %w", err)
	}
	j.err = errors.New("output: JSON lines sink is closed")
	return nil
}

func (j *JSONLines) flush(ctx context.Context, n int, what string) error {
	if j.err != nil {
		return j.err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if _, err := j.w.Write(j.buf); err != nil {
		// A short write leaves half a line that a retry would glue to the next one; refuse further writes.
		j.err = fmt.Errorf("cannot write %d %s as JSON lines: %w", n, what, err)
		return j.err
	}
	if err := j.sync(); err != nil {
		j.err = fmt.Errorf("cannot write %d %s as JSON lines: %w", n, what, err)
		return j.err
	}
	return nil
}

func (j *JSONLines) sync() error {
	if f, ok := j.w.(interface{ Flush() error }); ok {
		if err := f.Flush(); err != nil {
			return err
		}
	}
	if s, ok := j.w.(interface{ Sync() error }); ok {
		// fsync of a pipe or a terminal fails with EINVAL: there is nothing to make durable there.
		err := s.Sync()
		if err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
	}
	return nil
}
