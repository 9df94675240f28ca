package service

import (
	"fmt"
	"strings"
	"time"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// standing is a registered query and what it has emitted.
type standing struct {
	cfg QueryConfig
	q   *query.Query
	// vars are the query vertices' names, the keys of an event's match.
	vars []string
	// edgeLabels are the names of the query edges' labels; "*" for a
	// wildcard, whose data edge may carry any label.
	edgeLabels []string
	// auts are the pattern's automorphisms under Instances semantics. The
	// engine reports each instance by the map its symmetry breaking keeps,
	// which depends on internal vertex ids, that is on arrival order; the
	// service reports the map whose external ids are smallest instead, so
	// an instance has one key whatever order the input came in (several
	// partitions, a standby replaying).
	auts [][]int

	// Totals since registration, read by the HTTP API under Service.mu.
	Appeared, Disappeared int64
	LimitHits             int64
	LastLimit             string // what the last hit limit was, for /queries
}

// compileQuery parses and compiles c against the service's labels.
func (s *Service) compileQuery(c QueryConfig) (*standing, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	p, err := query.Parse(c.Name, c.Pattern)
	if err != nil {
		return nil, err
	}
	p.Name = c.Name
	q, err := query.Compile(p, s.labels, s.cfg.Graph.Directed, s.sem)
	if err != nil {
		return nil, err
	}
	st := &standing{cfg: c, q: q}
	if s.sem == query.Instances && q.Automorphisms > 1 {
		if st.auts = q.AutomorphismList(maxAutomorphisms); st.auts == nil {
			s.log.Warn().Str("query", c.Name).Uint64("automorphisms", q.Automorphisms).
				Msg("too many automorphisms to canonicalise matches: an instance's key may depend on the input's order")
		}
	}
	for _, v := range p.Vertices {
		st.vars = append(st.vars, v.Name)
	}
	for _, e := range q.Edges {
		if e.Label == graph.Wildcard {
			st.edgeLabels = append(st.edgeLabels, "*")
		} else {
			st.edgeLabels = append(st.edgeLabels, s.labels.Name(e.Label))
		}
	}
	return st, nil
}

// maxAutomorphisms bounds the canonicalisation's cost per event: each
// event tries every automorphism. A 6-clique has 720.
const maxAutomorphisms = 5040

// canonical returns the automorphic image of m whose external ids, in
// query-vertex order, are smallest; names holds m's ids and is reordered
// alike. It returns m itself when there is nothing to choose.
func (st *standing) canonical(m []graph.VertexID, names []string, scratch []graph.VertexID) ([]graph.VertexID, []string) {
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
	outNames := make([]string, len(names))
	for u := range p {
		out = append(out, m[p[u]])
		outNames[u] = names[p[u]]
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
}

func (st *standing) info() queryInfo {
	qi := queryInfo{
		QueryConfig: st.cfg, Vertices: st.q.N(), Edges: len(st.q.Edges),
		Appeared: st.Appeared, Disappeared: st.Disappeared, LimitHits: st.LimitHits, LastLimit: st.LastLimit,
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
