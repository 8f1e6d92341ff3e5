// Package tracing is Helix's OpenTelemetry tracing API: the tracer of one
// application (tracer.go; its provider is built from helix.tracing by
// internal/tracing/export, which only the application imports), the spans of exchanges and
// steps the engine asks for through [engine.Tracer], spans of other parts (MCP
// tool calls, agents' model calls) started as children of the span in a context
// ([Child]), and W3C trace context propagation over HTTP headers, MCP `_meta`,
// exchange headers and Kafka record headers (propagation.go).
//
// Nothing here is global: a [Tracer] belongs to one application, so two
// applications in one process (tests) keep their spans apart. Code that only has
// a context finds the provider through the span the context carries.
//
// With tracing off there is no Tracer at all: the engine and the components check
// for nil and do nothing else, so the exchange path costs no allocation.
package tracing

import (
	"context"
	"reflect"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// ScopeName is the instrumentation scope of every span Helix starts.
const ScopeName = "github.com/arvenza/helix"

// Attribute keys of Helix's own spans (the OpenTelemetry semantic conventions
// have none for workflows and steps).
const (
	AttrWorkflowID   = attribute.Key("helix.workflow.id")
	AttrWorkflowKind = attribute.Key("helix.workflow.kind")
	AttrExchangeID   = attribute.Key("helix.exchange.id")
	AttrTrigger      = attribute.Key("helix.trigger.scheme")
	AttrStepKind     = attribute.Key("helix.step.kind")
	AttrStepPosition = attribute.Key("helix.step.position")
	AttrStepIndex    = attribute.Key("helix.step.index")
)

// StartExchange starts the span of one exchange running through a workflow's
// pipeline: "<kind> <id>" ("workflow orders", "tool greet"). The engine calls it
// (see [engine.Tracer]) for every exchange when tracing is on; safe for
// concurrent use. The span is a child of the span in ctx (a direct:// call from
// another workflow, an MCP tools/call); without one it continues the trace of the
// exchange's traceparent/tracestate headers, which http-server:// copies from the
// request and kafka:// from the record, else it starts a trace.
func (t *Tracer) StartExchange(ctx context.Context, kind, id, trigger string, ex *exchange.Exchange) (context.Context, func(error)) {
	scheme, _, _ := strings.Cut(trigger, "://")
	spanKind := trace.SpanKindInternal
	attrs := []attribute.KeyValue{
		AttrWorkflowID.String(id), AttrWorkflowKind.String(kind), AttrExchangeID.String(ex.ID()),
	}
	if scheme != "" {
		attrs = append(attrs, AttrTrigger.String(scheme))
	}
	if !trace.SpanContextFromContext(ctx).IsValid() {
		// A trigger's own exchange: the trace comes from outside, if at all, and
		// the trigger's module says what kind of span it is.
		ctx = propagator.Extract(ctx, exchangeCarrier(ex.In().Headers()))
		if info, ok := t.triggerTrace(trigger, ex); ok {
			if k, known := spanKinds[info.Kind]; known {
				spanKind = k
			}
			for _, a := range info.Attributes {
				attrs = append(attrs, attribute.String(a.Key, a.Value))
			}
		}
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(spanKind), trace.WithAttributes(attrs...)}
	if links := linksFrom(ctx); links != nil { // a resumed durable run (links.go)
		opts = append(opts, trace.WithLinks(links...))
	}
	ctx, span := t.tracer().Start(ctx, kind+" "+id, opts...)
	return ctx, func(err error) { End(span, err) }
}

// spanKinds maps the span kinds components declare to OpenTelemetry's; a span of
// any other kind stays internal.
var spanKinds = map[component.SpanKind]trace.SpanKind{
	component.SpanInternal: trace.SpanKindInternal,
	component.SpanServer:   trace.SpanKindServer,
	component.SpanConsumer: trace.SpanKindConsumer,
}

// triggerTrace asks the module of trigger's scheme for the kind and attributes of
// the span of ex ([component.Spec.Trace]); ok is false when the module has no
// trace hook.
func (t *Tracer) triggerTrace(trigger string, ex *exchange.Exchange) (component.TraceInfo, bool) {
	scheme, _, _ := strings.Cut(trigger, "://")
	sp := component.SpecOf(scheme)
	if sp == nil || sp.Trace == nil {
		return component.TraceInfo{}, false
	}
	u, err := t.triggerURI(trigger)
	if err != nil {
		return component.TraceInfo{}, false
	}
	return sp.Trace(ex, u), true
}

// triggerURI parses trigger once and keeps it; hooks must not change the URI.
func (t *Tracer) triggerURI(trigger string) (*uri.URI, error) {
	if u, ok := t.triggers.Load(trigger); ok {
		return u.(*uri.URI), nil
	}
	u, err := uri.Parse(trigger)
	if err != nil {
		return nil, err
	}
	t.triggers.Store(trigger, u)
	return u, nil
}

// StartStep starts the span of one step of a workflow's pipeline: "step <kind>"
// with the step's kind, position in the YAML file and index in the pipeline. name
// is the step's name as engine.StepName gives it ("helix.yaml:14:9 transform");
// a processor without one (Go API) is "step <index>". Safe for concurrent use.
func (t *Tracer) StartStep(ctx context.Context, name string, index int, ex *exchange.Exchange) (context.Context, func(error)) {
	kind, pos := splitStepName(name)
	attrs := []attribute.KeyValue{AttrStepIndex.Int(index), AttrExchangeID.String(ex.ID())}
	spanName := "step " + kind
	if kind == "" {
		spanName = "step " + strconv.Itoa(index)
	} else {
		attrs = append(attrs, AttrStepKind.String(kind))
	}
	if pos != "" {
		attrs = append(attrs, AttrStepPosition.String(pos))
	}
	ctx, span := t.tracer().Start(ctx, spanName, trace.WithAttributes(attrs...))
	return ctx, func(err error) { End(span, err) }
}

// splitStepName splits "helix.yaml:14:9 transform" into its kind and position; a
// name without a position ("target mcp://…") is all kind.
func splitStepName(name string) (kind, pos string) {
	i := strings.LastIndexByte(name, ' ')
	if i <= 0 || name[i-1] < '0' || name[i-1] > '9' {
		return name, ""
	}
	return name[i+1:], name[:i]
}

// End ends span, first recording err (when not nil) as an exception event and
// setting the span's status to error.
func End(span trace.Span, err error) {
	if err != nil {
		Fail(span, err)
	}
	span.End()
}

// Fail records err on span: an exception event and the error status, both with
// the text redacted (internal/redact: URLs masked, secrets replaced), since spans
// leave the process for a collector.
func Fail(span trace.Span, err error) {
	msg := redact.Text(err.Error())
	span.AddEvent("exception", trace.WithAttributes(
		attribute.String("exception.type", reflect.TypeOf(err).String()),
		attribute.String("exception.message", msg)))
	span.SetStatus(codes.Error, msg)
}

// Child starts a span named name as a child of the span in ctx, from that span's
// own provider — so code that holds only a context (an agent's model call, an
// outgoing MCP request) traces into the application that runs it. When ctx has no
// recording span (tracing off, or the trace is not sampled) it starts nothing and
// returns ctx with the span it already had, whose methods do nothing.
func Child(ctx context.Context, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, parent
	}
	return parent.TracerProvider().Tracer(ScopeName).Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
}

// Recording reports whether ctx carries a span that records: the cheap test
// before building attributes for [Child].
func Recording(ctx context.Context) bool { return trace.SpanFromContext(ctx).IsRecording() }
