package tool

import (
	"bytes"
	"context"
	"fmt"
	"maps"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// Caller describes who calls a tool, as far as the tool's steps may see it: the
// MCP server a call came through becomes the HelixMcpServerName header of a
// workflow's exchange. Callers keep one per server and pass it with [WithCaller].
type Caller struct {
	Server string // the name of the MCP server the call came through

	server any // Server boxed by NewCaller, so that calls do not box it each time
}

// NewCaller returns the Caller of the MCP server named server.
func NewCaller(server string) *Caller { return &Caller{Server: server, server: server} }

// serverValue is c.Server as an interface value.
func (c *Caller) serverValue() any {
	if s, ok := c.server.(string); ok && s == c.Server {
		return c.server
	}
	return c.Server
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller ctx carries, or nil.
func CallerFrom(ctx context.Context) *Caller {
	c, _ := ctx.Value(callerKey{}).(*Caller)
	return c
}

type headersKey struct{}

// WithHeaders returns ctx carrying headers that the exchange of a workflow tool
// called with it starts with, next to HelixMcpToolName and the others (the MCP
// server passes what the request says about its client this way). Headers ctx
// carries already stay, unless h sets them too.
func WithHeaders(ctx context.Context, h map[string]any) context.Context {
	if len(h) == 0 {
		return ctx
	}
	if old, ok := ctx.Value(headersKey{}).(map[string]any); ok {
		merged := make(map[string]any, len(old)+len(h))
		maps.Copy(merged, old)
		maps.Copy(merged, h)
		h = merged
	}
	return context.WithValue(ctx, headersKey{}, h)
}

// AddWorkflows registers every workflow of hc, in the context's order: those with
// a trigger as tools ([FromWorkflow]), the others (no trigger, or an mcp-server://
// trigger) as excluded, with the reason.
func (c *Catalogue) AddWorkflows(hc *engine.Context) {
	for _, wf := range hc.Workflows() {
		t, err := FromWorkflow(hc, wf)
		if err != nil {
			c.Exclude(wf.ID, err)
			continue
		}
		_ = c.Add(t) // workflow ids are unique within a context
	}
}

// FromWorkflows returns a catalogue of the workflows of hc (see AddWorkflows): what
// an MCP server offers when nobody gave it a catalogue.
func FromWorkflows(hc *engine.Context) *Catalogue {
	c := NewCatalogue()
	c.AddWorkflows(hc)
	return c
}

// FromWorkflow describes wf as a tool (not yet registered): named after its id,
// described by its description (else "Helix route: <id>"), with its schemas and
// ValidateInput. Invoking it runs an InOut exchange whose body is the arguments
// through wf's whole pipeline (interceptors and error handler included) with
// hc.Run, headers HelixMcpToolName, HelixMcpRouteID and HelixMcpServerName set; the
// reply body is the result: Structured when wf has an output schema (unless the
// reply is a Result), else [ReplyResult] of it (text, content parts, bytes with an
// image, audio or other binary Content-Type).
// The run ends when ctx ends or when the engine abandons draining at Stop.
//
// Workflows without a trigger cannot be called, and a workflow whose trigger is an
// MCP server is not a tool; both are errors.
func FromWorkflow(hc *engine.Context, wf *engine.Workflow) (*Tool, error) {
	if wf.FromURI == "" {
		return nil, fmt.Errorf("expose: workflow %q has no trigger, so it cannot be called as a tool; give it a trigger (direct://%s)", wf.ID, wf.ID)
	}
	if u, err := uri.Parse(wf.FromURI); err == nil && u.Scheme == "mcp-server" {
		return nil, fmt.Errorf("expose: workflow %q is itself an MCP server and cannot be a tool", wf.ID)
	}
	desc := wf.Description
	if desc == "" {
		desc = "Helix route: " + wf.ID
	}
	t := &Tool{
		ID: wf.ID, Description: desc, Kind: wf.Kind,
		InputSchema: wf.InputSchema, OutputSchema: wf.OutputSchema,
		Validate: wf.ValidateInput,
	}
	structured := len(bytes.TrimSpace(wf.OutputSchema)) > 0
	id := wf.ID
	var idValue any = id // boxed once, not on every call
	t.workflow = id
	if wf.Durable {
		// A durable run can be followed by its id: MCP servers may run it as a task.
		t.TaskSupport = TaskOptional
	}
	t.start = func(ctx context.Context, args map[string]any) *exchange.Exchange {
		ex := exchange.NewWithBody(exchange.InOut, args)
		msg := ex.In()
		msg.SetHeader(exchange.HeaderMcpToolName, t.nameValue())
		msg.SetHeader(exchange.HeaderMcpRouteID, idValue)
		var server any = ""
		if c := CallerFrom(ctx); c != nil {
			server = c.serverValue()
		}
		msg.SetHeader(exchange.HeaderMcpServerName, server)
		if h, ok := ctx.Value(headersKey{}).(map[string]any); ok {
			for k, v := range h {
				msg.SetHeader(k, v)
			}
		}
		return ex
	}
	t.reply = func(reply *exchange.Message) (Result, error) {
		if structured {
			if r, ok := reply.Body().(Result); ok {
				if err := checkParts(r.Content); err != nil {
					return Result{}, fmt.Errorf("the tool's reply is not valid content: %w", err)
				}
				return r, nil
			}
			return Result{Structured: reply.Body()}, nil
		}
		res, err := ReplyResult(reply.Body(), exchange.Stringify(reply.Header(exchange.HeaderContentType)),
			exchange.Stringify(reply.Header(HeaderResourceURI)))
		if err != nil {
			return Result{}, fmt.Errorf("the tool's reply is not valid content: %w", err)
		}
		return res, nil
	}
	t.Invoke = func(ctx context.Context, args map[string]any) (Result, error) {
		ex := t.start(ctx, args)
		// The call ends when the caller gives up (ctx) or when the engine abandons
		// draining at Stop (run context), whichever comes first.
		if err := hc.RunUntilStop(ctx, id, ex); err != nil {
			return Result{}, err
		}
		return t.reply(ex.In())
	}
	return t, nil
}
