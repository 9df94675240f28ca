// Package bundle owns the parallel edges of the data graph: the transfers
// between each pair of vertices, with their ids, event times and the
// properties that standing queries name, and the properties of vertices.
//
// The adjacency lists of package dyngraph keep one entry per pair and label,
// which is what the join reads. A pair's bundle holds its transfers. The
// Store is dyngraph's Folder: it folds every edge update into the bundles and
// tells the graph when a pair appears, disappears, or keeps existing with
// other transfers (renewed), so that the engine finds the matches through it
// again and the transfers tell the old matches from the new.
//
// A transfer's life in a batch: an event with an id is a transfer of its own;
// one without is its pair's single id-less transfer. An insert with a known
// id and the same content (event time, when queries read it, and the kept
// properties) is a refresh; with other content it replaces the transfer, as a
// delete plus an insert; on another pair it moves the transfer. A delete
// names the id; a delete without an id removes every transfer of its pair, as
// deleting an edge always did.
//
// Column layout: a transfer is a slot in parallel arrays; each kept property
// is a column of kinds and numbers, and of strings only once a string
// arrives, so memory grows with the named properties, not the sent ones.
package bundle

import (
	"fmt"

	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
)

// MovedError refuses an insert whose transfer id names a transfer between
// other vertices or with another label: a transfer keeps its endpoints.
type MovedError struct {
	ID       string
	Src, Dst graph.VertexID // where the id's transfer is
	Label    graph.Label
}

func (e *MovedError) Error() string {
	return fmt.Sprintf("transfer id %q already names an edge %d->%d with label %d; a transfer keeps its endpoints and label", e.ID, e.Src, e.Dst, e.Label)
}

// Tx is a transfer's slot. Slots are reused once a transfer is gone, so a Tx
// identifies a transfer only until the end of the batch it is read in.
type Tx = uint32

// Implicit stands for the one transfer of a pair that the store has no record
// of: an edge that entered the graph before the store kept bundles (a loaded
// snapshot, or a stream before its first id). It has no id, no time and no
// properties.
const Implicit Tx = ^Tx(0)

// Slot states during a batch.
const (
	alive uint8 = iota // present before and after
	born               // inserted by the batch
	dead               // present before, deleted by the batch
	void               // inserted and deleted by the batch: in no view
)

// View selects which of a pair's transfers a reader sees while a batch is
// pending.
type View uint8

const (
	// After is the graph after the batch (and the graph outside a batch).
	After View = iota
	// Before is the graph before the batch.
	Before
)

type pairKey struct{ a, b, l uint32 }

type pair struct {
	key     pairKey
	head    Tx // first slot, or noSlot
	touched bool
}

const noSlot = ^uint32(0) - 1

// column is one kept property over slots (edges) or vertex ids.
type column struct {
	name  string
	kinds []graph.Kind
	nums  []float64
	strs  []string // nil until a string value arrives
}

func (c *column) grow(n int) {
	for len(c.kinds) < n {
		c.kinds = append(c.kinds, graph.Null)
		c.nums = append(c.nums, 0)
		if c.strs != nil {
			c.strs = append(c.strs, "")
		}
	}
}

func (c *column) set(i int, v graph.Value) {
	c.kinds[i] = v.Kind
	c.nums[i] = v.Num
	if v.Kind == graph.String || c.strs != nil {
		if c.strs == nil {
			c.strs = make([]string, len(c.kinds))
		}
		c.strs[i] = v.Str
	}
}

func (c *column) get(i int) graph.Value {
	v := graph.Value{Kind: c.kinds[i], Num: c.nums[i]}
	if v.Kind == graph.String {
		v.Str = c.strs[i]
	}
	return v
}

