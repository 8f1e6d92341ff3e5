package transport

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/internal/jsonscan"
)

// The fast path for 2026-07-28 tools/call (FastToolCalls.AnswerNewEra). Such a
// call has no session: its _meta names the version, the client's capabilities and
// perhaps the client, and the go-sdk serves it in a throw-away session made from
// that _meta, then marks the result as that version's: resultType "complete" and
// the server's identity under _meta's io.modelcontextprotocol/serverInfo
// (go-sdk v1.8.0, server.go handle and mrtr.go). Without the fast path a dual-era
// server's plain 2026-07-28 call would cost that session every time. The fast
// path takes the call only when its _meta holds nothing the go-sdk would give
// another meaning to or refuse, and writes the same marks; anything else goes to
// the SDK as before. fastcall_test.go checks the answers against the SDK's.

// newEra reports a call made with protocol 2026-07-28 or later.
func (fc *fastCall) newEra() bool { return fc.ProtocolVersion >= statelessProtocol }

// newEraCallMeta returns a 2026-07-28 call's _meta as the go-sdk decodes it, when it
// holds the version (the POST's), the client's capabilities, perhaps the client's
// identity and the caller's trace context, each as the go-sdk accepts it; else
// false. A log level (its messages need the SDK's session) or any other key is
// false, and so is a value the go-sdk would refuse: the SDK then answers.
//
// It reads the usual _meta of a client in one pass (scanNewEraMeta) and leaves
// the rest to decodeNewEraMeta, which decides alike. raw must be valid JSON: both
// callers take it from params that json.Valid or encoding/json accepted, so it is
// not checked again here.
func newEraCallMeta(raw json.RawMessage, version string) (sdk.Meta, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	if meta, taken, sure := scanNewEraMeta(raw, version, true); sure {
		return meta, taken
	}
	return decodeNewEraMeta(raw, version)
}

// takeNewEraMeta is newEraCallMeta for the fast path, which decodes a _meta only
// when something reads it (ToolCall.CallMeta): a _meta the one-pass scan takes is
// checked, not decoded, and comes back as lazy; one it is unsure of is decoded
// here, as newEraCallMeta does.
func takeNewEraMeta(raw json.RawMessage, version string) (meta sdk.Meta, lazy json.RawMessage, taken bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, nil, false
	}
	if _, taken, sure := scanNewEraMeta(raw, version, false); sure {
		if !taken {
			return nil, nil, false
		}
		return nil, raw, true
	}
	meta, taken = decodeNewEraMeta(raw, version)
	return meta, nil, taken
}

