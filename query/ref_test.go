package query

import (
	"math"
	"reflect"

	"github.com/gcsm/gcsm/graph"
)

// refEval is a reference interpreter of conditions and RETURN items,
// written apart from the compiler and as plainly as possible, for
// FuzzParseWhere and FuzzReturnItems to check the compiled conjuncts and
// items against. Its values are nil (null), float64 (a
// number), string, bool, refTime and refDuration (both milliseconds).
type (
	refTime     float64
	refDuration float64
)

func refValue(v graph.Value) any {
	switch v.Kind {
	case graph.Number:
		return v.Num
	case graph.String:
		return v.Str
	case graph.Bool:
		return v.Num != 0
	case graph.Time:
		return refTime(v.Num)
	case DurationKind:
		return refDuration(v.Num)
	}
	return nil
}

func refEval(e *Expr, prop func(v, name string) any) any {
	switch e.Op {
	case OpLit:
		return refValue(e.Lit)
	case OpDuration:
		return refDuration(e.Lit.Num)
	case OpProp:
		return prop(e.Var, e.Name)
	case OpMin, OpMax, OpSum:
		var list []any
		for _, a := range e.Args {
			if v := prop(a.Var, e.Name); v != nil {
				list = append(list, v)
			}
		}
		if e.Op == OpSum {
			return refSum(list)
		}
		return refExtreme(e.Op, list)
	case OpNot:
		if b, ok := refEval(e.Args[0], prop).(bool); ok {
			return !b
		}
		return nil
	case OpNeg:
		switch x := refEval(e.Args[0], prop).(type) {
		case float64:
			return -x
		case refDuration:
			return -x
		}
		return nil
	case OpIsNull:
		return refEval(e.Args[0], prop) == nil
	case OpNotNull:
		return refEval(e.Args[0], prop) != nil
	case OpAnd, OpOr:
		l, lok := refEval(e.Args[0], prop).(bool)
		r, rok := refEval(e.Args[1], prop).(bool)
		decisive := e.Op == OpOr // true decides OR, false decides AND
		switch {
		case lok && l == decisive, rok && r == decisive:
			return decisive
		case lok && rok:
			return !decisive
		}
		return nil
	case OpIn:
		x := refEval(e.Args[0], prop)
		var res any = false
		for _, a := range e.Args[1:] {
			switch eq := refCompare(OpEq, x, refEval(a, prop)); eq {
			case true:
				return true
			case nil:
				res = nil
			}
		}
		return res
	case OpEq, OpNe, OpLt, OpLe, OpGt, OpGe:
		return refCompare(e.Op, refEval(e.Args[0], prop), refEval(e.Args[1], prop))
	}
	l, r := refEval(e.Args[0], prop), refEval(e.Args[1], prop)
	switch e.Op {
	case OpAdd:
		switch l := l.(type) {
		case float64:
			if r, ok := r.(float64); ok {
				return l + r
			}
		case refDuration:
			switch r := r.(type) {
			case refDuration:
				return l + r
			case refTime:
				return refTime(float64(l) + float64(r))
			}
		case refTime:
			if r, ok := r.(refDuration); ok {
				return refTime(float64(l) + float64(r))
			}
		}
	case OpSub:
		switch l := l.(type) {
		case float64:
			if r, ok := r.(float64); ok {
				return l - r
			}
		case refDuration:
			if r, ok := r.(refDuration); ok {
				return l - r
			}
		case refTime:
			switch r := r.(type) {
			case refDuration:
				return refTime(float64(l) - float64(r))
			case refTime:
				return refDuration(float64(l) - float64(r))
			}
		}
	case OpMul:
		switch l := l.(type) {
		case float64:
			switch r := r.(type) {
			case float64:
				return l * r
			case refDuration:
				return refDuration(l * float64(r))
			}
		case refDuration:
			if r, ok := r.(float64); ok {
				return refDuration(float64(l) * r)
			}
		}
	case OpDiv:
		switch l := l.(type) {
		case float64:
			if r, ok := r.(float64); ok && r != 0 {
				return l / r
			}
		case refDuration:
			switch r := r.(type) {
			case float64:
				if r != 0 {
					return refDuration(float64(l) / r)
				}
			case refDuration:
				if r != 0 {
					return float64(l) / float64(r)
				}
			}
		}
	}
	return nil
}

// refCompare compares two values of one kind; null, other kinds and
// ordered booleans give nil.
func refCompare(op Op, l, r any) any {
	var c int
	var nan bool
	switch l := l.(type) {
	case float64:
		r, ok := r.(float64)
		if !ok {
			return nil
		}
		c, nan = refCmp(l, r)
	case refTime:
		r, ok := r.(refTime)
		if !ok {
			return nil
		}
		c, nan = refCmp(float64(l), float64(r))
	case refDuration:
		r, ok := r.(refDuration)
		if !ok {
			return nil
		}
		c, nan = refCmp(float64(l), float64(r))
	case string:
		r, ok := r.(string)
		if !ok {
			return nil
		}
		switch {
		case l < r:
			c = -1
		case l > r:
			c = 1
		}
	case bool:
		r, ok := r.(bool)
		if !ok || (op != OpEq && op != OpNe) {
			return nil
		}
		if l != r {
			c = 1
		}
	default:
		return nil
	}
	if nan {
		return op == OpNe
	}
	switch op {
	case OpEq:
		return c == 0
	case OpNe:
		return c != 0
	case OpLt:
		return c < 0
	case OpLe:
		return c <= 0
	case OpGt:
		return c > 0
	}
	return c >= 0
}

func refCmp(l, r float64) (int, bool) {
	switch {
	case l < r:
		return -1, false
	case l > r:
		return 1, false
	case l == r:
		return 0, false
	}
	return 0, true
}

// refSum adds values of one kind, numbers or durations; nothing is null.
func refSum(list []any) any {
	if len(list) == 0 {
		return nil
	}
	switch list[0].(type) {
	case float64:
		var total float64
		for _, v := range list {
			x, ok := v.(float64)
			if !ok {
				return nil
			}
			total += x
		}
		return total
	case refDuration:
		var total refDuration
		for _, v := range list {
			x, ok := v.(refDuration)
			if !ok {
				return nil
			}
			total += x
		}
		return total
	}
	return nil
}

// refExtreme is the least (OpMin) or greatest (OpMax) of values of one
// kind that refCompare orders, the first of equals; a NaN number anywhere
// makes it NaN. Nothing is null.
func refExtreme(op Op, list []any) any {
	if len(list) == 0 || refCompare(OpLt, list[0], list[0]) == nil { // booleans are not ordered
		return nil
	}
	for _, v := range list {
		if reflect.TypeOf(v) != reflect.TypeOf(list[0]) {
			return nil
		}
	}
	for _, v := range list {
		if x, ok := v.(float64); ok && math.IsNaN(x) {
			return x
		}
	}
	better := OpLt
	if op == OpMax {
		better = OpGt
	}
	best := list[0]
	for _, v := range list[1:] {
		if refCompare(better, v, best) == true {
			best = v
		}
	}
	return best
}

// refSame says whether two values of the reference interpreter are the
// same, a NaN being the same as a NaN and -0 as 0.
func refSame(a, b any) bool {
	if x, ok := a.(float64); ok {
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	}
	return a == b
}
