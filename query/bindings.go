package query

// NamesTransfers says whether q's pattern names a relationship variable:
// its matches are then about transfers, each an alert of its own, while a
// pattern that names none is about its vertices alone, however many
// transfers stand for each of its edges (incremental.Binder.VertexMatches).
func (q *Query) NamesTransfers() bool {
	for _, b := range q.Bindings {
		if b.Name != "" {
			return true
		}
	}
	return false
}
