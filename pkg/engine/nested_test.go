package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// nestedRecorder is a recordingTracer that also traces nested steps.
type nestedRecorder struct{ recordingTracer }

func (r *nestedRecorder) StartNestedStep(ctx context.Context, name string, ex *exchange.Exchange) (context.Context, func(error)) {
	parent, _ := ctx.Value(spanKey{}).(string)
	r.note("start nested %q in %s", name, parent)
	return ctx, func(err error) { r.note("end nested %q %v", name, err) }
}

// The steps of a nested pipeline (a choice branch, a split's steps) and a
// step run with RunNested (a multicast branch) go to a NestedTracer, inside
// the exchange's context, each ended with its error — an exception left on
// the exchange included; a tracer without StartNestedStep sees the
// top-level steps only, as before.
func TestNestedStepsGoToANestedTracer(t *testing.T) {
	ok := namedStep{"helix.yaml:7:13 log", func(context.Context, *exchange.Exchange) error { return nil }}
	leaves := namedStep{"helix.yaml:8:13 transform", func(_ context.Context, ex *exchange.Exchange) error {
		ex.SetException(errors.New("left"))
		return nil
	}}
	branch := namedStep{"helix.yaml:10:13 set-body", func(context.Context, *exchange.Exchange) error { return nil }}
	for _, tc := range []struct {
		name   string
		tracer engine.Tracer
		want   []string
	}{
		{"nested", &nestedRecorder{}, []string{
			`start workflow w direct://w`,
			`start step 0 "helix.yaml:6:9 choice" in w`,
			`start nested "helix.yaml:7:13 log" in w`,
			`end nested "helix.yaml:7:13 log" <nil>`,
			`start nested "helix.yaml:8:13 transform" in w`,
			`end nested "helix.yaml:8:13 transform" left`,
			`start nested "helix.yaml:10:13 set-body" in w`,
			`end nested "helix.yaml:10:13 set-body" <nil>`,
			`end step 0 <nil>`,
			`end w <nil>`,
		}},
		{"top-level only", &recordingTracer{}, []string{
			`start workflow w direct://w`,
			`start step 0 "helix.yaml:6:9 choice" in w`,
			`end step 0 <nil>`,
			`end w <nil>`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hc := engine.NewContext("nested")
			inner := engine.NestedPipeline(hc, []engine.Processor{ok, leaves})
			composite := namedStep{"helix.yaml:6:9 choice", func(ctx context.Context, ex *exchange.Exchange) error {
				err := inner.Process(ctx, ex)
				if err == nil {
					t.Error("the nested pipeline hid the exception its step left")
				}
				ex.SetException(nil)
				return engine.RunNested(ctx, hc, branch, ex)
			}}
			if err := hc.AddWorkflow(&engine.Workflow{ID: "w", FromURI: "direct://w", Processors: []engine.Processor{composite}}); err != nil {
				t.Fatal(err)
			}
			hc.SetTracer(tc.tracer)
			ctx := context.Background()
			if err := hc.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer hc.Stop(ctx)
			if err := hc.Run(ctx, "w", exchange.New(exchange.InOut)); err != nil {
				t.Fatal(err)
			}
			var got []string
			switch r := tc.tracer.(type) {
			case *nestedRecorder:
				got = r.lines
			case *recordingTracer:
				got = r.lines
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("traced:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// Without a tracer, or with a nil context, a nested step just runs.
func TestRunNestedWithoutTracer(t *testing.T) {
	ran := 0
	step := namedStep{"x.yaml:1:1 log", func(context.Context, *exchange.Exchange) error { ran++; return nil }}
	if err := engine.RunNested(context.Background(), nil, step, exchange.New(exchange.InOut)); err != nil {
		t.Fatal(err)
	}
	if err := engine.RunNested(context.Background(), engine.NewContext("off"), step, exchange.New(exchange.InOut)); err != nil {
		t.Fatal(err)
	}
	if err := engine.NestedPipeline(nil, []engine.Processor{step}).Process(context.Background(), exchange.New(exchange.InOut)); err != nil {
		t.Fatal(err)
	}
	if ran != 3 {
		t.Fatalf("ran %d times, want 3", ran)
	}
}

// The cost of a nested pipeline's steps without a tracer (what every choice
// branch pays when tracing is off) and with a NestedTracer that does nothing.
func BenchmarkNestedPipeline(b *testing.B) {
	step := namedStep{"x.yaml:1:1 log", func(context.Context, *exchange.Exchange) error { return nil }}
	for _, tc := range []struct {
		name   string
		tracer engine.Tracer
	}{{"off", nil}, {"nested tracer", noopNested{}}} {
		b.Run(tc.name, func(b *testing.B) {
			hc := engine.NewContext("bench")
			hc.SetTracer(tc.tracer)
			p := engine.NestedPipeline(hc, []engine.Processor{step, step, step})
			ex := exchange.New(exchange.InOut)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if err := p.Process(ctx, ex); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

type noopNested struct{}

func (noopNested) StartExchange(ctx context.Context, _, _, _ string, _ *exchange.Exchange) (context.Context, func(error)) {
	return ctx, func(error) {}
}
func (noopNested) StartStep(ctx context.Context, _ string, _ int, _ *exchange.Exchange) (context.Context, func(error)) {
	return ctx, func(error) {}
}
func (noopNested) StartNestedStep(ctx context.Context, _ string, _ *exchange.Exchange) (context.Context, func(error)) {
	return ctx, func(error) {}
}
