package fastrelay

import (
	"bytes"
	"encoding/json"
)

// Canonical returns valid JSON as encoding/json writes a json.RawMessage:
// without insignificant space, with <, >, & and U+2028/U+2029 escaped inside
// strings. That is what the go-sdk path would write for the same value, so the
// fast relay and the decoding relay answer the same bytes for an upstream that
// writes JSON as Go does, and any upstream's result is compact. raw is
// returned as it is when it is so already, which one pass over it decides.
func Canonical(raw []byte) []byte {
	if isCanonical(raw) {
		return raw
	}
	var b bytes.Buffer
	b.Grow(len(raw))
	if json.Compact(&b, raw) != nil {
		return raw // not JSON: the caller's decode refused it before
	}
	var out bytes.Buffer
	out.Grow(b.Len() + 16)
	json.HTMLEscape(&out, b.Bytes())
	return out.Bytes()
}

// isCanonical reports whether raw has no space outside strings and nothing
// HTMLEscape would change.
func isCanonical(raw []byte) bool {
	inString := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			return false
		case c == 0xE2 && i+2 < len(raw) && raw[i+1] == 0x80 && raw[i+2]&^1 == 0xA8:
			return false // U+2028, U+2029
		case inString:
			switch c {
			case '\\':
				i++ // the escaped byte cannot end the string
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return false
		}
	}
	return true
}