// scanNewEraMeta is newEraCallMeta's one-pass reading: members whose values are
// plain strings, capabilities of the usual shapes (capabilityTaken), and a client
// identity of plain strings
// under the names of sdk.Implementation's string fields. sure is false for
// anything else (escapes, repeated keys, other values, more capabilities than
// maxScannedCaps), and decodeNewEraMeta decides; taken is false for a refusal.
// With build the taken _meta is returned as the go-sdk decodes it; without, it is
// only checked, which allocates nothing.
func scanNewEraMeta(raw []byte, version string, build bool) (meta sdk.Meta, taken, sure bool) {
	if build {
		meta = make(sdk.Meta, 4)
	}
	var seen metaKeys
	v := jsonscan.Members(raw, func(key, val []byte) jsonscan.Verdict {
		k := metaKey(key)
		if !seen.add(k) {
			return jsonscan.Unsure // a repeated key: the last one counts
		}
		switch k {
		case sdk.MetaKeyProtocolVersion, "traceparent", "tracestate":
			if val[0] != '"' {
				return jsonscan.Refuse
			}
			s, ok := jsonscan.PlainString(val)
			switch {
			case !ok:
				return jsonscan.Unsure
			case k == sdk.MetaKeyProtocolVersion && string(s) != version:
				return jsonscan.Refuse
			case !build:
			case k == sdk.MetaKeyProtocolVersion:
				meta[k] = boxedVersion(version)
			default:
				meta[k] = string(s)
			}
		case sdk.MetaKeyClientCapabilities:
			var caps map[string]any
			if build {
				caps = map[string]any{}
			}
			var names [maxScannedCaps][]byte
			n := 0
			if jsonscan.Members(val, func(name, v []byte) jsonscan.Verdict {
				// A name that is not valid UTF-8 is decoded with U+FFFD in
				// its place by encoding/json: let it decide.
				if n == len(names) || slices.ContainsFunc(names[:n], func(b []byte) bool { return bytes.Equal(b, name) }) ||
					!utf8.Valid(name) || !capabilityTaken(name, v) {
					return jsonscan.Unsure
				}
				names[n] = name
				n++
				if build {
					var c any = map[string]any{}
					if !emptyObject(v) && json.Unmarshal(v, &c) != nil {
						return jsonscan.Unsure
					}
					caps[string(name)] = c
				}
				return jsonscan.On
			}) != jsonscan.On {
				return jsonscan.Unsure
			}
			if build {
				meta[k] = caps
			}
		case sdk.MetaKeyClientInfo:
			var info map[string]any
			if build {
				info = map[string]any{}
			}
			var fields metaKeys
			if jsonscan.Members(val, func(name, v []byte) jsonscan.Verdict {
				n := infoKey(name)
				if n == "" || !fields.add(n) || v[0] != '"' {
					return jsonscan.Unsure
				}
				s, ok := jsonscan.PlainString(v)
				if !ok {
					return jsonscan.Unsure
				}
				if build {
					info[n] = string(s)
				}
				return jsonscan.On
			}) != jsonscan.On {
				return jsonscan.Unsure
			}
			if build {
				meta[k] = info
			}
		default:
			return jsonscan.Refuse
		}
		return jsonscan.On
	})
	switch v {
	case jsonscan.Refuse:
		return nil, false, true
	case jsonscan.Unsure:
		return nil, false, false
	}
	if !seen.has(sdk.MetaKeyProtocolVersion) || !seen.has(sdk.MetaKeyClientCapabilities) {
		return nil, false, true
	}
	return meta, true, true
}

// capabilityTaken reports whether scanNewEraMeta takes v, the value of the client
// capability name, as the go-sdk reads it into sdk.ClientCapabilities: an empty
// object for any capability; for the usual non-empty ones, what clients send
// (the go-sdk's own client declares roots with listChanged and elicitation with
// form): roots with a boolean listChanged, elicitation and sampling with empty
// objects under their known members, and any object for extensions and
// experimental, which the go-sdk keeps as maps. Anything else is left to
// decodeNewEraMeta.
func capabilityTaken(name, v []byte) bool {
	if emptyObject(v) {
		return true
	}
	switch string(name) {
	case "extensions", "experimental":
		return v[0] == '{'
	case "roots":
		return onlyMembers(v, func(k, mv []byte) bool {
			return string(k) == "listChanged" && (string(mv) == "true" || string(mv) == "false")
		})
	case "elicitation":
		return onlyMembers(v, func(k, mv []byte) bool { return (string(k) == "form" || string(k) == "url") && emptyObject(mv) })
	case "sampling":
		return onlyMembers(v, func(k, mv []byte) bool { return (string(k) == "context" || string(k) == "tools") && emptyObject(mv) })
	}
	return false
}

// onlyMembers reports whether v is an object whose members all satisfy ok, none
// named twice (a repeated member is left to encoding/json).
func onlyMembers(v []byte, ok func(k, mv []byte) bool) bool {
	if v[0] != '{' {
		return false
	}
	var seen [2][]byte
	n := 0
	return jsonscan.Members(v, func(k, mv []byte) jsonscan.Verdict {
		if n == len(seen) || slices.ContainsFunc(seen[:n], func(b []byte) bool { return bytes.Equal(b, k) }) || !ok(k, mv) {
			return jsonscan.Unsure
		}
		seen[n] = k
		n++
		return jsonscan.On
	}) == jsonscan.On
}

// maxScannedCaps bounds the client capabilities scanNewEraMeta reads itself (the
// go-sdk knows six); a _meta with more is left to decodeNewEraMeta.
const maxScannedCaps = 8

