package engine_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/tracing/export"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// trivialSteps are five steps that each do the least a real step does: read the
// body and set it or a header.
func trivialSteps() []engine.Processor {
	steps := make([]engine.Processor, 5)
	for i := range steps {
		steps[i] = engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			if n, ok := ex.In().Body().(int); ok {
				ex.In().SetBody(n + 1)
			}
			return nil
		})
	}
	return steps
}

// BenchmarkPipeline5Steps is one exchange (created per operation, as a trigger
// does) through a pipeline of five trivial steps. Goal: ≤ 5 µs and ≤ 20 allocations.
func BenchmarkPipeline5Steps(b *testing.B) {
	p := engine.BuildPipeline(trivialSteps(), nil, nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ex := exchange.NewWithBody(exchange.InOut, 0)
		if err := p.Process(ctx, ex); err != nil {
			b.Fatal(err)
		}
		if ex.In().Body() != 5 {
			b.Fatalf("body %v, want 5", ex.In().Body())
		}
	}
}

// BenchmarkPipeline5StepsIntercepted adds one pass-through interceptor per step
// (what tracing or metrics cost before they do any work).
func BenchmarkPipeline5StepsIntercepted(b *testing.B) {
	pass := func(next engine.Processor) engine.Processor {
		return engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error { return next.Process(ctx, ex) })
	}
	p := engine.BuildPipeline(trivialSteps(), []engine.Interceptor{pass}, nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ex := exchange.NewWithBody(exchange.InOut, 0)
		if err := p.Process(ctx, ex); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkContextRun5Steps runs the same pipeline as a workflow of a started
// context (engine.Context.Run: lookup, in-flight accounting, panic guard).
func BenchmarkContextRun5Steps(b *testing.B) { benchContextRun(b, nil) }

// BenchmarkContextRun5StepsTraced is BenchmarkContextRun5Steps with OpenTelemetry
// tracing on (internal/tracing/export): one exchange span and five step spans per operation,
// all recorded, exported to nowhere. The difference is what a traced exchange
// costs; docs/tracing.md points here.
func BenchmarkContextRun5StepsTraced(b *testing.B) {
	tr, err := export.New(config.TracingConfig{}, export.Options{Exporter: tracetest.NewNoopExporter()})
	if err != nil {
		b.Fatal(err)
	}
	if err := tr.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
	benchContextRun(b, tr.Tracer())
}

func benchContextRun(b *testing.B, tr engine.Tracer) {
	hc := engine.NewContext("bench")
	if tr != nil {
		hc.SetTracer(tr)
	}
	if err := hc.AddWorkflow(&engine.Workflow{ID: "five", Processors: trivialSteps()}); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := hc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = hc.Stop(ctx) })
	b.ReportAllocs()
	for b.Loop() {
		ex := exchange.NewWithBody(exchange.InOut, 0)
		if err := hc.Run(ctx, "five", ex); err != nil {
			b.Fatal(err)
		}
	}
}
