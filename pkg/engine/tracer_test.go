package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// recordingTracer notes what the engine asks it to trace, as "start …" and
// "end … error" lines in order.
type recordingTracer struct {
	mu    sync.Mutex
	lines []string
}

func (r *recordingTracer) note(format string, args ...any) {
	r.mu.Lock()
	r.lines = append(r.lines, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

type spanKey struct{}

func (r *recordingTracer) StartExchange(ctx context.Context, kind, id, trigger string, ex *exchange.Exchange) (context.Context, func(error)) {
	r.note("start %s %s %s", kind, id, trigger)
	return context.WithValue(ctx, spanKey{}, id), func(err error) { r.note("end %s %v", id, err) }
}

func (r *recordingTracer) StartStep(ctx context.Context, name string, index int, ex *exchange.Exchange) (context.Context, func(error)) {
	parent, _ := ctx.Value(spanKey{}).(string)
	r.note("start step %d %q in %s", index, name, parent)
	return ctx, func(err error) { r.note("end step %d %v", index, err) }
}

// The engine starts one exchange span per Run and one step span per step, inside
// the exchange's context, and ends each with its error — a recovered panic
// included — whether the tracer was set before or after the workflow was added.
func TestTracerSeesExchangesAndSteps(t *testing.T) {
	hc := engine.NewContext("traced")
	ok := namedStep{"helix.yaml:5:9 transform", func(context.Context, *exchange.Exchange) error { return nil }}
	if err := hc.AddWorkflow(&engine.Workflow{ID: "early", FromURI: "direct://early", Processors: []engine.Processor{ok,
		namedStep{"helix.yaml:6:9 transform", func(context.Context, *exchange.Exchange) error { return errors.New("boom") }}}}); err != nil {
		t.Fatal(err)
	}
	rt := &recordingTracer{}
	hc.SetTracer(rt)
	if err := hc.AddWorkflow(&engine.Workflow{ID: "late", Kind: engine.KindTool, Processors: []engine.Processor{
		namedStep{"helix.yaml:9:9 script", func(context.Context, *exchange.Exchange) error { panic("oops") }}}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := hc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer hc.Stop(ctx)
	if err := hc.Run(ctx, "early", exchange.New(exchange.InOut)); err == nil {
		t.Fatal("early did not fail")
	}
	if err := hc.Run(ctx, "late", exchange.New(exchange.InOut)); !engine.IsPanic(err) {
		t.Fatalf("late: %v, want a panic error", err)
	}
	want := []string{
		`start workflow early direct://early`,
		`start step 0 "helix.yaml:5:9 transform" in early`,
		`end step 0 <nil>`,
		`start step 1 "helix.yaml:6:9 transform" in early`,
		`end step 1 boom`,
		`end early helix.yaml:6:9 transform: boom`,
		`start tool late `,
		`start step 0 "helix.yaml:9:9 script" in late`,
		`end step 0 step panicked: oops`,
		`end late helix.yaml:9:9 script: step panicked: oops`,
	}
	if got := strings.Join(rt.lines, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("traced:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	if hc.Tracer() != rt {
		t.Error("Tracer() does not return the tracer set")
	}
}

// Without a tracer a pipeline allocates nothing more than it did before tracing
// existed: the same figure as BenchmarkPipeline5Steps' baseline (5: the exchange
// and its message, created per run here too).
func TestNoTracerAllocs(t *testing.T) {
	testtools.SkipAllocsUnderRace(t)
	p := engine.BuildPipeline(trivialSteps(), nil, nil)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(200, func() {
		ex := exchange.NewWithBody(exchange.InOut, 0)
		_ = p.Process(ctx, ex)
	})
	ex := exchange.NewWithBody(exchange.InOut, 0)
	bare := testing.AllocsPerRun(200, func() { ex = exchange.NewWithBody(exchange.InOut, 0) })
	_ = ex
	if allocs > bare {
		t.Errorf("a pipeline run allocates %v, creating its exchange %v: the steps path allocates", allocs, bare)
	}
}
