package query

import (
	"fmt"
	"math"
	"slices"

	"github.com/gcsm/gcsm/graph"
)

// Semantics says which matches count (docs/architecture.md, "Semantics").
type Semantics uint8

const (
	// Embeddings counts every injective label- and edge-preserving map: the
	// peers' counts.
	Embeddings Semantics = iota
	// Instances counts each matched subgraph once: of the maps related by an
	// automorphism of the pattern, only the one that satisfies the
	// symmetry-breaking conditions.
	Instances
)

func (s Semantics) String() string {
	if s == Instances {
		return "instances"
	}
	return "embeddings"
}

// ParseSemantics reads "embeddings" or "instances".
func ParseSemantics(s string) (Semantics, error) {
	switch s {
	case "embeddings", "":
		return Embeddings, nil
	case "instances":
		return Instances, nil
	}
	return 0, fmt.Errorf("unknown semantics %q: want embeddings or instances", s)
}

// Dir says which list of a matched data vertex holds a constraint's candidates.
type Dir uint8

const (
	// Out reads the out-list: the query edge points from the matched vertex
	// to the candidate. On undirected graphs every constraint reads Out, the
	// one list a vertex has.
	Out Dir = iota
	// In reads the in-list: the query edge points at the matched vertex.
	In
	// Any reads both lists: an undirected query edge on a directed graph.
	Any
)

// QEdge is a compiled query edge. On directed graphs with Directed set it
// points from A to B; otherwise A < B and the edge has no direction.
type QEdge struct {
	A, B     int
	Label    graph.Label // graph.Wildcard matches any edge label
	Directed bool
}

// Query is a Pattern bound to a graph's labels and direction: what the
// matchers execute. It is immutable once compiled and safe to share.
type Query struct {
	Name      string
	Pattern   *Pattern
	Directed  bool // the data graph's direction
	Semantics Semantics

	Labels []graph.Label // per query vertex; graph.Wildcard for wildcards
	Edges  []QEdge       // deduplicated; the term order e_1..e_m of the delta rules (docs/architecture.md)

	// Bindings holds the transfers a match binds, one per pattern edge
	// less duplicates (see Binding).
	Bindings []Binding
	// Pred is the pattern's WHERE and WITHIN, nil when it has neither.
	Pred *Predicates
	// Return is the pattern's RETURN, nil without one.
	Return *Returns

	// Less holds the symmetry-breaking conditions f(u) < f(v) under
	// Instances semantics, and where Images is set; empty otherwise.
	Less [][2]int
	// Images are the pattern's automorphisms (the identity first) when a
	// WHERE or a RETURN makes each automorphic map a match of its own
	// while the walk still breaks symmetry: the walk finds one map of each
	// orbit, and whoever evaluates the predicates (incremental.Binder)
	// takes every image m∘σ of it. A ring of four is then walked once, not four times.
	// nil when the walk finds every map itself.
	Images    [][]int
	imageLess [][2]int
	// Automorphisms is the size of the pattern's automorphism group,
	// saturating at MaxUint64.
	Automorphisms uint64

	// Terms holds one plan per query edge: Terms[i] starts at Edges[i].
	Terms []Plan

	// CountTerms are the plans for counting, and CountFactor what their
	// counts are multiplied by. Under Embeddings semantics the embeddings
	// of any set of matches that is closed under the automorphisms (M(G),
	// ΔM+, ΔM-) are exactly |Aut| times its instances, so counting walks
	// the symmetry-broken plans and multiplies: a 4-clique is then counted
	// 24 times faster. Under Instances, or when |Aut| saturates, they are
	// Terms and 1.
	CountTerms  []Plan
	CountFactor uint64
	symLess     [][2]int // the symmetry-breaking conditions, whatever the semantics
}

// N is the number of query vertices.
func (q *Query) N() int { return len(q.Labels) }

