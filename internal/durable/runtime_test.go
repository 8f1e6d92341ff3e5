package durable_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// step is a named top-level step that counts its executions.
type step struct {
	name string
	runs *atomic.Int32
	fn   func(ctx context.Context, ex *exchange.Exchange) error
}

func (s step) Name() string { return s.name }
func (s step) Process(ctx context.Context, ex *exchange.Exchange) error {
	s.runs.Add(1)
	return s.fn(ctx, ex)
}

// app is an engine with one durable workflow and its runtime on dir.
type app struct {
	ec *engine.Context
	rt *durable.Runtime
}

func startApp(t *testing.T, dir string, steps ...engine.Processor) *app {
	t.Helper()
	return startAppOn(t, dir, "", steps...)
}

// startAppOn is startApp on the store at url (PostgreSQL); "" is the embedded one.
func startAppOn(t *testing.T, dir, url string, steps ...engine.Processor) *app {
	t.Helper()
	ec := engine.NewContext("t")
	if err := ec.AddWorkflow(&engine.Workflow{ID: "wf", Processors: steps, Durable: true}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt, err := durable.New(ctx, durable.Options{AppName: "t", DataDir: dir, Store: url, ReplicaID: "r1", MaxCheckpoint: 64 << 10})
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
	a := &app{ec: ec, rt: rt}
	t.Cleanup(a.stop)
	return a
}

func (a *app) stop() {
	if a.rt != nil {
		a.rt.Shutdown(time.Second)
		_ = a.ec.Stop(context.Background())
		a.rt = nil
	}
}

func appendTo(name string, runs *atomic.Int32) step {
	return step{name: name, runs: runs, fn: func(_ context.Context, ex *exchange.Exchange) error {
		ex.In().SetBody(fmt.Sprint(ex.In().Body(), "+", name))
		return nil
	}}
}

// A durable workflow run through the engine is checkpointed and answered
// from its result; a repeat with the same Idempotency-Key gets the first run's
// result without running again.
func TestDurableRunCompletesOnce(t *testing.T) {
	t.Parallel()
	var n0, n1 atomic.Int32
	a := startApp(t, t.TempDir(), appendTo("w.yaml:3:5 a", &n0), appendTo("w.yaml:4:5 b", &n1))
	ctx := context.Background()
	for range 2 {
		ex := exchange.NewWithBody(exchange.InOut, "in")
		ex.In().SetHeader("Idempotency-Key", "k1")
		if err := a.ec.Run(ctx, "wf", ex); err != nil {
			t.Fatal(err)
		}
		if ex.In().Body() != "in+w.yaml:3:5 a+w.yaml:4:5 b" || ex.In().HeaderString(durable.HeaderRunID) != "wf:k1" {
			t.Fatalf("body %v, headers %v", ex.In().Body(), ex.In().Headers())
		}
	}
	if n0.Load() != 1 || n1.Load() != 1 {
		t.Fatalf("steps ran %d and %d times", n0.Load(), n1.Load())
	}
	run, err := a.rt.Get(ctx, "wf:k1")
	if err != nil || run.State != durable.StateCompleted || run.Workflow != "wf" {
		t.Fatalf("run %+v, %v", run, err)
	}
	steps, err := a.rt.Steps(ctx, "wf:k1")
	if err != nil || len(steps) != 2 || steps[1].Index != 1 || steps[1].Name != "w.yaml:4:5 b" || steps[1].Bytes == 0 {
		t.Fatalf("steps %+v, %v", steps, err)
	}
	if _, err := a.rt.Get(ctx, "nope"); !errors.Is(err, durable.ErrNotFound) {
		t.Fatalf("unknown run: %v", err)
	}
	runs, err := a.rt.List(ctx, durable.Filter{States: []durable.State{durable.StateCompleted}})
	if err != nil || len(runs) != 1 {
		t.Fatalf("list %v, %v", runs, err)
	}
}

// A failed step fails the run with the step's message, as data: the result
// carries the failure, the caller gets it as its error.
func TestDurableRunFailure(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	fail := step{name: "w.yaml:5:5 fail", runs: &n, fn: func(context.Context, *exchange.Exchange) error {
		return errors.New("the database said no")
	}}
	a := startApp(t, t.TempDir(), appendTo("w.yaml:3:5 a", &n), fail)
	ex := exchange.NewWithBody(exchange.InOut, "in")
	err := a.ec.Run(context.Background(), "wf", ex)
	if err == nil || !strings.Contains(err.Error(), "the database said no") {
		t.Fatalf("err %v", err)
	}
	run, _ := a.rt.Get(context.Background(), ex.In().HeaderString(durable.HeaderRunID))
	if run.State != durable.StateFailed || !strings.Contains(run.Error, "the database said no") {
		t.Fatalf("run %+v", run)
	}
}

// A checkpoint over the limit fails the run saying which step and how large.
func TestCheckpointOverTheLimitFailsTheRun(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	big := step{name: "w.yaml:9:5 big", runs: &n, fn: func(_ context.Context, ex *exchange.Exchange) error {
		ex.In().SetBody(strings.Repeat("x", 100<<10))
		return nil
	}}
	a := startApp(t, t.TempDir(), big)
	ex := exchange.NewWithBody(exchange.InOut, "in")
	err := a.ec.Run(context.Background(), "wf", ex)
	if err == nil || !strings.Contains(err.Error(), "checkpoint of step w.yaml:9:5 big is 100.1 KiB, over helix.durable_max_checkpoint 64 KiB") {
		t.Fatalf("err %v", err)
	}
}

// A run cut off in a step resumes, after a restart, at that step: the steps
// it finished do not run again. A restart on a changed workflow fails the
// pending run with a message saying so.
func TestRecoveryResumesAtTheStepItWasIn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var n0, n1, n2 atomic.Int32
	entered := make(chan struct{})
	var once sync.Once
	block := step{name: "w.yaml:4:5 slow", runs: &n1, fn: func(ctx context.Context, ex *exchange.Exchange) error {
		once.Do(func() { close(entered) })
		<-ctx.Done()
		return ctx.Err()
	}}
	a := startApp(t, dir, appendTo("w.yaml:3:5 a", &n0), block, appendTo("w.yaml:5:5 c", &n2))
	run, err := a.rt.Start(context.Background(), "wf", exchange.NewWithBody(exchange.InOut, "in"), durable.StartOptions{RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	<-entered
	a.stop() // the run stays pending

	var m0, m1, m2 atomic.Int32
	b := startApp(t, dir, appendTo("w.yaml:3:5 a", &m0), appendTo("w.yaml:4:5 slow", &m1), appendTo("w.yaml:5:5 c", &m2))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err = b.rt.Await(ctx, run.ID)
	if err != nil || run.State != durable.StateCompleted {
		t.Fatalf("run %+v, %v", run, err)
	}
	s, _ := exchange.DecodeSnapshot(run.Result)
	if s.Body != "in+w.yaml:3:5 a+w.yaml:4:5 slow+w.yaml:5:5 c" || m0.Load() != 0 || m1.Load() != 1 || m2.Load() != 1 {
		t.Fatalf("body %v; after restart steps ran %d %d %d", s.Body, m0.Load(), m1.Load(), m2.Load())
	}
	if run.Attempts != 0 && run.Attempts < 2 {
		t.Fatalf("attempts %d", run.Attempts)
	}
}

func TestChangedWorkflowFailsThePendingRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var n atomic.Int32
	entered := make(chan struct{})
	var once sync.Once
	block := step{name: "w.yaml:4:5 slow", runs: &n, fn: func(ctx context.Context, ex *exchange.Exchange) error {
		once.Do(func() { close(entered) })
		<-ctx.Done()
		return ctx.Err()
	}}
	a := startApp(t, dir, appendTo("w.yaml:3:5 a", &n), block)
	if _, err := a.rt.Start(context.Background(), "wf", exchange.NewWithBody(exchange.InOut, "in"), durable.StartOptions{RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	<-entered
	a.stop()

	// Step a moved to line 7: the checkpoint of step 0 was another step.
	b := startApp(t, dir, appendTo("w.yaml:7:5 a", &n), appendTo("w.yaml:8:5 slow", &n))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := b.rt.Await(ctx, "r1")
	if err != nil || run.State != durable.StateFailed || !strings.Contains(run.Error, "workflow changed under a pending run") {
		t.Fatalf("run %+v, %v", run, err)
	}
}

// An input too large to checkpoint is refused before any step runs, as the
// caller's fault (413); one that holds what a checkpoint cannot keep, too (422).
func TestInputThatCannotBeCheckpointed(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	a := startApp(t, t.TempDir(), appendTo("w.yaml:3:5 a", &n))
	ex := exchange.NewWithBody(exchange.InOut, strings.Repeat("x", 65<<10))
	err := a.ec.Run(context.Background(), "wf", ex)
	if err == nil || exchange.HTTPStatus(err) != 413 || !strings.Contains(err.Error(), "over helix.durable_max_checkpoint 64 KiB") {
		t.Fatalf("err %v (status %d)", err, exchange.HTTPStatus(err))
	}
	ex = exchange.NewWithBody(exchange.InOut, map[string]any{"c": make(chan int)})
	err = a.ec.Run(context.Background(), "wf", ex)
	if err == nil || exchange.HTTPStatus(err) != 422 || !strings.Contains(err.Error(), "body.c is a chan int") {
		t.Fatalf("err %v", err)
	}
	if n.Load() != 0 {
		t.Fatal("a step ran")
	}
}
