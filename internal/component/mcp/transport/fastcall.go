package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/internal/jsondepth"
	"github.com/arvenza/helix/internal/lazyctx"
)

// The tools/call fast path of Helix's Streamable HTTP transport.
//
// Through the go-sdk's session every request is decoded again (its request _meta
// and its params), each time with a streaming decoder holding a 32 KiB buffer:
// most of the bytes a tool call allocated (BENCHMARKS.md). For the one request that dominates real
// traffic, a plain tools/call of an established session, the transport decodes the
// params itself and calls the server's [CallTool], which runs the same code as the
// go-sdk tool handler, with the same inputs (arguments, the caller's token, a context that ends with the
// POST). Everything the fast path does not answer exactly as the SDK would goes to
// the SDK unchanged: other methods, batches, requests whose _meta holds more than
// the caller's trace context (progress tokens; on 2026-07-28 more than that
// version's own keys, fastcall_era.go), params the
// SDK would refuse or that carry fields beyond name, arguments and _meta, sessions
// that have not initialized, and every call of a
// session whose client sent logging/setLevel (the fast path answers with the
// result only, so it cannot carry the call's log messages). The equivalence is
// checked by fastcall_test.go against the SDK path, request by request.
// ServerOptions.DisableFastToolCalls (YAML fast_tool_calls: false) turns it off.

// sdkMaxJSONDepth is the nesting limit of the go-sdk's JSON decoder; deeper params
// are left to the SDK, which refuses them.
const sdkMaxJSONDepth = jsondepth.SDKMax

// CallTool runs one tools/call for the fast path, as the go-sdk session's tools/call
// handling would after its receiving middleware: find the tool by name (a name the
// server does not serve, or refuses, is the SDK's invalid-params error "unknown
// tool"), then run it. r is the POST carrying the call (its context holds the
// caller's verified token); ctx ends with the POST or when the client cancels. It is
// called concurrently.
type CallTool func(ctx context.Context, r *http.Request, call *ToolCall) (*sdk.CallToolResult, error)

// ToolCall is what the fast path read from a tools/call: what the go-sdk's
// CallToolRequest would carry for it.
type ToolCall struct {
	Name string
	Args json.RawMessage
	// Meta is params._meta as the go-sdk decodes it (nil when absent); read it
	// through CallMeta, which decodes a 2026-07-28 call's _meta on first use.
	// The fast path takes only a _meta that changes nothing in the answer: the
	// caller's trace context (traceparent, tracestate: see traceMeta), which
	// is only the parent of the call's span, and on 2026-07-28 the version's
	// members (fastcall_era.go).
	Meta sdk.Meta
	// lazyMeta is a 2026-07-28 call's _meta, checked but not yet decoded into
	// Meta: most calls have no middleware or tracer to read it.
	lazyMeta json.RawMessage
	// Session is the call's session; nil on a stateless server.
	Session *sdk.ServerSession
	// ProtocolVersion is the protocol version the call was made with: the
	// session's, or for a stateless call the one its POST names (or the default),
	// which the SDK path's throw-away session would be initialized with.
	ProtocolVersion string
}

// CallMeta returns Meta, decoding first a 2026-07-28 call's _meta that the fast
// path only checked. Like the rest of a ToolCall, not for concurrent use.
func (tc *ToolCall) CallMeta() sdk.Meta {
	if tc.lazyMeta != nil {
		// The fast path took this _meta after the same reading: it decodes.
		tc.Meta, _ = newEraCallMeta(tc.lazyMeta, tc.ProtocolVersion)
		tc.lazyMeta = nil
	}
	return tc.Meta
}

// FastToolCalls answers tools/call for one server's tools; set it as
// [Options.Fast]. Safe for concurrent use.
type FastToolCalls struct {
	call CallTool
	// middleware is the server's receiving middleware, which the go-sdk session
	// runs around every request; the fast path runs it around its calls.
	middleware []sdk.Middleware
	served     atomic.Uint64 // calls answered here; tests use it to prove the path was taken
	// excluded are tools whose calls may send requests to the client (elicitation,
	// sampling): the fast path answers with the result only, so they take the SDK
	// path. Set by Exclude before serving, read-only afterwards.
	excluded map[string]bool
	// excludeWhen, when set, sends more calls through the session: those of
	// tools that change while the server runs (ExcludeWhen).
	excludeWhen func(name, version string) bool
	// serverInfo is the server's identity, which a 2026-07-28 result names in its
	// _meta; nil leaves 2026-07-28 calls to the SDK. Set by AnswerNewEra before
	// serving, read-only afterwards.
	serverInfo *sdk.Implementation
	newEraHead []byte // the start of a plain 2026-07-28 result; nil: none
	// raw answers calls with results encoded already (fastcall_raw.go); nil:
	// none. Set by AnswerRaw before serving, read-only afterwards.
	raw RawCallTool
}

