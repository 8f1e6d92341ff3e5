package transport

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/internal/jsonscan"
)

// A one-pass reader of tools/call params for match: the map decode it replaces
// (matchDecoded) was a tenth of the handler's CPU. It decides exactly as
// matchDecoded does; where that is not obvious (escaped or repeated keys) it
// says so and matchDecoded decides.

// scanParams reads params, a JSON object (params[0] == '{'), as matchDecoded
// does. ok is false when matchDecoded must decide instead. Args points into
// params, as params points into the POST body (sdkParseFlags); the body is not
// reused.
//
// params are those of a message decodeBody accepted, which are valid JSON for
// encoding/json too (FuzzParsedParamsAreValid), so they are not checked again:
// that check was a pass over the whole params, arguments included. Should some
// not be valid, the walk may run past their end: then matchDecoded decides (and
// refuses them) rather than the server panic.
func (f *FastToolCalls) scanParams(id jsonrpc.ID, params []byte, version string) (fc *fastCall, ok bool) {
	defer func() {
		if recover() != nil {
			fc, ok = nil, false
		}
	}()
	var name, args, meta []byte
	err := jsonscan.Members(params, func(key, val []byte) jsonscan.Verdict {
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
			return jsonscan.Refuse
		}
		if *slot != nil {
			return jsonscan.Unsure // a repeated key: the last one counts
		}
		*slot = val
		return jsonscan.On
	})
	switch err {
	case jsonscan.Refuse:
		return nil, true
	case jsonscan.Unsure:
		return nil, false
	}
	return f.takeCall(id, name, args, meta, version)
}

// takeCall is scanParams after its walk: the call whose params hold name, args
// and meta (nil when absent) and nothing else. ok is false when matchDecoded
// must decide instead.
func (f *FastToolCalls) takeCall(id jsonrpc.ID, name, args, meta []byte, version string) (fc *fastCall, ok bool) {
	if name == nil || name[0] != '"' {
		return nil, true
	}
	fc = &fastCall{id: id, ToolCall: ToolCall{ProtocolVersion: version, Args: args}}
	if fc.Name, ok = plainString(name); !ok && json.Unmarshal(name, &fc.Name) != nil {
		return nil, true
	}
	switch {
	case fc.newEra():
		// The version's _meta is required; newEraCallMeta decides, as matchDecoded's
		// reading does.
		if meta == nil {
			return nil, true
		}
		if fc.Meta, fc.lazyMeta, ok = takeNewEraMeta(meta, version); !ok {
			return nil, true
		}
	case meta != nil:
		if fc.Meta, ok = scanTraceMeta(meta); !ok {
			return nil, true
		}
	}
	if f.excludes(fc.Name, version) {
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
	v := jsonscan.Members(raw, func(key, val []byte) jsonscan.Verdict {
		var slot *[]byte
		switch string(key) {
		case "traceparent":
			slot = &parent
		case "tracestate":
			slot = &state
		default:
			return jsonscan.Refuse
		}
		if *slot != nil {
			return jsonscan.Unsure
		}
		*slot = val
		return jsonscan.On
	})
	switch v {
	case jsonscan.Refuse:
		return nil, false
	case jsonscan.Unsure:
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

// plainString is the text of the JSON string raw when it needs no unquoting
// (jsonscan.PlainString).
func plainString(raw []byte) (string, bool) {
	b, ok := jsonscan.PlainString(raw)
	return string(b), ok
}
