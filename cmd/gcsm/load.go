package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/engine"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/query"
)

// session is what the file-driven commands share: an engine core, whose
// graph and dictionaries the fields below name for short, and what the
// files read into it.
type session struct {
	core     *engine.Core
	labels   *graph.Dict
	ids      *graph.IDs
	g        *dyngraph.Graph
	resolver *ingest.Resolver
	// store keeps parallel transfers when a query or an event needs them
	// (keepTransfers); keep is what readers keep of events' properties.
	store   *bundle.Store
	keep    *ingest.PropFilter
	seen    *graph.Catalog // every property read, kept or not, for warnProperties
	skipBad bool
	skipped int // bad lines and refused updates skipped under --skip-bad
	// tsUnit is --ts-unit; the first odd time of the files read is
	// warned about on warn, once, as "gcsm cmd: warning: ...".
	tsUnit     ingest.TimeUnit
	warn       io.Writer
	cmd        string
	warnedTime bool
}

// timeUnit sets what the session's files' numeric times count, and where
// and as which command to warn of an odd one.
func (s *session) timeUnit(u ingest.TimeUnit, warn io.Writer, cmd string) {
	s.tsUnit, s.warn, s.cmd = u, warn, cmd
}

// warnOddTime warns of the first odd time of r, read from path, once a
// session: a stream in another unit than --ts-unit makes every window and
// WITHIN wrong by a factor of 1000 or more.
func (s *session) warnOddTime(r *ingest.Reader, path string) {
	odd, ok := r.OddTime()
	if !ok || s.warnedTime || s.warn == nil {
		return
	}
	s.warnedTime = true
	fmt.Fprintf(s.warn, "gcsm %s: warning: %s:%d: %v\n", s.cmd, path, odd.Line, odd)
}

func newSession(directed, skipBad bool, alloc hostmem.Allocator) (*session, error) {
	s := &session{skipBad: skipBad, seen: &graph.Catalog{DefaultEdgeLabel: "0"}}
	// Unlabelled vertices (SNAP files) get the CSM files' first label, "0".
	core, err := engine.New(engine.Config{Directed: directed, DefaultVertexLabel: "0", DefaultEdgeLabel: "0", Alloc: alloc,
		OnTransfers: func(bool) { s.store = s.core.Store() }})
	if err != nil {
		return nil, err
	}
	s.core, s.labels, s.ids, s.g, s.resolver = core, core.Labels(), core.IDs(), core.Graph(), core.Resolver()
	return s, nil
}

// stream is a file's updates with the line each came from, for errors.
type stream struct {
	file    string
	updates []graph.Update
	lines   []int
}

// read parses a whole file of graph or stream records. Malformed lines and
// records that Resolve refuses stop the read with an error naming file and
// line, or are counted and skipped under --skip-bad.
func (s *session) read(path string) (*stream, error) {
	r, c, err := ingest.Open(path, ingest.Options{SkipBad: s.skipBad, Keep: s.keep, TSUnit: s.tsUnit, Seen: s.seen})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	st := &stream{file: path}
	if fi, err := os.Stat(path); err == nil {
		// Lines of dataset files are 8 to 20 bytes; guessing low keeps the
		// guess from wasting memory on files of long JSON lines.
		guess := int(fi.Size() / 16)
		st.updates, st.lines = make([]graph.Update, 0, guess), make([]int, 0, guess)
	}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		u, err := s.resolver.Resolve(rec)
		if err != nil {
			var le *ingest.LineError
			if errors.As(err, &le) {
				le.File = path
			}
			if s.skipBad {
				s.skipped++
				continue
			}
			return nil, err
		}
		st.updates = append(st.updates, u)
		st.lines = append(st.lines, rec.Line)
	}
	s.skipped += r.Skipped()
	s.warnOddTime(r, path)
	if graph.HasTransferID(st.updates) {
		s.keepTransfers()
	}
	return st, nil
}