// AnswerNewEra lets the fast path answer 2026-07-28 calls too (fastcall_era.go),
// marking their results as the go-sdk does, with impl as the server's identity
// (the *sdk.Implementation the server was made with). Call it before the handler
// serves.
func (f *FastToolCalls) AnswerNewEra(impl *sdk.Implementation) {
	f.serverInfo = impl
	// The start of a plain result (fastcall_era.go): _meta holding only the
	// server's identity, as the go-sdk encodes it.
	if info, err := json.Marshal(impl); err == nil {
		f.newEraHead = fmt.Appendf(nil, `{"_meta":{%q:%s}`, sdk.MetaKeyServerInfo, info)
	}
}

// Exclude sends every call of the named tools through the go-sdk session: those
// whose workflows ask the client something while they run. Call it before the
// handler serves.
func (f *FastToolCalls) Exclude(names ...string) {
	if len(names) == 0 {
		return
	}
	if f.excluded == nil {
		f.excluded = make(map[string]bool, len(names))
	}
	for _, n := range names {
		f.excluded[n] = true
	}
}

// ExcludeWhen sends the calls for which exclude answers true through the
// go-sdk session, as Exclude does for a fixed list: for tools added while the
// server runs (a gateway's upstream tools), whose calls may ask the client
// something. exclude gets the tool name and the call's protocol version. Call
// it before the handler serves.
func (f *FastToolCalls) ExcludeWhen(exclude func(name, version string) bool) { f.excludeWhen = exclude }

// excludes reports whether a call of the named tool takes the session's path.
func (f *FastToolCalls) excludes(name, version string) bool {
	return f.excluded[name] || (f.excludeWhen != nil && f.excludeWhen(name, version))
}

// NewFastToolCalls returns the fast path of a server whose tools call runs, with
// the server's receiving middleware (outermost first).
func NewFastToolCalls(call CallTool, middleware []sdk.Middleware) *FastToolCalls {
	return &FastToolCalls{call: call, middleware: middleware}
}

// Served is the number of calls the fast path answered; tests use it to prove the
// path was taken.
func (f *FastToolCalls) Served() uint64 { return f.served.Load() }

// fastCall is a tools/call the transport answers itself.
type fastCall struct {
	id jsonrpc.ID
	ToolCall
}

// match returns the call when a POST's messages are exactly one tools/call whose
// params the fast path reads as the SDK would (of a protocol before 2026-07-28, or
// of 2026-07-28 after AnswerNewEra); otherwise nil, and the SDK serves the POST.
// version is the POST's Mcp-Protocol-Version (or the default), which the transport
// checked against a 2026-07-28 request's _meta before. fields, when not nil, are
// what the version checks read of the one message's params (readCallFields).
func (f *FastToolCalls) match(msgs []jsonrpc.Message, batch bool, version string, fields *callFields) *fastCall {
	if f == nil || batch || len(msgs) != 1 || (version >= statelessProtocol && f.serverInfo == nil) {
		return nil
	}
	req, ok := msgs[0].(*jsonrpc.Request)
	if !ok || !req.IsCall() || req.Method != "tools/call" {
		return nil
	}
	params := bytes.TrimSpace(req.Params)
	// No depth check: params are part of a body decodeBody checked as a whole.
	if len(params) == 0 || params[0] != '{' {
		return nil
	}
	if fields != nil {
		switch fields.shape {
		case shapeOther:
			return nil // as scanParams refuses it
		case shapeCall:
			if fc, ok := f.takeFields(req.ID, fields, version); ok {
				return fc
			}
			return f.matchDecoded(req, params, version)
		}
	}
	if fc, ok := f.scanParams(req.ID, params, version); ok {
		return fc
	}
	return f.matchDecoded(req, params, version)
}

// takeFields is scanParams for params readCallFields read already.
func (f *FastToolCalls) takeFields(id jsonrpc.ID, fields *callFields, version string) (fc *fastCall, ok bool) {
	defer func() {
		if recover() != nil { // as in scanParams
			fc, ok = nil, false
		}
	}()
	return f.takeCall(id, fields.name, fields.args, fields.meta, version)
}

