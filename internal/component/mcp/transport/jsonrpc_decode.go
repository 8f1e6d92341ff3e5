package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/arvenza/helix/internal/component/mcp/internal/jsondepth"
	"math"
	"strconv"
	"sync"
	"unsafe"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdkjson "github.com/segmentio/encoding/json"
)

// Decoding of incoming JSON-RPC messages for Helix's transports (Streamable HTTP in
// streamable.go, stdio in stdio_conn.go).
//
// A message is accepted or refused exactly as the go-sdk's jsonrpc.DecodeMessage
// accepts or refuses it: the same parser (segmentio/encoding/json, which the go-sdk
// uses), the same case-sensitive field matching (`"ID"` is not `"id"`), the same
// nesting limit, the same rules for the envelope (`"id":1.0` is the integer id 1).
// FuzzDecodeLikeTheSDK checks that for arbitrary bytes. Two things differ on purpose:
//
//   - Integer ids are read exactly. The go-sdk reads every number through float64,
//     so 9007199254740993 would come back as 9007199254740992 and
//     9223372036854775807 as -9223372036854775808; Helix echoes both unchanged.
//   - A number id that is not an integer of int64 (1.5, a 30-digit integer) is
//     refused as an invalid request; the go-sdk truncates it to another id.
//   - An explicit "id": null is remembered (decoded.nullID), so that the transport
//     can answer it with -32600 Invalid Request instead of treating the request as
//     a notification (see invalidRequest).
//
// Unlike the go-sdk's decoder it parses straight from the bytes, without the
// streaming decoder's 32 KiB buffer (see docs/performance.md).

// sdkParseFlags are the flags the go-sdk's decoder sets (internal/json.NewDecoder).
// Raw messages (params, result) are not copied: they point into the request body,
// which the transports never reuse.
const sdkParseFlags = sdkjson.DontMatchCaseInsensitiveStructFields | sdkjson.DontCopyRawMessage

