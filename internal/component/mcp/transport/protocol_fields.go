package transport

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// newProtocolResultKeys are result fields that exist only from protocol 2026-07-28
// on: resultType (multi round-trip results) and the caching hints ttlMs and
// cacheScope. The go-sdk v1.8.0 fills the caching hints of list results whatever
// the session's version; a client of an older version must not see them.
var newProtocolResultKeys = []string{"resultType", "ttlMs", "cacheScope"}

// stripNewProtocolFields returns resp without the top-level result fields of
// protocol 2026-07-28, for sessions that negotiated an earlier version. Results
// that mention none of them (every tool call result) are returned as they are.
func stripNewProtocolFields(resp *jsonrpc.Response) *jsonrpc.Response {
	if resp.Error != nil || len(resp.Result) == 0 || resp.Result[0] != '{' {
		return resp
	}
	found := false
	for _, k := range newProtocolResultKeys {
		if bytes.Contains(resp.Result, []byte(k)) {
			found = true
			break
		}
	}
	if !found {
		return resp
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(resp.Result, &fields) != nil {
		return resp
	}
	n := len(fields)
	for _, k := range newProtocolResultKeys {
		delete(fields, k)
	}
	if len(fields) == n {
		return resp
	}
	data, err := json.Marshal(fields)
	if err != nil {
		return resp
	}
	return &jsonrpc.Response{ID: resp.ID, Result: data, Extra: resp.Extra}
}

// LegacyResultWriter wraps the response of a go-sdk HTTP handler (the SSE
// transport, http_transport: sdk) whose sessions speak a protocol before
// 2026-07-28, so that the results it writes lose that version's fields as on
// Helix's own transports. The go-sdk writes each JSON body and each server-sent
// event in one Write.
type LegacyResultWriter struct{ http.ResponseWriter }

func (w LegacyResultWriter) Write(p []byte) (int, error) {
	if !mentionsNewProtocolFields(p) {
		return w.ResponseWriter.Write(p)
	}
	if _, err := w.ResponseWriter.Write(stripPayload(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush and Unwrap keep streaming working (http.Flusher, http.ResponseController).
func (w LegacyResultWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w LegacyResultWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func mentionsNewProtocolFields(p []byte) bool {
	for _, k := range newProtocolResultKeys {
		if bytes.Contains(p, []byte(k)) {
			return true
		}
	}
	return false
}

// stripPayload rewrites a JSON-RPC message, a batch, or a server-sent event
// carrying one; anything else is returned as it is.
func stripPayload(p []byte) []byte {
	trimmed := bytes.TrimSpace(p)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		if out, ok := stripMessages(trimmed); ok {
			return out
		}
		return p
	}
	// An event: "data: " lines hold the message.
	lines := bytes.Split(p, []byte("\n"))
	changed := false
	for i, l := range lines {
		if data, ok := bytes.CutPrefix(l, []byte("data: ")); ok {
			if out, ok := stripMessages(data); ok {
				lines[i] = append([]byte("data: "), out...)
				changed = true
			}
		}
	}
	if !changed {
		return p
	}
	return bytes.Join(lines, []byte("\n"))
}

// stripMessages applies stripNewProtocolFields to the result of a message or of
// each message of a batch; ok is false when nothing changed.
func stripMessages(data []byte) ([]byte, bool) {
	if bytes.HasPrefix(data, []byte("[")) {
		var batch []json.RawMessage
		if json.Unmarshal(data, &batch) != nil {
			return nil, false
		}
		changed := false
		for i, m := range batch {
			if out, ok := stripMessages(m); ok {
				batch[i], changed = out, true
			}
		}
		if !changed {
			return nil, false
		}
		out, err := json.Marshal(batch)
		return out, err == nil
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(data, &msg) != nil || len(msg["result"]) == 0 {
		return nil, false
	}
	stripped := stripNewProtocolFields(&jsonrpc.Response{Result: msg["result"]})
	if bytes.Equal(stripped.Result, msg["result"]) {
		return nil, false
	}
	msg["result"] = stripped.Result
	out, err := json.Marshal(msg)
	return out, err == nil
}
