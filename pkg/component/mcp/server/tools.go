package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/tool"
	"github.com/arvenza/helix/pkg/uri"
)

// OutputSchemaKey is the extension keyword under which a tool's output schema is
// mirrored inside its input schema. MCP clients older than the 2025-06-18 revision
// drop the tool's outputSchema field; an unknown keyword inside inputSchema survives
// every client and JSON Schema validators ignore it.
const OutputSchemaKey = "x-helix-output-schema"

// defaultInputSchema accepts any object: a workflow without a declared schema takes
// whatever arguments the model sends (spec §8.2).
var defaultInputSchema = json.RawMessage(`{"type":"object","additionalProperties":true}`)

// ToolOverride replaces the description and/or the input schema of one exposed
// workflow (helix.mcp.servers[].tools in helix.yaml). Empty fields keep the
// workflow's own value.
type ToolOverride struct {
	Description string
	InputSchema json.RawMessage
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

// serverTool is one tool bound to its workflow.
type serverTool struct {
	info      ToolInfo
	wf        *engine.Workflow
	outSchema *jsonschema.Resolved // nil without an output schema
	// override enforces the input schema of a tools: override; nil without one.
	override *inputValidator
}

// buildTools resolves which workflows of hc a server exposes and how they look as
// tools. It fails on unexposable ids in expose, on two ids that sanitize to the same
// name, and on invalid schemas, naming the workflows involved. Ids that name no
// workflow come last, as an *UnknownExposeError alongside the tools that resolved.
// Tool overrides for workflows the server does not expose are ignored (pkg/app warns).
func buildTools(hc *engine.Context, opts *Options) ([]*serverTool, error) {
	var candidates []*engine.Workflow
	var missing []string
	if opts.Expose == nil {
		for _, wf := range hc.Workflows() {
			if exposable(wf) == nil {
				candidates = append(candidates, wf)
			}
		}
	} else {
		var errs []error
		seen := map[string]bool{}
		for _, id := range opts.Expose {
			if seen[id] {
				continue
			}
			seen[id] = true
			wf, ok := hc.Workflow(id)
			if !ok {
				missing = append(missing, id)
				continue
			}
			if err := exposable(wf); err != nil {
				errs = append(errs, err)
				continue
			}
			candidates = append(candidates, wf)
		}
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
	}

	byName := map[string]string{}
	tools := make([]*serverTool, 0, len(candidates))
	for _, wf := range candidates {
		name := tool.SanitizeName(wf.ID)
		if err := tool.CheckName(wf.ID, name); err != nil {
			return nil, err
		}
		if other, dup := byName[name]; dup {
			return nil, &ToolNameClashError{Name: name, WorkflowIDs: [2]string{other, wf.ID}}
		}
		byName[name] = wf.ID
		t, err := newServerTool(wf, name, opts.Tools[wf.ID])
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	if len(missing) > 0 {
		return tools, &UnknownExposeError{IDs: missing, Known: exposableIDs(hc)}
	}
	return tools, nil
}

// ToolNameClashError reports two exposed workflows whose ids sanitize to the same
// tool name; WorkflowIDs are in declaration order.
type ToolNameClashError struct {
	Name        string
	WorkflowIDs [2]string
}

func (e *ToolNameClashError) Error() string {
	return fmt.Sprintf("workflows %q and %q both become the MCP tool %q; rename one of them (tool names replace '.', '-' and '/' with '_')",
		e.WorkflowIDs[0], e.WorkflowIDs[1], e.Name)
}

// UnknownExposeError reports exposed ids that name no workflow of the context.
// Configuration validation treats it as a warning (a file may be validated on its
// own, before the file defining the workflows is added); starting the server fails.
type UnknownExposeError struct {
	IDs   []string
	Known []string
}

func (e *UnknownExposeError) Error() string {
	return fmt.Sprintf("expose: no workflow, tool or agent with id %s (known: %s)", quoteList(e.IDs), quoteList(e.Known))
}

// exposable says why wf cannot be a tool, or nil.
func exposable(wf *engine.Workflow) error {
	if wf.FromURI == "" {
		return fmt.Errorf("expose: workflow %q has no trigger, so it cannot be called as a tool; give it a trigger (direct://%s)", wf.ID, wf.ID)
	}
	if u, err := uri.Parse(wf.FromURI); err == nil && u.Scheme == "mcp-server" {
		return fmt.Errorf("expose: workflow %q is itself an MCP server and cannot be a tool", wf.ID)
	}
	return nil
}

func exposableIDs(hc *engine.Context) []string {
	var ids []string
	for _, wf := range hc.Workflows() {
		if exposable(wf) == nil {
			ids = append(ids, wf.ID)
		}
	}
	return ids
}

func idsOf(wfs []*engine.Workflow) []string {
	ids := make([]string, len(wfs))
	for i, wf := range wfs {
		ids[i] = wf.ID
	}
	return ids
}

func containsWorkflow(wfs []*engine.Workflow, id string) bool {
	for _, wf := range wfs {
		if wf.ID == id {
			return true
		}
	}
	return false
}

func quoteList(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = fmt.Sprintf("%q", id)
	}
	return strings.Join(q, ", ")
}

func newServerTool(wf *engine.Workflow, name string, ov ToolOverride) (*serverTool, error) {
	desc := wf.Description
	if ov.Description != "" {
		desc = ov.Description
	}
	if desc == "" {
		desc = "Helix route: " + wf.ID
	}
	in := defaultInputSchema
	switch {
	case len(bytes.TrimSpace(ov.InputSchema)) > 0:
		in = ov.InputSchema
	case len(bytes.TrimSpace(wf.InputSchema)) > 0:
		in = wf.InputSchema
	}
	var schema map[string]any
	if err := json.Unmarshal(in, &schema); err != nil || schema == nil {
		return nil, fmt.Errorf("workflow %q: input schema is not a JSON object: %v", wf.ID, errOrNull(err))
	}
	switch t := schema["type"]; t {
	case nil:
		// A schema with properties but no type is common in hand-written overrides;
		// MCP requires "object", which is what the author meant.
		schema["type"] = "object"
	case "object":
	default:
		return nil, fmt.Errorf("workflow %q: input schema must have \"type\": \"object\" (MCP tool arguments are always an object), got %v", wf.ID, t)
	}
	t := &serverTool{wf: wf, info: ToolInfo{Name: name, WorkflowID: wf.ID, Kind: wf.Kind, Description: desc}}
	if len(bytes.TrimSpace(ov.InputSchema)) > 0 {
		// An override is enforced, not only advertised: the client was told this
		// schema, so arguments that break it never reach the steps.
		compiled, err := json.Marshal(schema)
		if err == nil {
			t.override, err = newInputValidator(compiled)
		}
		if err != nil {
			return nil, fmt.Errorf("workflow %q: tools override input_schema: %v", wf.ID, err)
		}
	}
	if out := bytes.TrimSpace(wf.OutputSchema); len(out) > 0 {
		var outDoc any
		if err := json.Unmarshal(out, &outDoc); err != nil {
			return nil, fmt.Errorf("workflow %q: output schema is not valid JSON: %w", wf.ID, err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(out, &s); err != nil {
			return nil, fmt.Errorf("workflow %q: output schema: %w", wf.ID, err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			return nil, fmt.Errorf("workflow %q: output schema: %w", wf.ID, err)
		}
		schema[OutputSchemaKey] = outDoc
		t.outSchema = rs
		t.info.OutputSchema = json.RawMessage(out)
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("workflow %q: input schema: %w", wf.ID, err)
	}
	t.info.InputSchema = raw
	return t, nil
}

func errOrNull(err error) any {
	if err == nil {
		return "got null"
	}
	return err
}

// sdkTool is the tool as the go-sdk advertises it.
func (t *serverTool) sdkTool() *sdk.Tool {
	st := &sdk.Tool{Name: t.info.Name, Description: t.info.Description, InputSchema: t.info.InputSchema}
	if t.info.OutputSchema != nil {
		st.OutputSchema = t.info.OutputSchema
	}
	return st
}

// toolCaller runs tool calls against an engine context; one per server.
type toolCaller struct {
	hc         *engine.Context
	serverName string
	allowed    func(context.Context, string) error
	logger     *slog.Logger
	gate       *callGate // nil: no shutdown tracking (NewSDKServer)
	// postContext returns the context of the HTTP POST carrying a call, or nil.
	postContext func(http.Header) context.Context
	serverID    string
	stats       *toolCallStats // nil: not counted (NewSDKServer, tests)
}

// handler returns the go-sdk handler of t. It never returns a protocol error: every
// failure becomes an isError result the model can read.
func (c *toolCaller) handler(t *serverTool) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		if c.postContext != nil && req.Extra != nil {
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
		return c.call(ctx, t, req.Params.Arguments), nil
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
		if t.wf.ID != t.info.Name {
			aliases[t.wf.ID] = t.info.Name
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
	res := c.run(ctx, t, rawArgs)
	if c.stats != nil {
		c.stats.record(c.serverID, t.info.Name, res.IsError)
	}
	return res
}

func (c *toolCaller) run(ctx context.Context, t *serverTool, rawArgs json.RawMessage) *sdk.CallToolResult {
	if c.gate != nil {
		if !c.gate.enter() {
			return errorResult("the MCP server is shutting down; try again later")
		}
		defer c.gate.leave()
	}
	args, err := decodeArguments(rawArgs)
	if err != nil {
		return errorResult(err.Error())
	}
	// The override's schema is what the client was shown; the workflow's own schema
	// (a tools: entry) still guards its steps.
	if t.override != nil {
		args, err = safeValidate(t.override.validate, args)
		if err != nil {
			return errorResult(fmt.Sprintf("invalid arguments for tool %s: %v", t.info.Name, err))
		}
	}
	if t.wf.ValidateInput != nil {
		args, err = safeValidate(t.wf.ValidateInput, args)
		if err != nil {
			return errorResult(fmt.Sprintf("invalid arguments for tool %s: %v", t.info.Name, err))
		}
		if args == nil {
			args = map[string]any{}
		}
	}

	ex := exchange.NewWithBody(exchange.InOut, args)
	ex.In().SetHeader(exchange.HeaderMcpToolName, t.info.Name)
	ex.In().SetHeader(exchange.HeaderMcpRouteID, t.wf.ID)
	ex.In().SetHeader(exchange.HeaderMcpServerName, c.serverName)

	// The call ends when the client gives up (request context) or when the engine
	// abandons draining at Stop (run context), whichever comes first.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopAfter := context.AfterFunc(c.hc.RunContext(), cancel)
	defer stopAfter()

	if err := c.hc.Run(runCtx, t.wf.ID, ex); err != nil {
		if engine.IsPanic(err) {
			c.logger.Error("mcp tool panicked", "tool", t.info.Name, "workflow", t.wf.ID, "error", err)
		} else {
			c.logger.Debug("mcp tool failed", "tool", t.info.Name, "workflow", t.wf.ID, "error", err)
		}
		// The client gets the message only; the log above keeps the step and position.
		return errorResult(exchange.ClientMessage(err))
	}
	return t.result(ex.In().Body())
}

// safeValidate runs a user-supplied validator; a panic in it is reported like any
// invalid input instead of taking the connection down.
func safeValidate(v func(map[string]any) (map[string]any, error), args map[string]any) (out map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("input validation panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return v(args)
}

// result turns the reply body into a tool result. Tools with an output schema also
// return the body as structuredContent, checked against that schema, so that a
// client that validates (as the MCP TypeScript SDK does) never sees a mismatch it
// cannot explain.
func (t *serverTool) result(body any) *sdk.CallToolResult {
	if t.outSchema == nil {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: exchange.Stringify(body)}}}
	}
	structured, err := structuredBody(body)
	if err != nil {
		return errorResult(fmt.Sprintf("tool %s declares an output schema but its reply is not JSON: %v", t.info.Name, err))
	}
	if err := t.outSchema.Validate(structured); err != nil {
		return errorResult(fmt.Sprintf("tool %s: reply does not match its output schema: %v", t.info.Name, err))
	}
	text, err := json.Marshal(structured)
	if err != nil {
		return errorResult(fmt.Sprintf("tool %s: %v", t.info.Name, err))
	}
	return &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: string(text)}},
		StructuredContent: structured,
	}
}

// structuredBody returns body as a plain JSON value (maps, slices, float64 …):
// strings and bytes holding JSON are decoded, other values are round-tripped
// through encoding/json so that schema validation sees what the client will.
func structuredBody(body any) (any, error) {
	var data []byte
	switch b := body.(type) {
	case string:
		data = []byte(b)
	case []byte:
		data = b
	case json.RawMessage:
		data = b
	default:
		var err error
		if data, err = json.Marshal(body); err != nil {
			return nil, err
		}
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%.80q: %w", string(data), err)
	}
	return v, nil
}

func errorResult(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}}}
}

// decodeArguments turns the call's JSON arguments into the exchange body. Integral
// numbers become int64 (not float64) so that steps can use them as counts and
// indexes; absent or null arguments give an empty map.
func decodeArguments(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("tool arguments are not valid JSON: %w", err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("tool arguments must be a JSON object, got %s", jsonKind(v))
	}
	return normalizeNumbers(m).(map[string]any), nil
}

func normalizeNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeNumbers(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = normalizeNumbers(e)
		}
		return x
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	default:
		return v
	}
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	default:
		return "null"
	}
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
