// Package incremental is gcsm's matching engine: given a batch that dyngraph
// has applied (so the old, stable and new views are readable) it computes,
// for every registered query, exactly the matches that appeared (ΔM+) and
// disappeared (ΔM-), by the delta rules of docs/architecture.md. It also holds the
// static matcher that finds all matches of a new query in the current graph.
//
// # Delta rules
//
// Fix the order e_1..e_m of the query edges. A batch changes each data edge
// at most once (dyngraph normalises it), and every touched list offers three
// views: old (before the batch), new (after it) and stable (both). Term i
// maps a changed edge δ onto e_i, in both orientations where direction
// allows, and checks every other query edge e_j in one view:
//
//	δ is        e_j, j < i   e_j, j > i   emits
//	insertion   stable       new          +match
//	deletion    old          stable       -match
//
// A match that appeared is found exactly once, by the term of its
// smallest-index inserted edge; one that disappeared by the term of its
// largest-index deleted edge; nothing else is found. So results can be
// streamed with no cancelling pairs. Where several data edges can stand for
// one query edge (a wildcard edge label on a multi-label graph, or an
// undirected query edge on a directed graph) the views are evaluated on the
// query edge's predicate, and only the first changed edge that flips it
// stands for the flip.
//
// The Matcher interface is what an executor implements. CPU is the executor
// here: work units of (update edge, term) spread over all cores, each unit a
// depth-first walk of the term's matching order with multiway intersections
// of neighbour lists. The GPU executor lives in package kernels and satisfies
// the same interface; this package never imports it.
package incremental

import (
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/query"
)

// Mode selects counting or enumeration.
type Mode uint8

const (
	// Count never enumerates the last query vertex: it adds the size of its
	// candidate set, less candidates the partial match already uses.
	Count Mode = iota
	// Enumerate streams every match to the Sink.
	Enumerate
)

// Counts is one query's result for a batch. Counted rather than
// enumerated, a dense pattern's matches can pass 2^63: graph.Count holds
// them exactly, and saturates, to be reported as an error, past 2^128-2.
type Counts struct {
	Positive graph.Count // |ΔM+|
	Negative graph.Count // |ΔM-|
}

// Add adds o's counts to c's.
func (c *Counts) Add(o Counts) {
	c.Positive = c.Positive.Add(o.Positive)
	c.Negative = c.Negative.Add(o.Negative)
}

// Err is graph.ErrCountOverflow where either count saturated.
func (c Counts) Err() error {
	if err := c.Positive.Err(); err != nil {
		return err
	}
	return c.Negative.Err()
}

// Sink receives matches in Enumerate mode. It is called concurrently from
// worker goroutines; worker (0 ≤ worker < number of workers) lets a sink keep
// per-worker buffers without locking. q indexes the queries passed to the
// matcher, m maps each query vertex to its data vertex. m is valid only
// during the call: copy it to keep it.
type Sink func(worker, q int, sign graph.Sign, m []graph.VertexID)

// Matcher computes match deltas and static matches. Implementations must
// give identical results: the CPU executor is the reference.
type Matcher interface {
	// Match computes ΔM+ and ΔM- of every query for the batch g has applied
	// and not yet reorganized; delta is that batch's ΔE as returned by
	// dyngraph.Graph.Apply. g is only read. The returned slice has one entry
	// per query and belongs to the caller.
	Match(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode Mode, sink Sink) ([]Counts, error)

	// Static finds every match of each query in g, which must not be pending.
	// In Enumerate mode matches go to sink with sign Positive. It returns one
	// count per query.
	Static(g *dyngraph.Graph, queries []*query.Query, mode Mode, sink Sink) ([]graph.Count, error)

	// SetStop installs stop, which the executor's workers may call with a
	// query's index (from several goroutines at once); once it returns true
	// for a query, the executor may stop looking for that query's matches
	// for the rest of the call, whose counts are then partial. An executor
	// that runs each launch to its end (the GPU's) ignores it. nil removes
	// it.
	SetStop(stop func(q int) bool)

	// NumWorkers is the number of sink workers Match uses: worker numbers
	// run from 0 to NumWorkers()-1.
	NumWorkers() int

	// Follow tells an executor that keeps its own copy of the graph of the
	// batch g has applied and not yet reorganized, when it matches nothing
	// in it, so that its next Match copies only the lists changed since,
	// not the graph. An executor that reads the host graph does nothing.
	Follow(g *dyngraph.Graph)

	// Devices appends to dst, per query of the last Match's n queries, the
	// device that ran it, and returns it.
	Devices(dst []Device, n int) []Device
}

// Overlapper is a Matcher whose Match can finish while the caller goes on
// changing the graph: the GPU executor, once its copy of the graph is in
// device memory, needs the host graph only to bring that copy up to date.
// A service that reorganizes batch n and applies n+1 while the GPU matches
// n hides the GPU's fixed cost per batch behind that host work.
type Overlapper interface {
	// Begin does the part of Match(g, delta, queries, mode, sink) that
	// reads g and returns wait, which finishes the match and returns what
	// Match would have. Until wait returns, the caller may reorganize g and
	// apply later batches to it, but must not use the executor otherwise,
	// and sink may be called on another goroutine. An executor that cannot
	// overlap this call does all of it in Begin.
	Begin(g *dyngraph.Graph, delta []graph.Change, queries []*query.Query, mode Mode, sink Sink) (wait func() ([]Counts, error))
}