// Store holds the bundles. It is not safe for concurrent use, except that
// the read methods (Each, Time, ID, Value, VertexValue, State) may run on
// many goroutines while nothing writes, as the engine's workers do.
type Store struct {
	directed bool
	keepTime bool

	pairIdx   map[pairKey]uint32
	pairs     []pair
	freePairs []uint32

	// Per slot.
	next  []Tx
	owner []uint32 // pair index
	state []uint8
	ids   []string
	times []int64
	cols  []column
	free  []Tx

	byID idIndex

	// due orders the transfers with ids by event time, for Expire; entries
	// of transfers since gone, replaced or refreshed are skipped there.
	due expiryHeap
	gen []uint32 // per slot: bumped when the slot is freed

	vcols []column // vertex properties, indexed by vertex id

	touched []uint32 // pairs the pending batch touched

	// The pending batch's property sets: the values they replaced, kept at
	// a value's first set in the batch, which the Before view reads (keyed
	// column<<32 | vertex or slot), and the vertices and transfers whose
	// values they changed. nil until a batch sets something.
	vold, told map[uint64]graph.Value
	vset       map[graph.VertexID]struct{}
	tset       map[Tx]struct{}
}

// New returns an empty store for a directed or undirected graph.
func New(directed bool) *Store {
	return &Store{directed: directed, pairIdx: make(map[pairKey]uint32), byID: newIDIndex()}
}

// KeepTime makes event times part of a transfer's content, for queries that
// read ts: a refresh with a new time then replaces the transfer.
func (s *Store) KeepTime() { s.keepTime = true }

// KeepsTime says whether KeepTime was called.
func (s *Store) KeepsTime() bool { return s.keepTime }

// EdgeColumn returns the column of edge property name, adding it if no
// query named it before: transfers stored earlier have it Null.
func (s *Store) EdgeColumn(name string) int {
	for i := range s.cols {
		if s.cols[i].name == name {
			return i
		}
	}
	c := column{name: name}
	c.grow(len(s.state))
	s.cols = append(s.cols, c)
	return len(s.cols) - 1
}

// VertexColumn returns the column of vertex property name, adding it.
func (s *Store) VertexColumn(name string) int {
	for i := range s.vcols {
		if s.vcols[i].name == name {
			return i
		}
	}
	s.vcols = append(s.vcols, column{name: name})
	return len(s.vcols) - 1
}

// EdgeColumns and VertexColumns name the properties kept.
func (s *Store) EdgeColumns() []string { return names(s.cols) }

// VertexColumns names the vertex properties kept.
func (s *Store) VertexColumns() []string { return names(s.vcols) }

func names(cs []column) []string {
	out := make([]string, len(cs))
	for i := range cs {
		out[i] = cs[i].name
	}
	return out
}

// Kept says whether an edge property (vertex false) or a vertex property
// (vertex true) is kept.
func (s *Store) Kept(name string, vertex bool) bool {
	cs := s.cols
	if vertex {
		cs = s.vcols
	}
	for i := range cs {
		if cs[i].name == name {
			return true
		}
	}
	return false
}

func (s *Store) key(e graph.Edge) pairKey {
	k := pairKey{e.Src, e.Dst, e.Label}
	if !s.directed && k.a > k.b {
		k.a, k.b = k.b, k.a
	}
	return k
}

// pairOf returns the index of e's pair record, creating it with its implicit
// transfer when the graph had the pair before (before) and the store did
// not know it.
func (s *Store) pairOf(k pairKey, before bool) uint32 {
	if p, ok := s.pairIdx[k]; ok {
		return p
	}
	var p uint32
	if n := len(s.freePairs); n > 0 {
		p = s.freePairs[n-1]
		s.freePairs = s.freePairs[:n-1]
		s.pairs[p] = pair{key: k, head: noSlot}
	} else {
		p = uint32(len(s.pairs))
		s.pairs = append(s.pairs, pair{key: k, head: noSlot})
	}
	s.pairIdx[k] = p
	if before {
		t := s.newSlot(p, "", 0)
		s.state[t] = alive
	}
	return p
}