// matchDecoded is match's reading of params through encoding/json, for what
// scanParams leaves undecided.
func (f *FastToolCalls) matchDecoded(req *jsonrpc.Request, params []byte, version string) *fastCall {
	// A map, not a struct: encoding/json matches struct fields case-insensitively,
	// the SDK's decoder does not ("Name" is not "name").
	var fields map[string]json.RawMessage
	if json.Unmarshal(params, &fields) != nil {
		return nil
	}
	fc := &fastCall{id: req.ID, ToolCall: ToolCall{ProtocolVersion: version}}
	var ok bool
	for k, v := range fields {
		switch k {
		case "name":
			if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &fc.Name) != nil {
				return nil
			}
		case "arguments":
			fc.Args = v
		case "_meta":
			if fc.Meta, fc.lazyMeta, ok = f.callMeta(v, version); !ok {
				return nil
			}
		default:
			// inputResponses, requestState and anything unknown: the SDK decides
			// what they mean.
			return nil
		}
	}
	if _, ok := fields["name"]; !ok || f.excludes(fc.Name, version) || (fc.newEra() && fc.Meta == nil && fc.lazyMeta == nil) {
		return nil
	}
	return fc
}

// callMeta is traceMeta, or takeNewEraMeta for a 2026-07-28 call.
func (f *FastToolCalls) callMeta(raw json.RawMessage, version string) (meta sdk.Meta, lazy json.RawMessage, ok bool) {
	if version >= statelessProtocol {
		return takeNewEraMeta(raw, version)
	}
	meta, ok = traceMeta(raw)
	return meta, nil, ok
}

// traceMeta returns a tools/call's _meta as the go-sdk decodes it when it holds
// nothing but the caller's W3C trace context: traceparent and tracestate as JSON
// strings (what Helix's mcp:// client and other traced clients send). Anything else
// is false and goes to the SDK: a progress token (its notifications need the
// session's stream), the 2026-07-28 protocol's keys, keys the SDK or a middleware
// may give a meaning, values of other types, null.
func traceMeta(raw json.RawMessage) (sdk.Meta, bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, false
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return nil, false
	}
	meta := make(sdk.Meta, len(fields))
	for k, v := range fields {
		if k != "traceparent" && k != "tracestate" {
			return nil, false
		}
		var s string
		if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
			return nil, false
		}
		meta[k] = s
	}
	return meta, true
}

// run executes fc with ctx (which ends with the POST) and returns the response the
// SDK would send: the tool result, or for an unknown tool the SDK's invalid-params
// error.
func (f *FastToolCalls) run(ctx context.Context, r *http.Request, fc *fastCall) fastReply {
	if reply, ok := f.runRaw(ctx, r, fc); ok {
		return reply
	}
	var res *sdk.CallToolResult
	var err error
	if len(f.middleware) == 0 {
		res, err = f.callTool(ctx, r, &fc.ToolCall)
	} else {
		res, err = f.throughMiddleware(ctx, r, fc)
	}
	return f.reply(fc, res, err)
}

// reply is the answer to fc for the tool's result res or error err: a function
// of its own, so that run's frame, which stays on the stack while the tool
// runs, does not hold the encoding's temporaries (a connection's goroutine
// keeps its stack at the size its deepest request took it to).
//
//go:noinline
func (f *FastToolCalls) reply(fc *fastCall, res *sdk.CallToolResult, err error) fastReply {
	if err != nil {
		// As the go-sdk session passes a handler's error on (toWire shapes it).
		return fastReply{resp: &jsonrpc.Response{ID: fc.id, Error: err}}
	}
	if fc.newEra() {
		if env, start, ok := f.newEraPlainEnvelope(fc.id, res); ok {
			return fastReply{body: env, id: fc.id, resultAt: start}
		}
		data, rpcErr := f.newEraResult(res)
		if rpcErr != nil {
			return fastReply{resp: &jsonrpc.Response{ID: fc.id, Error: rpcErr}}
		}
		return fastReply{resp: &jsonrpc.Response{ID: fc.id, Result: data}}
	}
	if plainResults {
		if env, start, ok := plainResultEnvelope(fc.id, res); ok {
			return fastReply{body: env, id: fc.id, resultAt: start}
		}
	}
	// The SDK's MarshalJSON is json.Marshal of its wire form: compact and
	// HTML-escaped already, so json.Marshal(res) would only copy it once more.
	data, err := res.MarshalJSON()
	if err != nil {
		return fastReply{resp: &jsonrpc.Response{ID: fc.id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: fmt.Sprintf("encoding the result of tool %s: %v", fc.Name, err)}}}
	}
	return fastReply{resp: &jsonrpc.Response{ID: fc.id, Result: data}}
}

