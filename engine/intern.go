package engine

import (
	"sync"
	"sync/atomic"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/internal/par"
)

// Decoded is one message's decoding and its interned update.
type Decoded struct {
	Rec ingest.Record
	Err error // decoding's
	// U is the record as an update, once Intern has run, unless
	// ResolveErr (ingest.Resolver's) says why not or the record was
	// skipped (see Intern).
	U          graph.Update
	ResolveErr error
	known      ingest.Known // its endpoints' ids, where the dictionary had them
}

// Intern resolves a batch's decoded records into updates, in order, as new
// ids are numbered in the order they are seen. It runs on the interning
// stage, ahead of the steps, and may run beside a step: it writes only the
// dictionaries and the recycler, which nothing else writes meanwhile. It
// returns the ids the recycler released for the batch, and the batch's
// number, for its Batch.
//
// A record that failed to decode is skipped, and so is one a window will
// refuse for what it says alone (an edge without event time); one that
// comes late is interned, as lateness depends on the batches before it: an
// id so interned is a vertex without edges. keepTime says whether Rec.Time
// matters to the queries (ingest.Resolver.KeepTime).
//
// A vertex set counts as a use of its vertex for the recycler, as a vertex
// event does: the set was taken, so the vertex it changed is kept until a
// later batch leaves it without edges again, rather than released with the
// new properties a moment after they were set.
func (c *Core) Intern(dec []Decoded, keepTime bool) (recycled []graph.VertexID, seq uint32) {
	c.interning.Lock()
	defer c.interning.Unlock()
	c.resolver.KeepTime = keepTime
	windowed := c.expiry != nil
	r := c.recycle
	if r != nil {
		recycled, seq = r.release(c.ids)
	}
	skip := func(d *Decoded) bool {
		return d.Err != nil || (windowed && isEdge(d.Rec.Op) && d.Rec.Time == 0)
	}
	c.lookUp(dec, skip)
	for i := range dec {
		d := &dec[i]
		d.U, d.ResolveErr = graph.Update{}, nil
		if skip(d) {
			continue
		}
		d.U, d.ResolveErr = c.resolver.ResolveKnown(d.Rec, d.known)
		if r != nil && d.ResolveErr == nil {
			switch n := endpoints(d.U.Op); {
			case n == 2:
				r.named(d.U.Dst)
				fallthrough
			case n == 1:
				r.named(d.U.Src)
			}
		}
	}
	return recycled, seq
}

// lookUp finds the ids the dictionary has of the records' endpoints. Looking
// names up costs a few cache misses each on a dictionary of millions, so the
// batch's known names are looked up on all cores first, while nothing
// interns; only new names are interned in order.
func (c *Core) lookUp(dec []Decoded, skip func(*Decoded) bool) {
	par.Range(len(dec), func(lo, hi int) {
		var (
			names [2 * par.RangeSize]string
			ids   [2 * par.RangeSize]graph.VertexID
			found [2 * par.RangeSize]bool
		)
		n := 0
		for i := lo; i < hi; i++ {
			d := &dec[i]
			d.known = ingest.Known{}
			if skip(d) {
				continue
			}
			for e := range endpoints(d.Rec.Op) {
				names[n] = [2]string{d.Rec.Src, d.Rec.Dst}[e]
				n++
			}
		}
		c.ids.LookupMany(names[:n], ids[:n], found[:n])
		n = 0
		for i := lo; i < hi; i++ {
			d := &dec[i]
			if skip(d) {
				continue
			}
			for e := range endpoints(d.Rec.Op) {
				d.known.ID[e], d.known.OK[e] = ids[n], found[n]
				n++
			}
		}
	})
}

// isEdge says whether op inserts or deletes an edge, the updates a window
// keeps by their time.
func isEdge(op graph.Op) bool { return op == graph.Insert || op == graph.Delete }

// endpoints is how many vertices a record of op names, Src then Dst: an
// edge's two, a vertex event's or a vertex set's one, and an edge set's
// none, as it names its transfer by id. A record of an unknown op counts as
// an edge, for the resolver to refuse.
func endpoints(op graph.Op) int {
	switch op {
	case graph.AddVertex, graph.SetVertex:
		return 1
	case graph.SetEdge:
		return 0
	}
	return 2
}

// EncodeIDs encodes the id dictionary with the interning stage held still,
// after forgetting the vertices of the ids it released, so that the
// dictionary and the graph written after it agree. No step may be pending.
func (c *Core) EncodeIDs() ([]byte, error) {
	c.interning.Lock()
	defer c.interning.Unlock()
	if err := c.ForgetOutstanding(); err != nil {
		return nil, err
	}
	return c.ids.AppendBinary(nil), nil
}

// Decode decodes msgs into out, on as many goroutines as decs has
// decoders, one each; a small batch stays on the caller's goroutine.
func Decode(msgs []ingest.Message, out []Decoded, decs []*ingest.Decoder) {
	if len(msgs) < 512 || len(decs) == 1 {
		for i, m := range msgs {
			out[i].Rec, out[i].Err = decs[0].Decode(m.Value)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for _, d := range decs {
		wg.Go(func() {
			for {
				lo := int(next.Add(64)) - 64
				if lo >= len(msgs) {
					return
				}
				for i := lo; i < min(lo+64, len(msgs)); i++ {
					out[i].Rec, out[i].Err = d.Decode(msgs[i].Value)
				}
			}
		})
	}
	wg.Wait()
}
