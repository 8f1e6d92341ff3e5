package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/transport"

	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/internal/tracing"
	"github.com/arvenza/helix/pkg/engine"
)

// OutputSchemaKey is the extension keyword under which a tool's output schema is
// mirrored inside its advertised input schema, for MCP clients older than the
// 2025-06-18 revision; see [tool.OutputSchemaKey].
const OutputSchemaKey = tool.OutputSchemaKey

// ToolOverride replaces the description and/or the input schema of one exposed
// workflow (helix.mcp.servers[].tools in helix.yaml). Empty fields keep the
// workflow's own value. An input schema override is enforced, not only advertised
// ([tool.Tool.WithInput]).
type ToolOverride struct {
	Description string
	InputSchema json.RawMessage
	// Task overrides whether the tool runs as an MCP task (tasks.go): empty
	// keeps the workflow's (optional when it is durable); tool.TaskForbidden is
	// written "forbidden".
	Task tool.TaskSupport
}

// ToolInfo describes one tool of a server, for listings (helix mcp list, the
// management manifest).
type ToolInfo struct {
	Name         string // MCP tool name (sanitized workflow id)
	WorkflowID   string
	Kind         engine.Kind
	Description  string
	InputSchema  json.RawMessage // as advertised, including x-helix-output-schema
	OutputSchema json.RawMessage // nil when the workflow declares none
}

// serverTool is one catalogue tool as a server serves it (overrides applied).
type serverTool struct {
	info ToolInfo
	t    *tool.Tool
	// params are the arguments its input schema marks with x-mcp-header, which a
	// 2026-07-28 tools/call mirrors in Mcp-Param-* headers (SEP-2243).
	params   []transport.ParamHeader
	counters atomic.Pointer[cachedCounters] // stats.go
}

// ToolNameClashError reports two exposed tools whose ids sanitize to the same
// tool name; IDs are in declaration order.
type ToolNameClashError = tool.NameClashError

// UnknownExposeError reports exposed ids that name no tool of the catalogue.
// Configuration validation treats it as a warning (a file may be validated on its
// own, before the file defining the workflows is added); starting the server fails.
type UnknownExposeError = tool.UnknownError

// buildTools selects from cat the tools a server with opts exposes and applies its
// overrides. It fails on exposed ids that cannot be tools, on two tools with the
// same name, and on invalid schemas, naming the ids involved. Ids that name nothing
// come last, as an *UnknownExposeError alongside the tools that resolved. Overrides
// for tools the server does not expose are ignored (pkg/app warns).
func buildTools(cat *tool.Catalogue, opts *Options) ([]*serverTool, error) {
	set, err := cat.Select(opts.Expose)
	var unknown *UnknownExposeError
	if err != nil && !errors.As(err, &unknown) {
		return nil, err
	}
	tools := make([]*serverTool, 0, len(set.Tools()))
	for _, t := range set.Tools() {
		if ov, ok := opts.Tools[t.ID]; ok {
			v, err := t.WithInput(ov.Description, ov.InputSchema)
			if err != nil {
				return nil, err
			}
			if t, err = withTask(v, ov.Task); err != nil {
				return nil, err
			}
		}
		st, err := newServerTool(t)
		if err != nil {
			return nil, err
		}
		tools = append(tools, st)
	}
	if unknown != nil {
		return tools, unknown
	}
	return tools, nil
}

