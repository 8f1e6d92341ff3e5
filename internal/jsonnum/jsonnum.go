// Package jsonnum turns the numbers a JSON decoder left as json.Number (UseNumber)
// into the Go values workflows compute with: int64 for an integer that fits, float64
// for any other number. Tool arguments (internal/tool) and PostgreSQL notification
// payloads (internal/component/postgres) are decoded this way, so that a count
// stays an integer usable as an index, and both read every number alike.
package jsonnum

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Normalize replaces each json.Number in *v, at the top or nested in
// map[string]any and []any, in place. A number beyond float64's range (1e400)
// would become ±Inf, which no JSON text can carry back and no workflow expects:
// Normalize stops at the first one with a *RangeError, leaving *v partly converted.
// Other types, named map and slice types included, are left as they are.
func Normalize(v *any) error {
	switch x := (*v).(type) {
	case map[string]any:
		for k, e := range x {
			if err := Normalize(&e); err != nil {
				return err.(*RangeError).under(k)
			}
			x[k] = e
		}
	case []any:
		for i := range x {
			if err := Normalize(&x[i]); err != nil {
				return err.(*RangeError).under(strconv.Itoa(i))
			}
		}
	case json.Number:
		n, err := number(x)
		if err != nil {
			return err
		}
		*v = n
	}
	return nil
}

// number is n as an int64 when it is an integer in int64's range, else as a
// float64.
func number(n json.Number) (any, error) {
	if i, err := n.Int64(); err == nil {
		return i, nil
	}
	// An error here is a number out of range (a decoder gives only well-formed ones):
	// ParseFloat then returns ±Inf.
	f, err := n.Float64()
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, &RangeError{Number: string(n)}
	}
	return f, nil
}

// RangeError is a number too large for a float64, with where it is.
type RangeError struct {
	Number string   // as written
	path   []string // JSON Pointer tokens, escaped, innermost first (built on the way back up)
}

func (e *RangeError) under(token string) error {
	e.path = append(e.path, strings.NewReplacer("~", "~0", "/", "~1").Replace(token))
	return e
}

// Pointer is the number's JSON Pointer (RFC 6901): "" for the whole value,
// "/list/1/y" for a number inside it.
func (e *RangeError) Pointer() string {
	var ptr strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		ptr.WriteByte('/')
		ptr.WriteString(e.path[i])
	}
	return ptr.String()
}

func (e *RangeError) Error() string {
	num := e.Number
	if len(num) > 40 {
		num = num[:40] + "…"
	}
	where := ""
	if ptr := e.Pointer(); ptr != "" {
		where = " at " + ptr
	}
	return fmt.Sprintf("the number %s%s is too large (JSON numbers must fit a 64-bit float, at most about 1.8e308)", num, where)
}
