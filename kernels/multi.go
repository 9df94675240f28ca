package kernels

import (
	"cmp"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/query"
)

// Multi runs each batch on several GPUs of one machine. A work unit is an
// update edge with each of its delta terms; split gives each GPU a share of
// the batch's units, which it runs against its own copy (or view) of the one
// graph, and the union of their matches is the batch's, as the delta rules
// sum over units. The GPUs must share the graph's pinned arenas: open the
// graph with the first GPU's Allocator (its pinned memory is portable to
// every device).
type Multi struct {
	GPUs []*GPU
}

var (
	_ incremental.Matcher    = (*Multi)(nil)
	_ incremental.Overlapper = (*Multi)(nil)
	_ incremental.Preparer   = (*Multi)(nil)
)

// Match implements incremental.Matcher.
func (m *Multi) Match(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode incremental.Mode, sink incremental.Sink) ([]incremental.Counts, error) {
	return m.Begin(g, delta, queries, mode, sink)()
}

// Begin implements incremental.Overlapper: every GPU begins its share at
// once, and the wait takes each GPU's result in turn.
func (m *Multi) Begin(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode incremental.Mode, sink incremental.Sink) func() ([]incremental.Counts, error) {
	n := len(m.GPUs)
	if n == 0 {
		return finished(nil, errors.New("kernels: Multi with no GPU"))
	}
	shards := split(g, delta, n)
	waits := make([]func() ([]incremental.Counts, error), n)
	var wg sync.WaitGroup
	for i, x := range m.GPUs {
		var s incremental.Sink
		if sink != nil {
			// Each GPU's sink workers get numbers of their own.
			off := i * x.NumWorkers()
			s = func(w, q int, sign graph.Sign, mv []graph.VertexID) { sink(off+w, q, sign, mv) }
		}
		wg.Go(func() { waits[i] = x.Begin(g, shards[i], queries, mode, s) })
	}
	wg.Wait()
	return func() ([]incremental.Counts, error) {
		out := make([]incremental.Counts, len(queries))
		var errs []error
		for _, wait := range waits {
			r, err := wait()
			errs = append(errs, err)
			for q, c := range r {
				out[q].Add(c)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		return out, nil
	}
}

// Static implements incremental.Matcher on the first GPU; the others'
// copies catch up at their next batch.
func (m *Multi) Static(g *dyngraph.Graph, queries []*query.Query, mode incremental.Mode, sink incremental.Sink) ([]graph.Count, error) {
	if len(m.GPUs) == 0 {
		return nil, errors.New("kernels: Multi with no GPU")
	}
	return m.GPUs[0].Static(g, queries, mode, sink)
}

// HostBytes is the GPUs' HostBytes summed.
func (m *Multi) HostBytes() uint64 {
	var n uint64
	for _, x := range m.GPUs {
		n += x.HostBytes()
	}
	return n
}

// Last merges the GPUs' statistics of the last batch: as they ran at once,
// a stage took the longest GPU's time, while bytes, lists and launches add up.
func (m *Multi) Last() BatchStats {
	var st BatchStats
	st.CacheSkipped = len(m.GPUs) > 0
	for _, x := range m.GPUs {
		l := x.Last()
		st.Estimate, st.Pack, st.Rank, st.Copy = max(st.Estimate, l.Estimate), max(st.Pack, l.Pack), max(st.Rank, l.Rank), max(st.Copy, l.Copy)
		st.Match, st.Kernel = max(st.Match, l.Match), max(st.Kernel, l.Kernel)
		st.CacheSkipped = st.CacheSkipped && l.CacheSkipped
		st.CacheBytes += l.CacheBytes
		st.FillBytes += l.FillBytes
		st.CachedLists += l.CachedLists
		st.FilledLists += l.FilledLists
		st.SlabBytes += l.SlabBytes
		st.BlockBytes += l.BlockBytes
		st.Launches += l.Launches
	}
	return st
}

// LastPrepare implements incremental.Preparer: the GPUs prepare at once,
// so the longest one's.
func (m *Multi) LastPrepare() time.Duration {
	var d time.Duration
	for _, x := range m.GPUs {
		d = max(d, x.LastPrepare())
	}
	return d
}

// Follow implements incremental.Follower: every GPU's copy follows the
// batch, though the Placer gave none of them work.
func (m *Multi) Follow(g *dyngraph.Graph) {
	for _, x := range m.GPUs {
		x.Follow(g)
	}
}

// Close closes every GPU.
func (m *Multi) Close() error {
	var errs []error
	for _, x := range m.GPUs {
		errs = append(errs, x.Close())
	}
	m.GPUs = nil
	return errors.Join(errs...)
}

// NumWorkers is the number of sink workers Match uses: each GPU's.
func (m *Multi) NumWorkers() int {
	if len(m.GPUs) == 0 {
		return 0
	}
	return len(m.GPUs) * m.GPUs[0].NumWorkers()
}

// split deals the batch's changes out to n GPUs, heaviest first, each to
// the GPU with the least so far (longest processing time first). A change's
// weight is the product of its ends' degrees plus one: a unit's walks start
// from both ends' lists, and on a power-law graph a few hub edges hold most
// of a batch's work. The order within each share is the batch's, and equal
// weights go to the lower GPU, so the split is deterministic.
func split(g *dyngraph.Graph, delta []graph.Change, n int) [][]graph.Change {
	shares := make([][]graph.Change, n)
	if n == 1 {
		shares[0] = delta
		return shares
	}
	type unit struct {
		w float64
		i int
	}
	units := make([]unit, len(delta))
	for i, c := range delta {
		units[i] = unit{float64(g.Degree(c.Src)+1) * float64(g.Degree(c.Dst)+1), i}
	}
	slices.SortStableFunc(units, func(a, b unit) int { return cmp.Compare(b.w, a.w) })
	load := make([]float64, n)
	to := make([]int, len(delta))
	for _, u := range units {
		k := 0
		for j := 1; j < n; j++ {
			if load[j] < load[k] {
				k = j
			}
		}
		load[k] += u.w
		to[u.i] = k
	}
	for i, c := range delta {
		shares[to[i]] = append(shares[to[i]], c)
	}
	return shares
}
