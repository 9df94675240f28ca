package main

import (
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The stream: a1→a2, a2→a3, a1→a3. Undirected it is a triangle;
// directed it holds no ring.
const (
	chainJSON = `{"op":"+","src":"a1","dst":"a2","label":"TRANSFER","src_label":"Account","dst_label":"Account"}
{"op":"+","src":"a2","dst":"a3","label":"TRANSFER","src_label":"Account","dst_label":"Account"}
{"op":"+","src":"a1","dst":"a3","label":"TRANSFER","src_label":"Account","dst_label":"Account"}
`
	ringQuery = "ring3=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a)"
	// The same graph as a CSV file with a header, and as CSM and SNAP files.
	chainCSV  = "src,dst,label\na1,a2,TRANSFER\na2,a3,TRANSFER\na1,a3,TRANSFER\n"
	chainCSM  = "v 1 Account\nv 2 Account\nv 3 Account\ne 1 2 TRANSFER\ne 2 3 TRANSFER\ne 1 3 TRANSFER\n"
	chainSNAP = "1 2\n2 3\n1 3\n"
	// A path u→v→w, which the chain holds once directed (1→2→3) and six
	// times as an undirected triangle.
	pathQuery = "path=(u)-[]->(v)-[]->(w)"
)

// TestDirectionFollowsFormat: JSON and CSV files are directed unless
// --directed=false, CSM and SNAP files undirected unless --directed, in
// replay and match alike.
func TestDirectionFollowsFormat(t *testing.T) {
	dir := t.TempDir()
	jsonl := writeFile(t, dir, "tt.jsonl", chainJSON)
	csv := writeFile(t, dir, "tt.csv", chainCSV)
	csm := writeFile(t, dir, "tt.graph", chainCSM)
	snap := writeFile(t, dir, "tt.txt", chainSNAP)

	// The command: no ring on a directed chain.
	s := replayJSON(t, "-u", jsonl, "--semantics", "instances", "-q", ringQuery)
	if !slices.Equal(s.Queries, []replayQuery{{"ring3", 0, 0}}) {
		t.Errorf("replay of a JSON chain: %+v, want no ring", s.Queries)
	}
	for _, data := range []string{jsonl, csv} {
		m := matchJSON(t, "-d", data, "-q", pathQuery)
		if !slices.Equal(m.Queries, []matchQuery{{"path", 1}}) {
			t.Errorf("match -d %s: %+v, want the one directed path", filepath.Base(data), m.Queries)
		}
		r := replayJSON(t, "-u", data, "-q", pathQuery)
		if !slices.Equal(r.Queries, []replayQuery{{"path", 1, 0}}) {
			t.Errorf("replay -u %s: %+v, want the one directed path", filepath.Base(data), r.Queries)
		}
	}
	// --directed reads CSM and SNAP files as directed.
	for _, data := range []string{csm, snap} {
		m := matchJSON(t, "-d", data, "-q", pathQuery, "--directed")
		if !slices.Equal(m.Queries, []matchQuery{{"path", 1}}) {
			t.Errorf("match -d %s --directed: %+v, want the one directed path", filepath.Base(data), m.Queries)
		}
		r := replayJSON(t, "-u", data, "-q", pathQuery, "--directed")
		if !slices.Equal(r.Queries, []replayQuery{{"path", 1, 0}}) {
			t.Errorf("replay -u %s --directed: %+v, want the one directed path", filepath.Base(data), r.Queries)
		}
	}
	// Undirected, the chain is a triangle: its paths of two edges number
	// six as embeddings.
	undirected := "path=(u)--(v)--(w)"
	for _, args := range [][]string{{"-d", csm}, {"-d", snap}, {"-d", jsonl, "--directed=false"}, {"-d", csv, "--directed=false"}} {
		m := matchJSON(t, append(args, "-q", undirected)...)
		if !slices.Equal(m.Queries, []matchQuery{{"path", 6}}) {
			t.Errorf("match %s: %+v, want 6 undirected paths", strings.Join(args, " "), m.Queries)
		}
	}
}

// TestArrowsOnUndirectedRefused: a query that draws an arrow on an
// undirected graph would match edges either way; it is refused as a usage
// error, naming the query, the edge and the flag, in replay, match and
// replay --demo. CSM query files, whose edges are undirected on such a
// graph, still run.
func TestArrowsOnUndirectedRefused(t *testing.T) {
	dir := t.TempDir()
	jsonl := writeFile(t, dir, "tt.jsonl", chainJSON)
	csm := writeFile(t, dir, "tt.graph", chainCSM)
	for _, tc := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"replay", "-u", jsonl, "--directed=false", "-q", ringQuery},
			[]string{"ring3:1:", "(a)->(b) has a direction, but the graph is undirected", "drop --directed=false"}},
		{[]string{"match", "-d", csm, "-q", pathQuery},
			[]string{"path:1:", "(u)->(v) has a direction", "give --directed (-d " + csm + " is a CSM file, read as undirected by default)"}},
		{[]string{"replay", "-d", csm, "-u", csm, "-q", pathQuery},
			[]string{"path:1:", "give --directed (-d " + csm}},
		{[]string{"replay", "--demo", "--directed=false"},
			[]string{"ring3:1:", "drop --directed=false"}},
	} {
		wantFailure(t, 2, tc.args, tc.wants...)
	}
	q := writeFile(t, dir, "path.graph", "v 0 Account\nv 1 Account\nv 2 Account\ne 0 1\ne 1 2\n")
	if m := matchJSON(t, "-d", csm, "-q", q); !slices.Equal(m.Queries, []matchQuery{{"path", 6}}) {
		t.Errorf("CSM query on an undirected CSM graph: %+v, want 6", m.Queries)
	}
}

