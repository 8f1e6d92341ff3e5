package durable_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/exchange"
)

// approveStep parks until it runs with a resolution, then records it.
func approveStep(runs *atomic.Int32) step {
	return step{name: "w.yaml:4:5 approve", runs: runs, fn: func(ctx context.Context, ex *exchange.Exchange) error {
		r, ok := durable.ResolutionFrom(ctx)
		if !ok {
			return durable.Park(durable.Wait{Kind: durable.WaitApprove, Key: "q1", Message: "ship it?"})
		}
		ex.In().SetBody(ex.In().Body().(string) + "+" + r.Kind + " by " + r.By)
		return nil
	}}
}

// A parked run ends its segment (input_required, the wait stored), survives a
// restart, and goes on at the parked step when resolved, once: the first
// resolution wins; steps before the wait do not run again.
func TestParkedRunResolvesOnceAcrossARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var n0, n1, n2 atomic.Int32
	a := startApp(t, dir, appendTo("w.yaml:3:5 a", &n0), approveStep(&n1), appendTo("w.yaml:5:5 c", &n2))
	var parked atomic.Value
	a.rt.OnPark(func(r durable.Run) { parked.Store(r) })
	ex := exchange.NewWithBody(exchange.InOut, "in")
	if err := a.ec.Run(context.Background(), "wf", ex); err != nil {
		t.Fatal(err)
	}
	body, _ := ex.In().Body().(map[string]any)
	id, _ := body["run_id"].(string)
	if body["state"] != "input_required" || id == "" {
		t.Fatalf("parked run answered %v", ex.In().Body())
	}
	for deadline := time.Now().Add(5 * time.Second); parked.Load() == nil && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond) // OnPark runs in the run's goroutine
	}
	if r, _ := parked.Load().(durable.Run); r.ID != id || r.Wait == nil || r.Wait.Key != "q1" {
		t.Fatalf("OnPark got %+v", parked.Load())
	}
	a.stop()

	var m0, m1, m2 atomic.Int32
	b := startApp(t, dir, appendTo("w.yaml:3:5 a", &m0), approveStep(&m1), appendTo("w.yaml:5:5 c", &m2))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := b.rt.Get(ctx, id)
	if err != nil || run.State != durable.StateInputRequired || run.Wait == nil || run.Wait.Message != "ship it?" || run.Step != 1 {
		t.Fatalf("after restart %+v, %v", run, err)
	}
	if _, err := b.rt.Resolve(ctx, id, durable.Resolution{Kind: durable.ResolvedApproved, By: "ann"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.rt.Resolve(ctx, id, durable.Resolution{Kind: durable.ResolvedRejected, By: "bob"}); !errors.Is(err, durable.ErrNotWaiting) {
		t.Fatalf("second resolution: %v", err)
	}
	run, err = b.rt.Await(ctx, id)
	if err != nil || run.State != durable.StateCompleted || run.Segment != 1 {
		t.Fatalf("run %+v, %v", run, err)
	}
	s, _ := exchange.DecodeSnapshot(run.Result)
	if s.Body != "in+w.yaml:3:5 a+approved by ann+w.yaml:5:5 c" || m0.Load() != 0 || m1.Load() != 1 || m2.Load() != 1 {
		t.Fatalf("body %v; steps after restart ran %d %d %d", s.Body, m0.Load(), m1.Load(), m2.Load())
	}
	if _, err := b.rt.Resolve(ctx, "nope", durable.Resolution{Kind: durable.ResolvedApproved}); !errors.Is(err, durable.ErrNotFound) {
		t.Fatalf("unknown run: %v", err)
	}
}

// Cancelling a parked run ends it; cancelling it again changes nothing.
func TestCancelParkedRun(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	a := startApp(t, t.TempDir(), approveStep(&n))
	ctx := context.Background()
	run, err := a.rt.Start(ctx, "wf", exchange.NewWithBody(exchange.InOut, "in"), durable.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if run, err = a.rt.Await(ctx, run.ID); err != nil || run.State != durable.StateInputRequired {
		t.Fatalf("%+v %v", run, err)
	}
	for range 2 {
		if run, err = a.rt.Cancel(ctx, run.ID); err != nil || run.State != durable.StateCancelled {
			t.Fatalf("%+v %v", run, err)
		}
	}
	if _, err := a.rt.Resolve(ctx, run.ID, durable.Resolution{Kind: durable.ResolvedApproved}); !errors.Is(err, durable.ErrNotWaiting) {
		t.Fatalf("resolving a cancelled run: %v", err)
	}
}

// agentStep journals two entries then ends; it is Journaled.
type agentStep struct {
	step
	calls *atomic.Int32
	stop  chan struct{}
}

func (agentStep) Journaled() bool { return true }

func (s agentStep) Process(ctx context.Context, ex *exchange.Exchange) error {
	j := durable.JournalFrom(ctx)
	if j == nil {
		return errors.New("no journal")
	}
	var out []string
	for i, name := range []string{"turn", "tool"} {
		v, err := j.Do(ctx, name, func(context.Context) (json.RawMessage, error) {
			s.calls.Add(1)
			if i == 1 && s.stop != nil {
				<-ctx.Done() // cut off in the second entry
				return nil, ctx.Err()
			}
			return json.RawMessage(`"` + name + `"`), nil
		})
		if err != nil {
			return err
		}
		out = append(out, string(v))
	}
	ex.In().SetBody(out)
	return nil
}

// A journaled step's entries are checkpoints: after a restart, the entries it
// recorded are not done again.
func TestJournaledStepResumesAtItsEntry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var calls, n atomic.Int32
	a := startApp(t, dir, agentStep{step: step{name: "w.yaml:3:5 agent", runs: &n}, calls: &calls, stop: make(chan struct{})})
	if _, err := a.rt.Start(context.Background(), "wf", exchange.NewWithBody(exchange.InOut, "in"), durable.StartOptions{RunID: "r"}); err != nil {
		t.Fatal(err)
	}
	for calls.Load() < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	a.stop()

	var calls2 atomic.Int32
	b := startApp(t, dir, agentStep{step: step{name: "w.yaml:3:5 agent", runs: &n}, calls: &calls2})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := b.rt.Await(ctx, "r")
	if err != nil || run.State != durable.StateCompleted {
		t.Fatalf("%+v %v", run, err)
	}
	if calls2.Load() != 1 {
		t.Fatalf("after restart %d entries ran again, want 1 (the one cut off)", calls2.Load())
	}
	steps, _ := b.rt.Steps(ctx, "r")
	if len(steps) != 3 {
		t.Fatalf("steps %+v", steps)
	}
}

// A failed run resumes from its last checkpoint: the step that failed runs
// again, the steps before it do not.
func TestResumeFailedRun(t *testing.T) {
	t.Parallel()
	var n0, n1 atomic.Int32
	flaky := step{name: "w.yaml:4:5 flaky", runs: &n1, fn: func(_ context.Context, ex *exchange.Exchange) error {
		if n1.Load() == 1 {
			return errors.New("not yet")
		}
		ex.In().SetBody(ex.In().Body().(string) + "+flaky")
		return nil
	}}
	a := startApp(t, t.TempDir(), appendTo("w.yaml:3:5 a", &n0), flaky)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := a.rt.Start(ctx, "wf", exchange.NewWithBody(exchange.InOut, "in"), durable.StartOptions{RunID: "f"})
	if err == nil {
		run, err = a.rt.Await(ctx, run.ID)
	}
	if err != nil || run.State != durable.StateFailed {
		t.Fatalf("%+v %v", run, err)
	}
	if _, err := a.rt.Resume(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	run, err = a.rt.Await(ctx, "f")
	if err != nil || run.State != durable.StateCompleted {
		t.Fatalf("%+v %v", run, err)
	}
	s, _ := exchange.DecodeSnapshot(run.Result)
	if s.Body != "in+w.yaml:3:5 a+flaky" || n0.Load() != 1 || n1.Load() != 2 {
		t.Fatalf("body %v, steps ran %d and %d times", s.Body, n0.Load(), n1.Load())
	}
	if _, err := a.rt.Resume(ctx, "f"); err == nil {
		t.Fatal("resumed a completed run")
	}
}

// Cancelling a run in a step ends it: the step's context is cancelled, the
// run is cancelled, and its step is not recorded as done.
func TestCancelRunningRun(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	entered := make(chan struct{})
	block := step{name: "w.yaml:4:5 slow", runs: &n, fn: func(ctx context.Context, ex *exchange.Exchange) error {
		close(entered)
		<-ctx.Done()
		return ctx.Err()
	}}
	a := startApp(t, t.TempDir(), block)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := a.rt.Start(ctx, "wf", exchange.New(exchange.InOut), durable.StartOptions{RunID: "c"}); err != nil {
		t.Fatal(err)
	}
	<-entered
	run, err := a.rt.Cancel(ctx, "c")
	if err != nil || run.State != durable.StateCancelled {
		t.Fatalf("%+v %v", run, err)
	}
	if run, err = a.rt.Await(ctx, "c"); err != nil || run.State != durable.StateCancelled {
		t.Fatalf("%+v %v", run, err)
	}
	time.Sleep(100 * time.Millisecond) // the cancelled execution ends
	if steps, _ := a.rt.Steps(ctx, "c"); len(steps) != 0 {
		t.Fatalf("recorded %+v", steps)
	}
	if run, _ = a.rt.Get(ctx, "c"); run.State != durable.StateCancelled {
		t.Fatalf("after the execution ended: %+v", run)
	}
}

// Of many resolutions at once, exactly one wins; the run goes on once.
func TestConcurrentResolutionsOneWins(t *testing.T) {
	t.Parallel()
	var n0, n1 atomic.Int32
	a := startApp(t, t.TempDir(), approveStep(&n0), appendTo("w.yaml:5:5 c", &n1))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := a.rt.Start(ctx, "wf", exchange.NewWithBody(exchange.InOut, "in"), durable.StartOptions{RunID: "race"})
	if err == nil {
		run, err = a.rt.Await(ctx, run.ID)
	}
	if err != nil || run.State != durable.StateInputRequired {
		t.Fatalf("%+v %v", run, err)
	}
	var wins, lost atomic.Int32
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := a.rt.Resolve(ctx, "race", durable.Resolution{Kind: durable.ResolvedApproved, By: fmt.Sprint(i)})
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, durable.ErrNotWaiting):
				lost.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 || lost.Load() != 19 {
		t.Fatalf("%d won, %d lost", wins.Load(), lost.Load())
	}
	if run, err = a.rt.Await(ctx, "race"); err != nil || run.State != durable.StateCompleted || n1.Load() != 1 {
		t.Fatalf("%+v %v, last step ran %d times", run, err, n1.Load())
	}
}

// countedAgent is agentStep counting how often it is entered at all.
type countedAgent struct {
	agentStep
	entered *atomic.Int32
}

func (s countedAgent) Process(ctx context.Context, ex *exchange.Exchange) error {
	s.entered.Add(1)
	return s.agentStep.Process(ctx, ex)
}

// A journaled step whose end was recorded is not entered again when its run
// is taken up after a restart: what it does between its entries (an upstream
// task's polling, a session's update) is done once.
func TestRecordedJournaledStepIsNotEnteredAgain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var calls, n, entered atomic.Int32
	cut := make(chan struct{})
	blocking := step{name: "w.yaml:4:5 slow", runs: &n, fn: func(ctx context.Context, ex *exchange.Exchange) error {
		select {
		case <-cut:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}}
	agent := countedAgent{agentStep{step: step{name: "w.yaml:3:5 agent", runs: &n}, calls: &calls}, &entered}
	a := startApp(t, dir, agent, blocking)
	if _, err := a.rt.Start(context.Background(), "wf", exchange.NewWithBody(exchange.InOut, "in"), durable.StartOptions{RunID: "j"}); err != nil {
		t.Fatal(err)
	}
	for n.Load() < 1 { // in the step after the journaled one
		time.Sleep(5 * time.Millisecond)
	}
	a.stop()

	close(cut)
	b := startApp(t, dir, agent, blocking)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	run, err := b.rt.Await(ctx, "j")
	if err != nil || run.State != durable.StateCompleted {
		t.Fatalf("%+v %v", run, err)
	}
	if entered.Load() != 1 || calls.Load() != 2 {
		t.Fatalf("the journaled step was entered %d times (its entries ran %d times), want 1 (2)", entered.Load(), calls.Load())
	}
	s, _ := exchange.DecodeSnapshot(run.Result)
	if fmt.Sprint(s.Body) != `["turn" "tool"]` {
		t.Fatalf("body %v", s.Body)
	}
}
