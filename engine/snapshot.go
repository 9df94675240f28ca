package engine

import (
	"fmt"
	"io"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/internal/hostmem"
)

// Snapshot copies the graph (into mmap'd memory), the id dictionary and,
// with transfers, the store, through their checkpoint encodings: a copy a
// search may read on another goroutine while the steps go on. No step may
// be pending.
func (c *Core) Snapshot() (*dyngraph.Graph, *graph.IDs, *bundle.Store, error) {
	ib, err := c.EncodeIDs()
	if err != nil {
		return nil, nil, nil, err
	}
	names := graph.NewIDs()
	if err := names.UnmarshalBinary(ib); err != nil {
		return nil, nil, nil, fmt.Errorf("ids: %w", err)
	}
	var store *bundle.Store
	if c.Store() != nil {
		bb, err := c.Store().AppendBinary(nil)
		if err != nil {
			return nil, nil, nil, err
		}
		if store, err = bundle.Decode(bb, names.Len()); err != nil {
			return nil, nil, nil, fmt.Errorf("bundles: %w", err)
		}
	}
	opts := dyngraph.DefaultOptions()
	opts.Directed = c.cfg.Directed
	opts.Alloc = hostmem.Mmap{}
	opts.DefaultVertexLabel, _ = c.Labels().Lookup(c.cfg.DefaultVertexLabel)
	pr, pw := io.Pipe()
	go func() {
		_, err := c.Graph().WriteTo(pw)
		pw.CloseWithError(err)
	}()
	g, err := dyngraph.Read(pr, opts)
	pr.CloseWithError(io.ErrClosedPipe) // ends the writer if Read stopped early
	if err != nil {
		return nil, nil, nil, fmt.Errorf("graph: %w", err)
	}
	return g, names, store, nil
}