// newSlot links a new born transfer into pair p.
func (s *Store) newSlot(p uint32, id string, ts int64) Tx {
	var t Tx
	if n := len(s.free); n > 0 {
		t = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		t = Tx(len(s.state))
		s.next = append(s.next, 0)
		s.owner = append(s.owner, 0)
		s.state = append(s.state, 0)
		s.ids = append(s.ids, "")
		s.times = append(s.times, 0)
		s.gen = append(s.gen, 0)
		for i := range s.cols {
			s.cols[i].grow(len(s.state))
		}
	}
	s.next[t] = s.pairs[p].head
	s.pairs[p].head = t
	s.owner[t] = p
	s.state[t] = born
	s.ids[t] = id
	s.times[t] = ts
	for i := range s.cols {
		s.cols[i].set(int(t), graph.Value{})
	}
	if id != "" {
		s.byID.put(s.ids, t)
		s.due.push(dueEntry{ms: ts, t: t, gen: s.gen[t]})
	}
	return t
}

// kill deletes transfer t in the pending batch.
func (s *Store) kill(t Tx) {
	switch s.state[t] {
	case alive:
		s.state[t] = dead
	case born:
		s.state[t] = void
	}
	if s.ids[t] != "" {
		s.byID.del(s.ids, t)
	}
}

func visible(st uint8) bool { return st == alive || st == born }

// touch records that the batch changed pair p.
func (s *Store) touch(p uint32) {
	if !s.pairs[p].touched {
		s.pairs[p].touched = true
		s.touched = append(s.touched, p)
	}
}

// present says whether pair p has a transfer after the updates folded so far.
func (s *Store) present(p uint32) bool {
	for t := s.pairs[p].head; t != noSlot; t = s.next[t] {
		if visible(s.state[t]) {
			return true
		}
	}
	return false
}

// Fold implements dyngraph.Folder. It refuses, with a *MovedError and no
// change, an insert whose id names a transfer of another pair.
func (s *Store) Fold(u *graph.Update, f dyngraph.Folding) (bool, error) {
	k, before := s.key(f.Pair), f.Before
	tx := u.Tx
	id := ""
	if tx != nil {
		id = tx.ID
	}
	if u.Op == graph.Delete {
		if id != "" {
			if t, ok := s.byID.get(s.ids, id); ok && s.pairs[s.owner[t]].key == k {
				s.kill(t)
				s.touch(s.owner[t])
			}
			p, ok := s.pairIdx[k]
			if !ok {
				return before, nil
			}
			return s.present(p), nil
		}
		p := s.pairOf(k, before)
		for t := s.pairs[p].head; t != noSlot; t = s.next[t] {
			if visible(s.state[t]) {
				s.kill(t)
			}
		}
		s.touch(p)
		return false, nil
	}

	if id != "" {
		if t, ok := s.byID.get(s.ids, id); ok && s.pairs[s.owner[t]].key != k {
			o := s.pairs[s.owner[t]].key
			return false, &MovedError{ID: id, Src: o.a, Dst: o.b, Label: o.l}
		}
	}
	if tx != nil {
		if f.Bare[0] {
			s.setVertexProps(u.Src, tx.SrcProps)
		}
		if f.Bare[1] {
			s.setVertexProps(u.Dst, tx.DstProps)
		}
	}
	p := s.pairOf(k, before)
	var old Tx = noSlot
	if id != "" {
		if t, ok := s.byID.get(s.ids, id); ok {
			old = t
		}
	} else {
		for t := s.pairs[p].head; t != noSlot; t = s.next[t] {
			if visible(s.state[t]) && s.ids[t] == "" {
				old = t
				break
			}
		}
	}
	if old != noSlot && s.same(old, tx) {
		// A refresh. Without queries that read times, it still moves the
		// transfer's time on, for the window.
		if tx != nil && tx.Time > s.times[old] {
			s.times[old] = tx.Time
			if id != "" {
				s.due.push(dueEntry{ms: tx.Time, t: old, gen: s.gen[old]})
			}
		}
		return true, nil
	}
	if old != noSlot {
		s.kill(old)
	}
	// A transfer deleted earlier in the batch and inserted again as it was
	// has not changed: the batch's net effect on it is nothing.
	for t := s.pairs[p].head; t != noSlot; t = s.next[t] {
		if s.state[t] == dead && s.ids[t] == id && s.same(t, tx) {
			s.state[t] = alive
			if id != "" {
				s.byID.put(s.ids, t)
			}
			return true, nil
		}
	}
	var ts int64
	if tx != nil {
		ts = tx.Time
	}
	t := s.newSlot(p, id, ts)
	if tx != nil {
		s.setProps(t, tx)
	}
	s.touch(p)
	return true, nil
}

