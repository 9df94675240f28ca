package graph

import (
	"errors"
	"math"
	"strconv"
	"time"
)

// Kind is the type of a property Value.
type Kind uint8

const (
	// Null is a property the event did not give. Predicates treat it as
	// unknown, so a comparison with it holds for no match.
	Null Kind = iota
	// Number is a float64; integers up to 2^53 are exact.
	Number
	// String is UTF-8 text.
	String
	// Bool is true or false, held in Num as 1 or 0.
	Bool
	// Time is an instant, held in Num as unix milliseconds: an edge's event
	// time ("ts") has this kind.
	Time
)

func (k Kind) String() string {
	switch k {
	case Null:
		return "null"
	case Number:
		return "number"
	case String:
		return "string"
	case Bool:
		return "boolean"
	case Time:
		return "time"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is a property value of an edge or a vertex.
type Value struct {
	Kind Kind
	Num  float64 // Number, Bool (0 or 1) and Time (unix milliseconds)
	Str  string  // String
}

// NumberValue, StringValue, BoolValue and TimeValue make Values.
func NumberValue(f float64) Value { return Value{Kind: Number, Num: f} }

// StringValue makes a String Value.
func StringValue(s string) Value { return Value{Kind: String, Str: s} }

// BoolValue makes a Bool Value.
func BoolValue(b bool) Value {
	if b {
		return Value{Kind: Bool, Num: 1}
	}
	return Value{Kind: Bool}
}

// TimeValue makes a Time Value from unix milliseconds.
func TimeValue(ms int64) Value { return Value{Kind: Time, Num: float64(ms)} }

// Equal says whether two values are the same property value. Two Nulls are
// equal here (the value did not change), unlike in a predicate.
func (v Value) Equal(w Value) bool {
	if v.Kind != w.Kind {
		return false
	}
	if v.Kind == String {
		return v.Str == w.Str
	}
	return v.Num == w.Num || (math.IsNaN(v.Num) && math.IsNaN(w.Num))
}

func (v Value) String() string {
	switch v.Kind {
	case Number:
		return strconv.FormatFloat(v.Num, 'g', -1, 64)
	case String:
		return strconv.Quote(v.Str)
	case Bool:
		return strconv.FormatBool(v.Num != 0)
	case Time:
		return time.UnixMilli(int64(v.Num)).UTC().Format(time.RFC3339Nano)
	}
	return "null"
}

// Prop is a named property value as an event gives it.
type Prop struct {
	Name  string
	Value Value
}

// Transfer is what an edge event says beyond its endpoints and labels. An
// event with an ID is an edge of its own: one pair of vertices may then carry
// many parallel edges (transfers), each with its own event time and
// properties. Props, SrcProps and DstProps hold only the properties some
// standing query names; SrcProps and DstProps belong to the endpoints.
type Transfer struct {
	ID       string
	Time     int64 // unix milliseconds; 0 if the event has no time
	Props    []Prop
	SrcProps []Prop
	DstProps []Prop
}

// HasTransferID says whether some edge update of us carries a transfer id,
// which makes it an edge of its own beside others between the same vertices.
// A set names a transfer by its id but makes none.
func HasTransferID(us []Update) bool {
	for i := range us {
		if u := &us[i]; (u.Op == Insert || u.Op == Delete) && u.Tx != nil && u.Tx.ID != "" {
			return true
		}
	}
	return false
}

// ErrUnknownTransfer refuses a SetEdge update whose id names no present
// transfer; callers wrap it with the id.
var ErrUnknownTransfer = errors.New("unknown transfer id")

// ErrUnknownVertex refuses a SetVertex update on a vertex the graph does not
// hold; callers wrap it with the vertex's name or id.
var ErrUnknownVertex = errors.New("unknown vertex")
