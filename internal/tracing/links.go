package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// A durable run resumed after a crash, on another replica or after a wait runs
// in a new trace: its first attempt's spans were exported long ago, maybe by
// another process. The runtime records the first attempt's span as a reference
// ([SpanRef]) and starts every later attempt with a link to it ([LinkTo]), so a
// trace viewer leads from the resumed run to where it began.

type linksKey struct{}

// SpanRef returns the W3C traceparent of the span ctx carries, "" when it
// carries none: what a durable run keeps of its first attempt's span.
func SpanRef(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// LinkTo returns ctx whose next exchange span ([Tracer.StartExchange]) links to
// the span ref names (a [SpanRef]); ctx itself when ref is empty or malformed.
func LinkTo(ctx context.Context, ref string) context.Context {
	if ref == "" {
		return ctx
	}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(),
		propagation.MapCarrier{"traceparent": ref}))
	if !sc.IsValid() {
		return ctx
	}
	links, _ := ctx.Value(linksKey{}).([]trace.Link)
	links = append(links[:len(links):len(links)], trace.Link{SpanContext: sc,
		Attributes: []attribute.KeyValue{AttrLinkReason.String("resumed run's first attempt")}})
	return context.WithValue(ctx, linksKey{}, links)
}

// AttrLinkReason says why a span links to another.
const AttrLinkReason = attribute.Key("helix.link.reason")

// linksFrom returns the links LinkTo put in ctx.
func linksFrom(ctx context.Context) []trace.Link {
	links, _ := ctx.Value(linksKey{}).([]trace.Link)
	return links
}