// same says whether transfer t has the content tx gives: its properties,
// and its time when queries read times.
func (s *Store) same(t Tx, tx *graph.Transfer) bool {
	if s.keepTime {
		var ts int64
		if tx != nil {
			ts = tx.Time
		}
		if s.times[t] != ts {
			return false
		}
	}
	for i := range s.cols {
		c := &s.cols[i]
		if !c.get(int(t)).Equal(findProp(tx, c.name)) {
			return false
		}
	}
	return true
}

func findProp(tx *graph.Transfer, name string) graph.Value {
	if tx == nil {
		return graph.Value{}
	}
	for _, p := range tx.Props {
		if p.Name == name {
			return p.Value
		}
	}
	return graph.Value{}
}

// setProps stores t's kept edge properties.
func (s *Store) setProps(t Tx, tx *graph.Transfer) {
	for _, p := range tx.Props {
		for i := range s.cols {
			if s.cols[i].name == p.Name {
				s.cols[i].set(int(t), p.Value)
			}
		}
	}
}

// setVertexProps stores the kept properties of v that it does not have yet.
// It runs only while v has no edges before the batch (dyngraph's Bare), so no
// match of the old graph read them: a vertex's properties are those the
// events of the batch that gives it its first edges name, first value first,
// and later values are ignored, as a vertex keeps its first label.
func (s *Store) setVertexProps(v graph.VertexID, props []graph.Prop) {
	for _, p := range props {
		if p.Value.Kind == graph.Null {
			continue
		}
		for i := range s.vcols {
			c := &s.vcols[i]
			if c.name != p.Name {
				continue
			}
			c.grow(int(v) + 1)
			if c.kinds[v] == graph.Null {
				c.set(int(v), p.Value)
			}
		}
	}
}

// Renewed implements dyngraph.Folder: a pair renews when the batch inserted
// or deleted one of its transfers, set a value of one present throughout,
// or set a value of one of its vertices.
func (s *Store) Renewed(e graph.Edge) bool {
	k := s.key(e)
	if s.VertexSet(k.a) || s.VertexSet(k.b) {
		return true
	}
	p, ok := s.pairIdx[k]
	if !ok || !s.pairs[p].touched {
		return false
	}
	for t := s.pairs[p].head; t != noSlot; t = s.next[t] {
		if st := s.state[t]; st == born || st == dead || s.TransferSet(t) {
			return true
		}
	}
	return false
}

// SetVertex implements dyngraph.Folder. Only kept properties are stored,
// so a set of a property no query reads changes nothing a match sees.
func (s *Store) SetVertex(u *graph.Update) bool {
	if u.Tx == nil {
		return false
	}
	v := u.Src
	changed := false
	for _, p := range u.Tx.SrcProps {
		for i := range s.vcols {
			c := &s.vcols[i]
			if c.name != p.Name {
				continue
			}
			c.grow(int(v) + 1)
			old := c.get(int(v))
			if old.Equal(p.Value) {
				continue
			}
			if s.vold == nil {
				s.vold, s.vset = make(map[uint64]graph.Value), make(map[graph.VertexID]struct{})
			}
			k := uint64(i)<<32 | uint64(v)
			if _, ok := s.vold[k]; !ok {
				s.vold[k] = old
			}
			c.set(int(v), p.Value)
			changed = true
		}
	}
	if changed {
		s.vset[v] = struct{}{}
	}
	return changed
}

