// Package engine is gcsm's matching core: the graph and the dictionaries
// that name its vertices and labels, the store of parallel transfers and
// its binder, the window's expiry, the recycler of vertex ids, and the
// matcher with its placement.
//
// The core never owns a loop, in the manner of etcd raft's RawNode. A
// caller hands it one batch of resolved updates at a time (Step), reads
// what the batch produced (its changes, the updates refused, its matches
// through the caller's sink), delivers that, and then advances the core
// past the batch (Advance). The service, replay and the benchmarks are
// such loops; the batch cycle itself is written here once.
//
// Step overlaps one batch's match with the next batch's apply where the
// matcher can (incremental.Overlapper: the GPU with its own copy of the
// graph). Such a step is pending when Step returns, and finishes at the
// end of the next step's Apply, or in Finish. A caller that delivers in
// batch order runs a step's halves itself (Apply, then Match), so that it
// can hand the finished step on before the next match begins.
//
// A Core is not safe for concurrent use, with one exception: Intern may
// run beside a step, on the caller's interning stage (see Recycler).
package engine

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/internal/hostmem"
	"github.com/gcsm/gcsm/query"
)

// Config is what a core is made of.
type Config struct {
	Directed bool
	// DefaultVertexLabel and DefaultEdgeLabel name the labels of vertices
	// and edges no event labels.
	DefaultVertexLabel, DefaultEdgeLabel string
	// Window, if its Size is set, expires edges by event time.
	Window Window
	// Recycle reuses the ids of vertices the window leaves without edges
	// (Recycler); it needs a Window.
	Recycle bool
	// Alloc backs the graph's lists; nil means mmap'd memory.
	Alloc hostmem.Allocator
	// Matcher runs the queries.
	Matcher incremental.Matcher
	// VertexMatches makes a query that names no transfer variable report
	// vertex maps once transfers are kept (incremental.Binder).
	VertexMatches bool
	// OnTransfers, if set, is called when the core starts keeping
	// transfers: fresh when it starts a store (a batch first carries an
	// event with an id, or the caller asks), not when Load restores one.
	OnTransfers func(fresh bool)
}

// Core is the engine state and its batch cycle.
type Core struct {
	cfg      Config
	labels   *graph.Dict
	ids      *graph.IDs
	resolver *ingest.Resolver
	g        *dyngraph.Graph
	expiry   *Expiry   // nil without a window
	recycle  *Recycler // nil unless Config.Recycle
	store    *bundle.Store
	binder   *incremental.Binder // with store; nil until transfers are kept
	queries  []*query.Query      // registered (Register)
	pending  *Step               // the step whose match overlaps the caller's work
	stats    Stats
	// interning is held by Intern, which may run beside a step, and by
	// EncodeIDs.
	interning sync.Mutex
}

// Stats counts what the core's steps did.
type Stats struct {
	Steps int64
	// Overlapped counts the steps whose match ran on beside the next
	// step's apply, and Waited what finishing them blocked on.
	Overlapped int64
	Waited     time.Duration
}

// New returns a core with an empty graph.
func New(cfg Config) (*Core, error) {
	c := &Core{cfg: cfg}
	if err := c.Load(graph.NewDict(), graph.NewIDs(), nil, nil, nil); err != nil {
		return nil, err
	}
	return c, nil
}

// Load replaces the core's state: the dictionaries, the graph read from r
// (nil: empty), the window's state (nil: none yet) and the transfers
// (nil: none kept), with a new recycler. No step may be pending. An error names the part that
// could not be read: "graph: ..." or "window: ...".
func (c *Core) Load(labels *graph.Dict, ids *graph.IDs, r io.Reader, window []byte, store *bundle.Store) error {
	if c.pending != nil {
		return errors.New("engine: Load with a step pending")
	}
	opts := dyngraph.DefaultOptions()
	opts.Directed = c.cfg.Directed
	opts.Alloc = c.cfg.Alloc
	opts.DefaultVertexLabel = labels.Intern(c.cfg.DefaultVertexLabel)
	var g *dyngraph.Graph
	var err error
	if r == nil {
		g, err = dyngraph.New(opts)
	} else if g, err = dyngraph.Read(r, opts); err != nil {
		err = fmt.Errorf("graph: %w", err)
	}
	if err != nil {
		return err
	}
	var x *Expiry
	if c.cfg.Window.Size > 0 {
		x = NewExpiry(c.cfg.Window, c.cfg.Directed)
		if len(window) > 0 {
			if err := x.UnmarshalBinary(window); err != nil {
				g.Close()
				return fmt.Errorf("window: %w", err)
			}
		}
	}
	if c.g != nil {
		c.g.Close()
	}
	c.labels, c.ids, c.g, c.expiry = labels, ids, g, x
	if c.cfg.Recycle && x != nil {
		// The ids the last state handed on name nothing in this one.
		c.recycle = &Recycler{}
	}
	c.resolver = &ingest.Resolver{IDs: ids, Labels: labels, DefaultEdgeLabel: c.cfg.DefaultEdgeLabel}
	c.store, c.binder = nil, nil
	if store != nil {
		c.KeepTransfers(store)
	}
	return nil
}

// Close frees the graph.
func (c *Core) Close() error {
	if c.g == nil {
		return nil
	}
	err := c.g.Close()
	c.g = nil
	return err
}

// Graph is the core's graph; callers read it between steps.
func (c *Core) Graph() *dyngraph.Graph { return c.g }

// Labels is the label dictionary.
func (c *Core) Labels() *graph.Dict { return c.labels }

// IDs is the vertex id dictionary.
func (c *Core) IDs() *graph.IDs { return c.ids }

// Resolver interns records into updates against the dictionaries.
func (c *Core) Resolver() *ingest.Resolver { return c.resolver }

// Expiry is the window's state; nil without a window.
func (c *Core) Expiry() *Expiry { return c.expiry }

// Store is the store of parallel transfers; nil until they are kept.
func (c *Core) Store() *bundle.Store { return c.store }

// Binder matches over the store; nil until transfers are kept.
func (c *Core) Binder() *incremental.Binder { return c.binder }

// SetMatcher makes m the core's matcher, for a caller that loads the graph
// before it picks one. No step may be pending.
func (c *Core) SetMatcher(m incremental.Matcher) {
	c.cfg.Matcher = m
	if c.binder != nil {
		c.binder.Matcher = m
	}
}

// Directed says whether the graph is directed.
func (c *Core) Directed() bool { return c.cfg.Directed }

// Stats says what the steps have done so far.
func (c *Core) Stats() Stats { return c.stats }

// Register says which queries stand: what they read of transfers is kept
// from now on. A step matches the queries its Batch names.
func (c *Core) Register(qs []*query.Query) {
	c.queries = qs
	if c.binder != nil {
		c.binder.Register(qs)
	}
}

// KeepTransfers starts keeping the parallel transfers of each pair in
// store (a new one when nil), if the core does not yet. From then on the
// queries that name transfer variables bind transfers, and pairs from
// before have one implicit transfer each.
func (c *Core) KeepTransfers(store *bundle.Store) {
	if c.store != nil {
		return
	}
	fresh := store == nil
	if fresh {
		store = bundle.New(c.cfg.Directed)
	}
	c.store = store
	c.binder = &incremental.Binder{Matcher: c.cfg.Matcher, Store: store, VertexMatches: c.cfg.VertexMatches}
	c.binder.Register(c.queries)
	if c.cfg.OnTransfers != nil {
		c.cfg.OnTransfers(fresh)
	}
}
