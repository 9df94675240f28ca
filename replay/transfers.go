package replay

import (
	"strings"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/query"
)

// previewQueries compiles the -q arguments against a scratch dictionary, so
// that what they read of events is known before any file is: the
// properties and times to keep while reading.
func previewQueries(specs []string, directed bool, sem query.Semantics, unlabeled bool) []*query.Query {
	qs, err := LoadQueries(specs, graph.NewDict(), directed, "", sem, unlabeled)
	if err != nil {
		return nil // the real load reports it
	}
	return qs
}

// keepTransfersFor starts keeping transfers when some query needs them,
// and makes the readers keep what the queries read.
func (s *Session) keepTransfersFor(qs []*query.Query) {
	for _, q := range qs {
		if q.ReadsTransfers() {
			s.keepTransfers()
			break
		}
	}
	store := s.core.Store()
	if store == nil {
		return
	}
	s.core.Register(qs)
	s.keep = ingest.NewPropFilter(store.EdgeColumns(), store.VertexColumns())
	s.resolver.KeepTime = store.KeepsTime()
}

// keepTransfers starts keeping the parallel transfers of each pair: a
// query needs them, or an event carries an id and so is an edge of its own.
func (s *Session) keepTransfers() { s.core.KeepTransfers(nil) }

// transfersText lists a match's transfer ids for --emit: "[tx-1 tx-2]",
// with "-" for a transfer sent without an id.
func (s *Session) transfersText(tx []bundle.Tx) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, t := range tx {
		if i > 0 {
			b.WriteByte(' ')
		}
		id := s.core.Store().ID(t) // "" for NoTransfer too
		if id == "" {
			id = "-"
		}
		b.WriteString(id)
	}
	b.WriteByte(']')
	return b.String()
}
