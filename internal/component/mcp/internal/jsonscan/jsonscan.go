// Package jsonscan walks the members of a JSON object that is already known to be
// valid (json.Valid), without decoding it: the server's tools/call fast path and
// the client's request tracking read a few keys of small, well-formed bodies this
// way and leave anything unusual (escaped keys, escaped strings) to encoding/json.
package jsonscan

import "unicode/utf8"

// Verdict is what a member callback of [Members] says.
type Verdict uint8

const (
	On     Verdict = iota // go on with the next member
	Refuse                // the answer is no
	Unsure                // encoding/json must decide
)

// Members calls member for each member of data, a valid JSON object (leading
// white space allowed), in order, with the key's text and the value's raw bytes,
// until it says other than On, and returns that (On at the end). A key holding an
// escape is Unsure: it may stand for another key. data not being an object is Unsure.
func Members(data []byte, member func(key, val []byte) Verdict) Verdict {
	i := SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return Unsure
	}
	i = SkipSpace(data, i+1)
	if data[i] == '}' {
		return On
	}
	for {
		end, escaped := stringEnd(data, i)
		if escaped {
			return Unsure
		}
		key := data[i+1 : end-1]
		i = SkipSpace(data, SkipSpace(data, end)+1) // past ':'
		end = valueEnd(data, i)
		if v := member(key, data[i:end]); v != On {
			return v
		}
		i = SkipSpace(data, end)
		if data[i] == '}' {
			return On
		}
		i = SkipSpace(data, i+1) // past ','
	}
}

// SkipSpace returns the index of the first byte at or after i that is not JSON
// white space.
func SkipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index just past the string starting at data[i] (a '"')
// and whether it holds a backslash.
func stringEnd(data []byte, i int) (end int, escaped bool) {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			return i + 1, escaped
		}
	}
	return len(data), escaped
}

// valueEnd returns the index just past the valid JSON value starting at data[i].
func valueEnd(data []byte, i int) int {
	switch data[i] {
	case '"':
		end, _ := stringEnd(data, i)
		return end
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				end, _ := stringEnd(data, i)
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(data)
	}
	// A number, true, false or null.
	for ; i < len(data); i++ {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return len(data)
}

// PlainString returns the text of raw, a JSON string (quotes included), when it
// needs no unquoting: no escapes, no control characters, valid UTF-8. Then it is
// what json.Unmarshal would give. The text aliases raw.
func PlainString(raw []byte) ([]byte, bool) {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' {
		return nil, false
	}
	s := raw[1 : n-1]
	ascii := true
	for _, b := range s {
		if b == '\\' || b == '"' || b < 0x20 {
			return nil, false
		}
		if b >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(s) {
		return nil, false
	}
	return s, true
}
