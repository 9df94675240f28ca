package service

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// standing is a registered query and what it has emitted.
type standing struct {
	cfg QueryConfig
	q   *query.Query
	// form is the pattern's canonical text, part of every key (query.Pattern.Form).
	form string
	// vars are the query vertices' names, the keys of an event's match.
	vars []string
	// edgeLabels are the names of the query edges' labels; "*" for a
	// wildcard, whose data edge may carry any label. edgeEnds are the
	// query edges' ends, indexes into an event's match.
	edgeLabels []string
	edgeEnds   [][2]int
	// bindVars name the query's Bindings in an event's transfers: the
	// pattern's variables, _t1, _t2 and so on for unnamed edges.
	bindVars []string
	// auts are the pattern's automorphisms under Instances semantics. The
	// engine reports each instance by the map its symmetry breaking keeps,
	// which depends on internal vertex ids, that is on arrival order; the
	// service reports the map whose external ids are smallest instead, so
	// an instance has one key whatever order the input came in (several
	// partitions, a standby replaying).
	auts [][]int

	// initial is the query's initial run while the build stage is to
	// record its deltas' keys (initial.go); nil otherwise.
	initial atomic.Pointer[initialRun]

	// warnings are about the query at its registration: the labels it
	// names that the graph had not seen then.
	warnings []string

	// Totals since registration, read by the HTTP API under Service.mu.
	Appeared, Disappeared int64
	LimitHits             int64
	LastLimit             string // what the last hit limit was, for /queries
	device                string // where its last batch ran, for /queries
}

// compileQuery parses and compiles c against the service's labels. A new
// registration (fresh) is also refused if it draws an arrow on an
// undirected graph, and warned about labels the graph has not seen; a query
// restored from a checkpoint was judged when it was registered.
func (s *Service) compileQuery(c QueryConfig, fresh bool) (*standing, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	p, err := query.Parse(c.Name, c.Pattern)
	if err != nil {
		return nil, err
	}
	p.Name = c.Name
	var warnings []string
	if fresh {
		if !s.cfg.Graph.Directed {
			if err := p.CheckUndirected("set graph.directed: true (with a new state.dir)"); err != nil {
				return nil, err
			}
		}
		warnings = s.registrationWarnings(p)
	}
	q, err := query.Compile(p, s.core.Labels(), s.cfg.Graph.Directed, s.sem)
	if err != nil {
		return nil, err
	}
	st := &standing{cfg: c, q: q, warnings: warnings, form: p.Form()}
	if s.sem == query.Instances && q.Automorphisms > 1 {
		if st.auts = q.AutomorphismList(maxAutomorphisms); st.auts == nil {
			s.log.Warn().Str("query", c.Name).Uint64("automorphisms", q.Automorphisms).
				Msg("too many automorphisms to canonicalise matches: an instance's key may depend on the input's order")
		}
	}
	for _, v := range p.Vertices {
		st.vars = append(st.vars, v.Name)
	}
	for k, b := range q.Bindings {
		name := b.Name
		if name == "" {
			name = fmt.Sprintf("_t%d", k+1)
		}
		st.bindVars = append(st.bindVars, name)
	}
	for _, e := range q.Edges {
		st.edgeEnds = append(st.edgeEnds, [2]int{e.A, e.B})
		if e.Label == graph.Wildcard {
			st.edgeLabels = append(st.edgeLabels, "*")
		} else {
			st.edgeLabels = append(st.edgeLabels, s.core.Labels().Name(e.Label))
		}
	}
	return st, nil
}

// unknownLabels describes the labels p names that the graph has not seen,
// as such a query matches nothing until a message carries them. Seen means
// present now: a vertex label on some vertex, an edge label on some edge.
// (The label dictionary would not do: it also holds the labels of earlier
// queries, and of edges since deleted.) An empty graph has seen nothing, so
// every label would be warned about: there is no warning before the first
// vertex. It runs on the loop, between batches. unseen holds the labels
// warned about, under "vertex" and "edge".
func (s *Service) unknownLabels(p *query.Pattern) (w []string, unseen map[string][]string) {
	if s.core.Graph().NumVertices() == 0 {
		return nil, nil
	}
	vertex, edge := p.Labels()
	unseen = map[string][]string{}
	warn := func(kind, name string) {
		w = append(w, fmt.Sprintf("no %s of the graph has label %q yet: the query matches nothing until a message carries it", kind, name))
		unseen[kind] = append(unseen[kind], name)
	}
	seen := make([]bool, s.core.Labels().Len())
	if len(vertex) > 0 {
		for _, l := range s.core.Graph().VertexLabels() {
			if int(l) < len(seen) {
				seen[l] = true
			}
		}
	}
	for _, name := range vertex {
		if l, ok := s.core.Labels().Lookup(name); !ok || !seen[l] {
			warn("vertex", name)
		}
	}
	clear(seen)
	if len(edge) > 0 {
		s.edgeLabelsSeen(seen)
	}
	for _, name := range edge {
		if l, ok := s.core.Labels().Lookup(name); !ok || !seen[l] {
			warn("edge", name)
		}
	}
	return w, unseen
}

