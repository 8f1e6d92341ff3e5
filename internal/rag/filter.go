package rag

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Filter selects chunks by their metadata. It is the filter as a user writes
// it (in YAML, a tool argument or a query body), in the form users of
// Pinecone, Chroma or Qdrant know:
//
//	{"lang": "en"}                                   equal
//	{"year": {"$gte": 2020, "$lt": 2025}}            ranges (numbers, or strings: ISO dates)
//	{"tag": {"$in": ["billing", "refunds"]}}         one of
//	{"$or": [{"team": "ops"}, {"public": true}]}     $and, $or, $not
//	{"author.name": "Ada"}                           a dotted name reaches into nested objects
//
// Several members of one object must all hold. A metadata value that is a list
// matches when one of its elements does ({"tag": "x"} matches tag: [x, y]).
// The nil or empty Filter matches every chunk. [Filter.Parse] validates it and
// compiles it to an [Expr], which stores evaluate ([Expr.Matches]) or
// translate (SQL); parse once per query, not per chunk.
type Filter map[string]any

// Filter operators.
const (
	OpAnd    = "$and"
	OpOr     = "$or"
	OpNot    = "$not"
	OpEq     = "$eq"
	OpNe     = "$ne"
	OpGt     = "$gt"
	OpGte    = "$gte"
	OpLt     = "$lt"
	OpLte    = "$lte"
	OpIn     = "$in"
	OpNin    = "$nin"
	OpExists = "$exists"
)

// Limits on a filter's size, so that a hostile one costs little to refuse.
const (
	MaxFilterDepth  = 16   // nested $and/$or/$not and objects
	MaxFilterNodes  = 1000 // comparisons and logical nodes in all
	MaxFilterList   = 1000 // values of one $in/$nin, members of one $and/$or
	MaxFilterField  = 256  // bytes of a field name
	MaxFilterString = 4096 // bytes of a compared string
)

// Expr is a validated filter: a tree of logical nodes ($and, $or, $not with
// Kids) and comparisons (Field, Op and Value or Values). Values are
// normalised: numbers are float64, and the rest strings or booleans.
type Expr struct {
	Op    string
	Kids  []*Expr // $and, $or: two or more; $not: one
	Field string  // comparisons: the name as written ("author.name")
	Path  []string
	Value any   // $eq … $lte: string, float64 or bool; $exists: bool
	Lits  []any // $in, $nin
}

// FilterError is a filter that cannot be used: Path says where in it
// ("filter.year.$gte"), Msg what is wrong.
type FilterError struct {
	Path string
	Msg  string
}

func (e *FilterError) Error() string { return e.Path + ": " + e.Msg }

// IsEmpty reports whether f matches every chunk.
func (f Filter) IsEmpty() bool { return len(f) == 0 }

// Parse validates f and compiles it. The empty filter gives a nil Expr, which
// matches everything. Errors are *FilterError, their path rooted at "filter".
func (f Filter) Parse() (*Expr, error) {
	if len(f) == 0 {
		return nil, nil
	}
	p := filterParser{}
	return p.object(map[string]any(f), "filter", 1)
}

// Matches reports whether metadata satisfies f; an invalid filter matches
// nothing. It parses f on every call: a store scanning many chunks parses once
// and calls [Expr.Matches].
func (f Filter) Matches(metadata map[string]any) bool {
	e, err := f.Parse()
	if err != nil {
		return false
	}
	return e.Matches(metadata)
}

// String is f as compact JSON with sorted keys.
func (f Filter) String() string {
	b, err := json.Marshal(map[string]any(f))
	if err != nil {
		return fmt.Sprint(map[string]any(f))
	}
	return string(b)
}

// AndFilters is a filter that holds where every one of fs holds; empty ones
// are left out. A pipeline's own filter is combined with a caller's this way,
// so that the caller can narrow it and never widen it.
func AndFilters(fs ...Filter) Filter {
	var parts []any
	for _, f := range fs {
		if len(f) > 0 {
			parts = append(parts, map[string]any(f))
		}
	}
	switch len(parts) {
	case 0:
		return nil
	case 1:
		return Filter(parts[0].(map[string]any))
	}
	return Filter{OpAnd: parts}
}

type filterParser struct{ nodes int }

func (p *filterParser) count(path string) error {
	p.nodes++
	if p.nodes > MaxFilterNodes {
		return &FilterError{path, fmt.Sprintf("the filter has more than %d conditions", MaxFilterNodes)}
	}
	return nil
}

