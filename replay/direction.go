package replay

import (
	"errors"
	"fmt"
	"io"

	"github.com/gcsm/gcsm/ingest"
)

// Input is a file given to a flag, for messages.
type Input struct{ Flag, Path string }

// GraphDirected decides whether the graph read from files is directed. A
// --directed given explicitly decides. Otherwise the files' formats do (see
// ingest.Reader.Directed): JSON events and CSV files are directed, CSM files
// and SNAP edge lists undirected. Files whose formats disagree are refused
// rather than one read against its grain; with no file to decide (none, or
// only empty ones) the graph is undirected. fix says, for a query with
// arrows on an undirected graph, what would make the graph directed.
func GraphDirected(flagValue, flagGiven bool, files ...Input) (directed bool, fix string, err error) {
	if flagGiven {
		return flagValue, "drop --directed=false", nil
	}
	var first *Input
	var firstWhat string
	for _, in := range files {
		if in.Path == "" {
			continue
		}
		d, what, err := fileDirected(in.Path)
		if err != nil {
			return false, "", err
		}
		if what == "" {
			continue // an empty file says nothing
		}
		if first == nil {
			first, firstWhat, directed = &in, what, d
			continue
		}
		if d != directed {
			return false, "", fmt.Errorf("%s %s is %s, read as %s, but %s %s is %s, read as %s: give --directed or --directed=false to say which the graph is",
				first.Flag, first.Path, firstWhat, directedWord(directed), in.Flag, in.Path, what, directedWord(d))
		}
	}
	if first == nil {
		return false, "give --directed (no input file says which the graph is)", nil
	}
	return directed, fmt.Sprintf("give --directed (%s %s is %s, read as undirected by default)", first.Flag, first.Path, firstWhat), nil
}

func directedWord(d bool) string {
	if d {
		return "directed"
	}
	return "undirected"
}

// fileDirected reads the first data line of path and reports whether its
// format is directed by default, and what the format is; what is "" for a
// file without data. A malformed first line still shows the format; the
// full read reports it.
func fileDirected(path string) (directed bool, what string, err error) {
	r, c, err := ingest.Open(path, ingest.Options{})
	if err != nil {
		return false, "", err
	}
	defer c.Close()
	if _, err := r.Next(); err != nil && !errors.Is(err, io.EOF) {
		var le *ingest.LineError
		if !errors.As(err, &le) {
			return false, "", err
		}
	}
	switch r.Format() {
	case ingest.FormatJSON:
		what = "JSON lines"
	case ingest.FormatCSM:
		what = "a CSM file"
	case ingest.FormatSNAP:
		what = "a SNAP edge list"
		if r.Directed() {
			what = "a CSV file"
		}
	}
	return r.Directed(), what, nil
}
