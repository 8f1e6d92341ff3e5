package transport

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/internal/jsonscan"
)

// callFields are the members of a call's params that the version and header
// checks read (versions.go, streamable.go): found in one pass over the params,
// so that deciding a request's era costs no decoding of its arguments.
type callFields struct {
	// object: the params are a JSON object (absent params count as one);
	// otherwise the go-sdk answers them with invalid params.
	object bool
	// metaVersion is _meta["io.modelcontextprotocol/protocolVersion"] as sent;
	// nil when absent.
	metaVersion json.RawMessage
	// protocolVersion is initialize's, name a tool's or prompt's, uri a
	// resource's: as sent, nil when absent.
	protocolVersion, name, uri json.RawMessage
	// args and meta are a tools/call's arguments and _meta as sent, and shape
	// what else the params hold: the fast path takes a call from them (match)
	// rather than walk the params again.
	args, meta json.RawMessage
	shape      callShape
}

// callShape is what a call's params hold besides name, arguments and _meta.
type callShape uint8

const (
	// shapeUnread: not known (a repeated member, or params the scan left to
	// encoding/json); the fast path reads the params itself.
	shapeUnread callShape = iota
	// shapeCall: nothing but name, arguments and _meta, each at most once.
	shapeCall
	// shapeOther: another member too, which leaves the call to the SDK.
	shapeOther
)

// readCallFields reads the fields of req's params. Plain bodies are walked with
// jsonscan (params of a decoded message are valid JSON); anything it is unsure
// of (an escaped key, a _meta that is no object) is decoded by encoding/json,
// which then decides as it always did.
func readCallFields(req *jsonrpc.Request) callFields {
	f := callFields{object: true}
	if len(req.Params) == 0 {
		return f
	}
	if scanCallFields(req.Params, &f) {
		return f
	}
	var p struct {
		Meta            map[string]json.RawMessage `json:"_meta"`
		ProtocolVersion json.RawMessage            `json:"protocolVersion"`
		Name            json.RawMessage            `json:"name"`
		URI             json.RawMessage            `json:"uri"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return callFields{}
	}
	return callFields{object: true, metaVersion: p.Meta[sdk.MetaKeyProtocolVersion],
		protocolVersion: p.ProtocolVersion, name: p.Name, uri: p.URI}
}

// foldsToField tells whether key, not one of the fields, may still be one for
// encoding/json, which matches struct fields case-insensitively (Unicode folds
// included: hence any non-ASCII key).
func foldsToField(key []byte) bool {
	for _, b := range key {
		if b >= utf8.RuneSelf {
			return true
		}
	}
	for _, field := range []string{"_meta", "protocolVersion", "name", "uri"} {
		if strings.EqualFold(string(key), field) {
			return true
		}
	}
	return false
}

// scanCallFields walks params with jsonscan into f; false when encoding/json must
// decide. The params of a message the go-sdk's decoder accepted are valid JSON,
// which jsonscan needs; should some not be, the walk may run past their end, and
// then too encoding/json decides (and refuses them) rather than the server panic.
func scanCallFields(params json.RawMessage, f *callFields) (sure bool) {
	defer func() {
		if recover() != nil {
			*f, sure = callFields{object: true}, false
		}
	}()
	repeated, other := false, false
	verdict := jsonscan.Members(params, func(key, val []byte) jsonscan.Verdict {
		switch string(key) {
		case "_meta":
			repeated = repeated || f.meta != nil
			f.meta = val
			// A repeated _meta adds to the earlier one, as encoding/json
			// (and so the go-sdk) decodes it into a map.
			return jsonscan.Members(val, func(k, v []byte) jsonscan.Verdict {
				if string(k) == sdk.MetaKeyProtocolVersion {
					f.metaVersion = v
				}
				return jsonscan.On
			})
		case "name":
			repeated = repeated || f.name != nil
			f.name = val
		case "arguments":
			repeated = repeated || f.args != nil
			f.args = val
		case "protocolVersion":
			other = true
			f.protocolVersion = val
		case "uri":
			other = true
			f.uri = val
		default:
			other = true
			if foldsToField(key) {
				return jsonscan.Unsure // encoding/json matches "NAME" to name too
			}
		}
		return jsonscan.On
	})
	switch {
	case verdict != jsonscan.On || repeated:
		f.shape = shapeUnread
	case other:
		f.shape = shapeOther
	default:
		f.shape = shapeCall
	}
	return verdict == jsonscan.On
}

// metaVersionText is the version _meta names, "" when it names none or no string.
func (f *callFields) metaVersionText() string {
	if f.metaVersion == nil {
		return ""
	}
	v, _ := stringField(f.metaVersion)
	return v
}

// stringField is a field's string value; false when absent or no string. A known
// protocol version is returned as the constant, so that reading one, as every
// request's era check does, copies nothing.
func stringField(raw json.RawMessage) (string, bool) {
	if s, ok := jsonscan.PlainString(raw); ok {
		if v, known := knownVersion(s); known {
			return v, true
		}
		return string(s), true
	}
	var v string
	if raw == nil || json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	return v, true
}

// knownVersion is s as the constant of knownProtocolVersions it equals.
func knownVersion(s []byte) (string, bool) {
	for _, v := range knownProtocolVersions {
		if string(s) == v { // compared without copying s
			return v, true
		}
	}
	return "", false
}

// stringFieldIs tells whether raw is a JSON string (ok) and whether it is want,
// without copying it.
func stringFieldIs(raw json.RawMessage, want string) (ok, equal bool) {
	if s, plain := jsonscan.PlainString(raw); plain {
		return true, string(s) == want
	}
	v, ok := stringField(raw)
	return ok, v == want
}
