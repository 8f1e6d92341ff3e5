// Package plainjson encodes the values json.Unmarshal gives an any (nil, bool,
// float64, string, map[string]any, []any) exactly as json.Marshal does, without
// reflection and without allocating beyond dst. A tool's structured result is such
// a value, and it is encoded on every call: once as the text copy of the result
// (internal/tool), once as structuredContent (the MCP transport's fast path). Anything
// else is refused (ok false) and left to json.Marshal by the caller.
// FuzzAppendLikeMarshal holds it to json.Marshal byte for byte.
package plainjson

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// MaxDepth bounds the nesting Append encodes; deeper values are refused.
const MaxDepth = 64

// Append appends v as json.Marshal encodes it (HTML-escaped, keys sorted), for the
// plain values listed in the package comment. ok is false for any other value
// (named types included), a NaN or infinity, or nesting deeper than MaxDepth; dst
// must then be ignored.
func Append(dst []byte, v any) (_ []byte, ok bool) { return appendValue(dst, v, 0, true) }

// AppendUnescaped is Append without the HTML escaping of <, > and &: what a
// json.Encoder with SetEscapeHTML(false) writes, less its trailing newline. For JSON
// that is read as text (a tool result's text copy, which a model reads), where
// \u003c in place of < is only noise.
func AppendUnescaped(dst []byte, v any) (_ []byte, ok bool) { return appendValue(dst, v, 0, false) }

func appendValue(dst []byte, v any, depth int, html bool) (_ []byte, ok bool) {
	if depth > MaxDepth {
		return dst, false
	}
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		return strconv.AppendBool(dst, x), true
	case float64:
		return AppendFloat(dst, x)
	case string:
		return appendString(dst, x, html), true
	case map[string]any:
		if x == nil {
			return append(dst, "null"...), true
		}
		return appendObject(dst, x, depth, html)
	case []any:
		if x == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendValue(dst, e, depth+1, html); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	}
	return dst, false
}

// appendObject writes m's members in the order of their keys, as json.Marshal does.
func appendObject(dst []byte, m map[string]any, depth int, html bool) (_ []byte, ok bool) {
	var small [16]string
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	// Insertion sort: objects are small, and sort.Strings would make keys escape.
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, k, html)
		dst = append(dst, ':')
		if dst, ok = appendValue(dst, m[k], depth+1, html); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// AppendFloat appends f as encoding/json encodes a float64 (ES6 number to string);
// false for NaN and infinities, which json.Marshal refuses.
func AppendFloat(dst []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, false
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, true
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as encoding/json encodes a string with HTML escaping, as
// json.Marshal does it.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s, true) }

func appendString(dst []byte, s string, html bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && (!html || b != '<' && b != '>' && b != '&') {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