// TestDirectionDisagreement: -d and -u whose formats differ in direction
// are refused unless --directed says which the graph is.
func TestDirectionDisagreement(t *testing.T) {
	dir := t.TempDir()
	jsonl := writeFile(t, dir, "tt.jsonl", chainJSON)
	csm := writeFile(t, dir, "tt.graph", "v 1 Account\nv 2 Account\n")
	wantFailure(t, 1, []string{"replay", "-d", csm, "-u", jsonl, "-q", pathQuery},
		"-d "+csm+" is a CSM file, read as undirected, but -u "+jsonl+" is JSON lines, read as directed",
		"give --directed or --directed=false")
	if r := replayJSON(t, "-d", csm, "-u", jsonl, "-q", pathQuery, "--directed"); !slices.Equal(r.Queries, []replayQuery{{"path", 1, 0}}) {
		t.Errorf("with --directed: %+v", r.Queries)
	}
	// An empty data graph file says nothing: the stream decides.
	empty := writeFile(t, dir, "empty.graph", "# nothing yet\n")
	if r := replayJSON(t, "-d", empty, "-u", jsonl, "-q", pathQuery); !slices.Equal(r.Queries, []replayQuery{{"path", 1, 0}}) {
		t.Errorf("empty -d, JSON -u: %+v", r.Queries)
	}
}

