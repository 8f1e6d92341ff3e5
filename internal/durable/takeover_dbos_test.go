package durable

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"

	"github.com/arvenza/helix/internal/testtools"
)

// takeoverSteps counts the executions of the step of takeoverWorkflow;
// takeoverBlock makes an execution hang after its step, as a replica that dies
// mid-run leaves it.
var (
	takeoverSteps atomic.Int64
	takeoverBlock atomic.Bool
	takeoverHung  = make(chan struct{}, 1)
)

func takeoverWorkflow(ctx dbos.Context, in string) (string, error) {
	out, err := dbos.RunAsStep(ctx, func(context.Context) (string, error) {
		takeoverSteps.Add(1)
		return in + " checked", nil
	}, dbos.WithStepName("check"))
	if err != nil {
		return "", err
	}
	if takeoverBlock.Load() {
		takeoverHung <- struct{}{}
		select {} // the replica dies here
	}
	return out + ", shipped", nil
}

func launchExecutor(t *testing.T, url, id string) dbos.Context {
	t.Helper()
	ctx, err := dbos.NewContext(context.Background(), dbos.Config{AppName: "helix-takeover-test", DatabaseURL: url,
		ExecutorID: id, ApplicationVersion: "test-1", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	dbos.RegisterWorkflow(ctx, takeoverWorkflow, dbos.WithWorkflowName("takeover"))
	if err := dbos.Launch(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// A replica dies in the middle of a run on PostgreSQL: the leader on another
// replica finds its executor lock free, hands its run back, and the other replica
// finishes it from its checkpoint, without running the completed step again.
func TestTakeoverOnDBOS(t *testing.T) {
	url := testtools.PostgresDatabase(t)
	ctx := context.Background()

	lockA := hold(t, url, "replica-a")
	a := launchExecutor(t, url, "replica-a")
	takeoverBlock.Store(true)
	if _, err := dbos.RunWorkflow(a, takeoverWorkflow, "order 7", dbos.WithWorkflowID("run-7")); err != nil {
		t.Fatal(err)
	}
	<-takeoverHung
	// replica-a dies: its lock's session ends; DBOS leaves the run PENDING.
	_ = lockA.Close(ctx)
	_ = dbos.Shutdown(a, 100*time.Millisecond)
	takeoverBlock.Store(false)

	lockB := hold(t, url, "replica-b")
	defer lockB.Close(ctx)
	b := launchExecutor(t, url, "replica-b")
	defer func() { _ = dbos.Shutdown(b, 5*time.Second) }()
	m := NewMetrics(nil)
	tk := &Takeover{URL: url, Self: "replica-b", Runs: DBOSPending{Client: b}, Interval: 50 * time.Millisecond, Taken: m.TookOver}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- tk.Run(runCtx) }()
	defer func() { stop(); <-done }()

	h, err := dbos.RetrieveWorkflow[string](b, "run-7")
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.GetResult(dbos.WithHandleTimeout(testtools.StartupBound), dbos.WithHandlePollingInterval(20*time.Millisecond))
	if err != nil || res != "order 7 checked, shipped" {
		t.Fatalf("result %q, %v", res, err)
	}
	if n := takeoverSteps.Load(); n != 1 {
		t.Errorf("the completed step ran %d times", n)
	}
	st, err := h.GetStatus()
	if err != nil || st.ExecutorID != "replica-b" {
		t.Errorf("finished by %q (%v), want replica-b", st.ExecutorID, err)
	}
}
