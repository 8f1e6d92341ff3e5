package tracing

import (
	"context"
	"maps"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The W3C Trace Context header (and _meta) names.
const (
	TraceParent = "traceparent"
	TraceState  = "tracestate"
)

// propagator is W3C Trace Context, set explicitly: the global one of the
// OpenTelemetry API propagates nothing until a program sets it, and Helix leaves
// globals alone.
var propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Propagator returns the propagator Helix uses (W3C traceparent/tracestate).
func Propagator() propagation.TextMapPropagator { return propagator }

// InjectHTTP sets traceparent (and tracestate) on h from the span context in ctx;
// without one it leaves h alone. The http:// producer and the model providers'
// HTTP clients call it for every request.
func InjectHTTP(ctx context.Context, h http.Header) {
	if trace.SpanContextFromContext(ctx).IsValid() {
		h.Del(TraceState) // Inject sets it only when not empty; an older one must not stay
		propagator.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// ExtractHTTP returns ctx with the remote span context of h's traceparent and
// tracestate, or ctx itself when h has no valid traceparent.
func ExtractHTTP(ctx context.Context, h http.Header) context.Context {
	if h.Get(TraceParent) == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.HeaderCarrier(h))
}

// InjectMeta returns meta (an MCP request's params._meta) with traceparent and
// tracestate from the span context in ctx. meta itself is never changed (it may be
// shared); a copy is returned, or meta when ctx carries no span context.
func InjectMeta(ctx context.Context, meta map[string]any) map[string]any {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return meta
	}
	carrier := propagation.MapCarrier{}
	propagator.Inject(ctx, carrier)
	out := make(map[string]any, len(meta)+len(carrier))
	maps.Copy(out, meta)
	for k, v := range carrier {
		out[k] = v
	}
	return out
}

// ExtractMeta returns ctx with the remote span context of an MCP request's
// params._meta traceparent/tracestate, and whether there was a valid one.
func ExtractMeta(ctx context.Context, meta map[string]any) (context.Context, bool) {
	tp, _ := meta[TraceParent].(string)
	if tp == "" {
		return ctx, false
	}
	carrier := propagation.MapCarrier{TraceParent: tp}
	if ts, ok := meta[TraceState].(string); ok && ts != "" {
		carrier[TraceState] = ts
	}
	out := propagator.Extract(ctx, carrier)
	return out, trace.SpanContextFromContext(out).IsRemote()
}

// Inject calls set for traceparent and tracestate from the span context in ctx;
// without one it calls nothing. The Kafka producer adds record headers with it.
func Inject(ctx context.Context, set func(key, value string)) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	carrier := propagation.MapCarrier{}
	propagator.Inject(ctx, carrier)
	for k, v := range carrier {
		set(k, v)
	}
}

// exchangeCarrier reads an exchange's headers case-insensitively: http-server://
// stores "Traceparent" (Go's canonical form), kafka:// the record's own spelling.
type exchangeCarrier map[string]any

func (c exchangeCarrier) Get(key string) string {
	if v, ok := c[key].(string); ok {
		return v
	}
	for k, v := range c {
		if s, ok := v.(string); ok && strings.EqualFold(k, key) {
			return s
		}
	}
	return ""
}

func (c exchangeCarrier) Set(string, string) {} // extraction only

func (c exchangeCarrier) Keys() []string { return nil }
