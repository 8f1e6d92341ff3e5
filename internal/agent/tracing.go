package agent

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/internal/tracing"
)

// TraceGenerate runs one model request (generate) inside a span after the
// OpenTelemetry GenAI conventions: "chat <model>", client kind, with
// gen_ai.provider.name, gen_ai.request.model and the token usage of the answer.
// The providers call it from Generate; without a recording span in ctx (tracing
// off) it only calls generate.
func TraceGenerate(ctx context.Context, provider, model string, generate func(context.Context) (*ModelResponse, error)) (*ModelResponse, error) {
	if !tracing.Recording(ctx) {
		return generate(ctx)
	}
	ctx, span := tracing.Child(ctx, "chat "+model, trace.SpanKindClient,
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", provider),
		attribute.String("gen_ai.request.model", model))
	resp, err := generate(ctx)
	if resp != nil {
		span.SetAttributes(
			attribute.Int64("gen_ai.usage.input_tokens", resp.Usage.InputTokens),
			attribute.Int64("gen_ai.usage.output_tokens", resp.Usage.OutputTokens))
	}
	tracing.End(span, err)
	return resp, err
}

// TraceHeaders is the HTTP middleware the providers install in their SDK client
// (option.WithMiddleware): each request to the model API carries the traceparent
// of the model call's span, so that a traced gateway or self-hosted model joins
// the trace.
func TraceHeaders(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	tracing.InjectHTTP(req.Context(), req.Header)
	return next(req)
}

// traceToolCall runs one tool call of the model inside an "execute_tool <name>"
// span; a result with IsError marks the span failed.
func traceToolCall(ctx context.Context, c ToolCall, call func(context.Context) tool.Result) tool.Result {
	if !tracing.Recording(ctx) {
		return call(ctx)
	}
	ctx, span := tracing.Child(ctx, "execute_tool "+c.Name, trace.SpanKindInternal,
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", c.Name),
		attribute.String("gen_ai.tool.call.id", c.ID))
	r := call(ctx)
	if r.IsError {
		span.SetAttributes(attribute.String("error.type", "tool_error"))
		span.SetStatus(codes.Error, redact.Text(resultText(r)))
	}
	span.End()
	return r
}
