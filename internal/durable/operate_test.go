package durable_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/durable"
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
