package fastrelay

import (
	"encoding/json"

	"github.com/arvenza/helix/internal/plainjson"
)

// ErrorResult is a tool result reporting msg as an error, as the go-sdk encodes
// it.
func ErrorResult(msg string) json.RawMessage {
	b := append([]byte(nil), `{"content":[{"type":"text","text":`...)
	b = plainjson.AppendString(b, msg)
	return append(b, `}],"isError":true}`...)
}

// IsToolError reports whether a result (compact JSON, as Canonical gives)
// has "isError":true among its own members, not in a nested object.
func IsToolError(result []byte) bool {
	depth, inString := 0, false
	for i := 0; i < len(result); i++ {
		c := result[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case '"':
			const key = `"isError":true`
			if depth == 1 && len(result)-i >= len(key) && string(result[i:i+len(key)]) == key {
				// A key at the top level: the byte before it is '{' or ','.
				if p := result[i-1]; p == '{' || p == ',' {
					return true
				}
			}
			inString = true
		}
	}
	return false
}
