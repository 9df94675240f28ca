package service

import (
	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/query"
)

// keepTransfers starts keeping the parallel transfers of each pair (package
// bundle), if it has not yet, and what the standing queries read of them.
// It runs on the loop, between batches: when a query needs transfers; the
// core starts on its own when a batch first carries an event with an id,
// as such an event is an edge of its own. From then on the queries that
// name transfer variables bind transfers; pairs from before have one
// implicit transfer each. The others still report vertex maps
// (incremental.Binder.VertexMatches), so that their keys and alerts do not
// change when another query or the input turns this on.
func (s *Service) keepTransfers(more ...*query.Query) {
	s.core.KeepTransfers(nil)
	s.core.Register(append(s.compiled(), more...))
	s.publishKeep()
}

// transfersKept is the core's word that it keeps transfers now: fresh, or
// restored from a checkpoint.
func (s *Service) transfersKept(fresh bool) {
	if fresh {
		s.log.Info().Msg("keeping parallel transfers: events with ids are edges of their own, and queries bind transfers")
	}
	s.publishKeep()
}

// publishKeep tells the decoding stage which properties and times to keep:
// those the store keeps. A batch decoded before sees the old set.
func (s *Service) publishKeep() {
	s.keep.Store(ingest.NewPropFilter(s.core.Store().EdgeColumns(), s.core.Store().VertexColumns()))
	s.keepTime.Store(s.core.Store().KeepsTime())
}

// needsTransfers says whether q must have transfers kept from its
// registration on: it reads them, or it names them, so that its matches are
// transfer-level, and keyed by their transfers, whatever else stands.
func needsTransfers(q *query.Query) bool {
	return q.ReadsTransfers() || q.NamesTransfers()
}

// transfer is a bound transfer as an event names it, read from the store
// while the batch is pending.
type transfer struct {
	id string
	ms int64 // event time; 0 when unknown
}

// boundSink is the collector's sink for a Binder: the match, and its
// transfers after its vertices; a vertex map (tx nil) has none. A query
// with a RETURN keeps its row, evaluated now, while the values the match
// had are readable: a disappeared match's are those before the batch.
//
// binder is read at each call: a step may start keeping transfers after
// its sink is made.
func (c *collector) boundSink(binder func() *incremental.Binder) incremental.BoundSink {
	return func(worker, q int, sign graph.Sign, m []graph.VertexID, tx []bundle.Tx) {
		w, unlock := c.buf(worker)
		defer unlock()
		if !c.count(w, q, sign) {
			return
		}
		f := found{q: q, sign: sign, at: len(w.verts), tx: -1, ret: len(w.rets)}
		b := binder()
		if w.rets = b.Returns(q, sign, m, tx, w.rets); len(w.rets) == f.ret {
			f.ret = -1
		}
		if tx != nil {
			f.tx = len(w.txs)
			for _, t := range tx {
				var x transfer
				if t != incremental.NoTransfer {
					x = transfer{id: b.Store.ID(t), ms: b.Store.Time(t)}
				}
				w.txs = append(w.txs, x)
			}
		}
		w.found = append(w.found, f)
		w.verts = append(w.verts, m...)
	}
}
