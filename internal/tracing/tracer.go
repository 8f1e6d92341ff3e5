package tracing

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Tracer is the tracing of one application: the spans of exchanges and steps the
// engine asks for, and the spans other parts start through [Tracer.StartSpan].
// Its spans go to the tracer provider given to [Tracer.Use], nowhere before.
// Building, starting and flushing that provider (the SDK and the OTLP exporter)
// is internal/tracing/export's work, which only the application imports: this
// package, which every component that traces imports, links neither. Its span
// methods are safe for concurrent use.
type Tracer struct {
	tp trace.TracerProvider
	tr trace.Tracer
	// triggers caches the parsed trigger URIs handed to trace hooks: a workflow's
	// trigger is fixed, so it is parsed once, not for every traced exchange.
	triggers sync.Map // trigger URI string → *uri.URI
}

// NewTracer returns a tracer whose spans go nowhere until [Tracer.Use].
func NewTracer() *Tracer { return &Tracer{} }

// Use sends the tracer's spans to tp. It is called once, before the engine starts:
// it is not synchronised with the span methods.
func (t *Tracer) Use(tp trace.TracerProvider) {
	t.tp = tp
	t.tr = tp.Tracer(ScopeName)
}

// Provider returns the tracer provider (nil before Use), for code that starts
// root spans of its own: the MCP server's tools/call spans.
func (t *Tracer) Provider() trace.TracerProvider {
	if t == nil || t.tp == nil {
		return nil
	}
	return t.tp
}

// tracer is the tracer of the provider; spans asked for before Use (nothing runs
// then) would go nowhere.
func (t *Tracer) tracer() trace.Tracer {
	if t.tr == nil {
		return noop.NewTracerProvider().Tracer(ScopeName)
	}
	return t.tr
}

// StartSpan starts a span of this application's tracer: a child of the span (or
// remote span context) in ctx, else a root. Safe for concurrent use.
func (t *Tracer) StartSpan(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return t.tracer().Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}
