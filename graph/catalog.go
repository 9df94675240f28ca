package graph

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Kinds is a set of value Kinds, bit k for Kind k.
type Kinds uint8

// KindsOf returns the set of the one kind k.
func KindsOf(k Kind) Kinds { return 1 << k }

// Has reports whether s holds k.
func (s Kinds) Has(k Kind) bool { return s&KindsOf(k) != 0 }

// Plural names the kinds of s, "numbers or strings", for messages.
func (s Kinds) Plural() string {
	var names []string
	for _, k := range []Kind{Number, String, Bool, Time} {
		if s.Has(k) {
			names = append(names, k.plural())
		}
	}
	if len(names) == 0 {
		return "no values"
	}
	return strings.Join(names, " or ")
}

func (k Kind) plural() string {
	switch k {
	case Number:
		return "numbers"
	case String:
		return "strings"
	case Bool:
		return "booleans"
	case Time:
		return "times"
	}
	return k.String() + "s"
}

// Catalog records which property names a stream has given on the edges and
// on the vertices of each label, and the kinds of their values, so that a
// query that reads a property no event has carried, or compares one with a
// literal of a kind it never held, can be warned about at registration.
// Ingest keeps only the properties some standing query reads, so the
// catalog is filled where every property passes: by the decoders
// (ingest.Decoder.Seen).
//
// It only grows: a property deleted with its edges was still seen. Edge
// events without a label count under the edge label they get
// (DefaultEdgeLabel); vertex properties given without a vertex label count
// under "", which Props adds to every vertex label, since such a vertex
// keeps whichever label it has.
//
// Note is on the decoders' hot path and allocates nothing once a label's
// names and kinds are known: it reads an immutable snapshot (two map
// lookups a property, BenchmarkCatalogNote) and takes the lock only to publish a new one when a name or a kind first
// appears. The decoders skip even that for an event of the shape of the
// one before (ingest's noteSeen). Names per label and labels are
// bounded (MaxCatalogNames, MaxCatalogLabels) so that a stream of ever new
// names costs bounded memory; past a bound the catalog says it is partial,
// and unseen names are no longer warned about there. It is safe for
// concurrent use.
type Catalog struct {
	// DefaultEdgeLabel is the label of edges given without one. It is set
	// before the first Note and not changed after.
	DefaultEdgeLabel string

	mu  sync.Mutex // serialises writers; readers load cur
	cur atomic.Pointer[catalogState]
	// gen counts the times the content was replaced rather than grown.
	gen atomic.Uint64
}

// MaxCatalogNames and MaxCatalogLabels bound a Catalog: the property names
// it records per label, and the labels it records per kind of element.
const (
	MaxCatalogNames  = 256
	MaxCatalogLabels = 1024
)

// catalogState is an immutable snapshot: a writer copies what it changes.
type catalogState struct {
	labels [2]map[string]*labelProps // [0] edges, [1] vertices, by label
	// partial says that a label was past MaxCatalogLabels.
	partial [2]bool
	// incomplete says that properties were given before the catalog was
	// kept (MarkPartial).
	incomplete bool
}

type labelProps struct {
	kinds map[string]Kinds
	// partial says that a name was past MaxCatalogNames.
	partial bool
}

func side(vertex bool) int {
	if vertex {
		return 1
	}
	return 0
}

// Note records that an edge (vertex false) or a vertex of label carried the
// property name with a value of kind k; Null values say nothing and are not
// recorded. name is not kept.
func (c *Catalog) Note(vertex bool, label string, name []byte, k Kind) {
	if k == Null {
		return
	}
	if !vertex && label == "" {
		label = c.DefaultEdgeLabel
	}
	// Past a bound, a new name or label returns here too, so that a
	// stream of ever new names never takes the lock again.
	if st := c.cur.Load(); st != nil {
		lp := st.labels[side(vertex)][label]
		if lp == nil && st.partial[side(vertex)] {
			return
		}
		if lp != nil {
			if ks, ok := lp.kinds[string(name)]; ks.Has(k) || !ok && lp.partial {
				return
			}
		}
	}
	c.add(vertex, label, string(name), k)
}

// add publishes a snapshot with name's kind k on label, unless a bound
// stops it, which it records.
func (c *Catalog) add(vertex bool, label, name string, k Kind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.cur.Load()
	if old == nil {
		old = &catalogState{}
	}
	i := side(vertex)
	lp := old.labels[i][label]
	if lp != nil && lp.kinds[name].Has(k) {
		return // another decoder added it first
	}
	next := *old
	if lp == nil && len(old.labels[i]) >= MaxCatalogLabels {
		if old.partial[i] {
			return
		}
		next.partial[i] = true
		c.cur.Store(&next)
		return
	}
	nlp := &labelProps{kinds: map[string]Kinds{}}
	if lp != nil {
		if _, known := lp.kinds[name]; !known && len(lp.kinds) >= MaxCatalogNames {
			if lp.partial {
				return
			}
			nlp.kinds, nlp.partial = lp.kinds, true
		} else {
			nlp.kinds, nlp.partial = maps.Clone(lp.kinds), lp.partial
		}
	}
	if _, known := nlp.kinds[name]; known || len(nlp.kinds) < MaxCatalogNames {
		nlp.kinds[strings.Clone(name)] |= KindsOf(k)
	}
	next.labels[i] = maps.Clone(old.labels[i])
	if next.labels[i] == nil {
		next.labels[i] = map[string]*labelProps{}
	}
	next.labels[i][strings.Clone(label)] = nlp
	c.cur.Store(&next)
}

