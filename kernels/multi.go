package kernels

import (
	"errors"
	"sync"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/query"
)

// Multi runs each batch on several GPUs of one machine. A work unit is an
// update edge with each of its delta terms, and an edge belongs to shard
// hash(edge) mod len(GPUs): each GPU runs its shard's units against its own
// copy (or view) of the one graph, and the union of their matches is the
// batch's, as the delta rules sum over units. The GPUs must share the graph's
// pinned arenas: open the graph with the first GPU's Allocator (its pinned
// memory is portable to every device).
type Multi struct {
	GPUs []*GPU
}

var _ incremental.Matcher = (*Multi)(nil)

// Match implements incremental.Matcher.
func (m *Multi) Match(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode incremental.Mode, sink incremental.Sink) ([]incremental.Counts, error) {
	n := len(m.GPUs)
	if n == 0 {
		return nil, errors.New("kernels: Multi with no GPU")
	}
	shards := make([][]graph.Change, n)
	for _, c := range delta {
		k := shardOf(c.Edge, n)
		shards[k] = append(shards[k], c)
	}
	res := make([][]incremental.Counts, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, x := range m.GPUs {
		var s incremental.Sink
		if sink != nil {
			// A GPU's matches come from one goroutine, as worker 0; each
			// GPU gets its own worker number.
			s = func(_, q int, sign graph.Sign, mv []graph.VertexID) { sink(i, q, sign, mv) }
		}
		wg.Go(func() { res[i], errs[i] = x.Match(g, shards[i], queries, mode, s) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := make([]incremental.Counts, len(queries))
	for _, r := range res {
		for q, c := range r {
			out[q].Positive += c.Positive
			out[q].Negative += c.Negative
		}
	}
	return out, nil
}

// Static implements incremental.Matcher on the first GPU; the others'
// copies catch up at their next batch.
func (m *Multi) Static(g *dyngraph.Graph, queries []*query.Query, mode incremental.Mode, sink incremental.Sink) ([]int64, error) {
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

// NumWorkers is the number of sink workers Match uses, one per GPU.
func (m *Multi) NumWorkers() int { return len(m.GPUs) }

// shardOf is an edge's shard among n: a hash of its ends and label, the
// same whichever way an undirected edge is written.
func shardOf(e graph.Edge, n int) int {
	a, b := uint64(e.Src), uint64(e.Dst)
	if a > b {
		a, b = b, a
	}
	h := (a<<32 | b) * 0x9E3779B97F4A7C15
	h ^= uint64(e.Label) * 0xC2B2AE3D27D4EB4F
	h ^= h >> 29
	return int(h % uint64(n))
}
