package service

import (
	"slices"

	"github.com/gcsm/gcsm/query"
)

// registrationWarnings are what a new query is warned about: the labels
// it names that the graph has not seen (unknownLabels), and the properties
// its WHERE reads that no event of their labels has given, or compares
// with literals of a kind they never had (query.PropertyWarnings against
// the decoders' catalog), both as of now, between batches.
//
// An empty graph has seen nothing, so a query registered before the first
// event (configured queries on a fresh start) is warned about nothing: the
// stream may well carry what it reads. Labels warned about are not checked
// for properties too, which would say the same thing again.
func (s *Service) registrationWarnings(p *query.Pattern) []string {
	w, unseen := s.unknownLabels(p)
	if s.core.Graph().NumVertices() == 0 {
		return w
	}
	skip := func(vertex bool, label string) bool {
		if vertex {
			return slices.Contains(unseen["vertex"], label)
		}
		return slices.Contains(unseen["edge"], label)
	}
	return append(w, p.PropertyWarnings(s.seen, skip)...)
}
