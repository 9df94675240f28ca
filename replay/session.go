// Package replay owns files replayed through the engine core: the session
// of gcsm's file-driven commands (replay, match, bench static, replay
// --demo) that reads a data graph and stream files into an engine.Core,
// loads the -q queries, tells a file's direction, replays a stream batch by
// batch and reports it, and writes --emit's match lines.
package replay

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/engine"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/query"
)

// Config is how a file-driven command opens its session.
type Config struct {
	// Cmd names the command in warnings ("gcsm CMD: warning: ..."), which
	// go to Warn (nil: none).
	Cmd  string
	Warn io.Writer
	// Directed says whether the graph is; Fix says, for a query with
	// arrows on an undirected graph, what would make it directed
	// (GraphDirected).
	Directed bool
	Fix      string
	// SkipBad counts and skips malformed lines and refused updates instead
	// of failing (--skip-bad); TSUnit is what the files' numeric times
	// count (--ts-unit).
	SkipBad bool
	TSUnit  ingest.TimeUnit
	Alloc   hostmem.Allocator
	// Queries are the -q arguments, compiled under Semantics; Unlabeled
	// ignores their labels.
	Queries   []string
	Semantics query.Semantics
	Unlabeled bool
}

// Session is what the file-driven commands share: an engine core, whose
// graph and dictionaries the fields below name for short, and what the
// files read into it.
type Session struct {
	cfg      Config
	core     *engine.Core
	labels   *graph.Dict
	ids      *graph.IDs
	g        *dyngraph.Graph
	resolver *ingest.Resolver
	// keep is what readers keep of events' properties: what the core's
	// transfer store keeps, once a query or an event needs transfers
	// (keepTransfers).
	keep    *ingest.PropFilter
	seen    *graph.Catalog // every property read, kept or not, for warnProperties
	skipped int            // bad lines and refused updates skipped under --skip-bad
	// warnedTime says that the first odd time of the files read was warned
	// about.
	warnedTime bool
}

// warnOddTime warns of the first odd time of r, read from path, once a
// session: a stream in another unit than --ts-unit makes every window and
// WITHIN wrong by a factor of 1000 or more.
func (s *Session) warnOddTime(r *ingest.Reader, path string) {
	odd, ok := r.OddTime()
	if !ok || s.warnedTime || s.cfg.Warn == nil {
		return
	}
	s.warnedTime = true
	fmt.Fprintf(s.cfg.Warn, "gcsm %s: warning: %s:%d: %v\n", s.cfg.Cmd, path, odd.Line, odd)
}

// Open makes a session with an empty graph that keeps, from the start,
// what the queries read of events (previewQueries).
func Open(c Config) (*Session, error) {
	s := &Session{cfg: c, seen: &graph.Catalog{DefaultEdgeLabel: "0"}}
	// Unlabelled vertices (SNAP files) get the CSM files' first label, "0".
	core, err := engine.New(engine.Config{Directed: c.Directed, DefaultVertexLabel: "0", DefaultEdgeLabel: "0", Alloc: c.Alloc})
	if err != nil {
		return nil, err
	}
	s.core, s.labels, s.ids, s.g, s.resolver = core, core.Labels(), core.IDs(), core.Graph(), core.Resolver()
	s.keepTransfersFor(previewQueries(c.Queries, c.Directed, c.Semantics, c.Unlabeled))
	return s, nil
}

// Compile compiles the queries once the files are read, warns of the
// labels and properties they name that the files (where says which) never
// carried, and keeps what the queries read of transfers.
func (s *Session) Compile(where string) ([]*query.Query, error) {
	c := s.cfg
	known := s.labels.Len()
	qs, err := LoadQueries(c.Queries, s.labels, c.Directed, c.Fix, c.Semantics, c.Unlabeled)
	if err != nil {
		return nil, err
	}
	s.WarnUnknownLabels(qs, known, where)
	s.warnProperties(qs, known)
	s.keepTransfersFor(qs)
	return qs, nil
}

// Graph is the session's graph.
func (s *Session) Graph() *dyngraph.Graph { return s.g }

// Labels is the label dictionary; its length before the queries are
// compiled is what the warnings call known.
func (s *Session) Labels() *graph.Dict { return s.labels }

// Skipped counts the bad lines and refused updates skipped under
// --skip-bad.
func (s *Session) Skipped() int { return s.skipped }

// Close frees the graph.
func (s *Session) Close() error { return s.core.Close() }

// Stream is a file's updates with the line each came from, for errors.
type Stream struct {
	file    string
	updates []graph.Update
	runs    lineRuns
}

// add appends u, read from line.
func (st *Stream) add(u graph.Update, line int) {
	st.runs.add(len(st.updates), line)
	st.updates = append(st.updates, u)
}

// line is the line update i came from.
func (st *Stream) line(i int) int { return st.runs.line(i) }

// lineRuns say the lines of a file's updates: update i of a run that
// starts at update from came from line line+i-from. Lines follow one
// another except around comments and skipped lines, so a file has a run
// or a few, not a word per update.
type lineRuns []lineRun

