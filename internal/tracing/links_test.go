package tracing_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/arvenza/helix/internal/tracing"
	"github.com/arvenza/helix/pkg/exchange"
)

func TestResumedRunLinksToItsFirstAttempt(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tr := tracing.NewTracer()
	tr.Use(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))

	// The first attempt: its exchange span is what the run keeps a reference to.
	ctx, end := tr.StartExchange(context.Background(), "workflow", "orders", "", exchange.New(exchange.InOnly))
	ref := tracing.SpanRef(ctx)
	first := trace.SpanContextFromContext(ctx)
	end(nil)
	if ref == "" {
		t.Fatal("no reference to the first attempt's span")
	}
	if tracing.SpanRef(context.Background()) != "" {
		t.Error("a reference without a span")
	}

	// The resumed attempt, in another process: a new trace, linked to the first.
	ctx, end = tr.StartExchange(tracing.LinkTo(context.Background(), ref), "workflow", "orders", "", exchange.New(exchange.InOnly))
	end(nil)
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	resumed := spans[1]
	if resumed.SpanContext().TraceID() == first.TraceID() {
		t.Error("the resumed attempt continued the first attempt's trace instead of linking to it")
	}
	links := resumed.Links()
	if len(links) != 1 || links[0].SpanContext.SpanID() != first.SpanID() || links[0].SpanContext.TraceID() != first.TraceID() {
		t.Fatalf("links %+v, want one to %v", links, first)
	}
	if len(links[0].Attributes) != 1 || links[0].Attributes[0].Key != tracing.AttrLinkReason {
		t.Errorf("link attributes %v", links[0].Attributes)
	}
	if len(spans[0].Links()) != 0 {
		t.Error("the first attempt links to something")
	}

	// A malformed or empty reference links to nothing and changes nothing.
	for _, bad := range []string{"", "garbage", "00-00000000000000000000000000000000-0000000000000000-01"} {
		if got := tracing.LinkTo(ctx, bad); got != ctx {
			t.Errorf("LinkTo(%q) changed the context", bad)
		}
	}
}
