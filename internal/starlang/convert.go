package starlang

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"mime"
	"reflect"
	"sort"
	"strings"
	"time"

	startime "go.starlark.net/lib/time"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"github.com/arvenza/helix/internal/tool"
)

// maxDepth bounds the nesting of converted values. Go values and Starlark lists can
// be cyclic (a list appended to itself); without a bound the conversion would
// recurse until the goroutine stack is exhausted, which is fatal, not a panic.
const maxDepth = DefaultMaxNesting

// ToStarlark converts a Go value into a new, unfrozen Starlark value.
//
// Mapping (JSON-friendly, so a decoded JSON body round-trips):
//   - nil, nil pointers and nil interfaces → None
//   - bool → bool; string and []byte (and named string/byte-slice types) → string
//   - all Go integer kinds → int; float32/float64 → float, except integral values up
//     to 2^53 in magnitude, which become int (encoding/json decodes every JSON number
//     to float64, and a JSON 7 must be the int 7 in a script)
//   - json.Number → int when it is an integer literal (any size), otherwise float
//   - json.RawMessage → its decoded JSON value
//   - map[string]any and any map with string, integer or bool keys → dict, with keys
//     inserted in sorted order so that iteration order is deterministic
//   - []any, []string, []map[string]any and any other slice or array → list (a nil
//     slice becomes an empty list)
//   - time.Time → time.time, time.Duration → time.duration (go.starlark.net/lib/time)
//   - tool.Content → content, tool.Result → result (the values of the content module)
//   - starlark.Value → itself
//   - structs and types implementing json.Marshaler → their JSON encoding, decoded
//
// Channels, functions and complex numbers are errors. ToStarlark is safe for
// concurrent use; it never modifies v.
func ToStarlark(v any) (starlark.Value, error) { return toStarlark(v, 0) }

func toStarlark(v any, depth int) (starlark.Value, error) {
	if depth > maxDepth {
		return nil, nestingError("the value (or it is cyclic)")
	}
	switch t := v.(type) {
	case nil:
		return starlark.None, nil
	case starlark.Value:
		return t, nil
	case bool:
		return starlark.Bool(t), nil
	case string:
		return starlark.String(t), nil
	case []byte:
		return starlark.String(t), nil
	case int:
		return starlark.MakeInt(t), nil
	case int64:
		return starlark.MakeInt64(t), nil
	case int32:
		return starlark.MakeInt64(int64(t)), nil
	case uint64:
		return starlark.MakeUint64(t), nil
	case float64:
		return floatToStarlark(t), nil
	case float32:
		return floatToStarlark(float64(t)), nil
	case json.Number:
		return numberToStarlark(t)
	case json.RawMessage:
		return decodeJSON(t, depth)
	case time.Time:
		return startime.Time(t), nil
	case time.Duration:
		return startime.Duration(t), nil
	case tool.Content:
		return NewContent(t), nil
	case tool.Result:
		return &ToolResult{r: t}, nil
	case map[string]any:
		d := starlark.NewDict(len(t))
		for _, k := range sortedKeys(t) {
			x, err := toStarlark(t[k], depth+1)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
			if err := d.SetKey(starlark.String(k), x); err != nil {
				return nil, err
			}
		}
		return d, nil
	case []any:
		elems := make([]starlark.Value, len(t))
		for i, e := range t {
			x, err := toStarlark(e, depth+1)
			if err != nil {
				return nil, fmt.Errorf("index %d: %w", i, err)
			}
			elems[i] = x
		}
		return starlark.NewList(elems), nil
	case json.Marshaler:
		return viaJSON(t, depth)
	}
	return reflectToStarlark(reflect.ValueOf(v), depth)
}