type lineRun struct{ from, line int }

// add notes that update i, the one after the last noted, came from line.
func (rs *lineRuns) add(i, line int) {
	if k := len(*rs); k == 0 || (*rs)[k-1].line+i-(*rs)[k-1].from != line {
		*rs = append(*rs, lineRun{i, line})
	}
}

func (rs lineRuns) line(i int) int {
	k, found := slices.BinarySearchFunc(rs, i, func(r lineRun, i int) int { return cmp.Compare(r.from, i) })
	if !found {
		k--
	}
	return rs[k].line + i - rs[k].from
}

// Len is how many updates the stream holds.
func (st *Stream) Len() int { return len(st.updates) }

// LoadTransfers resolves generated transfers into a stream named file whose
// line numbers count the events, noting their properties as a file's are.
func (s *Session) LoadTransfers(file string, evs []bench.TransferEvent) (*Stream, error) {
	st := &Stream{file: file}
	for i, ev := range evs {
		rec := ev.Record()
		rec.Line = i + 1
		for _, p := range rec.Props {
			s.seen.Note(false, rec.Label, []byte(p.Name), p.Value.Kind)
		}
		u, err := s.resolver.Resolve(rec)
		if err != nil {
			return nil, err
		}
		st.add(u, i+1)
	}
	return st, nil
}

// Read parses a whole file of graph or stream records. Malformed lines and
// records that Resolve refuses stop the read with an error naming file and
// line, or are counted and skipped under --skip-bad.
func (s *Session) Read(path string) (*Stream, error) {
	st := &Stream{file: path}
	begin := func(_ *ingest.Reader, lines int) { st.updates = make([]graph.Update, 0, lines) }
	if err := s.scan(path, begin, st.add); err != nil {
		return nil, err
	}
	if graph.HasTransferID(st.updates) {
		s.keepTransfers()
	}
	return st, nil
}

// scan reads the file at path, handing each update with its line to add;
// begin gets the reader and the file's count of lines, an upper bound on
// its updates, before the first. Malformed lines and records that Resolve
// refuses stop the read with an error naming file and line, or are
// counted and skipped under --skip-bad.
func (s *Session) scan(path string, begin func(r *ingest.Reader, lines int), add func(u graph.Update, line int)) error {
	r, c, err := ingest.Open(path, ingest.Options{SkipBad: s.cfg.SkipBad, Keep: s.keep, TSUnit: s.cfg.TSUnit, Seen: s.seen})
	if err != nil {
		return err
	}
	defer c.Close()
	n, err := countLines(path)
	if err != nil {
		return err
	}
	begin(r, n)
	for {
		u, line, err := r.NextUpdate(s.resolver)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if !s.cfg.SkipBad || !isLineError(err) {
				return err
			}
			// Under --skip-bad the reader skips malformed lines itself: a
			// line error here is a record that Resolve refused.
			s.skipped++
			continue
		}
		add(u, line)
	}
	s.skipped += r.Skipped()
	s.warnOddTime(r, path)
	return nil
}

func isLineError(err error) bool {
	var le *ingest.LineError
	return errors.As(err, &le)
}