// newServerTool describes t as the server advertises it: its input schema with the
// output schema mirrored under OutputSchemaKey.
func newServerTool(t *tool.Tool) (*serverTool, error) {
	st := &serverTool{t: t, info: ToolInfo{Name: t.Name, WorkflowID: t.ID, Kind: t.Kind, Description: t.Description,
		InputSchema: t.Input(), OutputSchema: t.OutputSchema}}
	// Checked here, with the workflow named: the go-sdk panics on a tool whose
	// x-mcp-header annotations are invalid.
	params, err := transport.ParamHeaders(t.Input())
	if err != nil {
		return nil, fmt.Errorf("workflow %q: %w", t.ID, err)
	}
	st.params = params
	if t.OutputSchema != nil {
		var schema map[string]any
		if err := json.Unmarshal(t.Input(), &schema); err != nil {
			return nil, fmt.Errorf("workflow %q: input schema: %w", t.ID, err)
		}
		var out any
		if err := json.Unmarshal(t.OutputSchema, &out); err != nil {
			return nil, fmt.Errorf("workflow %q: output schema is not valid JSON: %w", t.ID, err)
		}
		schema[OutputSchemaKey] = out
		raw, err := json.Marshal(schema)
		if err != nil {
			return nil, fmt.Errorf("workflow %q: input schema: %w", t.ID, err)
		}
		st.info.InputSchema = raw
	}
	return st, nil
}

// sdkTool is the tool as the go-sdk advertises it.
func (t *serverTool) sdkTool() *sdk.Tool {
	st := &sdk.Tool{Name: t.info.Name, Title: t.t.Title, Description: t.info.Description, InputSchema: t.info.InputSchema}
	if t.info.OutputSchema != nil {
		st.OutputSchema = t.info.OutputSchema
	}
	if a := t.t.Annotations; a != nil {
		st.Annotations = &sdk.ToolAnnotations{ReadOnlyHint: a.ReadOnlyHint, DestructiveHint: a.DestructiveHint,
			IdempotentHint: a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
	}
	return st
}

// toolCaller runs the tool calls of one server through the catalogue (tool.Tool.Call).
type toolCaller struct {
	caller  *tool.Caller // the server, as the tools' steps see it
	allowed func(context.Context, string) error
	logger  *slog.Logger
	gate    *callGate // nil: no shutdown tracking (NewSDKServer)
	// postContext returns the context of the HTTP POST carrying a call, or nil.
	postContext func(http.Header) context.Context
	// resumes: the server's transport keeps resumable streams (Helix's Streamable
	// HTTP on a stateful server), see outlivesPost.
	resumes  bool
	serverID string
	stats    *toolCallStats  // nil: not counted (NewSDKServer, tests)
	tracer   *tracing.Tracer // nil: tracing off (tracing.go)
	// answered remembers the answers of calls with an idempotency key
	// (idempotency.go); nil: every call runs.
	answered *answered
	// durableTool reports whether a tool's workflow is durable (idempotency.go).
	durableTool func(id string) bool
	network     string // network.transport of the tracing spans
}

// outlivesPost reports whether req's answer can still reach the client after the
// POST carrying it ended: a stateful session on Helix's transport with resumable
// streams (a release-stream step ends the POST on purpose; a broken connection is
// resumed with Last-Event-ID). The transport cancels such a call itself when the
// client cannot resume. Every other call is cancelled with its POST.
func (c *toolCaller) outlivesPost(req *sdk.CallToolRequest) bool {
	if !c.resumes || req.Session == nil {
		return false
	}
	ip := req.Session.InitializeParams()
	return ip != nil && transport.ResumableProtocol(ip.ProtocolVersion)
}

// handler returns the go-sdk handler of t. It never returns a protocol error: every
// failure becomes an isError result the model can read.
func (c *toolCaller) handler(t *serverTool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if c.postContext != nil && req.Extra != nil && !c.outlivesPost(req) {
			if pc := c.postContext(req.Extra.Header); pc != nil {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
				defer context.AfterFunc(pc, cancel)()
			}
		}
		// The caller's token travels in ctx for the ToolAllowed hook (per-tool scopes).
		ctx = withCallerToken(ctx, req)
		if err := c.refusal(ctx, t, requestedToolName(ctx, req.Params.Name)); err != nil {
			return nil, err
		}
		// The workflow's progress and log reports go to this caller (report.go).
		ctx, done := withCallReporter(ctx, req, t.info.Name)
		defer done()
		if c.tracer != nil {
			var h http.Header
			if req.Extra != nil {
				h = req.Extra.Header
			}
			ctx, span := c.startCallSpan(ctx, t.info.Name, req.Params.Meta, h, req.Session, "")
			res := c.callKeyed(ctx, t, req) // idempotency.go
			endCallSpan(span, res)
			return finishInputCall(ctx, res) // inputrequired.go
		}
		return finishInputCall(ctx, c.callKeyed(ctx, t, req))
	}
}