// fastReply is run's answer: resp, or body, the whole response as write sends it
// as JSON (written with the result, to spare a copy), with its id and where the
// result starts.
type fastReply struct {
	resp     *jsonrpc.Response
	body     []byte
	id       jsonrpc.ID
	resultAt int
}

func (r fastReply) response() *jsonrpc.Response {
	if r.resp != nil {
		return r.resp
	}
	end := len(r.body) - 1 // the envelope's closing brace
	return &jsonrpc.Response{ID: r.id, Result: r.body[r.resultAt:end:end]}
}

// callTool does what the go-sdk's tools/call handling does after its middleware,
// through the server's CallTool.
func (f *FastToolCalls) callTool(ctx context.Context, r *http.Request, tc *ToolCall) (*sdk.CallToolResult, error) {
	res, err := f.call(ctx, r, tc)
	if err != nil {
		return nil, err
	}
	if res.Content == nil {
		res.Content = []sdk.Content{} // as the SDK's callTool does: never "content": null
	}
	return res, nil
}

// throughMiddleware runs the server's receiving middleware around callTool with
// the request the go-sdk session would hand it: a *sdk.CallToolRequest with the
// session (nil on a stateless server), the raw params and the HTTP request's
// headers and token. Middleware may change the params (the tool name, the
// arguments) or answer itself.
func (f *FastToolCalls) throughMiddleware(ctx context.Context, r *http.Request, fc *fastCall) (*sdk.CallToolResult, error) {
	req := &sdk.CallToolRequest{Session: fc.Session, Params: &sdk.CallToolParamsRaw{Meta: fc.CallMeta(), Name: fc.Name, Arguments: fc.Args},
		Extra: &sdk.RequestExtra{TokenInfo: auth.TokenInfoFromContext(r.Context()), Header: r.Header}}
	var h sdk.MethodHandler = func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		cr, ok := req.(*sdk.CallToolRequest)
		if !ok || cr.Params == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("receiving middleware passed on %T for tools/call", req)}
		}
		// Middleware may have changed the params; session and version are the call's.
		call := fc.ToolCall
		call.Name, call.Args, call.Meta, call.lazyMeta = cr.Params.Name, cr.Params.Arguments, cr.Params.Meta, nil
		res, err := f.callTool(ctx, r, &call)
		if err != nil {
			return nil, err
		}
		return res, nil
	}
	for i := len(f.middleware) - 1; i >= 0; i-- {
		h = f.middleware[i](h)
	}
	res, err := h(ctx, "tools/call", req)
	if err != nil {
		return nil, err
	}
	ctr, ok := res.(*sdk.CallToolResult)
	if !ok || ctr == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("receiving middleware answered tools/call with %T", res)}
	}
	if ctr.Content == nil {
		ctr.Content = []sdk.Content{}
	}
	return ctr, nil
}

// fastAnswer writes one response the way serve does: application/json, or a
// one-event stream for a client that accepts only text/event-stream. The stream is
// opened before the call runs (as serve does), so that a long call does not leave
// the client without response headers.
type fastAnswer struct {
	w      http.ResponseWriter
	stream *eventWriter
}

// A value, not a pointer, so that it stays on the caller's stack.
func startFastAnswer(w http.ResponseWriter, jsonOK bool) fastAnswer {
	a := fastAnswer{w: w}
	if !jsonOK {
		a.stream = newEventWriter(w)
		a.stream.start()
	}
	return a
}

