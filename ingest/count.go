package ingest

import (
	"errors"
	"io"
)

// CountRecords reads the file at path to its end and returns the number of
// its records and its first odd time (nil: none), or the first bad line's
// error (file:line: reason). A publisher reads a file so before it
// publishes any of it, so that a bad line stops it before part of the file
// is on the topic.
func CountRecords(path string, opts Options) (int, *OddTime, error) {
	r, c, err := Open(path, opts)
	if err != nil {
		return 0, nil, err
	}
	defer c.Close()
	n := 0
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			if odd, ok := r.OddTime(); ok {
				return n, &odd, nil
			}
			return n, nil, nil
		}
		if err != nil {
			return n, nil, err
		}
		n++
	}
}