// countLines counts the lines of the file at path, an upper bound on its
// records (exact for the data sets), so that Read allocates its updates
// once at their size: a guess from the file's size grew them, copying,
// or wasted memory on files of long JSON lines. The count reads the file
// a second time, from the page cache: a fraction of a millisecond for the
// human graph (1.1 MB).
func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	n := 1 // a last line without a newline
	for {
		k, err := f.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// step runs updates[lo:hi] of st through the core as one batch, with b's
// queries and sinks. Updates the graph refuses (label conflicts) are an
// error naming their line, or skipped under --skip-bad.
func (s *Session) step(st *Stream, lo, hi int, b engine.Batch) (*engine.Step, error) {
	b.Updates = st.updates[lo:hi]
	step, err := s.core.Step(b)
	if err != nil {
		return nil, err
	}
	if err := s.refused(st, lo, step.Rejects); err != nil {
		s.core.Finish()
		return nil, err
	}
	return step, nil
}

// refused turns the graph's refusals of st.updates[lo:] into an error naming
// the first one's line, or counts them under --skip-bad.
func (s *Session) refused(st *Stream, lo int, rejects []dyngraph.Reject) error {
	if len(rejects) == 0 {
		return nil
	}
	if !s.cfg.SkipBad {
		rj := rejects[0]
		return fmt.Errorf("%s:%d: %v", st.file, st.line(lo+rj.Index), s.describeReject(rj.Err))
	}
	s.skipped += len(rejects)
	return nil
}

func (s *Session) describeReject(err error) string {
	var lc *dyngraph.LabelConflictError
	if errors.As(err, &lc) {
		return fmt.Sprintf("label conflict: vertex %s has label %s, this line says %s",
			s.ids.Name(lc.Vertex), s.labels.Name(lc.Have), s.labels.Name(lc.Got))
	}
	return err.Error()
}

// loadBatch is how many records of a data graph file go into one Apply; it
// bounds the normalisation map, not the graph.
const loadBatch = 1 << 16

// LoadGraph reads a data graph file into the session's graph: with a
// dyngraph.Builder as it reads when the file only adds and no transfers
// are kept, else with Apply (loader).
func (s *Session) LoadGraph(path string) error {
	ld := &loader{s: s, st: &Stream{file: path}}
	if err := s.scan(path, ld.begin, ld.add); err != nil {
		return err
	}
	if ld.err != nil {
		return ld.err
	}
	if ld.b != nil {
		return ld.finish()
	}
	st := ld.st
	if graph.HasTransferID(st.updates) {
		s.keepTransfers()
	}
	if s.core.Store() == nil && !slices.ContainsFunc(st.updates, func(u graph.Update) bool { return u.Op == graph.Delete }) {
		rejects, _, err := s.g.Build(st.updates)
		if err != nil {
			return err
		}
		return s.refused(st, 0, rejects)
	}
	for lo := 0; lo < len(st.updates); lo += loadBatch {
		hi := min(lo+loadBatch, len(st.updates))
		if _, err := s.step(st, lo, hi, engine.Batch{}); err != nil {
			return err
		}
	}
	return nil
}

// loader is LoadGraph's reading of a file. A CSM file or a blank-separated
// edge list, whose records carry no transfer ids, goes into a Builder as
// it is read, when no transfers are kept (dyngraph.Builder says what that
// saves). Other files, and the rest of such a file from its first deletion
// on, are kept as updates for LoadGraph to build or apply: Build of the
// part before a deletion and Apply of the rest give the graph and the
// refusals that Apply of it all does.
type loader struct {
	s     *Session
	r     *ingest.Reader
	lines int
	b     *dyngraph.Builder // nil once the updates are kept instead
	built int               // updates given to b
	st    *Stream           // the lines of b's updates, then the kept updates
	err   error             // the builder's, which ends the load
	began bool
}

func (ld *loader) begin(r *ingest.Reader, lines int) { ld.r, ld.lines = r, lines }

func (ld *loader) add(u graph.Update, line int) {
	if ld.err != nil {
		return
	}
	if !ld.began {
		ld.began = true
		f := ld.r.Format()
		if ld.s.core.Store() == nil && (f == ingest.FormatCSM || f == ingest.FormatSNAP && !ld.r.Directed()) {
			ld.b, ld.err = ld.s.g.NewBuilder(ld.lines)
		} else {
			ld.st.updates = make([]graph.Update, 0, ld.lines)
		}
	}
	if ld.b != nil && (u.Op != graph.Insert && u.Op != graph.AddVertex || u.Tx != nil && u.Tx.ID != "") {
		if ld.err = ld.finish(); ld.err != nil {
			return
		}
		ld.b, ld.st = nil, &Stream{file: ld.st.file}
	}
	if ld.b == nil {
		ld.st.add(u, line)
		return
	}
	ld.st.runs.add(ld.built, line)
	ld.built++
	ld.err = ld.b.Add(&u)
}

// finish builds what the builder was given and reports its refusals.
func (ld *loader) finish() error {
	rejects, _, err := ld.b.Finish()
	if err != nil {
		return err
	}
	return ld.s.refused(ld.st, 0, rejects)
}

// WarnUnknownLabels writes one line per label a query names that the
// input never carried, as such a query matches nothing. known is the size
// of the label dictionary before the queries were compiled, which intern
// their labels after the input's; where names the input.
func (s *Session) WarnUnknownLabels(qs []*query.Query, known int, where string) {
	for _, q := range qs {
		names, edge := q.Pattern.Labels()
		for _, name := range edge {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
		for _, name := range names {
			if l, ok := s.labels.Lookup(name); ok && int(l) < known {
				continue
			}
			fmt.Fprintf(s.cfg.Warn, "gcsm %s: warning: query %s: no vertex or edge in %s has label %s, so the query matches nothing\n",
				s.cfg.Cmd, q.Name, where, name)
		}
	}
}

// warnProperties writes one line per property a query's WHERE reads that
// no event of its label carried in the files read, and per comparison of
// one with a literal of a kind its values never had
// (query.PropertyWarnings), as such a condition never holds. The files are
// read whole before the queries are compiled, so this is the check at the
// end of the stream. Labels WarnUnknownLabels names (those not among the
// first known of the dictionary) are left to it.
func (s *Session) warnProperties(qs []*query.Query, known int) {
	skip := func(_ bool, name string) bool {
		l, ok := s.labels.Lookup(name)
		return !ok || int(l) >= known
	}
	for _, q := range qs {
		for _, msg := range q.Pattern.PropertyWarnings(s.seen, skip) {
			fmt.Fprintf(s.cfg.Warn, "gcsm %s: warning: query %s: %s\n", s.cfg.Cmd, q.Name, msg)
		}
	}
}