// step runs updates[lo:hi] of st through the core as one batch, with b's
// queries and sinks. Updates the graph refuses (label conflicts) are an
// error naming their line, or skipped under --skip-bad.
func (s *session) step(st *stream, lo, hi int, b engine.Batch) (*engine.Step, error) {
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
func (s *session) refused(st *stream, lo int, rejects []dyngraph.Reject) error {
	if len(rejects) == 0 {
		return nil
	}
	if !s.skipBad {
		rj := rejects[0]
		return fmt.Errorf("%s:%d: %v", st.file, st.lines[lo+rj.Index], s.describeReject(rj.Err))
	}
	s.skipped += len(rejects)
	return nil
}

func (s *session) describeReject(err error) string {
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

// loadGraph reads a data graph file into the session's graph: with Build
// when the file only adds and no transfers are kept, else with Apply.
func (s *session) loadGraph(path string) error {
	st, err := s.read(path)
	if err != nil {
		return err
	}
	if s.store == nil && !slices.ContainsFunc(st.updates, func(u graph.Update) bool { return u.Op == graph.Delete }) {
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

// loadQueries compiles each -q argument: a file (CSM or Cypher-style), an
// inline Cypher-style pattern, or NAME=PATTERN. With unlabeled every vertex
// and edge of the patterns matches any label. On an undirected graph a
// pattern that draws an arrow is refused, with fix in the message.
func loadQueries(specs []string, labels *graph.Dict, directed bool, fix string, sem query.Semantics, unlabeled bool) ([]*query.Query, error) {
	if len(specs) == 0 {
		return nil, badFlags(errors.New("no query: give at least one -q"))
	}
	var qs []*query.Query
	names := map[string]bool{}
	for i, spec := range specs {
		p, err := parseQuerySpec(spec, i)
		if err != nil {
			return nil, err
		}
		if names[p.Name] {
			return nil, badFlags(fmt.Errorf("two queries are named %q", p.Name))
		}
		names[p.Name] = true
		if unlabeled {
			for i := range p.Vertices {
				p.Vertices[i].Label, p.Vertices[i].Wildcard = "", true
			}
			for i := range p.Edges {
				p.Edges[i].Label, p.Edges[i].Wildcard = "", true
			}
		}
		if !directed {
			if err := p.CheckUndirected(fix); err != nil {
				return nil, err
			}
		}
		q, err := query.Compile(p, labels, directed, sem)
		if err != nil {
			return nil, err
		}
		qs = append(qs, q)
	}
	return qs, nil
}

func parseQuerySpec(spec string, i int) (*query.Pattern, error) {
	if fi, err := os.Stat(spec); err == nil && !fi.IsDir() {
		return query.ParseFile(spec)
	}
	if strings.TrimSpace(spec) == "" {
		return nil, badFlags(fmt.Errorf("-q %q: empty query", spec))
	}
	name, text, named := splitQuerySpec(spec, i)
	if named && name == "" {
		return nil, badFlags(fmt.Errorf("-q %q: empty query name before '='", spec))
	}
	// Inline queries are Cypher-style; anything else names a file, such as
	// the peers' extensionless Q_1, unless NAME= said it was inline.
	t := strings.TrimSpace(text)
	switch {
	case named && t == "":
		return nil, badFlags(fmt.Errorf("query %s: empty pattern", name))
	case strings.HasPrefix(t, "(") || strings.HasPrefix(strings.ToUpper(t), "MATCH"):
	case named:
		return nil, badFlags(fmt.Errorf("query %s: pattern %q starts with neither '(' nor MATCH, and no file %s exists", name, t, spec))
	default:
		return nil, fmt.Errorf("query file %s: no such file (an inline query starts with '(' or MATCH)", spec)
	}
	return query.Parse(name, text)
}

// splitQuerySpec splits the i-th -q argument NAME=PATTERN into its name and
// pattern; named is false for a bare pattern or file, which is named qI. An
// '=' after a bracket or dash is the pattern's own.
func splitQuerySpec(spec string, i int) (name, text string, named bool) {
	if k := strings.Index(spec, "="); k >= 0 && !strings.ContainsAny(spec[:k], "()[]-") {
		return strings.TrimSpace(spec[:k]), spec[k+1:], true
	}
	return fmt.Sprintf("q%d", i+1), spec, false
}

// matchLine formats one match for --emit: an optional prefix (the sign),
// the query name, then the external id of each query vertex's data vertex.
func (s *session) matchLine(prefix, query string, m []graph.VertexID) string {
	var b strings.Builder
	if prefix != "" {
		b.WriteString(prefix)
		b.WriteByte(' ')
	}
	b.WriteString(query)
	for _, v := range m {
		b.WriteByte(' ')
		b.WriteString(s.ids.Name(v))
	}
	b.WriteByte('\n')
	return b.String()
}

// matchLineTx is matchLine for a match over transfers: the transfer ids
// follow in brackets.
func (s *session) matchLineTx(prefix, query string, m []graph.VertexID, tx []bundle.Tx) string {
	line := s.matchLine(prefix, query, m)
	return line[:len(line)-1] + " " + s.transfersText(tx) + "\n"
}

// input is a file given to a flag, for messages.
type input struct{ flag, path string }

// graphDirected decides whether the graph read from files is directed. A
// --directed given explicitly decides. Otherwise the files' formats do (see
// ingest.Reader.Directed): JSON events and CSV files are directed, CSM files
// and SNAP edge lists undirected. Files whose formats disagree are refused
// rather than one read against its grain; with no file to decide (none, or
// only empty ones) the graph is undirected. fix says, for a query with
// arrows on an undirected graph, what would make the graph directed.
func graphDirected(flagValue, flagGiven bool, files ...input) (directed bool, fix string, err error) {
	if flagGiven {
		return flagValue, "drop --directed=false", nil
	}
	var first *input
	var firstWhat string
	for _, in := range files {
		if in.path == "" {
			continue
		}
		d, what, err := fileDirected(in.path)
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
				first.flag, first.path, firstWhat, directedWord(directed), in.flag, in.path, what, directedWord(d))
		}
	}
	if first == nil {
		return false, "give --directed (no input file says which the graph is)", nil
	}
	return directed, fmt.Sprintf("give --directed (%s %s is %s, read as undirected by default)", first.flag, first.path, firstWhat), nil
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

// flagGiven reports whether the command line set the flag name.
func flagGiven(fs *flag.FlagSet, name string) (given bool) {
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// warnUnknownLabels writes one line per label a query names that the
// input never carried, as such a query matches nothing. known is the size
// of the label dictionary before the queries were compiled, which intern
// their labels after the input's; where names the input.
func (s *session) warnUnknownLabels(w io.Writer, cmd string, qs []*query.Query, known int, where string) {
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
			fmt.Fprintf(w, "gcsm %s: warning: query %s: no vertex or edge in %s has label %s, so the query matches nothing\n",
				cmd, q.Name, where, name)
		}
	}
}

// warnProperties writes one line per property a query's WHERE reads that
// no event of its label carried in the files read, and per comparison of
// one with a literal of a kind its values never had
// (query.PropertyWarnings), as such a condition never holds. The files are
// read whole before the queries are compiled, so this is the check at the
// end of the stream. Labels warnUnknownLabels names (those not among the
// first known of the dictionary) are left to it.
func (s *session) warnProperties(w io.Writer, cmd string, qs []*query.Query, known int) {
	skip := func(_ bool, name string) bool {
		l, ok := s.labels.Lookup(name)
		return !ok || int(l) >= known
	}
	for _, q := range qs {
		for _, msg := range q.Pattern.PropertyWarnings(s.seen, skip) {
			fmt.Fprintf(w, "gcsm %s: warning: query %s: %s\n", cmd, q.Name, msg)
		}
	}
}
