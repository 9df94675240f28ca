package graph

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Dict interns label names as small integers: the first name seen gets 0.
// It is safe for concurrent use: a service interns the labels of its input
// on one goroutine while it registers queries, which name labels, on another.
type Dict struct {
	mu    sync.RWMutex
	ids   map[string]Label
	names []string
}

// NewDict returns an empty dictionary.
func NewDict() *Dict { return &Dict{ids: make(map[string]Label)} }

// Intern returns the label of name, adding it when new.
func (d *Dict) Intern(name string) Label {
	if l, ok := d.Lookup(name); ok {
		return l
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if l, ok := d.ids[name]; ok {
		return l
	}
	l := Label(len(d.names))
	if l >= NoLabel {
		panic("BUG: label dictionary overflow")
	}
	// A copy, as the caller's string may share its memory with others (a
	// decoded event's strings are one allocation), which the map would keep
	// alive for as long as the label is known.
	name = strings.Clone(name)
	d.ids[name] = l
	d.names = append(d.names, name)
	return l
}

// Lookup returns the label of name and whether it is known.
func (d *Dict) Lookup(name string) (Label, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	l, ok := d.ids[name]
	return l, ok
}

// Name returns the name of l; Wildcard prints as "*".
func (d *Dict) Name(l Label) string {
	if l == Wildcard {
		return "*"
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if int(l) < len(d.names) {
		return d.names[l]
	}
	return fmt.Sprintf("?%d", l)
}

// Len is the number of interned labels.
func (d *Dict) Len() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return len(d.names)
}

// Names returns the interned names in label order, a copy.
func (d *Dict) Names() []string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return slices.Clone(d.names)
}
