package pgvector

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/arvenza/helix/internal/rag"
)

// A metadata filter in SQL: compileFilter translates a parsed filter
// (*rag.Expr) into a condition over the chunk row's metadata (c.metadata)
// that holds exactly where rag.Expr.Matches does, so that both search arms
// select the chunks that may compete before ranking. Field names and values
// only ever reach the server as bind parameters; the SQL text is made of
// operators, casts and parameter numbers.
//
// A field's value is found as rag.Lookup finds it: the whole name as a key
// first (a key may hold dots), else the path through nested objects, a JSON
// null counting as missing. The path is followed with -> (object members
// only), not #>, which would also index arrays ("tags.0").
//
// Equality is JSON containment, which the GIN index on metadata
// (jsonb_path_ops) answers: {"f": v} or {"f": [v]}, the second for a list
// holding v (containment does not look into a nested list for a scalar), and
// jsonb compares numbers as numbers, never with strings or booleans. $in with
// up to inListContainment values is such equalities ORed; a longer list is one
// jsonb[] parameter that each element is compared with.
//
// Ranges compare the value, or each element of a list, with the same type
// only: numbers as float8 (Helix stores metadata numbers from float64s, which
// the cast gives back exactly, so the order is Go's), strings byte-wise
// (COLLATE "C", as strings.Compare), booleans not at all.
//
// Every condition is true or false, never NULL, so that $not and $nin negate
// it as Matches does ($ne, $nin and $not hold for a missing field).

// maxParams is the most bind parameters one statement can have.
const maxParams = 65535

// inListContainment is the longest $in compiled to containments (each one can
// use the metadata index); longer lists compare elements with one array.
const inListContainment = 8

// maxExprDepth bounds recursion over an Expr built by hand (Parse allows 16).
const maxExprDepth = 64

type filterCompiler struct {
	base int
	args []any
}

// compileFilter returns the condition for e, its parameters numbered from
// base+1, and the parameters. A nil e is the condition TRUE.
func compileFilter(e *rag.Expr, base int) (string, []any, error) {
	if e == nil {
		return "TRUE", nil, nil
	}
	c := &filterCompiler{base: base}
	var b strings.Builder
	if err := c.expr(&b, e, 0); err != nil {
		return "", nil, err
	}
	return b.String(), c.args, nil
}

func (c *filterCompiler) param(v any, cast string) (string, error) {
	if c.base+len(c.args) >= maxParams {
		return "", fmt.Errorf("filter: too large for one SQL statement (more than %d parameters)", maxParams)
	}
	c.args = append(c.args, v)
	return "$" + strconv.Itoa(c.base+len(c.args)) + cast, nil
}

