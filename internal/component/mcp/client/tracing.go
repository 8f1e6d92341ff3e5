package client

import (
	"context"
	"net/url"
	"reflect"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/arvenza/helix/internal/tracing"
)

// propagateTrace is a sending middleware of the go-sdk client: every request it
// sends (initialize, tools/call, tools/list …) carries the trace context of its
// ctx in params._meta.traceparent and tracestate, where MCP servers look for it
// (the HTTP header would name the connection's first caller only). A request
// sent without a span in ctx — tracing off — is left as it is.
func propagateTrace(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if !strings.HasPrefix(method, "notifications/") && trace.SpanContextFromContext(ctx).IsValid() {
			if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
				p.SetMeta(tracing.InjectMeta(ctx, p.GetMeta()))
			}
		}
		return next(ctx, method, req)
	}
}

// startCallSpan starts the client span of one tools/call when ctx's trace records
// (see tracing.Child), after the MCP semantic conventions.
func (c *Conn) startCallSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	if !tracing.Recording(ctx) {
		return ctx, trace.SpanFromContext(ctx)
	}
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", "tools/call"),
		attribute.String("gen_ai.tool.name", name),
		attribute.String("gen_ai.operation.name", "execute_tool"),
	}
	if c.cfg.Transport == TransportStdio {
		attrs = append(attrs, attribute.String("network.transport", "pipe"))
	} else if u, err := url.Parse(c.cfg.Endpoint); err == nil {
		// The host only: the endpoint may carry credentials in its query.
		attrs = append(attrs, attribute.String("server.address", u.Hostname()))
	}
	return tracing.Child(ctx, "tools/call "+name, trace.SpanKindClient, attrs...)
}

// endCallSpan ends a tools/call client span with the call's outcome.
func endCallSpan(span trace.Span, res *sdk.CallToolResult, err error) {
	if err == nil && res != nil && res.IsError {
		span.SetAttributes(attribute.String("error.type", "tool_error"))
		span.SetStatus(codes.Error, "the tool answered isError")
	}
	tracing.End(span, err)
}