// Props returns the properties seen on edges (vertex false) or vertices of
// label, each with the kinds of its values, in a map the caller owns; a
// wildcard stands for every label. complete is false where a bound stopped
// the catalog from recording them all, so an absent name may have been
// given.
func (c *Catalog) Props(vertex bool, label string, wildcard bool) (props map[string]Kinds, complete bool) {
	props = map[string]Kinds{}
	st := c.cur.Load()
	if st == nil {
		return props, true
	}
	i := side(vertex)
	complete = true
	add := func(lp *labelProps) {
		if lp == nil {
			return
		}
		for n, ks := range lp.kinds {
			props[n] |= ks
		}
		complete = complete && !lp.partial
	}
	switch {
	case wildcard:
		for _, lp := range st.labels[i] {
			add(lp)
		}
	default:
		add(st.labels[i][label])
		if vertex && label != "" {
			add(st.labels[i][""])
		}
	}
	return props, complete && !st.partial[i] && !st.incomplete
}

// Empty reports whether the catalog has recorded nothing.
func (c *Catalog) Empty() bool {
	st := c.cur.Load()
	return st == nil || len(st.labels[0])+len(st.labels[1]) == 0 && !st.partial[0] && !st.partial[1] && !st.incomplete
}

// catalogJSON is a Catalog's JSON form, for checkpoints:
//
//	{"edge":[{"label":"TRANSFER","props":{"amount":["number"]}}],"vertex":[...]}
//
// with "partial":true on a label, or on the whole, that a bound stopped.
type catalogJSON struct {
	Edge          []catalogLabel `json:"edge,omitempty"`
	Vertex        []catalogLabel `json:"vertex,omitempty"`
	PartialEdge   bool           `json:"partial_edge,omitempty"`
	PartialVertex bool           `json:"partial_vertex,omitempty"`
	Incomplete    bool           `json:"incomplete,omitempty"`
}

type catalogLabel struct {
	Label   string              `json:"label"`
	Props   map[string][]string `json:"props"`
	Partial bool                `json:"partial,omitempty"`
}

// MarshalJSON writes the catalog's labels sorted, so that equal catalogs
// write equal bytes.
func (c *Catalog) MarshalJSON() ([]byte, error) {
	var out catalogJSON
	if st := c.cur.Load(); st != nil {
		out.PartialEdge, out.PartialVertex, out.Incomplete = st.partial[0], st.partial[1], st.incomplete
		for i, dst := range []*[]catalogLabel{&out.Edge, &out.Vertex} {
			for _, l := range slices.Sorted(maps.Keys(st.labels[i])) {
				lp := st.labels[i][l]
				cl := catalogLabel{Label: l, Props: make(map[string][]string, len(lp.kinds)), Partial: lp.partial}
				for n, ks := range lp.kinds {
					for _, k := range []Kind{Number, String, Bool, Time} {
						if ks.Has(k) {
							cl.Props[n] = append(cl.Props[n], k.String())
						}
					}
				}
				*dst = append(*dst, cl)
			}
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON replaces the catalog's content with b's.
func (c *Catalog) UnmarshalJSON(b []byte) error {
	var in catalogJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	st := &catalogState{partial: [2]bool{in.PartialEdge, in.PartialVertex}, incomplete: in.Incomplete}
	for i, ls := range [][]catalogLabel{in.Edge, in.Vertex} {
		if len(ls) > MaxCatalogLabels {
			return fmt.Errorf("property catalog: %d labels, over the limit of %d", len(ls), MaxCatalogLabels)
		}
		st.labels[i] = make(map[string]*labelProps, len(ls))
		for _, cl := range ls {
			if len(cl.Props) > MaxCatalogNames {
				return fmt.Errorf("property catalog: label %q has %d names, over the limit of %d", cl.Label, len(cl.Props), MaxCatalogNames)
			}
			lp := &labelProps{kinds: make(map[string]Kinds, len(cl.Props)), partial: cl.Partial}
			for n, kinds := range cl.Props {
				for _, name := range kinds {
					k, ok := kindNamed(name)
					if !ok {
						return fmt.Errorf("property catalog: label %q property %q: unknown kind %q", cl.Label, n, name)
					}
					lp.kinds[n] |= KindsOf(k)
				}
			}
			st.labels[i][cl.Label] = lp
		}
	}
	c.mu.Lock()
	c.cur.Store(st)
	c.gen.Add(1)
	c.mu.Unlock()
	return nil
}

// MarkPartial says that the catalog misses properties given before it was
// kept (a graph loaded from an older checkpoint): no name is then absent
// for sure, while the kinds of those it records still tell.
func (c *Catalog) MarkPartial() {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := catalogState{incomplete: true}
	if old := c.cur.Load(); old != nil {
		next = *old
		next.incomplete = true
	}
	c.cur.Store(&next)
}

// Reset empties the catalog.
func (c *Catalog) Reset() {
	c.mu.Lock()
	c.cur.Store(nil)
	c.gen.Add(1)
	c.mu.Unlock()
}

// Generation changes whenever Reset or UnmarshalJSON replaces the content:
// what a Note made known stays known until then, so a caller may skip
// noting again what it noted in the same generation.
func (c *Catalog) Generation() uint64 { return c.gen.Load() }

func kindNamed(name string) (Kind, bool) {
	for _, k := range []Kind{Number, String, Bool, Time} {
		if k.String() == name {
			return k, true
		}
	}
	return Null, false
}
