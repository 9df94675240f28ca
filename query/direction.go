package query

import (
	"fmt"
	"slices"
)

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

// Labels returns the distinct labels p names on its vertices and, apart,
// on its edges, each in the order they first appear. Wildcards name none.
func (p *Pattern) Labels() (vertex, edge []string) {
	for _, v := range p.Vertices {
		if !v.Wildcard && !slices.Contains(vertex, v.Label) {
			vertex = append(vertex, v.Label)
		}
	}
	for _, e := range p.Edges {
		if !e.Wildcard && !slices.Contains(edge, e.Label) {
			edge = append(edge, e.Label)
		}
	}
	return vertex, edge
}