// refusal asks the ToolAllowed hook about t. A refused call gets exactly the
// go-sdk's answer for a tool that does not exist (requested is the name the client
// sent), so that nobody can probe which tools a server hides; the reason goes to
// the log. nil means the call may run.
func (c *toolCaller) refusal(ctx context.Context, t *serverTool, requested string) error {
	if c.gate != nil && c.gate.isClosed() {
		return shuttingDownError() // the server is stopping (server_run.go)
	}
	if c.allowed == nil {
		return nil
	}
	err := c.allowed(ctx, t.info.Name)
	if err == nil {
		return nil
	}
	c.logger.Warn("mcp tool call refused", "server", c.serverID, "tool", t.info.Name, "requested", requested, "reason", err)
	return unknownToolError(requested)
}

// unknownToolError is the go-sdk's answer to a tools/call of a tool it does not
// have (mcp.Server.callTool), byte for byte.
func unknownToolError(name string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
}

// toolAliases maps the workflow id of each tool whose id differs from its tool name
// ("format-code" → "format_code"), so that a client that calls a tool by its
// workflow id (spec §4.2: mcp://host:3000/format-code) reaches it. Aliases are never
// listed.
func toolAliases(tools []*serverTool) map[string]string {
	aliases := map[string]string{}
	for _, t := range tools {
		if t.t.ID != t.info.Name {
			aliases[t.t.ID] = t.info.Name
		}
	}
	return aliases
}

type requestedNameKey struct{}

// requestedToolName is the tool name the client sent: the alias when
// resolveToolAliases rewrote the request, else name.
func requestedToolName(ctx context.Context, name string) string {
	if n, ok := ctx.Value(requestedNameKey{}).(string); ok {
		return n
	}
	return name
}

// resolveToolAliases rewrites a tools/call of an alias to the tool's name before the
// go-sdk looks the tool up. The name the client sent stays in the context, so that
// a refusal names it as an unknown tool would be named.
func resolveToolAliases(tools []*serverTool) sdk.Middleware {
	aliases := toolAliases(tools)
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		if len(aliases) == 0 {
			return next
		}
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "tools/call" {
				if cr, ok := req.(*sdk.CallToolRequest); ok && cr.Params != nil {
					if name, ok := aliases[cr.Params.Name]; ok {
						ctx = context.WithValue(ctx, requestedNameKey{}, cr.Params.Name)
						cr.Params.Name = name
					}
				}
			}
			return next(ctx, method, req)
		}
	}
}

// call runs one tool call and counts it; the go-sdk handler and the fast path both
// come through here, so each call is counted exactly once.
func (c *toolCaller) call(ctx context.Context, t *serverTool, rawArgs json.RawMessage) *sdk.CallToolResult {
	res, _ := c.callAsked(ctx, t, rawArgs)
	return res
}

// callAsked is call, also reporting a call that stopped to ask its client.
func (c *toolCaller) callAsked(ctx context.Context, t *serverTool, rawArgs json.RawMessage) (*sdk.CallToolResult, bool) {
	res, asked := c.run(ctx, t, rawArgs)
	if c.stats != nil {
		// A call that stopped to ask its client (MCP 2026-07-28) did not fail.
		c.stats.countersOf(t, c.serverID).count(res.IsError && !asked)
	}
	return res, asked
}

