// Package jsondepth checks JSON nesting the way the go-sdk's JSON-RPC decoder
// does before decoding, so that Helix's own decoders (the server's fast path and
// envelope decoding, the client's request tracking) refuse exactly what the SDK
// refuses.
package jsondepth

// SDKMax is the nesting the go-sdk's decoder accepts.
const SDKMax = 1000

// DeeperThan reports whether objects and arrays in data nest deeper than max
// (strings skipped), counted as the go-sdk's decoder counts.
func DeeperThan(data []byte, max int) bool {
	depth := 0
	inString, escaped := false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > max {
				return true
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return false
}
