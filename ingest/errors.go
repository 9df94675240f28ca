package ingest

import (
	"errors"
	"fmt"
)

// ErrSelfLoop is the cause of a Resolve error for an edge from a vertex to
// itself. Subgraph matching assumes simple graphs, and several SNAP data sets
// contain self-loops, so callers typically count these (errors.Is) rather
// than stop.
var ErrSelfLoop = errors.New("self-loop")

// ErrNoTopic says that the brokers hold no topic of the name asked for; the
// service tells a deleted input topic from an unreachable broker by it.
var ErrNoTopic = errors.New("does not exist")

// LineError reports a bad input line: where it is and why it was refused.
type LineError struct {
	File   string // the name given in Options.File; may be empty
	Line   int    // 1-based; 0 when not known
	Reason string
	// Err, when not nil, is the class of the error, such as ErrSelfLoop, for
	// errors.Is. Malformed text has no class: its Reason says it all.
	Err error
}

// Error returns "file:line: reason", or "line N: reason" without a file name.
func (e *LineError) Error() string {
	switch {
	case e.File != "":
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
	case e.Line > 0:
		return fmt.Sprintf("line %d: %s", e.Line, e.Reason)
	}
	return e.Reason
}

// Unwrap returns Err.
func (e *LineError) Unwrap() error { return e.Err }
