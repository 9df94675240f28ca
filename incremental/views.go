package incremental

import (
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/query"
)

// viewSize is the number of entries of a in view v on a single-label graph.
func viewSize(a *dyngraph.Adj, v query.View) int {
	switch v {
	case query.ViewOld:
		return len(a.Sorted)
	case query.ViewNew:
		return len(a.Sorted) - a.Tombstones + len(a.Appended)
	}
	return len(a.Sorted) - a.Tombstones
}
