package mcp

import (
	"bytes"
	"encoding/json"

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