// object parses one filter object: its members all hold.
func (p *filterParser) object(m map[string]any, path string, depth int) (*Expr, error) {
	if depth > MaxFilterDepth {
		return nil, &FilterError{path, fmt.Sprintf("the filter is nested more than %d levels deep", MaxFilterDepth)}
	}
	if len(m) == 0 {
		return nil, &FilterError{path, `an empty object is not a condition: leave the filter out to match everything`}
	}
	keys := sortedKeys(m)
	var kids []*Expr
	for _, k := range keys {
		e, err := p.member(k, m[k], path, depth)
		if err != nil {
			return nil, err
		}
		kids = append(kids, e...)
	}
	if len(kids) == 1 {
		return kids[0], nil
	}
	if err := p.count(path); err != nil {
		return nil, err
	}
	return &Expr{Op: OpAnd, Kids: kids}, nil
}

// member parses one member of a filter object: a logical operator or a field.
func (p *filterParser) member(k string, v any, path string, depth int) ([]*Expr, error) {
	at := path + "." + k
	switch k {
	case OpAnd, OpOr:
		list, ok := v.([]any)
		if !ok || len(list) == 0 {
			return nil, &FilterError{at, "want a non-empty list of filter objects"}
		}
		if len(list) > MaxFilterList {
			return nil, &FilterError{at, fmt.Sprintf("more than %d conditions", MaxFilterList)}
		}
		var kids []*Expr
		for i, item := range list {
			m, ok := asObject(item)
			if !ok {
				return nil, &FilterError{fmt.Sprintf("%s[%d]", at, i), "want a filter object, not " + describe(item)}
			}
			e, err := p.object(m, fmt.Sprintf("%s[%d]", at, i), depth+1)
			if err != nil {
				return nil, err
			}
			kids = append(kids, e)
		}
		if len(kids) == 1 {
			return kids, nil
		}
		if err := p.count(at); err != nil {
			return nil, err
		}
		return []*Expr{{Op: k, Kids: kids}}, nil
	case OpNot:
		m, ok := asObject(v)
		if !ok {
			return nil, &FilterError{at, "want a filter object, not " + describe(v)}
		}
		e, err := p.object(m, at, depth+1)
		if err != nil {
			return nil, err
		}
		if err := p.count(at); err != nil {
			return nil, err
		}
		return []*Expr{{Op: OpNot, Kids: []*Expr{e}}}, nil
	}
	if strings.HasPrefix(k, "$") {
		return nil, &FilterError{at, fmt.Sprintf("unknown operator %q here: a filter object's members are field names or $and, $or, $not", k)}
	}
	fieldPath, err := splitField(k, at)
	if err != nil {
		return nil, err
	}
	ops, isOps := asObject(v)
	if !isOps {
		lit, err := literal(v, at)
		if err != nil {
			return nil, err
		}
		if err := p.count(at); err != nil {
			return nil, err
		}
		return []*Expr{{Op: OpEq, Field: k, Path: fieldPath, Value: lit}}, nil
	}
	if len(ops) == 0 {
		return nil, &FilterError{at, `want a value or an object of operators ({"$gte": 2020})`}
	}
	var out []*Expr
	for _, op := range sortedKeys(ops) {
		opAt := at + "." + op
		arg := ops[op]
		e := &Expr{Op: op, Field: k, Path: fieldPath}
		switch op {
		case OpEq, OpNe, OpGt, OpGte, OpLt, OpLte:
			lit, err := literal(arg, opAt)
			if err != nil {
				return nil, err
			}
			e.Value = lit
		case OpIn, OpNin:
			list, ok := arg.([]any)
			if !ok {
				return nil, &FilterError{opAt, "want a list of values, not " + describe(arg)}
			}
			if len(list) > MaxFilterList {
				return nil, &FilterError{opAt, fmt.Sprintf("more than %d values", MaxFilterList)}
			}
			for i, item := range list {
				lit, err := literal(item, fmt.Sprintf("%s[%d]", opAt, i))
				if err != nil {
					return nil, err
				}
				e.Lits = append(e.Lits, lit)
			}
		case OpExists:
			b, ok := arg.(bool)
			if !ok {
				return nil, &FilterError{opAt, "want true or false, not " + describe(arg)}
			}
			e.Value = b
		default:
			if strings.HasPrefix(op, "$") {
				return nil, &FilterError{opAt, fmt.Sprintf("unknown operator %q (known: $eq $ne $gt $gte $lt $lte $in $nin $exists)", op)}
			}
			return nil, &FilterError{at, fmt.Sprintf(`%q is not an operator: to compare with an object, name its fields ("%s.%s")`, op, k, op)}
		}
		if err := p.count(opAt); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// splitField checks a field name and splits it at its dots.
func splitField(k, at string) ([]string, error) {
	if k == "" {
		return nil, &FilterError{at, "a field name is empty"}
	}
	if len(k) > MaxFilterField {
		return nil, &FilterError{at, fmt.Sprintf("a field name is longer than %d bytes", MaxFilterField)}
	}
	parts := strings.Split(k, ".")
	for _, s := range parts {
		if s == "" {
			return nil, &FilterError{at, fmt.Sprintf("field name %q has an empty part between dots", k)}
		}
		if strings.HasPrefix(s, "$") {
			return nil, &FilterError{at, fmt.Sprintf("field name %q has a part starting with $ (operators go in the value: {\"field\": {\"$gt\": 1}})", k)}
		}
		for _, r := range s {
			if r < 0x20 || r == 0x7f {
				return nil, &FilterError{at, "a field name holds a control character"}
			}
		}
	}
	return parts, nil
}

// literal normalises a compared value: numbers to float64, dates to RFC 3339
// strings; strings and booleans as they are.
func literal(v any, at string) (any, error) {
	switch x := v.(type) {
	case string:
		if len(x) > MaxFilterString {
			return nil, &FilterError{at, fmt.Sprintf("a string longer than %d bytes", MaxFilterString)}
		}
		return x, nil
	case bool:
		return x, nil
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano), nil
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return nil, &FilterError{at, fmt.Sprintf("%s is not a number this filter can compare", x)}
		}
		return finite(f, at)
	case nil:
		return nil, &FilterError{at, `null compares with nothing: use {"$exists": false} for a missing field`}
	}
	if f, ok := toFloat(v); ok {
		return finite(f, at)
	}
	return nil, &FilterError{at, "want a string, number or boolean, not " + describe(v)}
}

