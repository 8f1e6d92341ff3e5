package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// replayRunner records each top-level step's body after it ran; on a second run
// it restores the recorded bodies instead of running the steps.
type replayRunner struct {
	names    []string
	recorded map[int]any
	failed   map[int]string
}

func (r *replayRunner) RunTop(ctx context.Context, i int, name string, ex *exchange.Exchange, run func(context.Context) error) error {
	r.names = append(r.names, name)
	if body, ok := r.recorded[i]; ok {
		ex.In().SetBody(body)
		return nil
	}
	if err := run(ctx); err != nil {
		r.failed[i] = err.Error()
		return err
	}
	r.recorded[i] = ex.In().Body()
	return nil
}

// A StepRunner wraps every top-level step of the workflow's own pipeline (not a
// nested one's) and may skip a step by restoring its recorded result.
func TestStepRunnerWrapsAndSkipsTopLevelSteps(t *testing.T) {
	t.Parallel()
	var ran []string
	appendStep := func(name string) engine.Processor {
		return engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			ran = append(ran, name)
			ex.In().SetBody(fmt.Sprint(ex.In().Body(), "+", name))
			return nil
		})
	}
	nested := engine.BuildPipeline([]engine.Processor{appendStep("n0"), appendStep("n1")}, nil, nil)
	p := engine.BuildPipeline([]engine.Processor{named{appendStep("s0"), "first"}, nested, appendStep("s2")}, nil, nil)

	r := &replayRunner{recorded: map[int]any{}, failed: map[int]string{}}
	ex := exchange.NewWithBody(exchange.InOut, "in")
	if err := p.Process(engine.WithStepRunner(context.Background(), r), ex); err != nil {
		t.Fatal(err)
	}
	if len(r.names) != 3 || r.names[0] != "first" || fmt.Sprint(ran) != "[s0 n0 n1 s2]" {
		t.Fatalf("runner saw %q, ran %v", r.names, ran)
	}
	want := ex.In().Body()

	// Replay: steps 0 and 1 are recorded, only step 2 runs.
	delete(r.recorded, 2)
	ran, r.names = nil, nil
	ex = exchange.NewWithBody(exchange.InOut, "in")
	if err := p.Process(engine.WithStepRunner(context.Background(), r), ex); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ran) != "[s2]" || ex.In().Body() != want {
		t.Fatalf("replay ran %v, body %v (want %v)", ran, ex.In().Body(), want)
	}
}

// The error handler's redeliveries happen inside one RunTop call, and a failure
// it handles is no failure to the runner.
func TestStepRunnerRunIncludesTheErrorHandler(t *testing.T) {
	t.Parallel()
	calls := 0
	flaky := engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		ex.In().SetBody("done")
		return nil
	})
	eh := &retryHandler{max: 5}
	p := engine.BuildPipeline([]engine.Processor{flaky}, nil, eh)
	r := &replayRunner{recorded: map[int]any{}, failed: map[int]string{}}
	if err := p.Process(engine.WithStepRunner(context.Background(), r), exchange.NewWithBody(exchange.InOut, "in")); err != nil {
		t.Fatal(err)
	}
	if calls != 3 || len(r.names) != 1 || r.recorded[0] != "done" {
		t.Fatalf("calls %d, RunTop calls %d, recorded %v", calls, len(r.names), r.recorded)
	}

	// A failure the handler gives up on ends the run with the step's error.
	always := engine.ProcessorFunc(func(context.Context, *exchange.Exchange) error { return errors.New("broken") })
	p = engine.BuildPipeline([]engine.Processor{named{always, "w.yaml:3:5 log"}, flaky}, nil, &retryHandler{max: 1})
	r = &replayRunner{recorded: map[int]any{}, failed: map[int]string{}}
	ex := exchange.NewWithBody(exchange.InOut, "in")
	err := p.Process(engine.WithStepRunner(context.Background(), r), ex)
	if err == nil || err.Error() != "broken" || ex.Exception() != err || r.failed[0] != "broken" || len(r.names) != 1 || r.names[0] != "w.yaml:3:5 log" {
		t.Fatalf("err %v, exception %v, failed %v, names %v", err, ex.Exception(), r.failed, r.names)
	}
}

// retryHandler runs the failed step again up to max times.
type retryHandler struct{ max int }

func (h *retryHandler) HandleError(ctx context.Context, ex *exchange.Exchange, step engine.Processor, err error) error {
	for range h.max {
		ex.SetException(nil)
		if err = engine.RunStep(ctx, step, ex); err == nil {
			return nil
		}
	}
	return err
}
