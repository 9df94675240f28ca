package query

import "fmt"

// CheckUndirected refuses a pattern that draws an arrow when the graph it
// will run on is undirected: such a graph would match the edge either way,
// which is not what an arrow says. fix tells the user how to make the graph
// directed, for the message. A pattern whose direction is only implied by
// the order of its ends (a CSM file) passes, since CSM queries write
// undirected patterns that way.
func (p *Pattern) CheckUndirected(fix string) error {
	if p.ImpliedDirection {
		return nil
	}
	for _, e := range p.Edges {
		if !e.Directed {
			continue
		}
		a, b := p.Vertices[e.From].Name, p.Vertices[e.To].Name
		return &Error{Source: p.Name, Pos: e.Pos, Reason: fmt.Sprintf(
			"the edge (%s)->(%s) has a direction, but the graph is undirected: %s, or write (%s)--(%s) to match it either way",
			a, b, fix, a, b)}
	}
	return nil
}

// Labels returns the distinct labels p names, vertex and edge labels alike
// (they share one dictionary), in the order they first appear: vertices
// first, then edges. Wildcards name none.
func (p *Pattern) Labels() []string {
	var out []string
	seen := make(map[string]bool)
	add := func(label string, wildcard bool) {
		if !wildcard && !seen[label] {
			seen[label] = true
			out = append(out, label)
		}
	}
	for _, v := range p.Vertices {
		add(v.Label, v.Wildcard)
	}
	for _, e := range p.Edges {
		add(e.Label, e.Wildcard)
	}
	return out
}
