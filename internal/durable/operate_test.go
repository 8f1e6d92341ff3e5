package durable_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/tracing"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// openOperator opens the store of dir as helix runs does: a runtime that is
// never launched.
func openOperator(t *testing.T, dir string) *durable.Runtime {
	t.Helper()
	rt, err := durable.New(context.Background(), durable.Options{AppName: "t", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Shutdown(time.Second) })
	return rt
}

// An operator approves a parked run from another process's runtime (helix runs
// approve) while the application runs: the run goes on in the application, not
// in the operator's process, and the operator sees its steps and its state.
func TestOperatorResolvesARunTheApplicationFinishes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var n0, n1, n2 atomic.Int32
	a := startApp(t, dir, appendTo("w.yaml:3:5 a", &n0), approveStep(&n1), appendTo("w.yaml:5:5 c", &n2))
	ex := exchange.NewWithBody(exchange.InOut, "in")
	if err := a.ec.Run(context.Background(), "wf", ex); err != nil {
		t.Fatal(err)
	}
	body, _ := ex.In().Body().(map[string]any)
	id, _ := body["run_id"].(string)

	op := openOperator(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	counts, err := op.CountByState(ctx)
	if err != nil || counts[durable.StateInputRequired] != 1 || len(counts) != 1 {
		t.Fatalf("counts %v, %v", counts, err)
	}
	if op.ExecutorID() != "local" || op.StoreKind() != "sqlite" {
		t.Errorf("executor %q, store %q", op.ExecutorID(), op.StoreKind())
	}
	if _, err := op.Resolve(ctx, id, durable.Resolution{Kind: durable.ResolvedApproved, By: "cli:ann"}); err != nil {
		t.Fatal(err)
	}
	run, err := op.Await(ctx, id)
	if err != nil || run.State != durable.StateCompleted {
		t.Fatalf("run %+v, %v", run, err)
	}
	s, _ := exchange.DecodeSnapshot(run.Result)
	if s.Body != "in+w.yaml:3:5 a+approved by cli:ann+w.yaml:5:5 c" || n2.Load() != 1 {
		t.Fatalf("body %v, last step ran %d times", s.Body, n2.Load())
	}
	steps, err := op.Steps(ctx, id)
	if err != nil || len(steps) < 3 {
		t.Fatalf("steps %+v, %v", steps, err)
	}
	for _, st := range steps {
		if st.Bytes == 0 {
			t.Errorf("step %+v: no checkpoint size from an operator's runtime", st)
		}
	}
	counts, err = op.CountByState(ctx)
	if err != nil || counts[durable.StateCompleted] != 1 || counts[durable.StateInputRequired] != 0 {
		t.Fatalf("counts after %v, %v", counts, err)
	}
}

// Approved while no instance runs, a run goes on when one starts.
func TestOperatorResolvesWhileTheApplicationIsStopped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var n0, n1, n2 atomic.Int32
	a := startApp(t, dir, appendTo("w.yaml:3:5 a", &n0), approveStep(&n1), appendTo("w.yaml:5:5 c", &n2))
	ex := exchange.NewWithBody(exchange.InOut, "in")
	if err := a.ec.Run(context.Background(), "wf", ex); err != nil {
		t.Fatal(err)
	}
	body, _ := ex.In().Body().(map[string]any)
	id, _ := body["run_id"].(string)
	a.stop()

	op := openOperator(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := op.Resolve(ctx, id, durable.Resolution{Kind: durable.ResolvedRejected, By: "cli:bob"}); err != nil {
		t.Fatal(err)
	}
	if run, _ := op.Get(ctx, id); run.State != durable.StateWorking || n2.Load() != 0 {
		t.Fatalf("resolved while stopped: %+v, last step ran %d", run, n2.Load())
	}
	op.Shutdown(time.Second)

	var m0, m1, m2 atomic.Int32
	b := startApp(t, dir, appendTo("w.yaml:3:5 a", &m0), approveStep(&m1), appendTo("w.yaml:5:5 c", &m2))
	run, err := b.rt.Await(ctx, id)
	if err != nil || run.State != durable.StateCompleted {
		t.Fatalf("run %+v, %v", run, err)
	}
	if s, _ := exchange.DecodeSnapshot(run.Result); s.Body != "in+w.yaml:3:5 a+rejected by cli:bob+w.yaml:5:5 c" || m0.Load() != 0 {
		t.Fatalf("body %v, first step ran again %d", s.Body, m0.Load())
	}
}

