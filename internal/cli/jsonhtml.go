package cli

import "bytes"

// unescapeHTML rewrites the \u003c, \u003e and \u0026 escapes that Go's JSON encoders
// (the go-sdk's MarshalJSON among them) put into strings back to <, > and &, for
// output people read. data must be valid JSON; everything else is copied as is,
// other escapes included (an escaped backslash followed by "u003c" stays as it was).
func unescapeHTML(data []byte) []byte {
	if !bytes.Contains(data, []byte(`\u00`)) {
		return data
	}
	out := make([]byte, 0, len(data))
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\' && i+1 < len(data):
			if data[i+1] == 'u' && i+5 < len(data) {
				if r, ok := htmlEscape(data[i+2 : i+6]); ok {
					out = append(out, r)
					i += 5
					continue
				}
			}
			// Any other escape is copied whole, so that its second byte (a quote, a
			// backslash) is never read as the start or end of anything.
			out = append(out, c, data[i+1])
			i++
			continue
		}
		out = append(out, c)
	}
	return out
}

// htmlEscape tells whether hex is one of the four hex digits of \u003c, \u003e or
// \u0026 (in either case) and gives the character.
func htmlEscape(hex []byte) (byte, bool) {
	if hex[0] != '0' || hex[1] != '0' {
		return 0, false
	}
	switch string(bytes.ToLower(hex[2:4])) {
	case "3c":
		return '<', true
	case "3e":
		return '>', true
	case "26":
		return '&', true
	}
	return 0, false
}
