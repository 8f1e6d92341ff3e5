package server

import (
	"context"
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/arvenza/helix/internal/tracing"
	"github.com/arvenza/helix/pkg/engine"
)

// startCallSpan starts the span of one tools/call, named and attributed after the
// OpenTelemetry MCP semantic conventions ("tools/call greet", mcp.method.name,
// gen_ai.tool.name, mcp.session.id). Its parent is the caller's trace context:
// params._meta.traceparent when the request has one (it belongs to this very
// request, where a header may have been set once for a whole connection), else
// the traceparent header of the HTTP request carrying the call (nil header: stdio).
// mcp.protocol.version is the session's; version stands in for it when the call
// has no session (a stateless call on the fast path). Called only when tracing is
// on (c.tracer != nil).
func (c *toolCaller) startCallSpan(ctx context.Context, name string, meta map[string]any, h http.Header, session *sdk.ServerSession, version string) (context.Context, trace.Span) {
	if mctx, ok := tracing.ExtractMeta(ctx, meta); ok {
		ctx = mctx
	} else if h != nil {
		ctx = tracing.ExtractHTTP(ctx, h)
	}
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", "tools/call"),
		attribute.String("gen_ai.tool.name", name),
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("helix.mcp.server", c.serverID),
	}
	if c.network != "" {
		attrs = append(attrs, attribute.String("network.transport", c.network))
	}
	sid := ""
	if h != nil {
		sid = h.Get("Mcp-Session-Id")
	}
	if sid == "" && session != nil {
		sid = session.ID()
	}
	if sid != "" {
		attrs = append(attrs, attribute.String("mcp.session.id", sid))
	}
	if session != nil {
		if ip := session.InitializeParams(); ip != nil {
			version = ip.ProtocolVersion
		}
	}
	if version != "" {
		attrs = append(attrs, attribute.String("mcp.protocol.version", version))
	}
	return c.tracer.StartSpan(ctx, "tools/call "+name, trace.SpanKindServer, attrs...)
}

// endCallSpan ends a tools/call span; a result with isError marks it failed
// (error.type tool_error, as the MCP conventions say), with the result's text.
func endCallSpan(span trace.Span, res *sdk.CallToolResult) {
	if res != nil && res.IsError {
		msg := "tool error"
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				msg = tc.Text
				break
			}
		}
		span.SetAttributes(attribute.String("error.type", "tool_error"))
		span.SetStatus(codes.Error, msg)
	}
	span.End()
}

// networkOf is the network.transport of a server's spans: pipe for stdio, tcp
// for the HTTP transports.
func networkOf(transport string) string {
	if transport == "stdio" {
		return "pipe"
	}
	return "tcp"
}

// tracerOf is the tracing of the engine context the server serves, or nil.
func tracerOf(hc *engine.Context) *tracing.Tracer {
	if hc == nil {
		return nil
	}
	t := hc.Tracer()
	if tee, ok := t.(interface{ Primary() engine.Tracer }); ok {
		t = tee.Primary() // the web console's tee of tracers (internal/console)
	}
	tr, _ := t.(*tracing.Tracer)
	return tr
}
