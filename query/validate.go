package query

import "fmt"

// Validate checks the structural rules every pattern must satisfy before it
// can be compiled: between MinVertices and MaxVertices vertices with unique,
// non-empty names; at least one edge; edges between two distinct vertices in
// range; labels consistent with the Wildcard flags; and one connected
// component, since a matcher extends partial matches along edges and could
// never reach a vertex that no edge leads to; a WHERE whose variables are
// the pattern's and whose operations some kinds of values satisfy; and a
// WITHIN that is not negative.
//
// The error, if any, is an *Error whose Pos is that of the offending vertex
// or edge when the pattern came from a parser.
func (p *Pattern) Validate() error {
	if err := p.validate(); err != nil {
		return err
	}
	return nil
}

// validated is the last step of every parser: it validates p and attributes
// any error to source.
func validated(source string, p *Pattern) (*Pattern, error) {
	if err := p.validate(); err != nil {
		err.Source = source
		return nil, err
	}
	return p, nil
}

// validate is Validate with a concrete result type, so that callers can fill
// in the Source without a type assertion.
func (p *Pattern) validate() *Error {
	n := len(p.Vertices)
	switch {
	case n == 0:
		return &Error{Reason: "empty pattern: no vertices"}
	case n > MaxVertices:
		return &Error{Pos: p.Vertices[MaxVertices].Pos, Reason: fmt.Sprintf("too large: %d vertices, the limit is %d", n, MaxVertices)}
	}

	seen := make(map[string]int, n)
	for i, v := range p.Vertices {
		if v.Name == "" {
			return &Error{Pos: v.Pos, Reason: fmt.Sprintf("vertex %d has no name", i)}
		}
		if j, dup := seen[v.Name]; dup {
			return &Error{Pos: v.Pos, Reason: fmt.Sprintf("duplicate vertex name %s (also vertex %d)", v.Name, j)}
		}
		seen[v.Name] = i
		if reason := labelProblem(v.Label, v.Wildcard); reason != "" {
			return &Error{Pos: v.Pos, Reason: "vertex " + v.Name + " " + reason}
		}
	}

	adj := make([][]int, n)
	for i, e := range p.Edges {
		if e.From < 0 || e.From >= n || e.To < 0 || e.To >= n {
			return &Error{Pos: e.Pos, Reason: fmt.Sprintf("edge %d joins vertices %d and %d, outside [0, %d)", i, e.From, e.To, n)}
		}
		if e.From == e.To {
			return &Error{Pos: e.Pos, Reason: fmt.Sprintf("self-loop on vertex %s: an edge needs two distinct vertices", p.Vertices[e.From].Name)}
		}
		if reason := labelProblem(e.Label, e.Wildcard); reason != "" {
			return &Error{Pos: e.Pos, Reason: fmt.Sprintf("edge %s-%s %s", p.Vertices[e.From].Name, p.Vertices[e.To].Name, reason)}
		}
		adj[e.From] = append(adj[e.From], e.To)
		adj[e.To] = append(adj[e.To], e.From)
	}

	// Checked after the edges, so that (a)-->(a) is reported as the self-loop
	// it is rather than as a pattern of one vertex.
	switch {
	case n < MinVertices:
		return &Error{Pos: p.Vertices[0].Pos, Reason: fmt.Sprintf("too small: %d vertex, a pattern needs at least %d and an edge", n, MinVertices)}
	case len(p.Edges) == 0:
		return &Error{Pos: p.Vertices[0].Pos, Reason: "no edges: a pattern needs at least one edge"}
	}

	// Connectivity ignores direction: a directed edge still lets the matcher
	// extend a partial match from either endpoint.
	reached := make([]bool, n)
	reached[0] = true
	stack := []int{0}
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, w := range adj[u] {
			if !reached[w] {
				reached[w] = true
				stack = append(stack, w)
			}
		}
	}
	for i, ok := range reached {
		if !ok {
			v := p.Vertices[i]
			return &Error{Pos: v.Pos, Reason: fmt.Sprintf("disconnected: vertex %s is not reachable from %s", v.Name, p.Vertices[0].Name)}
		}
	}
	return p.checkWhere()
}

// labelProblem says what is wrong with a label and its Wildcard flag, or ""
// when they agree. The compiler tells wildcards by the flag alone, and no
// parser produces an empty label, so one that is not a wildcard is a mistake
// by whoever built the pattern.
func labelProblem(label string, wildcard bool) string {
	switch {
	case wildcard && label != "":
		return fmt.Sprintf("is a wildcard but has label %q", label)
	case !wildcard && label == "":
		return "has an empty label; mark it Wildcard to match any label"
	}
	return ""
}