// Compile binds p to a label dictionary (query labels are interned, so a
// label no data vertex has yet simply matches nothing until one arrives) and
// to the graph's direction, removes duplicate edges, gives each pattern edge
// its Binding, compiles WHERE and WITHIN into Pred and RETURN into Return,
// finds the automorphisms (only the identity once a WHERE, a RETURN or
// parallel Bindings tell automorphic maps apart) and builds one matching
// plan per query edge. Predicates and RETURN may read only the edges that
// the matcher binds transfers on: labelled ones and, on a directed graph,
// directed ones.
func Compile(p *Pattern, labels *graph.Dict, directed bool, sem Semantics) (*Query, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	q := &Query{Name: p.Name, Pattern: p, Directed: directed, Semantics: sem}
	for _, v := range p.Vertices {
		l := graph.Wildcard
		if !v.Wildcard {
			l = labels.Intern(v.Label)
		}
		q.Labels = append(q.Labels, l)
	}
	seen := make(map[QEdge]int)
	edgeOf := make([]int, len(p.Edges))
	for i, e := range p.Edges {
		ce := QEdge{A: e.From, B: e.To, Label: graph.Wildcard, Directed: directed && e.Directed}
		if !e.Wildcard {
			ce.Label = labels.Intern(e.Label)
		}
		if !ce.Directed && ce.A > ce.B {
			ce.A, ce.B = ce.B, ce.A
		}
		j, dup := seen[ce]
		if !dup { // duplicates come e.g. from CSM files that list each edge in both directions
			j = len(q.Edges)
			seen[ce] = j
			q.Edges = append(q.Edges, ce)
		}
		edgeOf[i] = j
	}
	byName, first, parallel, err := q.bindings(p, edgeOf)
	if err != nil {
		return nil, err
	}
	if err := q.predicates(p, byName, first); err != nil {
		return nil, err
	}
	if err := q.returns(p, byName, first); err != nil {
		return nil, err
	}
	// A WHERE can tell apart the maps that an automorphism relates, and so
	// can a RETURN (it reports them differently) and parallel Bindings of
	// one Edge, so then only the identity is a symmetry. WITHIN reads every
	// edge alike and keeps the group.
	q.Automorphisms = 1
	apart := p.Where != nil || len(p.Return) > 0
	switch {
	case !apart && !parallel:
		q.Automorphisms, q.symLess = symmetryBreaking(q)
	case apart && !parallel:
		q.imagesOf()
	}
	if sem == Instances {
		q.Less = q.symLess
	}
	if q.Images != nil {
		q.Less = q.imageLess
	}
	for i := range q.Edges {
		q.Terms = append(q.Terms, q.termPlan(i, q.Less))
	}
	q.CountTerms, q.CountFactor = q.Terms, 1
	if sem == Embeddings && q.Automorphisms > 1 && q.Automorphisms < math.MaxUint64 {
		q.CountTerms, q.CountFactor = nil, q.Automorphisms
		for i := range q.Edges {
			q.CountTerms = append(q.CountTerms, q.termPlan(i, q.symLess))
		}
	}
	return q, nil
}

// Constraint is one query edge between the vertex placed at a level and a
// vertex placed earlier, at depth From.
type Constraint struct {
	From  int // depth of the matched endpoint
	Edge  int // index into Query.Edges: decides the view in a delta term
	Label graph.Label
	Dir   Dir // which list of the matched endpoint's data vertex to read
}

// Level is one step of a matching order.
type Level struct {
	Vertex int         // the query vertex placed here
	Label  graph.Label // its label or graph.Wildcard
	Cons   []Constraint
	// Symmetry breaking: the data vertex placed here must be greater than
	// those at depths Above and less than those at depths Below.
	Above, Below []int
}

// Plan is a matching order with the checks each level performs. In a delta
// term, levels 0 and 1 are the endpoints of the update edge, and level 1's
// constraints are the other query edges between them.
type Plan struct {
	Edge   int     // the term's update edge, or -1 for a static plan
	Levels []Level // Levels[d] places query vertex Levels[d].Vertex
}

// termPlan builds the plan of term i: start at edge i's endpoints, then
// repeatedly take the vertex with the most edges into the placed set (the
// most intersections, so the smallest candidate sets), preferring labeled
// vertices and then higher degree.
// maxImages bounds the automorphisms a WHERE pattern's walk breaks: each
// costs a predicate expansion per map found, and past a few dozen walking
// every map is as cheap.
const maxImages = 48

// imagesOf sets Images and the walk's symmetry breaking for a pattern with
// a WHERE, when its vertex pattern has automorphisms, few enough.
func (q *Query) imagesOf() {
	aut, less := symmetryBreaking(q)
	if aut < 2 || aut > maxImages {
		return
	}
	q.Automorphisms = aut
	list := q.AutomorphismList(maxImages)
	q.Automorphisms = 1
	if list == nil {
		return
	}
	q.Images, q.imageLess = list, less
}

func (q *Query) termPlan(i int, less [][2]int) Plan {
	e := q.Edges[i]
	return q.plan(i, []int{e.A, e.B}, nil, less, nil)
}

// StaticPlan builds a plan for the static matcher starting at vertex start.
// candidates, when not nil, gives each query vertex's candidate count and
// breaks ties towards the most selective vertex. forCount asks for the plan
// whose count is multiplied by CountFactor.
func (q *Query) StaticPlan(start int, candidates []int, forCount bool) Plan {
	return q.plan(-1, []int{start}, candidates, q.staticLess(forCount), nil)
}

