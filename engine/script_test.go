package engine

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/query"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/*.txt from what the core does")

// TestScripts runs the scripts of testdata/: each steps a core through a
// sequence of batches and checks every step twice, against a brute-force
// oracle that knows nothing of the core's machinery, and against the
// output the script expects. A script is plain text that a reader can
// extend without Go:
//
//	core directed=true window=10s lateness=0s recycle=true
//	query NAME CYPHER           a standing query, in embeddings semantics
//	step                        a batch, one update a line, until "----":
//	+ SRC DST [LABEL] [TS]        insert (TS in ms; labels name edge labels)
//	- SRC DST [LABEL] [TS]        delete
//	v ID LABEL                    a vertex with its label
//	----
//	expected output             until a blank line; go test -rewrite writes it
//	advance                     the last step's output is delivered
//
// A step's output is the ids recycled for it, its expiries, its refusals and its matches that
// appeared (+) and disappeared (-), by query, in the vertices' names.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runScript(t, f) })
	}
}

// scriptRun is one script's core, its oracle and its queries.
type scriptRun struct {
	t       *testing.T
	core    *Core
	oracle  *oracle
	queries []*query.Query
	last    *Step
}

func runScript(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []string // the script, with expected outputs as the core gives them
	r := &scriptRun{t: t}
	defer func() {
		if r.core != nil {
			r.core.Close()
		}
	}()
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		out = append(out, lines[i])
		where := fmt.Sprintf("%s:%d", path, i+1)
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || strings.HasPrefix(line, "#"):
		case f[0] == "core":
			r.newCore(where, f[1:])
		case f[0] == "query":
			r.query(where, f, line)
		case f[0] == "advance":
			if r.last == nil {
				t.Fatalf("%s: advance before any step", where)
			}
			r.core.Advance(r.last)
		case f[0] == "step":
			var body []string
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "----"; i++ {
				body = append(body, lines[i])
			}
			if i == len(lines) {
				t.Fatalf("%s: step without ----", where)
			}
			out = append(out, body...)
			out = append(out, lines[i])
			var want []string
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
				want = append(want, lines[i])
			}
			got := r.step(where, body)
			out = append(out, got...)
			if i < len(lines) {
				out = append(out, lines[i])
			}
			if !*rewrite && !slices.Equal(got, want) {
				t.Errorf("%s: the step gave\n%s\nthe script expects\n%s", where, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		default:
			t.Fatalf("%s: unknown command %q", where, f[0])
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func (r *scriptRun) newCore(where string, args []string) {
	cfg := Config{DefaultVertexLabel: "V", DefaultEdgeLabel: "E", Matcher: &incremental.CPU{Workers: 2}}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		var err error
		switch k {
		case "directed":
			cfg.Directed, err = strconv.ParseBool(v)
		case "recycle":
			cfg.Recycle, err = strconv.ParseBool(v)
		case "window":
			cfg.Window.Size, err = time.ParseDuration(v)
		case "lateness":
			cfg.Window.Lateness, err = time.ParseDuration(v)
		default:
			err = fmt.Errorf("unknown setting")
		}
		if err != nil {
			r.t.Fatalf("%s: %s: %v", where, a, err)
		}
	}
	c, err := New(cfg)
	if err != nil {
		r.t.Fatalf("%s: %v", where, err)
	}
	r.core, r.oracle = c, newOracle(cfg)
}

func (r *scriptRun) query(where string, f []string, line string) {
	if len(f) < 3 {
		r.t.Fatalf("%s: want query NAME CYPHER", where)
	}
	text := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(line, "query"), " "+f[1]))
	p, err := query.ParseCypher(f[1], text)
	if err != nil {
		r.t.Fatalf("%s: %v", where, err)
	}
	q, err := query.Compile(p, r.core.Labels(), r.core.Directed(), query.Embeddings)
	if err != nil {
		r.t.Fatalf("%s: %v", where, err)
	}
	q.Name = f[1]
	r.queries = append(r.queries, q)
	r.core.Register(r.queries)
}