func finite(f float64, at string) (any, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, &FilterError{at, "NaN and infinite numbers compare with nothing"}
	}
	return f, nil
}

func asObject(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case Filter:
		return map[string]any(m), true
	}
	return nil, false
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "a list"
	case map[string]any, Filter:
		return "an object"
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) > 60 {
		return fmt.Sprintf("a %T", v)
	}
	return string(b)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Matches reports whether metadata satisfies e; a nil Expr matches everything.
func (e *Expr) Matches(metadata map[string]any) bool {
	if e == nil {
		return true
	}
	switch e.Op {
	case OpAnd:
		for _, k := range e.Kids {
			if !k.Matches(metadata) {
				return false
			}
		}
		return true
	case OpOr:
		return slices.ContainsFunc(e.Kids, func(k *Expr) bool { return k.Matches(metadata) })
	case OpNot:
		return !e.Kids[0].Matches(metadata)
	}
	v, ok := Lookup(metadata, e.Field, e.Path)
	switch e.Op {
	case OpExists:
		return ok == e.Value.(bool)
	case OpNe:
		return !ok || !anyElement(v, func(x any) bool { return equalValues(x, e.Value) })
	case OpNin:
		return !ok || !anyElement(v, func(x any) bool { return inList(x, e.Lits) })
	}
	if !ok {
		return false
	}
	switch e.Op {
	case OpEq:
		return anyElement(v, func(x any) bool { return equalValues(x, e.Value) })
	case OpIn:
		return anyElement(v, func(x any) bool { return inList(x, e.Lits) })
	case OpGt, OpGte, OpLt, OpLte:
		return anyElement(v, func(x any) bool {
			c, ok := compareValues(x, e.Value)
			if !ok {
				return false
			}
			switch e.Op {
			case OpGt:
				return c > 0
			case OpGte:
				return c >= 0
			case OpLt:
				return c < 0
			}
			return c <= 0
		})
	}
	return false
}

// Lookup finds a filter field in metadata: the whole name as a key first (a
// key may hold dots), else path through nested objects. A nil value counts as
// missing.
func Lookup(metadata map[string]any, field string, path []string) (any, bool) {
	if v, ok := metadata[field]; ok && v != nil {
		return v, true
	}
	if len(path) < 2 {
		return nil, false
	}
	var cur any = metadata
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[p]; !ok || cur == nil {
			return nil, false
		}
	}
	return cur, true
}

// anyElement applies pred to v, or to each element of v when it is a list.
func anyElement(v any, pred func(any) bool) bool {
	if list, ok := v.([]any); ok {
		return slices.ContainsFunc(list, pred)
	}
	if list, ok := v.([]string); ok {
		for _, s := range list {
			if pred(s) {
				return true
			}
		}
		return false
	}
	return pred(v)
}

func inList(x any, lits []any) bool {
	return slices.ContainsFunc(lits, func(l any) bool { return equalValues(x, l) })
}

// compareValues orders two numbers or two strings; other pairs do not compare.
func compareValues(a, b any) (int, bool) {
	if x, ok := toFloat(a); ok {
		y, ok := toFloat(b)
		if !ok {
			return 0, false
		}
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	}
	x, ok1 := a.(string)
	y, ok2 := b.(string)
	if !ok1 || !ok2 {
		return 0, false
	}
	return strings.Compare(x, y), true
}
