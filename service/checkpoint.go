package service

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/internal/statedir"
	"github.com/gcsm/gcsm/query"
)

// A checkpoint holds everything the run loop owns, so that a restart from
// it and its input offsets reproduces the same state. Its content, framed
// and checksummed by statedir:
//
//	"GCSMCKPT" 1          magic and version
//	meta                  uvarint length, then JSON: batch, positions, queries, settings, properties seen
//	labels, ids, window   uvarint length, then each one's binary encoding
//	bundles               the same, when meta's transfers is set
//	graph                 dyngraph's encoding, to the end
const ckptMagic = "GCSMCKPT\x01"

type ckptMeta struct {
	Batch    uint64           `json:"batch"`
	Position map[string]int64 `json:"position"` // partition → next offset
	Queries  []QueryConfig    `json:"queries"`
	Directed bool             `json:"directed"`
	Written  time.Time        `json:"written"`
	// Transfers says that a "bundles" section (package bundle's encoding)
	// follows "window".
	Transfers bool `json:"transfers,omitempty"`
	// BatchLog is the batch log's offset of the first batch past this
	// checkpoint (batchlog.go).
	BatchLog int64 `json:"batch_log,omitempty"`
	// Properties are the property names and kinds the stream has given
	// per label (graph.Catalog's JSON): what new queries are checked
	// against. A checkpoint without them predates their keeping.
	Properties json.RawMessage `json:"properties,omitempty"`
}

// restore loads the newest valid checkpoint, or sets up an empty state when
// there is none.
func (s *Service) restore() error {
	path, skipped, err := s.dir.Load(s.readCheckpoint)
	for _, e := range skipped {
		if !errors.Is(e, errCheckpointTooNew) {
			s.log.Error().Err(e).Msg("checkpoint unusable; trying an older one")
		}
	}
	switch {
	case err == nil:
		s.log.Info().Str("path", path).Uint64("batch", s.batch).Int64("edges", s.core.Graph().NumEdges()).
			Interface("position", s.position).Int("queries", len(s.queries)).Msg("checkpoint loaded")
		return nil
	case errors.Is(err, statedir.ErrNoCheckpoint):
		if slices.ContainsFunc(skipped, func(e error) bool { return !errors.Is(e, errCheckpointTooNew) }) {
			s.log.Warn().Msg("no usable checkpoint: starting from an empty graph and the input's first offsets")
		}
		return s.fresh()
	}
	return err
}

// fresh sets up an empty state.
func (s *Service) fresh() error {
	s.batch, s.position, s.queries, s.logNext = 0, map[int]int64{}, nil, 0
	s.seen.Reset()
	s.lastCkpt = time.Time{}
	s.ckptAt.Store(0)
	return s.core.Load(graph.NewDict(), graph.NewIDs(), nil, nil, nil)
}

// readCheckpoint replaces the run loop's state with a checkpoint's, read
// section by section in the order of the layout above.
func (s *Service) readCheckpoint(r io.Reader) error {
	br := bufio.NewReaderSize(r, 1<<20)
	meta, err := s.readCkptMeta(br)
	if err != nil {
		return err
	}
	labels, ids, err := readDicts(br)
	if err != nil {
		return err
	}
	wb, err := readSection(br, "window")
	if err != nil {
		return err
	}
	var store *bundle.Store
	if meta.Transfers {
		bb, err := readSection(br, "bundles")
		if err != nil {
			return err
		}
		if store, err = bundle.Decode(bb, ids.Len()); err != nil {
			return fmt.Errorf("bundles: %w", err)
		}
	}
	// The core names the part it could not read: "graph: ..." or
	// "window: ...".
	if err := s.core.Load(labels, ids, br, wb, store); err != nil {
		return err
	}
	return s.restoreMeta(meta)
}