// wireDecode mirrors the go-sdk's decode form of a message (jsonrpc2.wireDecode),
// except that the id is kept raw so that integers can be read exactly.
type wireDecode struct {
	VersionTag string          `json:"jsonrpc"`
	ID         json.RawMessage `json:"id,omitempty"`
	Method     json.RawMessage `json:"method"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error  `json:"error,omitempty"`
}

// wireDecodes recycles decodeMessage's envelopes: one parsed into escapes to
// the heap, one allocation a message.
var wireDecodes = sync.Pool{New: func() any { return new(wireDecode) }}

// errParse marks input that is not JSON at all (-32700); other decoding errors are
// valid JSON that is not a JSON-RPC message (-32600).
var errParse = errors.New("parse error")

// errIDNotInteger refuses a number id that is not an integer of int64 (see
// decodeID): -32600, id null.
var errIDNotInteger = errors.New("invalid ID: an MCP id is a string or an integer of at most 64 bits, not")

// decodedBody is one POST body or stdio line.
type decodedBody struct {
	msgs  []jsonrpc.Message
	batch bool
	// nullID lists the requests (by index in msgs) that carried an explicit
	// "id": null; they are invalid requests, not notifications.
	nullID []int
	// Batches only: refused are the elements that are no JSON-RPC message
	// (answered with their error in place, id null), pos[i] is the position of
	// msgs[i] in the batch and size the batch's length.
	refused []refusedElement
	pos     []int
	size    int
}

// refusedElement is an element of a batch answered with an error where it stood.
type refusedElement struct {
	at  int
	err *jsonrpc.Error
}

// decodeBody reads one message or a batch (a JSON array of messages) the way the
// go-sdk's transports do (readBatch): an array is a batch, each element decoded
// like a single message; an empty batch is an error.
func decodeBody(data []byte) (decodedBody, error) {
	if jsondepth.DeeperThan(data, sdkMaxJSONDepth) {
		return decodedBody{}, fmt.Errorf("%w: exceeded maximum nesting depth of %d", errParse, sdkMaxJSONDepth)
	}
	if trimmed := bytes.TrimLeft(data, " \t\r\n"); len(trimmed) > 0 && trimmed[0] == '[' {
		var raws []json.RawMessage
		if _, err := sdkjson.Parse(data, &raws, sdkParseFlags); err == nil {
			if len(raws) == 0 {
				return decodedBody{batch: true}, errors.New("empty batch")
			}
			// Each element stands alone (JSON-RPC 2.0 batches): one that is no
			// message gets its error in place, the others are served.
			body := decodedBody{batch: true, msgs: make([]jsonrpc.Message, 0, len(raws)), size: len(raws)}
			for i, raw := range raws {
				m, nullID, err := decodeShallow(raw)
				if err != nil {
					body.refused = append(body.refused, refusedElement{at: i, err: parseErrorResponse(fmt.Errorf("batch element %d: %w", i, err))})
					continue
				}
				if nullID {
					body.nullID = append(body.nullID, len(body.msgs))
				}
				body.msgs = append(body.msgs, m)
				body.pos = append(body.pos, i)
			}
			return body, nil
		}
	}
	m, nullID, err := decodeShallow(data)
	if err != nil {
		return decodedBody{}, err
	}
	body := decodedBody{msgs: []jsonrpc.Message{m}}
	if nullID {
		body.nullID = []int{0}
	}
	return body, nil
}

// decodeMessage decodes one message as jsonrpc.DecodeMessage does (accepting and
// refusing the same input), with exact integer ids. nullID reports an explicit
// "id": null on a request. Like the go-sdk's decoder it reads the first JSON value
// and ignores what follows; transports that must refuse trailing data check it
// themselves.
func decodeMessage(data []byte) (m jsonrpc.Message, nullID bool, err error) {
	if jsondepth.DeeperThan(data, sdkMaxJSONDepth) {
		return nil, false, fmt.Errorf("%w: exceeded maximum nesting depth of %d", errParse, sdkMaxJSONDepth)
	}
	return decodeShallow(data)
}

// decodeShallow is decodeMessage for data whose nesting is known to be within
// the bound: a message of a body decodeBody checked as a whole (no part of a
// body nests deeper than the body), so that it is not walked again.
func decodeShallow(data []byte) (m jsonrpc.Message, nullID bool, err error) {
	w := wireDecodes.Get().(*wireDecode)
	defer func() {
		*w = wireDecode{} // holds nothing of data while pooled
		wireDecodes.Put(w)
	}()
	if _, err := sdkjson.Parse(data, w, sdkParseFlags); err != nil {
		if _, ok := err.(*sdkjson.SyntaxError); ok {
			return nil, false, fmt.Errorf("%w: %v", errParse, err)
		}
		return nil, false, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if w.VersionTag != "2.0" {
		return nil, false, fmt.Errorf("invalid message version tag %q; expected %q", w.VersionTag, "2.0")
	}
	id, err := decodeID(w.ID)
	if err != nil {
		return nil, false, err
	}
	if len(w.Method) > 0 {
		method, err := decodeString(w.Method)
		if err != nil {
			return nil, false, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: w.Params}, string(w.ID) == "null", nil
	}
	if !id.IsValid() {
		return nil, false, errors.New("invalid request: neither a request (method) nor a response (id)")
	}
	if w.Error != nil {
		return &jsonrpc.Response{ID: id, Error: w.Error}, false, nil
	}
	return &jsonrpc.Response{ID: id, Result: w.Result}, false, nil
}

// decodeString reads a JSON string (or null, as ""), taking the short way for the
// usual plain ASCII method names.
func decodeString(raw json.RawMessage) (string, error) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' {
		plain := true
		for _, b := range raw[1 : n-1] {
			if b == '\\' || b == '"' || b < 0x20 || b >= 0x80 {
				plain = false
				break
			}
		}
		if plain {
			return internedMethod(raw[1 : n-1]), nil
		}
	}
	var s string
	_, err := sdkjson.Parse(raw, &s, sdkParseFlags)
	return s, err
}

// internedMethod is string(b), without an allocation for the methods every
// session sends (a switch on string(b) compares without converting).
func internedMethod(b []byte) string {
	switch string(b) {
	case "tools/call":
		return "tools/call"
	case "tools/list":
		return "tools/list"
	case "initialize":
		return "initialize"
	case "notifications/initialized":
		return "notifications/initialized"
	case "ping":
		return "ping"
	}
	return string(b)
}

// decodeID reads a request id as jsonrpc.MakeID reads the go-sdk's decoded value
// (null or absent: no id; a string; a number), except that an integer literal
// that fits int64 is taken exactly rather than through float64, and a number that
// is no such integer (1.5, 1e30) is refused rather than truncated.
func decodeID(raw json.RawMessage) (jsonrpc.ID, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return jsonrpc.ID{}, nil
	}
	switch c := raw[0]; {
	case c == '"':
		s, err := decodeString(raw)
		if err != nil {
			return jsonrpc.ID{}, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
		}
		return jsonrpc.MakeID(s)
	case c == '-' || (c >= '0' && c <= '9'):
		// The go-sdk decodes the number as a float64 (refusing what ParseFloat
		// refuses, such as 1e400) and truncates it to int64.
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return jsonrpc.ID{}, fmt.Errorf("%w: invalid ID %s", errParse, raw)
		}
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return int64ID(n), nil
		}
		// Other number forms are taken when they are an integer float64 holds
		// exactly (1.0, 1e3). MCP ids are strings or integers: 1.5 or an
		// integer beyond int64 would be answered under another id (1,
		// -9223372036854775808), which the client cannot match, so they are
		// invalid requests (answered with id null).
		if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return jsonrpc.ID{}, fmt.Errorf("%w: %s", errIDNotInteger, raw)
		}
		return int64ID(int64(f)), nil
	}
	return jsonrpc.ID{}, fmt.Errorf("invalid ID %s: want a string, a number or null", raw)
}

// notificationMethod tells whether a method is an MCP notification, which is sent
// without id. Every other method is a request and needs one.
func notificationMethod(method string) bool {
	return len(method) > len("notifications/") && method[:len("notifications/")] == "notifications/"
}

// invalidRequest returns the -32600 error for a request that must be refused before
// it reaches the session: an explicit "id": null, or a request method (anything but
// notifications/…) without id, which the session would silently take for a
// notification and never answer. nil when m is fine.
func invalidRequest(m jsonrpc.Message, nullID bool) *jsonrpc.Error {
	req, ok := m.(*jsonrpc.Request)
	if !ok {
		return nil
	}
	switch {
	case nullID:
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: id must be a string or an integer, not null"}
	case !req.IsCall() && !notificationMethod(req.Method):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("Invalid Request: %q is a request and needs an id", req.Method)}
	}
	return nil
}

// refuseInvalid moves the messages of a batch that invalidRequest refuses to
// refused, answered in place.
func (b *decodedBody) refuseInvalid() {
	if !b.batch {
		return
	}
	msgs, pos := b.msgs[:0], b.pos[:0]
	for i, m := range b.msgs {
		if e := invalidRequest(m, containsInt(b.nullID, i)); e != nil {
			b.refused = append(b.refused, refusedElement{at: b.pos[i], err: e})
			continue
		}
		msgs, pos = append(msgs, m), append(pos, b.pos[i])
	}
	b.msgs, b.pos, b.nullID = msgs, pos, nil
}

// check applies invalidRequest to every message of a body and returns the first
// offence.
func (b *decodedBody) check() *jsonrpc.Error {
	for i, m := range b.msgs {
		if e := invalidRequest(m, containsInt(b.nullID, i)); e != nil {
			return e
		}
	}
	return nil
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// parseErrorResponse is the JSON-RPC answer to input that is not JSON, or not a
// JSON-RPC message: -32700 or -32600, id null.
func parseErrorResponse(err error) *jsonrpc.Error {
	if errors.Is(err, errParse) {
		return &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "Parse error: " + err.Error()}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Invalid Request: " + err.Error()}
}

// idLayout has the layout of jsonrpc.ID (one interface field holding nil, a string
// or an int64). The go-sdk's public API makes integer ids only from a float64
// (jsonrpc.MakeID), which cannot hold every int64; int64ID builds the exact id the
// go-sdk itself builds internally (jsonrpc2.Int64ID). exactIDs records that the
// layout was verified; should a go-sdk update change it, ids fall back to the
// go-sdk's float64 path (and TestExactIDs fails).
type idLayout struct{ value any }

var exactIDs = func() bool {
	if unsafe.Sizeof(jsonrpc.ID{}) != unsafe.Sizeof(idLayout{}) {
		return false
	}
	want, err := jsonrpc.MakeID(float64(42))
	if err != nil {
		return false
	}
	l := idLayout{value: int64(42)}
	got := *(*jsonrpc.ID)(unsafe.Pointer(&l))
	return got == want && got.Raw() == any(int64(42))
}()

func int64ID(n int64) jsonrpc.ID {
	if !exactIDs {
		id, _ := jsonrpc.MakeID(float64(n))
		return id
	}
	l := idLayout{value: n}
	return *(*jsonrpc.ID)(unsafe.Pointer(&l))
}