// run runs the tool; asked reports a run that stopped on a question for the
// client (an engine.Interrupt: inputrequired.go answers the call with it).
func (c *toolCaller) run(ctx context.Context, t *serverTool, rawArgs json.RawMessage) (_ *sdk.CallToolResult, asked bool) {
	// The rare branches are functions of their own: this frame stays on the
	// stack for the whole call, which a connection's goroutine keeps at the size
	// its deepest request took it to.
	if c.gate != nil {
		if !c.gate.enter() {
			return shuttingDownResult(), false
		}
		defer c.gate.leave()
	}
	res, cause := t.t.Call(tool.WithCaller(withPrincipalHeader(ctx), c.caller), rawArgs)
	if cause != nil {
		if engine.IsInterrupt(cause) {
			return sdkResult(res), true
		}
		c.logFailure(t, cause)
	}
	return sdkResult(res), false
}

// shuttingDownResult is the answer to a call that comes while the server stops.
//
//go:noinline
func shuttingDownResult() *sdk.CallToolResult {
	return sdkResult(tool.ErrorResult("the MCP server is shutting down; try again later"))
}

// logFailure logs a failed call: the client gets the message only; the log
// keeps the step and position.
//
//go:noinline
func (c *toolCaller) logFailure(t *serverTool, cause error) {
	if engine.IsPanic(cause) {
		c.logger.Error("mcp tool panicked", "tool", t.info.Name, "workflow", t.t.ID, "error", cause)
	} else {
		c.logger.Debug("mcp tool failed", "tool", t.info.Name, "workflow", t.t.ID, "error", cause)
	}
}

// textResult is a result of one text part, made with one allocation instead of three.
type textResult struct {
	res  sdk.CallToolResult
	part [1]sdk.Content
	text sdk.TextContent
}

// sdkResult is res as the go-sdk sends it.
func sdkResult(res tool.Result) *sdk.CallToolResult {
	if len(res.Content) == 1 && isTextPart(res.Content[0].Type) {
		// The usual answer: one text part (an error's message, a reply's text or the
		// JSON of a structured one).
		r := &textResult{res: sdk.CallToolResult{IsError: res.IsError, StructuredContent: res.Structured}}
		r.text.Text = res.Content[0].Text
		r.part[0] = &r.text
		r.res.Content = r.part[:]
		return &r.res
	}
	out := &sdk.CallToolResult{IsError: res.IsError, StructuredContent: res.Structured}
	if len(res.Content) == 0 {
		return out
	}
	out.Content = make([]sdk.Content, len(res.Content))
	for i, c := range res.Content {
		switch c.Type {
		case tool.ContentImage:
			out.Content[i] = &sdk.ImageContent{Data: c.Data, MIMEType: c.MIMEType}
		case tool.ContentAudio:
			out.Content[i] = &sdk.AudioContent{Data: c.Data, MIMEType: c.MIMEType}
		case tool.ContentResource:
			rc := &sdk.ResourceContents{URI: c.URI, MIMEType: c.MIMEType, Text: c.Text}
			if c.IsBlob() {
				rc.Text, rc.Blob = "", c.Data
			}
			out.Content[i] = &sdk.EmbeddedResource{Resource: rc}
		case tool.ContentResourceLink:
			out.Content[i] = &sdk.ResourceLink{URI: c.URI, Name: c.Name, Description: c.Description, MIMEType: c.MIMEType}
		default:
			out.Content[i] = &sdk.TextContent{Text: c.Text}
		}
	}
	return out
}

// isTextPart reports whether sdkResult makes a part of type ct a TextContent.
func isTextPart(ct tool.ContentType) bool {
	switch ct {
	case tool.ContentImage, tool.ContentAudio, tool.ContentResource, tool.ContentResourceLink:
		return false
	}
	return true
}

// toolNames returns the names of tools, sorted as MCP lists them.
func toolNames(tools []*serverTool) []string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.info.Name
	}
	sort.Strings(names)
	return names
}
