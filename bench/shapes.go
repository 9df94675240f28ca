package bench

import (
	"fmt"
	"strings"
)

// ShapesNamed returns the shapes of names (Shapes), in that order; a name
// may have spaces around it. Under labeled each query vertex has one of the
// two most common labels, alternating.
func ShapesNamed(names []string, labeled bool) ([]Shape, error) {
	var out []Shape
	all := Shapes()
	for _, name := range names {
		found := false
		for _, s := range all {
			if s.Name == strings.TrimSpace(name) {
				if labeled {
					ls := make([]uint32, s.Vertices)
					for i := range ls {
						ls[i] = uint32(i % 2)
					}
					s.Cypher = s.Labeled(ls)
				}
				out = append(out, s)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown shape %q (have %s)", name, ShapeNames())
		}
	}
	return out, nil
}

// ShapeNames lists the names of Shapes, for messages.
func ShapeNames() string {
	var names []string
	for _, s := range Shapes() {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}