func (a *fastAnswer) write(reply fastReply) {
	if a.stream != nil {
		_ = a.stream.event(reply.response())
		return
	}
	out := reply.body
	switch resp := reply.resp; {
	case out != nil: // run wrote it
	case resp.Error == nil && len(resp.Result) > 0:
		out = appendResultEnvelope(make([]byte, 0, len(resp.Result)+48), resp.ID, resp.Result)
	default:
		var err error
		if out, err = json.Marshal(toWire(resp)); err != nil {
			http.Error(a.w, "encoding the answer: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	a.w.Header().Set("Content-Type", "application/json")
	_, _ = a.w.Write(out)
}

// appendResultEnvelope appends the JSON-RPC response carrying result, byte for byte
// what json.Marshal(toWire(resp)) gives for it: result comes from json.Marshal (run),
// so it is compact and HTML-escaped already, which is all the encoder's pass over a
// RawMessage would make it. fastcall_test.go checks the equality.
func appendResultEnvelope(dst []byte, id jsonrpc.ID, result json.RawMessage) []byte {
	dst = appendEnvelopeHead(dst, id)
	dst = append(dst, result...)
	return append(dst, '}')
}

// appendEnvelopeHead appends what comes before the result in appendResultEnvelope.
func appendEnvelopeHead(dst []byte, id jsonrpc.ID) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = appendID(dst, id)
	return append(dst, `,"result":`...)
}

// serveFastStateless answers a stateless POST's tool call without creating the
// throw-away session the SDK path needs.
func (h *StreamableHandler) serveFastStateless(w http.ResponseWriter, r *http.Request, fc *fastCall, jsonOK bool) {
	h.fast.served.Add(1)
	ans := startFastAnswer(w, jsonOK)
	ans.write(h.fast.run(r.Context(), r, fc))
}

// serveFast answers a tool call of an established session. The call is registered
// under its request id, like the SDK path's calls: the id cannot be reused while it
// runs, notifications/cancelled for it cancels it (noteCancels) and then no result
// is sent for it, and closing the session cancels it.
func (c *streamConn) serveFast(w http.ResponseWriter, r *http.Request, fc *fastCall, jsonOK bool) {
	// The call's context makes its channel only if a step needs one: a call that
	// only asks Err costs no child of the POST's context.
	ctx := lazyctx.WithCancel(r.Context())
	defer ctx.Cancel()
	c.mu.Lock()
	_, busy := c.pending[fc.id]
	if _, fast := c.fast[fc.id]; fast || busy || c.closed {
		closed := c.closed
		c.mu.Unlock()
		refuseFastCall(w, fc.id, closed)
		return
	}
	put(&c.fast, fc.id, ctx)
	fc.Session = c.session // nil while the session is parked (park.go)
	c.mu.Unlock()
	if !c.acquireCall(r.Context()) {
		c.mu.Lock()
		delete(c.fast, fc.id)
		c.mu.Unlock()
		if r.Context().Err() == nil {
			http.Error(w, "session closed", http.StatusNotFound)
		}
		return
	}
	defer c.releaseCall()
	defer func() {
		c.mu.Lock()
		delete(c.fast, fc.id)
		delete(c.cancelled, fc.id)
		c.mu.Unlock()
	}()

	c.h.fast.served.Add(1)
	ans := startFastAnswer(w, jsonOK)
	resp := c.h.fast.run(ctx, r, fc)
	select {
	case <-c.done:
		// The session ended while the call ran; the SDK path answers 404 then too.
		if ans.stream == nil {
			http.Error(w, "session closed", http.StatusNotFound)
		}
		return
	default:
	}
	c.mu.Lock()
	withdrawn := c.cancelled[fc.id]
	c.mu.Unlock()
	if withdrawn {
		// The client cancelled the call: no result, as on the SDK path (serve).
		if ans.stream == nil {
			w.WriteHeader(http.StatusAccepted)
		}
		return
	}
	ans.write(resp)
}

// refuseFastCall answers a call serveFast cannot run: its session closed, or its
// id in use. A function of its own, so that serveFast's frame, which stays on
// the stack while the tool runs, does not hold these temporaries.
//
//go:noinline
func refuseFastCall(w http.ResponseWriter, id jsonrpc.ID, closed bool) {
	if closed {
		http.Error(w, "session closed", http.StatusNotFound)
		return
	}
	writeJSONRPCError(w, http.StatusBadRequest, id, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
		Message: fmt.Sprintf("request id %v is already in use in this session", id.Raw())})
}

// noteCancels handles the notifications/cancelled in msgs for the session's
// running requests: a fast call is cancelled here, and the result of any cancelled
// request (fast path or SDK path) is not sent (MCP cancellation: the receiver
// should not answer a cancelled request). The notifications still go to the
// session, which cancels its own handlers and ignores ids it is not running.
func (c *streamConn) noteCancels(msgs []jsonrpc.Message) {
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok || req.IsCall() || req.Method != "notifications/cancelled" {
			continue
		}
		id, ok := cancelledID(req.Params)
		if !ok {
			continue
		}
		c.mu.Lock()
		call := c.fast[id]
		if _, running := c.pending[id]; running || call != nil {
			put(&c.cancelled, id, true)
		}
		c.mu.Unlock()
		if call != nil {
			call.Cancel()
		}
	}
}