// StaticPlanLeavesLast is StaticPlan with the query's leaves (vertices of
// one edge, start excepted) placed after every other vertex, where a
// counting search can count them instead of walking them.
func (q *Query) StaticPlanLeavesLast(start int, candidates []int, forCount bool) Plan {
	return q.plan(-1, []int{start}, candidates, q.staticLess(forCount), q.leaves(start, start))
}

// CountTermLeavesLast is the plan of term i for a counting walk: the
// query's leaves outside the update edge go last, as in
// StaticPlanLeavesLast; candidates, as StaticPlan's, breaks ties; and
// forCount asks for the plan whose count is multiplied by CountFactor.
func (q *Query) CountTermLeavesLast(i int, candidates []int, forCount bool) Plan {
	e := q.Edges[i]
	return q.plan(i, []int{e.A, e.B}, candidates, q.staticLess(forCount), q.leaves(e.A, e.B))
}

// leaves marks the vertices of one edge other than a and b; none in a
// query of two vertices.
func (q *Query) leaves(a, b int) []bool {
	deg := make([]int, q.N())
	for _, e := range q.Edges {
		deg[e.A]++
		deg[e.B]++
	}
	last := make([]bool, q.N())
	for v, k := range deg {
		last[v] = k == 1 && v != a && v != b && q.N() > 2
	}
	return last
}

func (q *Query) staticLess(forCount bool) [][2]int {
	if forCount && q.CountFactor > 1 {
		return q.symLess
	}
	return q.Less
}

// plan orders the vertices after prefix, each joined to one placed before
// it, those in last (when not nil) after all others.
func (q *Query) plan(term int, prefix []int, cands []int, less [][2]int, last []bool) Plan {
	n := q.N()
	depth := make([]int, n)
	for v := range depth {
		depth[v] = -1
	}
	order := slices.Clone(prefix)
	for d, v := range order {
		depth[v] = d
	}
	deg := make([]int, n)
	for _, e := range q.Edges {
		deg[e.A]++
		deg[e.B]++
	}
	rest := 0 // vertices not in last still to place
	for v := range n {
		if depth[v] < 0 && (last == nil || !last[v]) {
			rest++
		}
	}
	for len(order) < n {
		best, bestLinks := -1, -1
		for v := 0; v < n; v++ {
			if depth[v] >= 0 || (rest > 0 && last != nil && last[v]) {
				continue
			}
			links := 0
			for _, e := range q.Edges {
				if (e.A == v && depth[e.B] >= 0) || (e.B == v && depth[e.A] >= 0) {
					links++
				}
			}
			if links == 0 {
				continue // keep the order connected
			}
			if best < 0 || better(q, cands, deg, v, links, best, bestLinks) {
				best, bestLinks = v, links
			}
		}
		if best < 0 {
			panic("BUG: query.plan on a disconnected pattern")
		}
		depth[best] = len(order)
		order = append(order, best)
		if last == nil || !last[best] {
			rest--
		}
	}
	p := Plan{Edge: term, Levels: make([]Level, n)}
	for d, v := range order {
		lv := Level{Vertex: v, Label: q.Labels[v]}
		for j, e := range q.Edges {
			if j == term {
				continue // satisfied by the update edge itself
			}
			var other int
			switch v {
			case e.A:
				other = e.B
			case e.B:
				other = e.A
			default:
				continue
			}
			if depth[other] >= d {
				continue
			}
			c := Constraint{From: depth[other], Edge: j, Label: e.Label}
			switch {
			case !q.Directed:
				c.Dir = Out
			case !e.Directed:
				c.Dir = Any
			case e.A == other:
				c.Dir = Out // other → v: v is in other's out-list
			default:
				c.Dir = In
			}
			lv.Cons = append(lv.Cons, c)
		}
		for _, lt := range less {
			u, w := lt[0], lt[1] // f(u) < f(w)
			switch {
			case v == w && depth[u] < d:
				lv.Above = append(lv.Above, depth[u])
			case v == u && depth[w] < d:
				lv.Below = append(lv.Below, depth[w])
			}
		}
		p.Levels[d] = lv
	}
	return p
}

func better(q *Query, cands, deg []int, v, links, best, bestLinks int) bool {
	if links != bestLinks {
		return links > bestLinks
	}
	if cands != nil && cands[v] != cands[best] {
		return cands[v] < cands[best]
	}
	lv, lb := q.Labels[v] != graph.Wildcard, q.Labels[best] != graph.Wildcard
	if lv != lb {
		return lv
	}
	return deg[v] > deg[best]
}