func reflectToStarlark(rv reflect.Value, depth int) (starlark.Value, error) {
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return starlark.None, nil
		}
		return toStarlark(rv.Elem().Interface(), depth+1)
	case reflect.Bool:
		return starlark.Bool(rv.Bool()), nil
	case reflect.String:
		return starlark.String(rv.String()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return starlark.MakeInt64(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return starlark.MakeUint64(rv.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return floatToStarlark(rv.Float()), nil
	case reflect.Slice, reflect.Array:
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			if rv.Kind() == reflect.Slice {
				return starlark.String(rv.Bytes()), nil
			}
			buf := make([]byte, rv.Len())
			reflect.Copy(reflect.ValueOf(buf), rv)
			return starlark.String(buf), nil
		}
		elems := make([]starlark.Value, rv.Len())
		for i := range elems {
			x, err := toStarlark(rv.Index(i).Interface(), depth+1)
			if err != nil {
				return nil, fmt.Errorf("index %d: %w", i, err)
			}
			elems[i] = x
		}
		return starlark.NewList(elems), nil
	case reflect.Map:
		type entry struct {
			key  starlark.Value
			sort string
			val  reflect.Value
		}
		entries := make([]entry, 0, rv.Len())
		iter := rv.MapRange()
		for iter.Next() {
			k, err := mapKeyToStarlark(iter.Key())
			if err != nil {
				return nil, err
			}
			entries = append(entries, entry{key: k, sort: k.String(), val: iter.Value()})
		}
		sort.Slice(entries, func(i, j int) bool { return entries[i].sort < entries[j].sort })
		d := starlark.NewDict(len(entries))
		for _, e := range entries {
			x, err := toStarlark(e.val.Interface(), depth+1)
			if err != nil {
				return nil, fmt.Errorf("key %s: %w", e.sort, err)
			}
			if err := d.SetKey(e.key, x); err != nil {
				return nil, err
			}
		}
		return d, nil
	case reflect.Struct:
		return viaJSON(rv.Interface(), depth)
	}
	return nil, fmt.Errorf("cannot convert Go %s to a Starlark value", rv.Type())
}

func mapKeyToStarlark(k reflect.Value) (starlark.Value, error) {
	switch k.Kind() {
	case reflect.String:
		return starlark.String(k.String()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return starlark.MakeInt64(k.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return starlark.MakeUint64(k.Uint()), nil
	case reflect.Bool:
		return starlark.Bool(k.Bool()), nil
	}
	return nil, fmt.Errorf("cannot convert a map with %s keys to a Starlark dict", k.Type())
}

// viaJSON converts values Helix has no direct mapping for (structs from Go DSL users,
// custom marshalers) through their JSON encoding, which is the shape they would have
// on the wire anyway.
func viaJSON(v any, depth int) (starlark.Value, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("cannot convert Go %T to a Starlark value: %w", v, err)
	}
	return decodeJSON(b, depth)
}

func decodeJSON(b []byte, depth int) (starlark.Value, error) {
	x, err := unmarshalJSON(b)
	if err != nil {
		return nil, err
	}
	return toStarlark(x, depth+1)
}

// unmarshalJSON decodes one JSON value keeping numbers as json.Number, so that
// integers beyond 2^53 keep their exact value.
func unmarshalJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err != nil {
		return nil, fmt.Errorf("decode json: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("decode json: unexpected data after the first value")
	}
	return x, nil
}

func numberToStarlark(n json.Number) (starlark.Value, error) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, ok := new(big.Int).SetString(s, 10); ok {
			return starlark.MakeBigInt(i), nil
		}
	}
	f, err := n.Float64()
	if err != nil {
		return nil, fmt.Errorf("invalid JSON number %q: %w", s, err)
	}
	return starlark.Float(f), nil
}

// maxExactInt is 2^53, the largest magnitude below which every integer is exact in a float64.
const maxExactInt = 1 << 53