// readSection reads a section of a checkpoint: its uvarint length, then
// that many bytes. A length beyond any real section is refused before it
// is allocated.
func readSection(br *bufio.Reader, what string) ([]byte, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if n > 1<<34 {
		return nil, fmt.Errorf("%s: length %d is implausible", what, n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(br, b); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return b, nil
}

// readCkptMeta reads the magic and the meta section, and refuses a
// checkpoint at or past s.limit or of the other direction.
func (s *Service) readCkptMeta(br *bufio.Reader) (ckptMeta, error) {
	var meta ckptMeta
	magic := make([]byte, len(ckptMagic))
	if _, err := io.ReadFull(br, magic); err != nil || string(magic) != ckptMagic {
		return meta, errors.New("not a gcsm checkpoint of this version")
	}
	mb, err := readSection(br, "meta")
	if err != nil {
		return meta, err
	}
	if err := json.Unmarshal(mb, &meta); err != nil {
		return meta, fmt.Errorf("meta: %w", err)
	}
	if s.limit > 0 && meta.Batch >= s.limit {
		return meta, fmt.Errorf("batch %d: %w", meta.Batch, errCheckpointTooNew)
	}
	if meta.Directed != s.cfg.Graph.Directed {
		return meta, fmt.Errorf("the checkpoint's graph is directed=%v but graph.directed is %v; a graph's direction cannot change (use a new state.dir)", meta.Directed, s.cfg.Graph.Directed)
	}
	return meta, nil
}

// readDicts reads the label and id dictionaries' sections.
func readDicts(br *bufio.Reader) (*graph.Dict, *graph.IDs, error) {
	labels, ids := graph.NewDict(), graph.NewIDs()
	for _, sec := range []struct {
		name string
		into interface{ UnmarshalBinary([]byte) error }
	}{{"labels", labels}, {"ids", ids}} {
		b, err := readSection(br, sec.name)
		if err != nil {
			return nil, nil, err
		}
		if err := sec.into.UnmarshalBinary(b); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", sec.name, err)
		}
	}
	return labels, ids, nil
}

// restoreMeta sets what meta records once the core is loaded: the batch
// number, the input positions, the properties seen and the standing
// queries.
func (s *Service) restoreMeta(meta ckptMeta) error {
	s.batch, s.position, s.queries, s.logNext = meta.Batch, map[int]int64{}, nil, meta.BatchLog
	// A graph checkpointed before its properties were catalogued holds
	// some that the catalog never saw: it is partial, for good.
	s.seen.Reset()
	if len(meta.Properties) > 0 {
		if err := s.seen.UnmarshalJSON(meta.Properties); err != nil {
			return fmt.Errorf("meta: properties: %w", err)
		}
	} else if s.core.Graph().NumVertices() > 0 {
		s.seen.MarkPartial()
	}
	for p, o := range meta.Position {
		pi, err := strconv.Atoi(p)
		if err != nil {
			return fmt.Errorf("meta: partition %q", p)
		}
		s.position[pi] = o
	}
	s.ckptPos, s.uncommitted = maps.Clone(s.position), true
	for _, c := range meta.Queries {
		st, err := s.compileQuery(c, false)
		if err != nil {
			return fmt.Errorf("query %q: %w", c.Name, err)
		}
		s.queries = append(s.queries, st)
	}
	if s.core.Store() != nil || slices.ContainsFunc(s.queries, func(st *standing) bool { return needsTransfers(st.q) }) {
		s.keepTransfers()
	}
	s.lastCkpt = meta.Written
	s.ckptAt.Store(meta.Written.UnixNano())
	s.publishQueries()
	return nil
}

// checkpoint writes the state now. The graph must not be pending.
func (s *Service) checkpoint() error {
	t0 := time.Now()
	meta := ckptMeta{Batch: s.batch, Position: map[string]int64{}, Directed: s.cfg.Graph.Directed, Written: t0.UTC(),
		Transfers: s.core.Store() != nil, BatchLog: s.logNext}
	for p, o := range s.position {
		meta.Position[strconv.Itoa(p)] = o
	}
	for _, st := range s.queries {
		meta.Queries = append(meta.Queries, st.cfg)
	}
	var err error
	if meta.Properties, err = json.Marshal(s.seen); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	path, err := s.dir.Save(func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		bw.WriteString(ckptMagic)
		mb, err := json.Marshal(meta)
		if err != nil {
			return err
		}
		var win []byte
		if s.core.Expiry() != nil {
			win = s.core.Expiry().AppendBinary(nil)
		}
		ids, err := s.core.EncodeIDs()
		if err != nil {
			return err
		}
		sections := [][]byte{mb, s.core.Labels().AppendBinary(nil), ids, win}
		if s.core.Store() != nil {
			bb, err := s.core.Store().AppendBinary(nil)
			if err != nil {
				return err
			}
			sections = append(sections, bb)
		}
		for _, b := range sections {
			bw.Write(binary.AppendUvarint(nil, uint64(len(b))))
			bw.Write(b)
		}
		if _, err := s.core.Graph().WriteTo(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	d := time.Since(t0)
	s.lastCkpt = t0
	s.ckptAt.Store(t0.UnixNano())
	s.ckptPos, s.uncommitted = maps.Clone(s.position), true
	s.met.checkpoint.Observe(d.Seconds())
	s.met.checkpointAge.Set(0)
	s.log.Debug().Str("path", path).Dur("took", d).Uint64("batch", s.batch).Interface("position", s.position).Msg("checkpoint written")
	return nil
}

// maybeCheckpoint writes a checkpoint when one is due and there is new
// input to cover, then commits the offsets the last checkpoint covers
// unless they are committed already: the committed group offsets never run
// ahead of what a restart can restore. A checkpoint loaded at start is
// committed at once, even with no new input: its writer may have died
// before committing it, and the group's lag would show the stream unread.
//
// The graph runs ahead of the acknowledged positions by the batches in
// delivery, so a due checkpoint first waits for their acknowledgements:
// then the graph and the positions it records agree, and every event of
// the batches it covers is durable.
func (s *Service) maybeCheckpoint(gen *ingest.Generation, p *pipeline) error {
	if time.Since(s.lastCkpt) >= s.cfg.State.CheckpointEvery && (p.inflight > 0 || !s.positionsEqual()) {
		if err := s.drain(p); err != nil {
			return err
		}
		if err := s.checkpoint(); err != nil {
			return err
		}
	}
	if !s.uncommitted {
		return nil
	}
	if gen == nil || s.txn != nil {
		// A member reads without an input group: its checkpoints are its
		// position. Exactly once, each transaction commits its batches'
		// offsets, which are ahead of any checkpoint's.
		s.uncommitted = false
		return nil
	}
	t0 := time.Now()
	if err := gen.Commit(s.ckptPos); err != nil {
		// The generation ended under us: the next one re-reads from the
		// positions, so nothing is lost, and the commit is tried again.
		s.log.Warn().Err(err).Msg("offset commit refused; it will be retried")
		return nil
	}
	s.uncommitted = false
	s.met.batchSeconds.WithLabelValues("commit").Observe(time.Since(t0).Seconds())
	return nil
}

// finish writes the last checkpoint on the way out and commits it while
// the generation still holds the partitions and the brokers (the embedded
// one included) are up, so the group's offsets cover everything applied
// and a restart or standby re-reads nothing.
func (s *Service) finish(gen *ingest.Generation, p *pipeline) error {
	if s.lastCkpt.IsZero() || !s.positionsEqual() {
		if err := s.checkpoint(); err != nil {
			return err
		}
	}
	return s.maybeCheckpoint(gen, p)
}

// compiled lists the standing queries' compiled forms, in registration
// order (the q index of the matcher's sink).
func (s *Service) compiled() []*query.Query {
	qs := make([]*query.Query, len(s.queries))
	for i, st := range s.queries {
		qs[i] = st.q
	}
	return qs
}
