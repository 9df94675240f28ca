package service

import (
	"fmt"
	"slices"
	"sync"

	"github.com/gcsm/gcsm/graph"
)

// With an event-time window, accounts come and go: a vertex whose last edge
// the window expires (or a delete removes) is forgotten, and its id goes to
// the next new account, so that the graph and the id dictionary hold what
// is live, not every account ever seen.
//
// The ids are interned on the decoding stage, ahead of the run loop, so a
// vertex left without edges by batch k may already be named by batches the
// decoder interned since. The hand-over keeps both sides safe:
//
//  1. The run loop notes the vertices batch k left without edges.
//  2. Once batch k is acknowledged, every stage is done with it (its events,
//     which name its vertices, are written), and the run loop hands the
//     vertices on to the decoder, with k.
//  3. The decoder releases a vertex only if no batch after k named it
//     (lastUse), so no batch in flight holds it; it is still without edges,
//     as nothing since k gave it one. It tells the next batch it interns.
//  4. The run loop forgets those vertices in the graph before applying that
//     batch, which may already reuse their ids for new accounts.
//
// Between steps 3 and 4 the dictionary and the graph disagree: an id may be
// free, or name a new account, while the graph still has its old vertex. A
// checkpoint, and a new generation (whose decoder re-interns the batches
// the last one left undone), first forget every such vertex
// (forgetOutstanding), with the decoder held still (Service.interning).
//
// A vertex handed on but not yet released when a checkpoint is written
// keeps its name and stays without edges after a restart, and is not
// recycled: a small leak per restart, not an error.
type recycler struct {
	mu          sync.Mutex
	pending     []isolated              // step 2 → 3
	outstanding map[graph.VertexID]bool // released in step 3, not yet forgotten in step 4

	// The decoder's own.
	seq     uint32   // batches interned
	lastUse []uint32 // per id: the last batch that named it
}

// isolated are the vertices batch seq left without edges.
type isolated struct {
	seq uint32
	vs  []graph.VertexID
}

// named notes that the batch being interned names v.
func (r *recycler) named(v graph.VertexID) {
	if int(v) >= len(r.lastUse) {
		r.lastUse = append(r.lastUse, make([]uint32, int(v)+1-len(r.lastUse))...)
	}
	r.lastUse[v] = r.seq
}

// hand passes on, from the run loop, the vertices an acknowledged batch
// left without edges.
func (r *recycler) hand(seq uint32, vs []graph.VertexID) {
	if len(vs) == 0 {
		return
	}
	r.mu.Lock()
	r.pending = append(r.pending, isolated{seq, vs})
	r.mu.Unlock()
}

// release frees, on the decoder, the ids of handed-on vertices that no
// later batch named, and returns them: the run loop must forget them before
// it applies the batch about to be interned.
func (r *recycler) release(ids *graph.IDs) []graph.VertexID {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []graph.VertexID
	for _, p := range r.pending {
		for _, v := range p.vs {
			if int(v) < len(r.lastUse) && r.lastUse[v] > p.seq {
				continue // named again since: it may have edges by now
			}
			ids.Release(v)
			if r.outstanding == nil {
				r.outstanding = map[graph.VertexID]bool{}
			}
			r.outstanding[v] = true
			out = append(out, v)
		}
	}
	r.pending = nil
	return out
}

// leftAlone lists the endpoints of the batch's deleted edges (delta) that
// have no edge left, once the graph is reorganized.
func (s *Service) leftAlone(b *batchState, delta []graph.Change) {
	for _, c := range delta {
		if c.Sign > 0 {
			continue
		}
		for _, v := range [2]graph.VertexID{c.Src, c.Dst} {
			if s.g.Isolated(v) {
				b.isolated = append(b.isolated, v)
			}
		}
	}
	slices.Sort(b.isolated)
	b.isolated = slices.Compact(b.isolated)
}

// forget removes the recycled vertices from the graph before their ids'
// next batch (step 4). A vertex already forgotten is skipped.
func (s *Service) forget(vs []graph.VertexID) error {
	if len(vs) == 0 {
		return nil
	}
	r := s.recycle
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range vs {
		if !r.outstanding[v] {
			continue // forgotten by forgetOutstanding
		}
		delete(r.outstanding, v)
		if err := s.forgetVertex(v); err != nil {
			return err
		}
	}
	return nil
}

// forgetOutstanding forgets every vertex whose id the decoder released
// and the run loop has not forgotten yet, so that the graph agrees with
// the dictionary. The decoder must be held still (s.interning) or not
// running, and the graph not pending.
func (s *Service) forgetOutstanding() error {
	r := s.recycle
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for v := range r.outstanding {
		if err := s.forgetVertex(v); err != nil {
			return err
		}
		delete(r.outstanding, v)
	}
	return nil
}

// forgetVertex clears vertex v, isolated, for its id's reuse: its label in
// the graph and its properties in the bundles.
func (s *Service) forgetVertex(v graph.VertexID) error {
	if err := s.g.Forget(v); err != nil {
		return fmt.Errorf("recycling vertex %d: %w", v, err)
	}
	if s.bundles != nil {
		s.bundles.Forget(v)
	}
	return nil
}
