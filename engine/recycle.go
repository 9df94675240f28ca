package engine

import (
	"sync"

	"github.com/gcsm/gcsm/graph"
)

// With an event-time window, accounts come and go: a vertex whose last edge
// the window expires (or a delete removes) is forgotten, and its id goes to
// the next new account, so that the graph and the id dictionary hold what
// is live, not every account ever seen.
//
// The ids are interned on the caller's interning stage (Core.Intern), ahead
// of the steps, so a vertex left without edges by batch k may already be
// named by batches interned since. The hand-over keeps both sides safe:
//
//  1. Step k notes the vertices batch k left without edges (Step.Isolated).
//  2. Once batch k is delivered, every stage is done with it (its events,
//     which name its vertices, are written), and the caller's Advance hands
//     the vertices on to the interning stage, with k.
//  3. Intern releases a vertex only if no batch after k named it
//     (lastUse), so no batch in flight holds it; it is still without edges,
//     as nothing since k gave it one. It tells the next batch it interns.
//  4. That batch's step forgets those vertices in the graph before it
//     applies the batch, which may already reuse their ids for new accounts.
//
// Between steps 3 and 4 the dictionary and the graph disagree: an id may be
// free, or name a new account, while the graph still has its old vertex. A
// checkpoint, and a new generation (whose decoder re-interns the batches
// the last one left undone), first forget every such vertex
// (Core.ForgetOutstanding), with the decoder held still.
//
// A vertex handed on but not yet released when a checkpoint is written
// keeps its name and stays without edges after a restart, and is not
// recycled: a small leak per restart, not an error.
type Recycler struct {
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
func (r *Recycler) named(v graph.VertexID) {
	if int(v) >= len(r.lastUse) {
		r.lastUse = append(r.lastUse, make([]uint32, int(v)+1-len(r.lastUse))...)
	}
	r.lastUse[v] = r.seq
}

// hand passes on, from the run loop, the vertices an acknowledged batch
// left without edges.
func (r *Recycler) hand(seq uint32, vs []graph.VertexID) {
	if len(vs) == 0 {
		return
	}
	r.mu.Lock()
	r.pending = append(r.pending, isolated{seq, vs})
	r.mu.Unlock()
}

// release frees, on the interning stage, the ids of handed-on vertices that
// no later batch named, and returns them with the number of the batch
// about to be interned: that batch's Step forgets them first, and carries
// the number (Batch.Seq).
func (r *Recycler) release(ids *graph.IDs) ([]graph.VertexID, uint32) {
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
	r.seq++
	return out, r.seq
}

// forget forgets, through f, the vertices of vs still outstanding
// (step 4).
func (r *Recycler) forget(vs []graph.VertexID, f func(graph.VertexID) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range vs {
		if !r.outstanding[v] {
			continue // forgotten by forgetOutstanding
		}
		delete(r.outstanding, v)
		if err := f(v); err != nil {
			return err
		}
	}
	return nil
}

// forgetOutstanding forgets, through f, every vertex released and not yet
// forgotten.
func (r *Recycler) forgetOutstanding(f func(graph.VertexID) error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for v := range r.outstanding {
		if err := f(v); err != nil {
			return err
		}
		delete(r.outstanding, v)
	}
	return nil
}
