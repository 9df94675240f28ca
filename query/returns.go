package query

import (
	"math"
	"strconv"
	"time"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/internal/jsonstr"
)

// Returns is a pattern's RETURN, compiled.
type Returns struct {
	// Props is every property the items read, each once, with the meaning
	// of Predicates.Props; a bare relationship variable reads its PropID.
	Props []PropRef
	Items []ReturnColumn
}

// ReturnColumn is one RETURN item, compiled.
type ReturnColumn struct {
	Name string
	// Vertex is the query vertex of an item that is a bare vertex variable,
	// whose value is the account id that the caller names; -1 otherwise.
	Vertex int
	Props  []int // indexes into Returns.Props that Eval reads
	// Eval computes the item from vals, where vals[i] is Returns.Props[i]'s
	// value for the match (null for a bare vertex variable). It allocates
	// nothing and is safe for concurrent use.
	Eval func(vals []graph.Value) graph.Value
}

// returns compiles p's RETURN into q.Return, given what bindings returned.
func (q *Query) returns(p *Pattern, byName map[string]int, first []int) *Error {
	if len(p.Return) == 0 {
		return nil
	}
	c := newCompiler(q, p, byName, first)
	r := &Returns{}
	for _, it := range p.Return {
		c.cur = &Conjunct{}
		col := ReturnColumn{Name: it.Name, Vertex: -1}
		var f evalFn
		var err *Error
		switch v, ok := c.scope.vertices[it.Expr.Var]; {
		case it.Expr.Op == OpVar && ok:
			col.Vertex = v
			f = func([]graph.Value) graph.Value { return null }
		case it.Expr.Op == OpVar:
			var i int
			if i, err = c.prop(it.Expr, PropID); err == nil {
				f = func(vals []graph.Value) graph.Value { return vals[i] }
			}
		default:
			f, err = c.expr(it.Expr)
		}
		if err != nil {
			err.Source = p.Name
			return err
		}
		col.Props, col.Eval = c.cur.Props, f
		r.Items = append(r.Items, col)
	}
	r.Props = c.props
	q.Return = r
	return nil
}

// rfc3339Milli is how AppendJSONValue writes a time, in UTC.
const rfc3339Milli = "2006-01-02T15:04:05.000Z07:00"

// AppendJSONValue appends v as a JSON value: null, a number (an integer
// without exponent; NaN and infinities, which JSON lacks, as null), a
// string, a boolean, a time as an RFC 3339 string in UTC with milliseconds
// ("2026-11-20T10:00:00.000Z"), or a duration (DurationKind) as a string in
// the syntax of WHERE ("1h30m", "500ms", "-5m").
func AppendJSONValue(dst []byte, v graph.Value) []byte {
	switch v.Kind {
	case graph.Number:
		return appendJSONNumber(dst, v.Num)
	case graph.String:
		return jsonstr.Append(dst, v.Str)
	case graph.Bool:
		return strconv.AppendBool(dst, v.Num != 0)
	case graph.Time:
		// Beyond ±2^63 ms the conversion to int64 is undefined.
		if math.IsNaN(v.Num) || math.Abs(v.Num) >= 1<<63 {
			break
		}
		dst = append(dst, '"')
		dst = time.UnixMilli(int64(math.Floor(v.Num))).UTC().AppendFormat(dst, rfc3339Milli)
		return append(dst, '"')
	case DurationKind:
		if math.IsNaN(v.Num) || math.IsInf(v.Num, 0) {
			break
		}
		dst = append(dst, '"')
		ms := math.Abs(v.Num)
		ns := math.Round(ms * 1e6)
		if v.Num < 0 && ns != 0 {
			dst = append(dst, '-')
		}
		switch {
		case ns == 0:
			dst = append(dst, "0s"...)
		case ns < math.MaxInt64:
			dst = appendDuration(dst, time.Duration(ns))
		default: // past 292 years time.Duration overflows; WHERE reads 1e+20ms too
			dst = strconv.AppendFloat(dst, ms, 'g', -1, 64)
			dst = append(dst, "ms"...)
		}
		return append(dst, '"')
	}
	return append(dst, "null"...)
}

// appendJSONNumber writes f as encoding/json does: without exponent from
// 1e-6 to 1e21, so that integers such as 12000 read as written.
func appendJSONNumber(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' { // 1e-07 to 1e-7, as encoding/json
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}