// floatToStarlark turns integral floats into ints. encoding/json, which most
// components and the MCP SDK use, decodes every JSON number into a float64; without
// this a JSON 7 would be 7.0 in scripts, print as "7.0" and fail in range() or as an
// index.
func floatToStarlark(f float64) starlark.Value {
	if f == math.Trunc(f) && math.Abs(f) <= maxExactInt {
		return starlark.MakeInt64(int64(f))
	}
	return starlark.Float(f)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// FromStarlark converts a Starlark value into the JSON-like Go values Helix bodies
// are made of:
//   - None → nil; bool → bool; string → string; bytes → []byte
//   - int → int64 when it fits, otherwise the nearest float64 (JSON has one number
//     type; consumers switch on int64 and float64 only)
//   - float → float64
//   - list, tuple and set → []any
//   - dict → map[string]any; keys must be strings, ints, floats or bools, and
//     non-string keys are written as their Starlark text (1 → "1")
//   - time.time → time.Time, time.duration → time.Duration
//   - content → tool.Content, result → tool.Result (the content module's values)
//
// Functions, modules and other values with no data representation are errors.
// FromStarlark does not modify v and is safe for concurrent use on frozen values.
func FromStarlark(v starlark.Value) (any, error) { return fromStarlark(v, 0) }

func fromStarlark(v starlark.Value, depth int) (any, error) {
	if depth > maxDepth {
		return nil, nestingError("the value (or it is cyclic)")
	}
	switch t := v.(type) {
	case nil, starlark.NoneType:
		return nil, nil
	case starlark.Bool:
		return bool(t), nil
	case starlark.Int:
		if i, ok := t.Int64(); ok {
			return i, nil
		}
		return float64(t.Float()), nil
	case starlark.Float:
		return float64(t), nil
	case starlark.String:
		return string(t), nil
	case starlark.Bytes:
		return []byte(t), nil
	case *starlark.List:
		return iterableFromStarlark(t, t.Len(), depth)
	case starlark.Tuple:
		return iterableFromStarlark(t, t.Len(), depth)
	case *starlark.Set:
		return iterableFromStarlark(t, t.Len(), depth)
	case *headerDict:
		return fromStarlark(t.d, depth)
	case *starlark.Dict:
		out := make(map[string]any, t.Len())
		for _, item := range t.Items() {
			k, err := dictKey(item[0])
			if err != nil {
				return nil, err
			}
			x, err := fromStarlark(item[1], depth+1)
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", k, err)
			}
			out[k] = x
		}
		return out, nil
	case startime.Time:
		return time.Time(t), nil
	case startime.Duration:
		return time.Duration(t), nil
	case *Content:
		return t.c, nil
	case *ToolResult:
		return t.r, nil
	}
	return nil, fmt.Errorf("cannot convert %s to a Go value (only None, bool, int, float, string, bytes, list, tuple, set, dict, time, duration, content and result convert)", v.Type())
}

func iterableFromStarlark(it starlark.Iterable, n, depth int) (any, error) {
	out := make([]any, 0, n)
	iter := it.Iterate()
	defer iter.Done()
	var x starlark.Value
	for i := 0; iter.Next(&x); i++ {
		g, err := fromStarlark(x, depth+1)
		if err != nil {
			return nil, fmt.Errorf("index %d: %w", i, err)
		}
		out = append(out, g)
	}
	return out, nil
}

func dictKey(k starlark.Value) (string, error) {
	switch t := k.(type) {
	case starlark.String:
		return string(t), nil
	case starlark.Int, starlark.Float, starlark.Bool:
		return t.String(), nil
	}
	return "", fmt.Errorf("cannot convert a dict with a %s key to a Go map (keys must be strings or numbers)", k.Type())
}

// isData reports whether a global is data worth returning to the caller, as opposed
// to a helper function or module the script defined or aliased.
func isData(v starlark.Value) bool {
	switch v.(type) {
	case starlark.Callable, *starlarkstruct.Module:
		return false
	}
	return true
}

// isJSONContentType reports whether a Content-Type header value names JSON:
// application/json, text/json or any structured-syntax type ending in +json.
func isJSONContentType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt = strings.ToLower(strings.TrimSpace(strings.SplitN(ct, ";", 2)[0]))
	}
	return mt == "application/json" || mt == "text/json" || strings.HasSuffix(mt, "+json")
}

// bodyToStarlark converts a message body for the `payload` global. Text bodies
// (string, []byte) are JSON-decoded only when the Content-Type header says JSON and
// the text is valid JSON; otherwise they stay text. Sniffing JSON-looking text without
// a JSON content type was rejected on purpose: an MCP tool result is text that is
// often itself JSON, and steps such as `"Summarize: " ++ payload` must see it as a
// string. Scripts that want such text parsed call json.decode(payload).
func bodyToStarlark(body any, contentType string) (starlark.Value, error) {
	var text []byte
	switch t := body.(type) {
	case string:
		text = []byte(t)
	case []byte:
		text = t
	default:
		return ToStarlark(body)
	}
	if isJSONContentType(contentType) && json.Valid(text) {
		return decodeJSON(text, 0)
	}
	return starlark.String(text), nil
}
