package cuda

import (
	"time"
	"unsafe"
)

// Stream is a queue of device work that runs in order. A nil *Stream, where a
// method takes one, is the context's default stream.
type Stream struct {
	ctx    *Context
	handle uintptr // CUstream
}

// h returns the CUstream handle, 0 (the default stream) for nil.
func (s *Stream) h() uintptr {
	if s == nil {
		return 0
	}
	return s.handle
}

// NewStream creates a stream with default flags: work on it waits for, and is
// waited for by, the legacy default stream, so synchronous copies stay
// ordered with it.
func (c *Context) NewStream() (*Stream, error) {
	s := &Stream{ctx: c}
	if err := c.do(fnStreamCreate, uintptr(unsafe.Pointer(&s.handle)), 0); err != nil {
		return nil, err
	}
	return s, nil
}

// Synchronize waits until all work queued on s is done, and reports the first
// asynchronous error.
func (s *Stream) Synchronize() error {
	if s == nil {
		return errNoDriver("Stream.Synchronize")
	}
	return s.ctx.do(fnStreamSynchronize, s.handle)
}

// Close destroys the stream once its queued work is done; Close does not wait.
func (s *Stream) Close() error {
	if s == nil {
		return errNoDriver("Stream.Close")
	}
	if s.handle == 0 {
		return nil
	}
	err := s.ctx.do(fnStreamDestroy, s.handle)
	s.handle = 0
	return err
}

// Event marks a point in a stream, for timing and for waiting.
type Event struct {
	ctx    *Context
	handle uintptr // CUevent
}

// NewEvent creates an event with default flags (timing enabled, spin-wait
// synchronization).
func (c *Context) NewEvent() (*Event, error) {
	e := &Event{ctx: c}
	if err := c.do(fnEventCreate, uintptr(unsafe.Pointer(&e.handle)), 0); err != nil {
		return nil, err
	}
	return e, nil
}

// Record queues the event on s (nil is the default stream).
func (e *Event) Record(s *Stream) error {
	if e == nil {
		return errNoDriver("Event.Record")
	}
	return e.ctx.do(fnEventRecord, e.handle, s.h())
}

// Synchronize waits until the work queued before the event's last Record is
// done.
func (e *Event) Synchronize() error {
	if e == nil {
		return errNoDriver("Event.Synchronize")
	}
	return e.ctx.do(fnEventSynchronize, e.handle)
}

// Close destroys the event.
func (e *Event) Close() error {
	if e == nil {
		return errNoDriver("Event.Close")
	}
	if e.handle == 0 {
		return nil
	}
	err := e.ctx.do(fnEventDestroy, e.handle)
	e.handle = 0
	return err
}

// Elapsed returns the device time between two recorded events, with the
// driver's resolution of about half a microsecond. Both must have completed
// (synchronize on end first), or the error satisfies errors.Is(err,
// ErrNotReady).
func Elapsed(start, end *Event) (time.Duration, error) {
	if start == nil || end == nil {
		return 0, errNoDriver("Elapsed")
	}
	var ms float32
	if err := end.ctx.do(fnEventElapsedTime, uintptr(unsafe.Pointer(&ms)), start.handle, end.handle); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}
