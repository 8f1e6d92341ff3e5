package tracing_test

import (
	"context"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/arvenza/helix/internal/tracing"
)

func TestMetaPropagation(t *testing.T) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5, 6}, TraceFlags: trace.FlagsSampled})
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	shared := map[string]any{"progressToken": "p1"}
	meta := tracing.InjectMeta(ctx, shared)
	if meta["progressToken"] != "p1" || meta["traceparent"] != "00-01020300000000000000000000000000-0405060000000000-01" {
		t.Fatalf("meta %v", meta)
	}
	if _, changed := shared["traceparent"]; changed {
		t.Error("InjectMeta changed the map it was given")
	}
	if got := tracing.InjectMeta(context.Background(), shared); len(got) != 1 {
		t.Errorf("without a span: %v", got)
	}
	back, ok := tracing.ExtractMeta(context.Background(), meta)
	if got := trace.SpanContextFromContext(back); !ok || got.TraceID() != sc.TraceID() || got.SpanID() != sc.SpanID() || !got.IsRemote() {
		t.Errorf("extracted %v %v", got, ok)
	}
	if _, ok := tracing.ExtractMeta(context.Background(), map[string]any{"traceparent": "garbage"}); ok {
		t.Error("a malformed traceparent was taken")
	}
	h := http.Header{"Tracestate": {"stale=1"}}
	tracing.InjectHTTP(ctx, h)
	if h.Get("traceparent") != meta["traceparent"] || h.Get("tracestate") != "" {
		t.Errorf("headers %v", h)
	}
}
