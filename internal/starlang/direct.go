package starlang

import (
	"context"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// Direct evaluation of data expressions.
//
// Most transforms of a tool or a route only reshape the payload: a dict or list
// literal whose values are constants and subscripts of the payload, such as
// {"text": payload["text"], "user": {"id": payload["user"]["id"]}}. Running one
// through the interpreter costs far more than the expression: the whole body is
// converted to Starlark values, a thread is set up, the program is initialised and
// run, and its value is converted back. A script that is exactly one such
// expression is therefore also compiled into a tree of dataExpr that is evaluated
// on the body's Go values directly.
//
// The direct evaluation only ever answers when the interpreter would give the same
// answer; everything else falls through to the interpreter, which then decides
// (including every error message). It answers only when
//   - the body is a map[string]any made of plain values (see plainBody), so that the
//     interpreter's conversion of the whole body cannot fail;
//   - every subscript finds its key or index (a missing one is the interpreter's
//     KeyError or IndexError);
//   - the value's text estimate is certainly within the output budget (checkOutput);
//   - the script's step limit is certainly not reached (directMaxSteps).
// The expression has no calls, so evaluating it twice (direct, then interpreted)
// can change nothing. Values taken from the body go through the same conversions as
// in the interpreter (Go → Starlark → Go), so numbers come back exactly as they would.

// dataExpr is one node of a data expression.
type dataExpr interface {
	// eval returns the Go value of the node for payload, or ok=false when the
	// interpreter must decide (a missing key, a subscript of a non-container …).
	eval(payload map[string]any) (v any, ok bool)
}

// constExpr is a literal, converted once at compile time as the interpreter would.
type constExpr struct{ v any }

// payloadExpr is the payload (or body) itself.
type payloadExpr struct{}

// indexExpr is x[key] or x[index] with a literal key or index.
type indexExpr struct {
	x     dataExpr
	key   string
	index int
	isKey bool
}

// dictExpr is a dict literal with distinct string-literal keys.
type dictExpr struct {
	keys []string
	vals []dataExpr
}

// listExpr is a list literal.
type listExpr struct{ elems []dataExpr }

func (c constExpr) eval(map[string]any) (any, bool) {
	// Literals are strings, numbers, bytes, True, False and None: immutable Go
	// values except bytes, which get a fresh copy per evaluation as the
	// interpreter's conversion would.
	if b, ok := c.v.([]byte); ok {
		return append([]byte(nil), b...), true
	}
	return c.v, true
}

func (payloadExpr) eval(p map[string]any) (any, bool) { return fromBody(p) }

func (e *indexExpr) eval(p map[string]any) (any, bool) {
	x, ok := e.container(p)
	if !ok {
		return nil, false
	}
	return fromBody(x)
}

// container returns the body value the subscript names, not yet converted.
func (e *indexExpr) container(p map[string]any) (any, bool) {
	var x any = p
	if inner, ok := e.x.(*indexExpr); ok {
		if x, ok = inner.container(p); !ok {
			return nil, false
		}
	} else if _, ok := e.x.(payloadExpr); !ok {
		return nil, false // only subscripts of the payload are compiled
	}
	if e.isKey {
		m, ok := x.(map[string]any)
		if !ok {
			return nil, false
		}
		v, ok := m[e.key]
		return v, ok
	}
	l, ok := x.([]any)
	if !ok {
		return nil, false
	}
	i := e.index
	if i < 0 {
		i += len(l) // Starlark's negative indices count from the end
	}
	if i < 0 || i >= len(l) {
		return nil, false
	}
	return l[i], true
}

func (e *dictExpr) eval(p map[string]any) (any, bool) {
	out := make(map[string]any, len(e.keys))
	for i, k := range e.keys {
		v, ok := e.vals[i].eval(p)
		if !ok {
			return nil, false
		}
		out[k] = v
	}
	return out, true
}

func (e *listExpr) eval(p map[string]any) (any, bool) {
	out := make([]any, len(e.elems))
	for i, x := range e.elems {
		v, ok := x.eval(p)
		if !ok {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

// fromBody returns what a value of the body becomes after the interpreter's round
// trip (ToStarlark, then FromStarlark): the same string, bool or nil; a float64 that
// holds an integer becomes an int64, as in the interpreter; containers are
// converted by the same functions the interpreter uses.
func fromBody(v any) (any, bool) {
	switch t := v.(type) {
	case nil, string, bool:
		return t, true
	}
	sv, err := toStarlark(v, 0)
	if err != nil {
		return nil, false
	}
	out, err := fromStarlark(sv, 0)
	if err != nil {
		return nil, false
	}
	return out, true
}

// compileDirect returns the data expression of a script that is exactly one, with
// the number of syntax nodes it has, or nil. f is the parsed and resolved script
// before the value capture and instrumentation.
func compileDirect(f *syntax.File) (dataExpr, int) {
	if len(f.Stmts) != 1 {
		return nil, 0
	}
	es, ok := f.Stmts[0].(*syntax.ExprStmt)
	if !ok {
		return nil, 0
	}
	nodes := 0
	e := directExpr(es.X, &nodes)
	if e == nil {
		return nil, 0
	}
	return e, nodes
}

// directExpr compiles one node; nil when it is anything but a data expression.
func directExpr(x syntax.Expr, nodes *int) dataExpr {
	*nodes++
	if *nodes > directMaxNodes {
		return nil
	}
	switch t := x.(type) {
	case *syntax.ParenExpr:
		return directExpr(t.X, nodes)
	case *syntax.Literal:
		v, ok := literalValue(t)
		if !ok {
			return nil
		}
		return constExpr{v: v}
	case *syntax.Ident:
		return identExpr(t)
	case *syntax.IndexExpr:
		inner := directExpr(t.X, nodes)
		switch inner.(type) {
		case payloadExpr, *indexExpr:
		default:
			return nil
		}
		lit, ok := t.Y.(*syntax.Literal)
		if !ok {
			return nil
		}
		*nodes++
		switch v := lit.Value.(type) {
		case string:
			if lit.Token != syntax.STRING {
				return nil // b"…" keys are bytes, never found in a dict of strings
			}
			return &indexExpr{x: inner, key: v, isKey: true}
		case int64:
			if v < -1<<31 || v > 1<<31 {
				return nil
			}
			return &indexExpr{x: inner, index: int(v)}
		}
		return nil
	case *syntax.DictExpr:
		d := &dictExpr{}
		seen := make(map[string]bool, len(t.List))
		for _, item := range t.List {
			entry, ok := item.(*syntax.DictEntry)
			if !ok {
				return nil
			}
			key, ok := entry.Key.(*syntax.Literal)
			if !ok || key.Token != syntax.STRING {
				return nil
			}
			k := key.Value.(string)
			if seen[k] {
				return nil // the interpreter's "duplicate key" error
			}
			seen[k] = true
			*nodes++
			v := directExpr(entry.Value, nodes)
			if v == nil {
				return nil
			}
			d.keys = append(d.keys, k)
			d.vals = append(d.vals, v)
		}
		return d
	case *syntax.ListExpr:
		l := &listExpr{}
		for _, item := range t.List {
			v := directExpr(item, nodes)
			if v == nil {
				return nil
			}
			l.elems = append(l.elems, v)
		}
		return l
	}
	return nil
}

// identExpr compiles payload, body, True, False and None, as the resolver bound
// them; any other name (a variable, a builtin) is not a data expression.
func identExpr(id *syntax.Ident) dataExpr {
	switch id.Name {
	case "payload", "body":
		return payloadExpr{}
	case "True", "False", "None":
		if _, shadowed := fixed[id.Name]; shadowed {
			return nil
		}
		v, err := fromStarlark(starlark.Universe[id.Name], 0)
		if err != nil {
			return nil
		}
		return constExpr{v: v}
	}
	return nil
}

// literalValue is the Go value the interpreter gives a literal after FromStarlark.
func literalValue(lit *syntax.Literal) (any, bool) {
	var sv starlark.Value
	switch v := lit.Value.(type) {
	case string:
		if lit.Token == syntax.BYTES {
			sv = starlark.Bytes(v)
		} else {
			sv = starlark.String(v)
		}
	case int64:
		sv = starlark.MakeInt64(v)
	case float64:
		sv = starlark.Float(v)
	default:
		return nil, false // big integers and anything new: the interpreter decides
	}
	out, err := fromStarlark(sv, 0)
	return out, err == nil
}

// directMaxNodes bounds the size of a compiled data expression; larger ones are left
// to the interpreter (their step count is then not worth bounding here).
const directMaxNodes = 1000

// directMaxSteps is a bound on the Starlark execution steps of a data expression of
// n syntax nodes, program set-up included: the direct path is taken only when the
// script's step limit is above it. TestDirectStepBound measures the interpreter's
// real count against it.
func directMaxSteps(nodes int) uint64 { return uint64(4*nodes + 16) }

// plainBody reports whether v holds only what decoded JSON holds (maps with string
// keys, slices, strings, float64, bool, nil) plus Go ints, nested at most
// DefaultMaxNesting deep, and an upper bound of its text estimate (see textBound):
// the interpreter converts such a body without error.
func plainBody(v any, depth int) bool {
	if depth > DefaultMaxNesting {
		return false
	}
	switch t := v.(type) {
	case nil, string, bool, float64, int, int64:
		return true
	case map[string]any:
		for _, x := range t {
			if !plainBody(x, depth+1) {
				return false
			}
		}
		return true
	case []any:
		for _, x := range t {
			if !plainBody(x, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}

// textUpperBound is at least what estimateText gives for the Starlark form of v
// (a value of the direct path: made of plain values, int64 included), or more than
// limit once it is past it. Numbers count 24, the most estimateText gives a float or
// an int within int64.
func textUpperBound(v any, limit int64, depth int) (int64, bool) {
	if depth > DefaultMaxNesting {
		return 0, false
	}
	switch t := v.(type) {
	case nil, bool:
		return 5, true
	case string:
		return int64(len(t)) + 2, true
	case []byte:
		return int64(len(t)) + 3, true
	case float64, int64, int:
		return 24, true
	case map[string]any:
		n := int64(2)
		for k, x := range t {
			m, ok := textUpperBound(x, limit, depth+1)
			if !ok {
				return 0, false
			}
			n += int64(len(k)) + 2 + m + 4
			if n > limit {
				return n, true
			}
		}
		return n, true
	case []any:
		n := int64(2)
		for _, x := range t {
			m, ok := textUpperBound(x, limit, depth+1)
			if !ok {
				return 0, false
			}
			n += m + 2
			if n > limit {
				return n, true
			}
		}
		return n, true
	}
	return 0, false
}

// evalDirect evaluates a data-expression script on ex's body without the
// interpreter. ok=false: the interpreter must run it.
func (s *Script) evalDirect(ctx context.Context, body any) (v any, ok bool) {
	if s.direct == nil || ctx.Err() != nil {
		return nil, false
	}
	p, isMap := body.(map[string]any)
	if !isMap || !plainBody(p, 0) {
		return nil, false
	}
	v, ok = s.direct.eval(p)
	if !ok {
		return nil, false
	}
	if n, ok := textUpperBound(v, s.maxMemory, 0); !ok || n > s.maxMemory {
		return nil, false
	}
	return v, true
}