// step runs one batch through the core and the oracle, checks that they
// agree, and returns the step's output.
func (r *scriptRun) step(where string, body []string) []string {
	t := r.t
	var dec []Decoded
	var recs []ingest.Record
	for j, l := range body {
		rec, err := parseUpdate(l)
		if err != nil {
			t.Fatalf("%s: update %d: %v", where, j+1, err)
		}
		if rec.Op == 0 && rec.Src == "" {
			continue
		}
		if r.core.Expiry() != nil && rec.Op != graph.AddVertex && rec.Time == 0 {
			t.Fatalf("%s: update %d: a core with a window needs its TS", where, j+1)
		}
		recs = append(recs, rec)
		dec = append(dec, Decoded{Rec: rec})
	}
	recycled, seq := r.core.Intern(dec, false)
	var upd []graph.Update
	var times []int64
	for j, d := range dec {
		if d.ResolveErr != nil {
			t.Fatalf("%s: update %d: %v", where, j+1, d.ResolveErr)
		}
		upd = append(upd, d.U)
		times = append(times, d.Rec.Time)
	}
	var mu sync.Mutex
	var got []string
	sink := func(_, q int, sign graph.Sign, m []graph.VertexID) {
		line := r.matchLine(q, sign, m)
		mu.Lock()
		got = append(got, line)
		mu.Unlock()
	}
	st, err := r.core.Step(Batch{Updates: upd, Times: times, Recycled: recycled, Seq: seq,
		Queries: r.queries, Mode: incremental.Enumerate, Sink: sink})
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	r.core.Finish()
	if err := st.Err(); err != nil {
		t.Fatalf("%s: match: %v", where, err)
	}
	r.last = st

	want := r.oracle.step(recs, r.queries)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("%s: the core's matches\n%s\ndiffer from the oracle's\n%s", where, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var out []string
	if len(recycled) > 0 {
		out = append(out, fmt.Sprintf("recycle %d ids", len(recycled)))
	}
	for _, u := range st.Updates[:st.Expired] {
		out = append(out, fmt.Sprintf("expire %s %s", r.core.IDs().Name(u.Src), r.core.IDs().Name(u.Dst)))
	}
	for _, rj := range st.Rejects {
		out = append(out, fmt.Sprintf("refuse %d: %v", rj.Index-st.Expired+1, rj.Err))
	}
	out = append(out, got...)
	if len(out) == 0 {
		out = []string{"(nothing)"}
	}
	return out
}

func (r *scriptRun) matchLine(q int, sign graph.Sign, m []graph.VertexID) string {
	names := make([]string, len(m))
	for i, v := range m {
		names[i] = r.core.IDs().Name(v)
	}
	return fmt.Sprintf("%s%s %s", sign, r.queries[q].Name, strings.Join(names, " "))
}

// parseUpdate reads "+ a b [LABEL] [TS]", "- a b [LABEL] [TS]" or
// "v a LABEL"; a blank line is a zero record.
func parseUpdate(l string) (ingest.Record, error) {
	f := strings.Fields(l)
	if len(f) == 0 {
		return ingest.Record{}, nil
	}
	switch f[0] {
	case "v":
		if len(f) != 3 {
			return ingest.Record{}, fmt.Errorf("want v ID LABEL")
		}
		return ingest.Record{Op: graph.AddVertex, Src: f[1], SrcLabel: f[2]}, nil
	case "+", "-":
		if len(f) < 3 || len(f) > 5 {
			return ingest.Record{}, fmt.Errorf("want %s SRC DST [LABEL] [TS]", f[0])
		}
		rec := ingest.Record{Op: graph.Insert, Src: f[1], Dst: f[2]}
		if f[0] == "-" {
			rec.Op = graph.Delete
		}
		for _, x := range f[3:] {
			if ts, err := strconv.ParseInt(x, 10, 64); err == nil {
				rec.Time = ts
			} else {
				rec.Label = x
			}
		}
		return rec, nil
	}
	return ingest.Record{}, fmt.Errorf("unknown update %q", f[0])
}

// oracle recomputes every match by brute force on a plain edge set, with
// the window's rule applied by hand: before a batch, the edges whose last
// insertion is older than the largest event time seen, less the lateness
// and the window, are deleted.
type oracle struct {
	cfg     Config
	vlabel  map[string]string
	edges   map[[3]string]int64 // (src, dst, label) → last insertion time
	maxTime int64
}

func newOracle(cfg Config) *oracle {
	return &oracle{cfg: cfg, vlabel: map[string]string{}, edges: map[[3]string]int64{}, maxTime: math.MinInt64}
}

func (o *oracle) key(a, b, l string) [3]string {
	if !o.cfg.Directed && a > b {
		a, b = b, a
	}
	return [3]string{a, b, l}
}

// step applies recs and returns the match changes, sorted, as the core's
// output writes them.
func (o *oracle) step(recs []ingest.Record, qs []*query.Query) []string {
	before := o.all(qs)
	if o.cfg.Window.Size > 0 && o.maxTime != math.MinInt64 {
		cut := o.maxTime - o.cfg.Window.Lateness.Milliseconds() - o.cfg.Window.Size.Milliseconds()
		for k, ts := range o.edges {
			if ts < cut {
				delete(o.edges, k)
			}
		}
	}
	for _, r := range recs {
		if r.Op == graph.AddVertex {
			if _, ok := o.vlabel[r.Src]; !ok {
				o.vlabel[r.Src] = r.SrcLabel
			}
			continue
		}
		for _, v := range []string{r.Src, r.Dst} {
			if _, ok := o.vlabel[v]; !ok {
				o.vlabel[v] = o.cfg.DefaultVertexLabel
			}
		}
		l := r.Label
		if l == "" {
			l = o.cfg.DefaultEdgeLabel
		}
		k := o.key(r.Src, r.Dst, l)
		if r.Op == graph.Delete {
			delete(o.edges, k)
			continue
		}
		if last, ok := o.edges[k]; !ok || r.Time > last {
			o.edges[k] = r.Time
		}
		if o.cfg.Window.Size > 0 {
			o.maxTime = max(o.maxTime, r.Time)
		}
	}
	after := o.all(qs)
	var out []string
	for m := range after {
		if !before[m] {
			out = append(out, "+"+m)
		}
	}
	for m := range before {
		if !after[m] {
			out = append(out, "-"+m)
		}
	}
	slices.Sort(out)
	return out
}

// all lists every match of every query: "NAME v0 v1 ...".
func (o *oracle) all(qs []*query.Query) map[string]bool {
	var vs []string
	for v := range o.vlabel {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	out := map[string]bool{}
	for _, q := range qs {
		m := make([]string, q.N())
		var walk func(i int)
		walk = func(i int) {
			if i == q.N() {
				if o.holds(q, m) {
					out[q.Name+" "+strings.Join(m, " ")] = true
				}
				return
			}
			for _, v := range vs {
				if slices.Contains(m[:i], v) {
					continue
				}
				if l := q.Labels[i]; l != graph.Wildcard && q.Pattern.Vertices[i].Label != o.vlabel[v] {
					continue
				}
				m[i] = v
				walk(i + 1)
			}
		}
		walk(0)
	}
	return out
}

// holds says whether every query edge has a data edge under m.
func (o *oracle) holds(q *query.Query, m []string) bool {
	for _, pe := range q.Pattern.Edges {
		a, b := m[pe.From], m[pe.To]
		if !o.edge(a, b, pe) && !((!pe.Directed || !o.cfg.Directed) && o.edge(b, a, pe)) {
			return false
		}
	}
	return true
}

func (o *oracle) edge(a, b string, pe query.Edge) bool {
	if pe.Wildcard {
		for k := range o.edges {
			if k == o.key(a, b, k[2]) {
				return true
			}
		}
		return false
	}
	_, ok := o.edges[o.key(a, b, pe.Label)]
	return ok
}
