// Package query owns standing patterns: parsing them (the CSM file format
// and a Cypher-style syntax), validating them, finding their automorphisms,
// and compiling them into per-term matching plans for the engine.
//
// A Pattern is what a user wrote, with label names as strings. Compile binds
// a Pattern to a graph's label dictionary and direction and produces a Query,
// which is what the matchers execute.
package query

import (
	"fmt"
	"time"
)

// MaxVertices is the largest pattern gcsm accepts. Matchers keep a pattern's
// vertex set in a 32-bit mask, so this is a hard limit.
const MaxVertices = 32

// MinVertices is the smallest pattern: one edge.
const MinVertices = 2

// Pos is a position in a query's source text, 1-based. Zero means unknown.
type Pos struct{ Line, Col int }

func (p Pos) String() string {
	switch {
	case p.Line == 0:
		return ""
	case p.Col == 0:
		return fmt.Sprintf("%d", p.Line)
	}
	return fmt.Sprintf("%d:%d", p.Line, p.Col)
}

// Vertex is a pattern vertex. Wildcard vertices match any data label.
type Vertex struct {
	Name     string // the variable name (Cypher) or the id (CSM)
	Label    string // empty when Wildcard
	Wildcard bool
	Pos      Pos
}

// Edge is a pattern edge between Vertices[From] and Vertices[To].
//
// Directed says the user gave a direction From→To. On an undirected graph the
// direction is ignored. On a directed graph an edge with Directed false
// matches a data edge in either direction.
type Edge struct {
	From, To int
	Name     string // the relationship variable, "" if none
	Label    string // empty when Wildcard
	Wildcard bool
	Directed bool
	Pos      Pos
}

// Pattern is a parsed, validated query.
type Pattern struct {
	Name     string
	Vertices []Vertex
	Edges    []Edge
	// ImpliedDirection says the edges are Directed by the order their ends
	// were written in (a CSM file's "e u v"), not by arrows the user drew:
	// an undirected graph ignores that direction, while it refuses arrows
	// (see CheckUndirected).
	ImpliedDirection bool

	// Where is the condition every match must satisfy, nil if none (see
	// Expr); it names edges by their variables (Edge.Name).
	Where *Expr
	// Within bounds the span of a match's event times: the latest "ts" of
	// its edges minus the earliest is at most Within. 0 means no bound.
	Within    time.Duration
	WithinPos Pos

	// Return lists what each match reports, nil without a RETURN. Unlike
	// WHERE it filters nothing, but like WHERE it tells apart the maps that
	// an automorphism of the pattern relates (see Compile).
	Return []ReturnItem
}

// ReturnItem is one item of RETURN: an expression, or a bare variable (an
// OpVar, which only an item may be), reported under Name.
type ReturnItem struct {
	Expr *Expr
	// Name is what AS gave or, without AS, the variable for a bare one,
	// "v.p" for a property and the source text for anything else.
	Name string
	Pos  Pos
}

// Error is a rejected query: where and why.
type Error struct {
	Source string // file name or query name; may be empty
	Pos    Pos
	Reason string
}

func (e *Error) Error() string {
	s := e.Source
	if p := e.Pos.String(); p != "" {
		if s != "" {
			s += ":"
		}
		s += p
	}
	if s == "" {
		return "query: " + e.Reason
	}
	return s + ": " + e.Reason
}
