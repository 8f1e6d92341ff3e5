package transport

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The raw result hook of the tools/call fast path: a tool whose result is JSON
// already (a gateway relaying a third-party server's answer) is written back as
// those bytes, without being decoded into a *sdk.CallToolResult and encoded
// again.

// RawCallTool answers a fast-path tools/call with its result already encoded:
// the JSON of the result object, compact and HTML-escaped as encoding/json
// writes it (the transport writes it as it is; the JSON-RPC envelope and its id
// are the transport's). ok false means the hook does not serve the call and has
// not run it: the call goes on to the CallTool of the fast path. An error is
// answered as a JSON-RPC error, as CallTool's are (a *jsonrpc.Error keeps its
// code).
type RawCallTool func(ctx context.Context, r *http.Request, call *ToolCall) (result json.RawMessage, ok bool, err error)

// AnswerRaw lets raw answer the fast path's calls before its CallTool. Only
// calls of protocols before 2026-07-28 on a fast path without receiving
// middleware are offered: a 2026-07-28 result carries the server's own
// identity in its _meta, and middleware sees and may change the decoded result.
// Call it before the handler serves.
func (f *FastToolCalls) AnswerRaw(raw RawCallTool) { f.raw = raw }

// runRaw is run's answer through the raw hook; ok false when the hook does not
// serve the call.
func (f *FastToolCalls) runRaw(ctx context.Context, r *http.Request, fc *fastCall) (fastReply, bool) {
	if f.raw == nil || len(f.middleware) > 0 || fc.newEra() {
		return fastReply{}, false
	}
	result, ok, err := f.raw(ctx, r, &fc.ToolCall)
	if !ok {
		return fastReply{}, false
	}
	if err != nil {
		return fastReply{resp: &jsonrpc.Response{ID: fc.id, Error: err}}, true
	}
	env := appendEnvelopeHead(make([]byte, 0, len(result)+48), fc.id)
	start := len(env)
	env = append(env, result...)
	return fastReply{body: append(env, '}'), id: fc.id, resultAt: start}, true
}
