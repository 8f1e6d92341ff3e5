package traces_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/arvenza/helix/internal/console/traces"
	"github.com/arvenza/helix/internal/redact"
	"github.com/arvenza/helix/internal/tracing"
)

func provider(t *testing.T, s *traces.Store) trace.Tracer {
	t.Helper()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(s))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp.Tracer("test")
}

// exchangeTrace makes one trace like an exchange's: a workflow span with two
// step spans, the second failing.
func exchangeTrace(tr trace.Tracer, exchangeID string) trace.SpanContext {
	ctx, root := tr.Start(context.Background(), "workflow greet", trace.WithAttributes(
		tracing.AttrWorkflowID.String("greet"), tracing.AttrExchangeID.String(exchangeID)))
	_, s1 := tr.Start(ctx, "step set-body", trace.WithAttributes(tracing.AttrExchangeID.String(exchangeID)))
	s1.End()
	_, s2 := tr.Start(ctx, "step to")
	s2.RecordError(errors.New("refused"))
	s2.SetStatus(codes.Error, "refused")
	s2.End()
	root.End()
	return root.SpanContext()
}

func TestStoreKeepsTracesAndFindsExchanges(t *testing.T) {
	t.Parallel()
	s := traces.NewStore(traces.Limits{})
	tr := provider(t, s)
	sc := exchangeTrace(tr, "ex-1")
	exchangeTrace(tr, "ex-2")
	got, ok := s.Trace(sc.TraceID().String())
	if !ok || len(got.Spans) != 3 {
		t.Fatalf("trace = %+v %v", got, ok)
	}
	sum := traces.Summarize(got)
	if sum.Root != "workflow greet" || sum.Workflow != "greet" || sum.ExchangeID != "ex-1" || sum.Status != "error" || sum.Spans != 3 {
		t.Fatalf("summary = %+v", sum)
	}
	if byEx, ok := s.ByExchange("ex-1"); !ok || byEx.ID != got.ID {
		t.Fatalf("by exchange = %v %v", byEx, ok)
	}
	if _, ok := s.ByExchange("nope"); ok {
		t.Fatal("found an unknown exchange")
	}
	if l := s.Traces(); len(l) != 2 || l[1].ID != got.ID {
		t.Fatalf("list = %d", len(l))
	}
	bars := traces.Waterfall(got)
	if len(bars) != 3 || bars[0].Name != "workflow greet" || bars[0].Depth != 0 || bars[1].Depth != 1 || bars[2].Depth != 1 {
		t.Fatalf("bars = %+v", bars)
	}
	if bars[0].Offset != "0.00" || bars[0].Width != "100.00" {
		t.Fatalf("root bar = %s+%s", bars[0].Offset, bars[0].Width)
	}
	if bars[1].Name != "step set-body" || bars[2].Status != "error" || bars[2].StatusText != "refused" || len(bars[2].Events) != 1 {
		t.Fatalf("children = %+v", bars[1:])
	}
}

// The store keeps the last MaxTraces traces, at most MaxSpans spans and
// MaxSpansPerTrace per trace; values are cut.
func TestStoreBounds(t *testing.T) {
	t.Parallel()
	s := traces.NewStore(traces.Limits{MaxTraces: 5, MaxSpans: 12, MaxSpansPerTrace: 4, MaxValue: 50, MaxAttributes: 3})
	tr := provider(t, s)
	for i := range 20 {
		exchangeTrace(tr, fmt.Sprint("ex-", i))
	}
	if l := s.Traces(); len(l) != 4 { // 12 spans of 3 each
		t.Fatalf("traces = %d", len(l))
	}
	if spans, _ := s.Usage(); spans > 12 {
		t.Fatalf("spans = %d", spans)
	}
	if _, ok := s.ByExchange("ex-19"); !ok {
		t.Fatal("the newest trace is gone")
	}
	if _, ok := s.ByExchange("ex-0"); ok {
		t.Fatal("the oldest trace is kept")
	}
	// One big trace: spans beyond MaxSpansPerTrace counted, long values and
	// extra attributes cut.
	ctx, root := tr.Start(context.Background(), "big")
	for range 10 {
		_, sp := tr.Start(ctx, "child", trace.WithAttributes(attribute.String("long", strings.Repeat("v", 1000)),
			attribute.Int("a", 1), attribute.Int("b", 2), attribute.Int("c", 3)))
		sp.End()
	}
	root.End()
	big, _ := s.Trace(root.SpanContext().TraceID().String())
	if len(big.Spans) != 4 || big.Omitted != 7 {
		t.Fatalf("spans %d omitted %d", len(big.Spans), big.Omitted)
	}
	sp := big.Spans[0]
	if len(sp.Attributes) != 3 || sp.Dropped != 1 || !strings.Contains(sp.Attributes[0].Value, "(1000 bytes, cut)") || len(sp.Attributes[0].Value) > 80 {
		t.Fatalf("span = %+v", sp)
	}
	// Bytes: budget respected.
	s = traces.NewStore(traces.Limits{MaxBytes: 8 << 10})
	tr = provider(t, s)
	for range 100 {
		_, sp := tr.Start(context.Background(), "x", trace.WithAttributes(attribute.String("v", strings.Repeat("w", 400))))
		sp.End()
	}
	if _, b := s.Usage(); b > 8<<10 {
		t.Fatalf("bytes = %d", b)
	}
}

func TestStoreRedacts(t *testing.T) {
	t.Parallel()
	secret := "tok-traces-test-91b2"
	redact.AddSecret(secret)
	s := traces.NewStore(traces.Limits{})
	tr := provider(t, s)
	_, sp := tr.Start(context.Background(), "call "+secret, trace.WithAttributes(
		attribute.String("url.full", "https://api.example/x?key=abc"), attribute.String("k", "v "+secret)))
	sp.SetStatus(codes.Error, "failed: "+secret)
	sp.AddEvent("e", trace.WithAttributes(attribute.String("m", secret)))
	sp.End()
	got := fmt.Sprintf("%+v", s.Traces())
	if strings.Contains(got, secret) || strings.Contains(got, "key=abc") {
		t.Fatalf("secret kept: %s", got)
	}
}

// Spans ending on many goroutines while pages read (run with -race).
func TestStoreConcurrent(t *testing.T) {
	t.Parallel()
	s := traces.NewStore(traces.Limits{MaxTraces: 10, MaxSpans: 100})
	tr := provider(t, s)
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, tc := range s.Traces() {
				n := len(tc.Spans)
				_ = traces.Waterfall(tc)
				if len(tc.Spans) != n {
					t.Error("a snapshot changed")
				}
			}
			s.ByExchange("ex-1")
		}
	})
	var writers sync.WaitGroup
	for w := range 8 {
		writers.Go(func() {
			for i := range 50 {
				exchangeTrace(tr, fmt.Sprint(w, "-", i))
			}
		})
	}
	writers.Wait()
	close(stop)
	readers.Wait()
	if n := len(s.Traces()); n != 10 {
		t.Fatalf("traces = %d", n)
	}
}

// A malformed trace (two spans each the other's parent) is drawn whole,
// without looping.
func TestWaterfallSurvivesCycles(t *testing.T) {
	t.Parallel()
	tc := &traces.Trace{ID: "x", Spans: []traces.Span{{SpanID: "a", ParentID: "b", Name: "a"}, {SpanID: "b", ParentID: "a", Name: "b"}, {SpanID: "c", Name: "c"}}}
	bars := traces.Waterfall(tc)
	if len(bars) != 3 || bars[0].Name != "c" {
		t.Fatalf("bars = %+v", bars)
	}
}
