package transport

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A one-pass reader of tools/call params for match: the map decode it replaces
// (matchDecoded) was a tenth of the handler's CPU. It decides exactly as
// matchDecoded does; where that is not obvious (escaped or repeated keys) it
// says so and matchDecoded decides.

// scanParams reads params, a JSON object (params[0] == '{'), as matchDecoded
// does. ok is false when matchDecoded must decide instead. Args points into
// params, as params points into the POST body (sdkParseFlags); the body is not
// reused.
func (f *FastToolCalls) scanParams(id jsonrpc.ID, params []byte, version string) (fc *fastCall, ok bool) {
	// encoding/json's own validity check, so that invalid params are refused
	// exactly as json.Unmarshal refuses them; the walk below trusts it.
	if !json.Valid(params) {
		return nil, true
	}
	var name, args, meta []byte
	err := walkObject(params, func(key, val []byte) walkVerdict {
		var slot *[]byte
		switch string(key) {
		case "name":
			slot = &name
		case "arguments":
			slot = &args
		case "_meta":
			slot = &meta
		default:
			// Any other key refuses the call, whatever else params hold.
			return walkRefuse
		}
		if *slot != nil {
			return walkUnsure // a repeated key: the last one counts
		}
		*slot = val
		return walkOn
	})
	switch err {
	case walkRefuse:
		return nil, true
	case walkUnsure:
		return nil, false
	}
	if name == nil || name[0] != '"' {
		return nil, true
	}
	fc = &fastCall{id: id, ToolCall: ToolCall{ProtocolVersion: version, Args: args}}
	if fc.Name, ok = plainString(name); !ok && json.Unmarshal(name, &fc.Name) != nil {
		return nil, true
	}
	if meta != nil {
		if fc.Meta, ok = scanTraceMeta(meta); !ok {
			return nil, true
		}
	}
	if f.excluded[fc.Name] {
		return nil, true
	}
	return fc, true
}

// scanTraceMeta is traceMeta for a _meta taken from valid params.
func scanTraceMeta(raw []byte) (sdk.Meta, bool) {
	if raw[0] != '{' {
		return nil, false
	}
	var parent, state []byte
	v := walkObject(raw, func(key, val []byte) walkVerdict {
		var slot *[]byte
		switch string(key) {
		case "traceparent":
			slot = &parent
		case "tracestate":
			slot = &state
		default:
			return walkRefuse
		}
		if *slot != nil {
			return walkUnsure
		}
		*slot = val
		return walkOn
	})
	switch v {
	case walkRefuse:
		return nil, false
	case walkUnsure:
		return traceMeta(raw)
	}
	meta := make(sdk.Meta, 2)
	for _, m := range [...]struct {
		key string
		val []byte
	}{{"traceparent", parent}, {"tracestate", state}} {
		if m.val == nil {
			continue
		}
		if m.val[0] != '"' {
			return nil, false
		}
		s, ok := plainString(m.val)
		if !ok {
			return traceMeta(raw)
		}
		meta[m.key] = s
	}
	return meta, true
}

type walkVerdict uint8

const (
	walkOn     walkVerdict = iota // go on with the next member
	walkRefuse                    // the answer is no
	walkUnsure                    // the slow path must decide
)

// walkObject calls member for each member of data, a valid JSON object, in
// order, until it says other than walkOn, and returns that (walkOn at the end).
// A key holding an escape is walkUnsure: it may stand for another key.
func walkObject(data []byte, member func(key, val []byte) walkVerdict) walkVerdict {
	i := skipSpace(data, 1)
	if data[i] == '}' {
		return walkOn
	}
	for {
		end, escaped := stringEnd(data, i)
		if escaped {
			return walkUnsure
		}
		key := data[i+1 : end-1]
		i = skipSpace(data, skipSpace(data, end)+1) // past ':'
		end = valueEnd(data, i)
		if v := member(key, data[i:end]); v != walkOn {
			return v
		}
		i = skipSpace(data, end)
		if data[i] == '}' {
			return walkOn
		}
		i = skipSpace(data, i+1) // past ','
	}
}

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

// plainString returns the JSON string raw (quotes included) when it needs no
// unquoting: no escapes, no control characters, valid UTF-8. Then it is what
// json.Unmarshal would give.
func plainString(raw []byte) (string, bool) {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' {
		return "", false
	}
	s := raw[1 : n-1]
	ascii := true
	for _, b := range s {
		if b == '\\' || b == '"' || b < 0x20 {
			return "", false
		}
		if b >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii && !utf8.Valid(s) {
		return "", false
	}
	return string(s), true
}