// SetEdge implements dyngraph.Folder. A transfer inserted by the batch
// takes the values in place: no match of the old graph read it.
func (s *Store) SetEdge(u *graph.Update) (graph.Edge, bool, error) {
	id := ""
	if u.Tx != nil {
		id = u.Tx.ID
	}
	t, ok := s.byID.get(s.ids, id)
	if id == "" || !ok || !visible(s.state[t]) {
		return graph.Edge{}, false, fmt.Errorf("%w %q", graph.ErrUnknownTransfer, id)
	}
	changed := false
	for _, p := range u.Tx.Props {
		for i := range s.cols {
			c := &s.cols[i]
			if c.name != p.Name {
				continue
			}
			old := c.get(int(t))
			if old.Equal(p.Value) {
				continue
			}
			if s.state[t] == alive {
				if s.told == nil {
					s.told, s.tset = make(map[uint64]graph.Value), make(map[Tx]struct{})
				}
				k := uint64(i)<<32 | uint64(t)
				if _, ok := s.told[k]; !ok {
					s.told[k] = old
				}
				changed = true
			}
			c.set(int(t), p.Value)
		}
	}
	if changed {
		s.tset[t] = struct{}{}
		s.touch(s.owner[t])
	}
	k := s.pairs[s.owner[t]].key
	return graph.Edge{Src: k.a, Dst: k.b, Label: k.l}, changed, nil
}

// Sets says whether the pending batch changed a kept value of a vertex or
// of a transfer present before it.
func (s *Store) Sets() bool { return len(s.vset) > 0 || len(s.tset) > 0 }

// VertexSet says whether the pending batch changed a kept value of v.
func (s *Store) VertexSet(v graph.VertexID) bool {
	_, ok := s.vset[v]
	return ok
}

// TransferSet says whether the pending batch changed a kept value of t, a
// transfer present before it.
func (s *Store) TransferSet(t Tx) bool {
	_, ok := s.tset[t]
	return ok
}

// Settle ends the pending batch, with dyngraph's Reorganize: deleted
// transfers go, inserted ones become plain, and pairs left empty are dropped.
func (s *Store) Settle() {
	for _, p := range s.touched {
		pr := &s.pairs[p]
		pr.touched = false
		link := &pr.head
		for t := *link; t != noSlot; t = *link {
			switch s.state[t] {
			case dead, void:
				*link = s.next[t]
				s.ids[t] = ""
				s.gen[t]++
				s.free = append(s.free, t)
				continue
			case born:
				s.state[t] = alive
			}
			link = &s.next[t]
		}
		if pr.head == noSlot {
			delete(s.pairIdx, pr.key)
			s.freePairs = append(s.freePairs, p)
		}
	}
	s.touched = s.touched[:0]
	clear(s.vold)
	clear(s.told)
	clear(s.vset)
	clear(s.tset)
}

// Each calls f with every transfer of pair e in view v, and with whether the
// pending batch inserted (view After) or deleted (view Before) it, until f
// returns false. A pair the graph holds and the store has no record of has
// one transfer, Implicit. The caller must know that the graph holds e in
// view v.
func (s *Store) Each(e graph.Edge, v View, f func(t Tx, changed bool) bool) {
	c := s.Walk(e)
	for {
		t, changed, ok := s.Next(&c, v)
		if !ok || !f(t, changed) {
			return
		}
	}
}

// Cursor walks the transfers of one pair: Walk starts it, Next steps it.
// It allocates nothing, which matters to the engine's workers, that walk a
// bundle per bound edge of every candidate match.
type Cursor struct {
	t        Tx
	implicit bool
}

// Walk returns a cursor at the first transfer of pair e.
func (s *Store) Walk(e graph.Edge) Cursor {
	p, ok := s.pairIdx[s.key(e)]
	if !ok {
		return Cursor{t: noSlot, implicit: true}
	}
	return Cursor{t: s.pairs[p].head}
}

// Next returns the cursor's next transfer in view v, with whether the
// pending batch changed it (as Each), and false at the end.
func (s *Store) Next(c *Cursor, v View) (t Tx, changed, ok bool) {
	if c.implicit {
		c.implicit = false
		return Implicit, false, true
	}
	for c.t != noSlot {
		t = c.t
		c.t = s.next[t]
		st := s.state[t]
		switch v {
		case After:
			if st == alive || st == born {
				return t, st == born, true
			}
		case Before:
			if st == alive || st == dead {
				return t, st == dead, true
			}
		}
	}
	return 0, false, false
}

