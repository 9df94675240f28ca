package graph

import (
	"fmt"
	"strings"
)

// Dict interns label names as small integers: the first name seen gets 0.
// It is not safe for concurrent use; the owner of a graph serialises access.
type Dict struct {
	ids   map[string]Label
	names []string
}

// NewDict returns an empty dictionary.
func NewDict() *Dict { return &Dict{ids: make(map[string]Label)} }

// Intern returns the label of name, adding it when new.
func (d *Dict) Intern(name string) Label {
	if l, ok := d.ids[name]; ok {
		return l
	}
	l := Label(len(d.names))
	if l >= NoLabel {
		panic("BUG: label dictionary overflow")
	}
	name = strings.Clone(name) // as in IDs.Intern
	d.ids[name] = l
	d.names = append(d.names, name)
	return l
}

// Lookup returns the label of name and whether it is known.
func (d *Dict) Lookup(name string) (Label, bool) {
	l, ok := d.ids[name]
	return l, ok
}

// Name returns the name of l; Wildcard prints as "*".
func (d *Dict) Name(l Label) string {
	switch {
	case l == Wildcard:
		return "*"
	case int(l) < len(d.names):
		return d.names[l]
	}
	return fmt.Sprintf("?%d", l)
}

// Len is the number of interned labels.
func (d *Dict) Len() int { return len(d.names) }

// Names returns the interned names in label order. The caller must not modify it.
func (d *Dict) Names() []string { return d.names }