// metaKeys is a small set of the keys metaKey and infoKey return (constants, so
// adding one copies nothing): _meta's five known keys, the identity's three.
type metaKeys struct {
	keys [8]string
	n    int
}

// add puts k in the set; false when it was there already (or the set is full).
func (s *metaKeys) add(k string) bool {
	if s.has(k) || s.n == len(s.keys) {
		return false
	}
	s.keys[s.n] = k
	s.n++
	return true
}

func (s *metaKeys) has(k string) bool { return slices.Contains(s.keys[:s.n], k) }

// metaKey is key as a string: the keys scanNewEraMeta takes are constants, so
// that reading them allocates nothing; any other key is copied (and refused).
func metaKey(key []byte) string {
	switch string(key) {
	case sdk.MetaKeyProtocolVersion:
		return sdk.MetaKeyProtocolVersion
	case sdk.MetaKeyClientCapabilities:
		return sdk.MetaKeyClientCapabilities
	case sdk.MetaKeyClientInfo:
		return sdk.MetaKeyClientInfo
	case "traceparent":
		return "traceparent"
	case "tracestate":
		return "tracestate"
	}
	return string(key)
}

// infoKey is one of the client identity's string fields, "" for any other key.
func infoKey(name []byte) string {
	switch string(name) {
	case "name":
		return "name"
	case "version":
		return "version"
	case "title":
		return "title"
	}
	return ""
}

// boxedVersions are the protocol versions as the interface values a Meta holds,
// made once: a version read from a call is one of them (scanNewEraMeta refuses
// any other), and putting a string into an interface would allocate per call.
var boxedVersions = func() map[string]any {
	m := make(map[string]any, len(knownProtocolVersions))
	for _, v := range knownProtocolVersions {
		m[v] = v
	}
	return m
}()

// boxedVersion is version as an interface value, from boxedVersions when known.
func boxedVersion(version string) any {
	if b, ok := boxedVersions[version]; ok {
		return b
	}
	return version
}

// emptyObject reports whether v is {} (white space inside allowed).
func emptyObject(v []byte) bool {
	return len(v) >= 2 && v[0] == '{' && jsonscan.SkipSpace(v, 1) == len(v)-1
}

// decodeNewEraMeta is newEraCallMeta's reading through encoding/json.
func decodeNewEraMeta(raw json.RawMessage, version string) (sdk.Meta, bool) {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return nil, false
	}
	meta := make(sdk.Meta, len(fields))
	for k, v := range fields {
		switch k {
		case sdk.MetaKeyProtocolVersion:
			var s string
			if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil || s != version {
				return nil, false
			}
			meta[k] = s
			continue
		case "traceparent", "tracestate":
			var s string
			if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
				return nil, false
			}
			meta[k] = s
			continue
		case sdk.MetaKeyClientCapabilities:
			// The go-sdk's reading is case-sensitive; encoding/json's is not, so
			// it reads every member the go-sdk reads, and a value it accepts the
			// go-sdk accepts too.
			var caps sdk.ClientCapabilities
			if !isObject(v) || json.Unmarshal(v, &caps) != nil {
				return nil, false
			}
		case sdk.MetaKeyClientInfo:
			var impl sdk.Implementation
			if !isObject(v) || json.Unmarshal(v, &impl) != nil {
				return nil, false
			}
		default:
			return nil, false
		}
		var val any
		if json.Unmarshal(v, &val) != nil {
			return nil, false
		}
		meta[k] = val
	}
	if _, ok := meta[sdk.MetaKeyProtocolVersion]; !ok {
		return nil, false
	}
	if _, ok := meta[sdk.MetaKeyClientCapabilities]; !ok {
		return nil, false
	}
	return meta, true
}

// resultFields are the fields of sdk.CallToolResult that newEraResult knows: the
// exported ones it copies or writes itself, and the unexported ones it replaces
// (resultType) or that are never encoded (err).
var resultFields = []string{"Meta", "Content", "StructuredContent", "IsError", "InputRequests", "RequestState", "resultType", "err"}

func isObject(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '{'
}