// ID is transfer t's id; "" for an id-less transfer.
func (s *Store) ID(t Tx) string {
	if !s.holds(t) {
		return ""
	}
	return s.ids[t]
}

// holds says whether t is one of the store's slots: Implicit, and the
// markers callers use for bindings without a transfer
// (incremental.NoTransfer), are not, and have no id, time or values.
func (s *Store) holds(t Tx) bool { return int(t) < len(s.ids) }

// Time is transfer t's event time in unix milliseconds, or 0 when unknown.
// While no query reads times (KeepTime) a refresh moves it on.
func (s *Store) Time(t Tx) int64 {
	if !s.holds(t) {
		return 0
	}
	return s.times[t]
}

// Value is edge property col of transfer t.
func (s *Store) Value(t Tx, col int) graph.Value {
	if !s.holds(t) {
		return graph.Value{}
	}
	return s.cols[col].get(int(t))
}

// ValueIn is edge property col of transfer t in view v: Before reads the
// value the pending batch's first set of it replaced.
func (s *Store) ValueIn(t Tx, col int, v View) graph.Value {
	if v == Before && len(s.told) > 0 {
		if old, ok := s.told[uint64(col)<<32|uint64(t)]; ok {
			return old
		}
	}
	return s.Value(t, col)
}

// VertexValueIn is vertex property col of v in view view, as ValueIn.
func (s *Store) VertexValueIn(v graph.VertexID, col int, view View) graph.Value {
	if view == Before && len(s.vold) > 0 {
		if old, ok := s.vold[uint64(col)<<32|uint64(v)]; ok {
			return old
		}
	}
	return s.VertexValue(v, col)
}

// VertexValue is vertex property col of v.
func (s *Store) VertexValue(v graph.VertexID, col int) graph.Value {
	c := &s.vcols[col]
	if int(v) >= len(c.kinds) {
		return graph.Value{}
	}
	return c.get(int(v))
}

// Expire appends to dst a delete, by id, of every transfer with an id whose
// event time is before cutoff, and returns it: the window's expiry of
// parallel transfers one by one (transfers without ids go with their pair,
// which the window expires as a whole). The store must not be in a batch.
func (s *Store) Expire(cutoff int64, dst []graph.Update) []graph.Update {
	for len(s.due) > 0 && s.due[0].ms < cutoff {
		e := s.due.pop()
		t := e.t
		if s.gen[t] != e.gen || s.times[t] != e.ms || s.state[t] != alive || s.ids[t] == "" {
			continue // gone, replaced or refreshed since
		}
		k := s.pairs[s.owner[t]].key
		dst = append(dst, graph.Update{Op: graph.Delete, Src: k.a, Dst: k.b, Label: k.l,
			SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel, Tx: &graph.Transfer{ID: s.ids[t]}})
	}
	return dst
}

// dueEntry is a transfer's event time as of a push.
type dueEntry struct {
	ms  int64
	t   Tx
	gen uint32
}

// expiryHeap is a binary min-heap of dueEntry by time.
type expiryHeap []dueEntry

func (h *expiryHeap) push(e dueEntry) {
	*h = append(*h, e)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p].ms <= a[i].ms {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *expiryHeap) pop() dueEntry {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < n && a[l].ms < a[m].ms {
			m = l
		}
		if l+1 < n && a[l+1].ms < a[m].ms {
			m = l + 1
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

// Forget drops the properties of a vertex id that is about to be reused.
func (s *Store) Forget(v graph.VertexID) {
	for i := range s.vcols {
		if c := &s.vcols[i]; int(v) < len(c.kinds) {
			c.set(int(v), graph.Value{})
		}
	}
}

// Len is the number of transfers held, and Pairs the number of pairs with a
// record.
func (s *Store) Len() int { return len(s.state) - len(s.free) }

// Pairs is the number of pairs the store has a record of.
func (s *Store) Pairs() int { return len(s.pairIdx) }