func (c *filterCompiler) expr(b *strings.Builder, e *rag.Expr, depth int) error {
	if e == nil {
		return fmt.Errorf("filter: an empty condition")
	}
	if depth > maxExprDepth {
		return fmt.Errorf("filter: nested more than %d levels deep", maxExprDepth)
	}
	switch e.Op {
	case rag.OpAnd, rag.OpOr:
		if len(e.Kids) == 0 {
			return fmt.Errorf("filter: %s without conditions", e.Op)
		}
		join := " AND "
		if e.Op == rag.OpOr {
			join = " OR "
		}
		b.WriteByte('(')
		for i, k := range e.Kids {
			if i > 0 {
				b.WriteString(join)
			}
			if err := c.expr(b, k, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(')')
		return nil
	case rag.OpNot:
		if len(e.Kids) != 1 {
			return fmt.Errorf("filter: $not takes one condition, not %d", len(e.Kids))
		}
		b.WriteString("(NOT ")
		if err := c.expr(b, e.Kids[0], depth+1); err != nil {
			return err
		}
		b.WriteByte(')')
		return nil
	}
	if e.Field == "" || len(e.Path) == 0 {
		return fmt.Errorf("filter: %s without a field", e.Op)
	}
	sql, err := c.comparison(e)
	if err != nil {
		return err
	}
	b.WriteString(sql)
	return nil
}

func (c *filterCompiler) comparison(e *rag.Expr) (string, error) {
	switch e.Op {
	case rag.OpExists:
		want, ok := e.Value.(bool)
		if !ok {
			return "", fmt.Errorf("filter: %s.$exists wants true or false", e.Field)
		}
		v, err := c.value(e)
		if err != nil {
			return "", err
		}
		if want {
			return "(" + v + " IS NOT NULL)", nil
		}
		return "(" + v + " IS NULL)", nil
	case rag.OpEq, rag.OpNe:
		lit, err := literal(e, e.Value)
		if err != nil {
			return "", err
		}
		sql, err := c.eq(e, lit)
		if err != nil || e.Op == rag.OpEq {
			return sql, err
		}
		return "(NOT " + sql + ")", nil
	case rag.OpIn, rag.OpNin:
		sql, err := c.in(e)
		if err != nil || e.Op == rag.OpIn {
			return sql, err
		}
		return "(NOT " + sql + ")", nil
	case rag.OpGt, rag.OpGte, rag.OpLt, rag.OpLte:
		lit, err := literal(e, e.Value)
		if err != nil {
			return "", err
		}
		return c.order(e, lit)
	}
	return "", fmt.Errorf("filter: %s: operator %q cannot be compiled to SQL", e.Field, e.Op)
}

// literal checks a compared value: a string (valid UTF-8: PostgreSQL text
// cannot hold anything else), a finite float64 or a boolean.
func literal(e *rag.Expr, v any) (any, error) {
	switch x := v.(type) {
	case string:
		if !utf8.ValidString(x) {
			return nil, fmt.Errorf("filter: %s: a compared string is not valid UTF-8 (stored metadata always is)", e.Field)
		}
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("filter: %s: NaN and infinite numbers compare with nothing", e.Field)
		}
		return x, nil
	case bool:
		return x, nil
	}
	return nil, fmt.Errorf("filter: %s: cannot compare with a %T", e.Field, v)
}

// storable reports whether a key can be a stored metadata key: the store
// removes NUL bytes and invalid UTF-8 from keys (cleanText), so a name with
// either finds nothing.
func storable(k string) bool {
	return utf8.ValidString(k) && strings.IndexByte(k, 0) < 0
}

func pathStorable(e *rag.Expr) bool {
	if len(e.Path) < 2 {
		return false
	}
	for _, p := range e.Path {
		if !storable(p) {
			return false
		}
	}
	return true
}

// value is the field's value as rag.Lookup finds it, as jsonb, or NULL when
// it is missing (or JSON null).
func (c *filterCompiler) value(e *rag.Expr) (string, error) {
	var lit, nested string
	if storable(e.Field) {
		p, err := c.param(e.Field, "::text")
		if err != nil {
			return "", err
		}
		lit = "nullif(c.metadata -> " + p + ", 'null'::jsonb)"
	}
	if pathStorable(e) {
		p, err := c.param(e.Path, "::text[]")
		if err != nil {
			return "", err
		}
		var b strings.Builder
		b.WriteString("nullif(c.metadata")
		for i := range e.Path {
			b.WriteString(" -> (" + p + ")[" + strconv.Itoa(i+1) + "]")
		}
		b.WriteString(", 'null'::jsonb)")
		nested = b.String()
	}
	switch {
	case lit != "" && nested != "":
		return "coalesce(" + lit + ", " + nested + ")", nil
	case lit != "":
		return lit, nil
	case nested != "":
		return nested, nil
	}
	return "NULL::jsonb", nil
}

// eq is the field's value (or one of its elements) equal to lit, by
// containment: {"a": {"b": lit}} or {"a": {"b": [lit]}} for a.b, tried only
// when the key "a.b" itself is missing or null.
func (c *filterCompiler) eq(e *rag.Expr, lit any) (string, error) {
	if s, ok := lit.(string); ok && strings.IndexByte(s, 0) >= 0 {
		return "FALSE", nil // stored text never holds NUL
	}
	var parts []string
	if storable(e.Field) {
		sql, err := c.contains([]string{e.Field}, lit)
		if err != nil {
			return "", err
		}
		parts = append(parts, sql)
	}
	if pathStorable(e) {
		sql, err := c.contains(e.Path, lit)
		if err != nil {
			return "", err
		}
		if storable(e.Field) {
			p, err := c.param(e.Field, "::text")
			if err != nil {
				return "", err
			}
			sql = "(coalesce(c.metadata -> " + p + ", 'null'::jsonb) = 'null'::jsonb AND " + sql + ")"
		}
		parts = append(parts, sql)
	}
	switch len(parts) {
	case 0:
		return "FALSE", nil
	case 1:
		return parts[0], nil
	}
	return "(" + strings.Join(parts, " OR ") + ")", nil
}

func (c *filterCompiler) contains(path []string, lit any) (string, error) {
	nest := func(v any) (string, error) {
		for i := len(path) - 1; i >= 0; i-- {
			v = map[string]any{path[i]: v}
		}
		b, err := json.Marshal(v)
		return string(b), err
	}
	one, err := nest(lit)
	if err != nil {
		return "", fmt.Errorf("filter: %w", err)
	}
	list, err := nest([]any{lit})
	if err != nil {
		return "", fmt.Errorf("filter: %w", err)
	}
	p1, err := c.param(one, "::text::jsonb")
	if err != nil {
		return "", err
	}
	p2, err := c.param(list, "::text::jsonb")
	if err != nil {
		return "", err
	}
	return "(c.metadata @> " + p1 + " OR c.metadata @> " + p2 + ")", nil
}

// anyElement is pred of the value, or of one of its elements when it is a
// list; false for a missing field.
func anyElement(v string, pred func(e string) string) string {
	return "EXISTS (SELECT 1 FROM (SELECT " + v + " AS v) AS t, jsonb_array_elements(CASE WHEN jsonb_typeof(t.v) = 'array' THEN t.v ELSE jsonb_build_array(t.v) END) AS x(e) WHERE " +
		pred("x.e") + ")"
}

func (c *filterCompiler) in(e *rag.Expr) (string, error) {
	var lits []any
	for _, l := range e.Lits {
		lit, err := literal(e, l)
		if err != nil {
			return "", err
		}
		if s, ok := lit.(string); ok && strings.IndexByte(s, 0) >= 0 {
			continue // equals nothing stored
		}
		lits = append(lits, lit)
	}
	switch {
	case len(lits) == 0:
		return "FALSE", nil
	case len(lits) <= inListContainment:
		parts := make([]string, len(lits))
		for i, lit := range lits {
			sql, err := c.eq(e, lit)
			if err != nil {
				return "", err
			}
			parts[i] = sql
		}
		return "(" + strings.Join(parts, " OR ") + ")", nil
	}
	texts := make([]string, len(lits))
	for i, lit := range lits {
		b, err := json.Marshal(lit)
		if err != nil {
			return "", fmt.Errorf("filter: %w", err)
		}
		texts[i] = string(b)
	}
	v, err := c.value(e)
	if err != nil {
		return "", err
	}
	p, err := c.param(texts, "::text[]::jsonb[]")
	if err != nil {
		return "", err
	}
	return anyElement(v, func(x string) string { return x + " = ANY(" + p + ")" }), nil
}

func (c *filterCompiler) order(e *rag.Expr, lit any) (string, error) {
	op := map[string]string{rag.OpGt: ">", rag.OpGte: ">=", rag.OpLt: "<", rag.OpLte: "<="}[e.Op]
	var typ, val, cast string
	switch x := lit.(type) {
	case float64:
		typ, val, cast = "number", "(%s)::float8", "::float8"
	case string:
		typ, val, cast = "string", `(%s #>> '{}') COLLATE "C"`, "::text"
		if i := strings.IndexByte(x, 0); i >= 0 {
			// Stored text never holds NUL, the least byte: a stored string is
			// below x when it is at most x's part before the NUL, else above.
			lit = x[:i]
			if e.Op == rag.OpGt || e.Op == rag.OpGte {
				op = ">"
			} else {
				op = "<="
			}
		}
	default:
		return "FALSE", nil // booleans do not order
	}
	v, err := c.value(e)
	if err != nil {
		return "", err
	}
	p, err := c.param(lit, cast)
	if err != nil {
		return "", err
	}
	return anyElement(v, func(x string) string {
		return "CASE WHEN jsonb_typeof(" + x + ") = '" + typ + "' THEN " + fmt.Sprintf(val, x) + " " + op + " " + p + " ELSE FALSE END"
	}), nil
}