// The runtime times each step's checkpoint, and a resumed run's replay up to its
// first step that runs anew.
func TestRuntimeObservesCheckpointsAndResumption(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var n0, n1 atomic.Int32
	var fail atomic.Bool
	fail.Store(true)
	flaky := step{name: "w.yaml:4:5 to", runs: &n1, fn: func(context.Context, *exchange.Exchange) error {
		if fail.Load() {
			return errors.New("upstream down")
		}
		return nil
	}}
	ec := engine.NewContext("t")
	if err := ec.AddWorkflow(&engine.Workflow{ID: "wf", Processors: []engine.Processor{appendTo("w.yaml:3:5 a", &n0), flaky}, Durable: true}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt, err := durable.New(ctx, durable.Options{AppName: "t", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	m := durable.NewMetrics(rt)
	rt.SetMetrics(m)
	reg := prometheus.NewRegistry()
	for _, c := range m.Collectors() {
		reg.MustRegister(c)
	}
	ec.SetDurableRunner(rt)
	if err := ec.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.Launch(ec); err != nil {
		t.Fatal(err)
	}
	defer func() { rt.Shutdown(time.Second); _ = ec.Stop(ctx) }()

	ex := exchange.NewWithBody(exchange.InOut, "in")
	_ = ec.Run(ctx, "wf", ex) // fails at its second step
	id := ex.In().HeaderString(durable.HeaderRunID)
	if got := samples(t, reg); got["helix_durable_checkpoint_seconds"] != 2 || got["helix_durable_resume_seconds"] != 0 {
		t.Fatalf("after the first run: %v", got)
	}
	fail.Store(false)
	if _, err := rt.Resume(ctx, id); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if run, err := rt.Await(wctx, id); err != nil || run.State != durable.StateCompleted {
		t.Fatalf("resumed run %+v, %v", run, err)
	}
	got := samples(t, reg)
	if got["helix_durable_resume_seconds"] != 1 || got["helix_durable_checkpoint_seconds"] != 3 || n0.Load() != 1 {
		t.Fatalf("after the resumption: %v; first step ran %d times", got, n0.Load())
	}
	if got["helix_durable_runs{state=completed}"] != 1 {
		t.Errorf("runs by state: %v", got)
	}
}

// samples gathers reg: histograms as their sample counts, gauges and counters
// as their values, labels in braces.
func samples(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range mt.GetLabel() {
				name += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			switch {
			case mt.GetHistogram() != nil:
				out[name] = float64(mt.GetHistogram().GetSampleCount())
			case mt.GetCounter() != nil:
				out[name] = mt.GetCounter().GetValue()
			default:
				out[name] = mt.GetGauge().GetValue()
			}
		}
	}
	return out
}

// A run's first execution continues the trace of the span that started it; its
// resumption starts a trace of its own, linked to that span.
func TestResumedRunLinksToTheSpanThatStartedIt(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := tracing.NewTracer()
	tr.Use(tp)
	var n0, n1 atomic.Int32
	var fail atomic.Bool
	fail.Store(true)
	flaky := step{name: "w.yaml:4:5 to", runs: &n1, fn: func(context.Context, *exchange.Exchange) error {
		if fail.Load() {
			return errors.New("upstream down")
		}
		return nil
	}}
	ec := engine.NewContext("t")
	ec.SetTracer(tr)
	if err := ec.AddWorkflow(&engine.Workflow{ID: "wf", Processors: []engine.Processor{appendTo("w.yaml:3:5 a", &n0), flaky}, Durable: true}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt, err := durable.New(ctx, durable.Options{AppName: "t", DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ec.SetDurableRunner(rt)
	if err := ec.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rt.Launch(ec); err != nil {
		t.Fatal(err)
	}
	defer func() { rt.Shutdown(time.Second); _ = ec.Stop(ctx) }()

	reqCtx, request := tp.Tracer("test").Start(ctx, "POST /orders")
	ex := exchange.NewWithBody(exchange.InOut, "in")
	_ = ec.Run(reqCtx, "wf", ex)
	request.End()
	id := ex.In().HeaderString(durable.HeaderRunID)
	fail.Store(false)
	if _, err := rt.Resume(ctx, id); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if run, err := rt.Await(wctx, id); err != nil || run.State != durable.StateCompleted {
		t.Fatalf("resumed run %+v, %v", run, err)
	}
	var executions []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "workflow wf" {
			executions = append(executions, s)
		}
	}
	if len(executions) != 2 {
		t.Fatalf("%d exchange spans of wf", len(executions))
	}
	first, resumed := executions[0], executions[1]
	want := request.SpanContext()
	if first.Parent().SpanID() != want.SpanID() || first.SpanContext().TraceID() != want.TraceID() {
		t.Errorf("the first execution is not a child of the request's span: parent %v", first.Parent())
	}
	if resumed.SpanContext().TraceID() == want.TraceID() {
		t.Error("the resumed execution continued the old trace")
	}
	if l := resumed.Links(); len(l) != 1 || l[0].SpanContext.SpanID() != want.SpanID() || l[0].SpanContext.TraceID() != want.TraceID() {
		t.Errorf("the resumed execution's links %+v, want one to the request's span", l)
	}
}