// TestUnknownLabelWarned: a query naming a label that no vertex or edge of
// the input carries matches nothing; replay and match say so on stderr, one
// line per label and query, and still run. In replay a label that first
// comes in the stream is known.
func TestUnknownLabelWarned(t *testing.T) {
	dir := t.TempDir()
	data := writeFile(t, dir, "g.graph", "v 1 A\nv 2 A\ne 1 2 T\n")
	stream := writeFile(t, dir, "s.stream", "v 3 B\ne 2 3 U\n")
	queries := []string{"-q", "q1=(a:Unknown)-[]-(b:Unknown)", "-q", "q2=(a:A)-[:U]-(b:B)-[:Nope]-(c:Unknown)"}

	out, errs, code := gcsm(t, append([]string{"replay", "-d", data, "-u", stream}, queries...)...)
	if code != 0 {
		t.Fatalf("replay: exit %d\n%s", code, errs)
	}
	want := []string{
		"gcsm replay: warning: query q1: no vertex or edge in the data graph or the stream has label Unknown, so the query matches nothing",
		"gcsm replay: warning: query q2: no vertex or edge in the data graph or the stream has label Unknown, so the query matches nothing",
		"gcsm replay: warning: query q2: no vertex or edge in the data graph or the stream has label Nope, so the query matches nothing",
	}
	if got := warnings(errs); !slices.Equal(got, want) {
		t.Errorf("replay warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(out, "q1 ") {
		t.Errorf("replay did not report q1:\n%s", out)
	}

	// match reads no stream: B and U are unknown too.
	_, errs, code = gcsm(t, append([]string{"match", "-d", data}, queries...)...)
	if code != 0 {
		t.Fatalf("match: exit %d\n%s", code, errs)
	}
	want = nil
	for _, ql := range [][2]string{{"q1", "Unknown"}, {"q2", "B"}, {"q2", "Unknown"}, {"q2", "U"}, {"q2", "Nope"}} {
		want = append(want, "gcsm match: warning: query "+ql[0]+": no vertex or edge in the data graph has label "+ql[1]+", so the query matches nothing")
	}
	if got := warnings(errs); !slices.Equal(got, want) {
		t.Errorf("match warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Known labels, and wildcards, warn about nothing.
	_, errs, _ = gcsm(t, "replay", "-d", data, "-u", stream, "-q", "(a:A)-[:U]-(b:B)", "-q", "(a)--(b)")
	if w := warnings(errs); len(w) != 0 {
		t.Errorf("warnings for known labels: %q", w)
	}
}

// warnings returns the warning lines of stderr.
func warnings(stderr string) []string {
	var w []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "warning:") {
			w = append(w, l)
		}
	}
	return w
}

// TestRunUndirectedRefusesArrows: gcsm run keeps its explicit
// graph.directed; with it false, a configured query or a -q that draws an
// arrow stops the start with a message naming the setting.
func TestRunUndirectedRefusesArrows(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "gcsm.yaml", `embedded: {listen: "127.0.0.1:0"}
state: {dir: `+filepath.Join(dir, "state")+`}
http: {listen: ""}
graph: {directed: false}
queries:
  - {name: tri, pattern: "(a)--(b)--(c)--(a)"}
`)
	args := []string{"run", "--config", cfg, "--device", "cpu", "-q", ringQuery}
	// Accepted, the service would run until stopped.
	done := make(chan struct{})
	go func() {
		defer close(done)
		wantFailure(t, 2, args, `query "ring3"`, "ring3:1:", "(a)->(b) has a direction, but the graph is undirected", "graph.directed: true")
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("gcsm run took an arrow on an undirected graph and went on serving")
	}
}

// TestDemoDirected ties gcsm demo to the direction rule: its stream is JSON
// events, so its graph is directed, and the service's net alerts per query
// (appeared less disappeared, whatever the batching) must equal the
// vertex maps standing at the end of a directed replay of the same stream.
// An undirected demo would refuse its own arrows, and one that read
// transfers both ways would find more rings. These queries name no
// transfer, so the service alerts once per vertex map, where replay
// reports each combination of the parallel transfers it binds: a map
// stands while one of its combinations does.
func TestDemoDirected(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole demo stream twice")
	}
	out := gcsmOK(t, "demo", "--rate", "0", "--show", "0", "--device", "cpu")
	combos := map[string]int{} // "QUERY v1 v2 ..." → its combinations standing
	for _, l := range emitted(gcsmOK(t, "replay", "--demo", "--emit", "--device", "cpu")) {
		m, _, _ := strings.Cut(l[2:], " [") // the transfers bound, after the vertices
		if l[0] == '+' {
			combos[m]++
		} else {
			combos[m]--
		}
	}
	standing := map[string]int64{}
	for m, n := range combos {
		if n > 0 {
			standing[strings.Fields(m)[0]]++
		}
	}
	for _, q := range []string{"ring3", "ring4", "split"} {
		m := regexp.MustCompile(`(?m)^` + q + `\s+(\d+)\s+(\d+)$`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no %s line in the demo's summary:\n%s", q, out)
		}
		appeared, _ := strconv.ParseInt(m[1], 10, 64)
		disappeared, _ := strconv.ParseInt(m[2], 10, 64)
		if appeared-disappeared != standing[q] || appeared == 0 {
			t.Errorf("%s: demo %d appeared, %d disappeared; %d vertex maps standing after a directed replay",
				q, appeared, disappeared, standing[q])
		}
	}
}
