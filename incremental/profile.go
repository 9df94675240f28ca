package incremental

import (
	"github.com/gcsm/gcsm/dyngraph"
	"github.com/gcsm/gcsm/graph"
)

// profiles is what the static filter reads of one version of a data graph,
// kept across queries so that a query pays only for its own work: the
// vertices of each label, and for each vertex its directory of neighbour
// labels, one entry per label present in a neighbour list with the index
// where the label's range starts. A directory answers the filter's "how
// many neighbours of label l" and the refinement's "where are they" with a
// scan of a few contiguous entries, where dyngraph.Order.Range costs two
// binary searches that each read the label of every probed neighbour; on
// the quick yeast queries that search was half of the filtering time.
//
// Directories are built per vertex label, when a query first needs the
// candidates of that label (every label for a wildcard query vertex), so a
// query on a large graph pays for the labels it names, not for the graph.
// They take 16 bytes a vertex plus 8 an entry, at most one entry per list
// entry and in practice far fewer (the number of distinct neighbour labels).
type profiles struct {
	g          *dyngraph.Graph
	epoch, lep uint64 // the graph's Epoch and LabelEpoch when built
	nv         int
	byLabel    map[graph.Label][]graph.VertexID // ascending
	built      map[graph.Label]bool             // labels whose vertices have directories
	all        bool                             // every label's have
	span       []dirSpan                        // per vertex
	ents       []dirEnt
	// mask has, per vertex, bit l%64 set for each label l of its
	// neighbours (both lists): most vertices that the filter drops lack a
	// label outright, and one AND tells them.
	mask []uint64
}

// dirEnt is a directory entry: the neighbours of label label start at index
// lo of the list. A directory ends with a sentinel whose lo is the list's
// length, so an entry's range ends where the next one starts.
type dirEnt struct {
	label graph.Label
	lo    uint32
}

// dirSpan locates a vertex's directories in ents: the out-list's at at, n
// entries and the sentinel, then on directed graphs the in-list's, nIn
// entries and a sentinel.
type dirSpan struct {
	at     int
	n, nIn uint32
}

// profilesOf returns p ready for g's current version (not pending),
// rebuilding it if the graph changed since; a nil p gives a new one.
func profilesOf(p *profiles, g *dyngraph.Graph) *profiles {
	if p == nil {
		p = &profiles{}
	}
	if p.g == g && p.epoch == g.Epoch() && p.lep == g.LabelEpoch() && p.nv == g.NumVertices() {
		return p
	}
	p.g, p.epoch, p.lep, p.nv = g, g.Epoch(), g.LabelEpoch(), g.NumVertices()
	p.byLabel, p.built, p.all = map[graph.Label][]graph.VertexID{}, map[graph.Label]bool{}, false
	for v, l := range g.VertexLabels()[:p.nv] {
		p.byLabel[l] = append(p.byLabel[l], graph.VertexID(v))
	}
	if cap(p.span) < p.nv {
		p.span, p.mask = make([]dirSpan, p.nv), make([]uint64, p.nv)
	}
	p.span, p.mask, p.ents = p.span[:p.nv], p.mask[:p.nv], p.ents[:0]
	return p
}

// class returns the vertices of label l, ascending, with their
// directories built. The slice belongs to p.
func (p *profiles) class(l graph.Label) []graph.VertexID {
	vs := p.byLabel[l]
	if !p.built[l] {
		p.built[l] = true
		for _, v := range vs {
			p.build(v)
		}
	}
	return vs
}

// buildAll builds every vertex's directories (for a wildcard query vertex).
func (p *profiles) buildAll() {
	if p.all {
		return
	}
	for l := range p.byLabel {
		p.class(l)
	}
	p.all = true
}

// build appends v's directories to ents.
func (p *profiles) build(v graph.VertexID) {
	s := dirSpan{at: len(p.ents)}
	a := p.g.Out(v)
	p.ents = p.appendDir(p.ents, a.Sorted)
	s.n = uint32(len(p.ents) - s.at - 1)
	if p.g.Directed() {
		k := len(p.ents)
		b := p.g.In(v)
		p.ents = p.appendDir(p.ents, b.Sorted)
		s.nIn = uint32(len(p.ents) - k - 1)
	}
	p.span[v] = s
	m := uint64(0)
	for _, in := range [2]bool{false, true} {
		d := p.dir(v, in)
		for _, e := range d[:len(d)-1] {
			m |= 1 << (e.label & 63)
		}
	}
	p.mask[v] = m
}

// appendDir appends the directory of a list sorted in dyngraph.Order.
func (p *profiles) appendDir(dst []dirEnt, list []uint32) []dirEnt {
	vl := p.g.VertexLabels()
	for i, w := range list {
		if l := vl[w&dyngraph.IDMask]; i == 0 || l != dst[len(dst)-1].label {
			dst = append(dst, dirEnt{label: l, lo: uint32(i)})
		}
	}
	return append(dst, dirEnt{label: graph.Wildcard, lo: uint32(len(list))})
}

// dir returns v's directory of its out-list (in false) or in-list, with the
// sentinel. On undirected graphs the in-list is the out-list. v's label
// must have been built (class or buildAll).
func (p *profiles) dir(v graph.VertexID, in bool) []dirEnt {
	s := p.span[v]
	if in && p.g.Directed() {
		at := s.at + int(s.n) + 1
		return p.ents[at : at+int(s.nIn)+1]
	}
	return p.ents[s.at : s.at+int(s.n)+1]
}

// rng returns the index range of the neighbours of label l (any for
// graph.Wildcard) in a, v's out-list (in false) or in-list.
func (p *profiles) rng(v graph.VertexID, in bool, a *dyngraph.Adj, l graph.Label) (lo, hi int) {
	if l == graph.Wildcard {
		return 0, len(a.Sorted)
	}
	d := p.dir(v, in)
	i := find(d[:len(d)-1], l)
	if i < 0 {
		return 0, 0
	}
	return int(d[i].lo), int(d[i+1].lo)
}

// count is the number of entries of label l in the list of directory d.
func count(d []dirEnt, l graph.Label) int {
	i := find(d[:len(d)-1], l)
	if i < 0 {
		return 0
	}
	return int(d[i+1].lo - d[i].lo)
}

// find returns the index of the entry of label l in d, or -1: a scan while d
// is short, a binary search past that.
func find(d []dirEnt, l graph.Label) int {
	if len(d) <= 8 {
		for i := range d {
			if d[i].label >= l {
				if d[i].label == l {
					return i
				}
				return -1
			}
		}
		return -1
	}
	lo, hi := 0, len(d)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if d[m].label < l {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(d) && d[lo].label == l {
		return lo
	}
	return -1
}
