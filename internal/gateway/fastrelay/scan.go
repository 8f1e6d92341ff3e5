package fastrelay

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// parseMessage reads one JSON-RPC message of the upstream's answer. The
// common message, an object whose member names are written plainly, is read
// by one scan over its top level: the members stay sub-slices of data (nothing
// is decoded or copied; a result the relay passes on is never looked into),
// and only an error object or a method name with escapes is decoded. Anything
// else, a member name with escapes or one that differs only in case from a
// member the relay reads (encoding/json matches names case-insensitively), is
// read by encoding/json, so that the relay reads every message as it did
// before the scan. The returned message may share data's bytes.
func parseMessage(data []byte) (message, error) {
	if !json.Valid(data) {
		// The error encoding/json gives says what is wrong and where.
		var m message
		err := json.Unmarshal(data, &m)
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return message{}, err
	}
	if m, ok := scanMessage(data); ok {
		return m, nil
	}
	var m message // a variable of its own: only this path puts it on the heap
	err := json.Unmarshal(data, &m)
	return m, err
}

// scanMessage reads the top-level members of data, valid JSON. ok false means
// it cannot read data as encoding/json would (see parseMessage): decode it so.
func scanMessage(data []byte) (m message, ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return message{}, false // not an object: encoding/json says why
	}
	i++
	var errRaw, methodRaw []byte
	var seen [5]bool // a name given twice: encoding/json's rules for it are its own
	for {
		i = skipSpace(data, i)
		if data[i] == '}' {
			break
		}
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		// A member: its name, a string.
		end := stringEnd(data, i)
		name := data[i+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			return message{}, false
		}
		i = skipSpace(data, end)
		i = skipSpace(data, i+1) // the ':'
		vEnd := valueEnd(data, i)
		v := data[i:vEnd]
		i = vEnd
		k := -1
		switch string(name) {
		case "id":
			k, m.ID = 0, v
		case "method":
			k, methodRaw = 1, v
		case "params":
			k, m.Params = 2, v
		case "result":
			k, m.Result = 3, v
		case "error":
			k, errRaw = 4, v
		default:
			for _, known := range [...]string{"id", "method", "params", "result", "error"} {
				if len(name) == len(known) && bytes.EqualFold(name, []byte(known)) {
					return message{}, false
				}
			}
		}
		if k >= 0 {
			if seen[k] {
				return message{}, false
			}
			seen[k] = true
		}
	}
	if methodRaw != nil && string(methodRaw) != "null" {
		if methodRaw[0] != '"' {
			return message{}, false // encoding/json's error says which type
		}
		if raw := methodRaw[1 : len(methodRaw)-1]; plainASCII(raw) {
			m.Method = string(raw)
		} else {
			return message{}, false
		}
	}
	if errRaw != nil && string(errRaw) != "null" {
		e := new(jsonrpc.Error)
		if err := json.Unmarshal(errRaw, e); err != nil {
			return message{}, false
		}
		m.Error = e
	}
	return m, true
}

// plainASCII reports whether a string's bytes are its value: no escapes, and
// nothing encoding/json would replace as invalid UTF-8.
func plainASCII(raw []byte) bool {
	for _, c := range raw {
		if c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// The scanning helpers below walk JSON that json.Valid accepted, so they need
// not check its grammar.

func skipSpace(data []byte, i int) int {
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

// stringEnd returns the index after the string starting at data[i] ('"').
func stringEnd(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(data)
}

// valueEnd returns the index after the value starting at data[i].
func valueEnd(data []byte, i int) int {
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				i = stringEnd(data, i) - 1
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
	// A number, true, false or null: up to the next delimiter.
	for ; i < len(data); i++ {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}