// edgeLabelsSeen marks in seen the labels of the graph's edges: its one
// label, or on a multi-label graph those its lists carry, which costs a
// pass over the edges.
func (s *Service) edgeLabelsSeen(seen []bool) {
	if l, ok := s.core.Graph().EdgeLabel(); ok {
		seen[l] = true
		return
	}
	if !s.core.Graph().MultiLabel() {
		return
	}
	for v := range s.core.Graph().NumVertices() {
		a := s.core.Graph().Out(graph.VertexID(v))
		for _, ls := range [][]graph.Label{a.SortedLabels, a.AppendedLabels} {
			for _, l := range ls {
				if int(l) < len(seen) {
					seen[l] = true
				}
			}
		}
	}
}

// maxAutomorphisms bounds the canonicalisation's cost per event: each
// event tries every automorphism. A 6-clique has 720.
const maxAutomorphisms = 5040

// canonical returns the automorphic image of m whose external ids, in
// query-vertex order, are smallest; names holds m's ids and is reordered
// alike, into nameScratch's array when it has room. It returns m itself
// when there is nothing to choose.
func (st *standing) canonical(m []graph.VertexID, names []string, scratch []graph.VertexID, nameScratch []string) ([]graph.VertexID, []string) {
	if len(st.auts) < 2 {
		return m, names
	}
	best := 0
	for k := 1; k < len(st.auts); k++ {
		a, b := st.auts[k], st.auts[best]
		for u := range a {
			if c := strings.Compare(names[a[u]], names[b[u]]); c != 0 {
				if c < 0 {
					best = k
				}
				break
			}
		}
	}
	if best == 0 {
		return m, names
	}
	p := st.auts[best]
	out := scratch[:0]
	outNames := nameScratch[:0]
	for u := range p {
		out = append(out, m[p[u]])
		outNames = append(outNames, names[p[u]])
	}
	return out, outNames
}

// queryInfo is a query as GET /queries shows it.
type queryInfo struct {
	QueryConfig
	MaxTime     string `json:"max_time,omitempty"`
	Vertices    int    `json:"vertices"`
	Edges       int    `json:"edges"`
	Appeared    int64  `json:"appeared"`
	Disappeared int64  `json:"disappeared"`
	LimitHits   int64  `json:"limit_hits"`
	LastLimit   string `json:"last_limit,omitempty"`
	// Device ran the query's last batch: cpu or gpu.
	Device string `json:"device,omitempty"`
}

func (st *standing) info() queryInfo {
	qi := queryInfo{
		QueryConfig: st.cfg, Vertices: st.q.N(), Edges: len(st.q.Edges),
		Appeared: st.Appeared, Disappeared: st.Disappeared, LimitHits: st.LimitHits, LastLimit: st.LastLimit,
		Device: st.device,
	}
	if st.cfg.MaxTime > 0 {
		qi.MaxTime = st.cfg.MaxTime.String()
	}
	return qi
}

// queryRequest is the body of POST /queries: the QueryConfig fields with
// max_time as a duration string ("2s").
type queryRequest struct {
	Name               string `json:"name"`
	Pattern            string `json:"pattern"`
	Initial            bool   `json:"initial"`
	MaxMatchesPerBatch int64  `json:"max_matches_per_batch"`
	MaxTime            string `json:"max_time"`
	// Replace registers the query in place of a standing one of the same
	// name, whose standing matches are retracted first if the pattern
	// changed; without it such a name is refused.
	Replace bool `json:"replace"`
}

func (r queryRequest) config() (QueryConfig, error) {
	c := QueryConfig{Name: r.Name, Pattern: r.Pattern, Initial: r.Initial, MaxMatchesPerBatch: r.MaxMatchesPerBatch}
	if r.MaxTime != "" {
		d, err := time.ParseDuration(r.MaxTime)
		if err != nil {
			return c, fmt.Errorf("max_time: %v", err)
		}
		c.MaxTime = d
	}
	return c, c.validate()
}