// newEraResult encodes res as the go-sdk answers a 2026-07-28 tools/call: its
// resultType input_required when it carries input requests (and an internal error
// when it has content besides them), else complete, and the server's identity
// added to _meta unless there already. It changes res's _meta.
func (f *FastToolCalls) newEraResult(res *sdk.CallToolResult) (json.RawMessage, *jsonrpc.Error) {
	if data, ok := f.newEraPlainResult(res); ok {
		return data, nil
	}
	resultType := "complete"
	if res.InputRequests != nil {
		if len(res.Content) > 0 || res.StructuredContent != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "server bug: result has both content and inputRequests"}
		}
		resultType = "input_required"
	}
	if _, ok := res.Meta[sdk.MetaKeyServerInfo]; !ok {
		if res.Meta == nil {
			res.Meta = sdk.Meta{}
		}
		res.Meta[sdk.MetaKeyServerInfo] = f.serverInfo
	}
	// MarshalJSON writes the wire struct: res's fields, then resultType when set,
	// then inputRequests. The result is encoded without the last two (a result
	// relayed from another server may have a resultType of its own, which the
	// go-sdk replaces), and they are appended in that order. resultFields lists
	// what is copied; TestNewEraResultCopiesEveryField fails when a go-sdk update
	// adds a field.
	plain := sdk.CallToolResult{Meta: res.Meta, Content: res.Content, StructuredContent: res.StructuredContent,
		IsError: res.IsError, RequestState: res.RequestState}
	data, err := plain.MarshalJSON()
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the tool result: " + err.Error()}
	}
	data = append(data[:len(data)-1], `,"resultType":"`...)
	data = append(data, resultType...)
	data = append(data, '"')
	if res.InputRequests != nil {
		ir, err := json.Marshal(res.InputRequests)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "encoding the input requests: " + err.Error()}
		}
		data = append(append(data, `,"inputRequests":`...), ir...)
	}
	return append(data, '}'), nil
}

// newEraPlainResult is newEraResult for a result of the usual shape
// (plainResultParts), written by hand as fastcall_result.go writes it: the
// server's identity as _meta, then the result's fields, then resultType.
func (f *FastToolCalls) newEraPlainResult(res *sdk.CallToolResult) (json.RawMessage, bool) {
	if !plainResults || f.newEraHead == nil {
		return nil, false
	}
	scratch := structuredScratch.Get().(*[]byte)
	defer putStructuredScratch(scratch)
	structured, size, ok := plainResultParts(res, scratch)
	if !ok {
		return nil, false
	}
	out := make([]byte, 0, len(f.newEraHead)+size+len(newEraPlainTail))
	return f.appendNewEraPlainResult(out, res, structured), true
}

// newEraPlainEnvelope is plainResultEnvelope for a 2026-07-28 call: the whole
// response carrying newEraPlainResult's result, in one allocation, and where the
// result starts in it.
func (f *FastToolCalls) newEraPlainEnvelope(id jsonrpc.ID, res *sdk.CallToolResult) (env []byte, start int, ok bool) {
	if !plainResults || f.newEraHead == nil {
		return nil, 0, false
	}
	scratch := structuredScratch.Get().(*[]byte)
	defer putStructuredScratch(scratch)
	structured, size, ok := plainResultParts(res, scratch)
	if !ok {
		return nil, 0, false
	}
	env = appendEnvelopeHead(make([]byte, 0, size+len(f.newEraHead)+len(newEraPlainTail)+48), id)
	start = len(env)
	env = f.appendNewEraPlainResult(env, res, structured)
	return append(env, '}'), start, true
}

// newEraPlainTail ends a plain 2026-07-28 result.
const newEraPlainTail = `,"resultType":"complete"}`

// appendNewEraPlainResult appends a result plainResultParts accepted, as
// newEraResult encodes it.
func (f *FastToolCalls) appendNewEraPlainResult(dst []byte, res *sdk.CallToolResult, structured []byte) []byte {
	dst = append(dst, f.newEraHead...)
	fields := len(dst)
	dst = appendResultBody(dst, res, structured)
	// appendResultBody writes an object: its members go after _meta's, its
	// opening brace becoming their comma, and resultType after them.
	dst[fields] = ','
	return append(dst[:len(dst)-1], newEraPlainTail...)
}
