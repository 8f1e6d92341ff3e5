package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

type pause struct{}

func (pause) Error() string   { return "waiting for the caller" }
func (pause) Interrupt() bool { return true }

type notReally struct{}

func (notReally) Error() string   { return "says no" }
func (notReally) Interrupt() bool { return false }

func TestIsInterrupt(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]bool{
		nil:                                   false,
		errors.New("plain"):                   false,
		pause{}:                               true,
		fmt.Errorf("step: %w", pause{}):       true,
		errors.Join(errors.New("x"), pause{}): true,
		notReally{}:                           false,
	} {
		if got := engine.IsInterrupt(err); got != want {
			t.Errorf("IsInterrupt(%v) = %v, want %v", err, got, want)
		}
	}
}

// Every tool call asks IsInterrupt about its outcome, almost always nil: that
// answer must not allocate errors.As's target.
func TestIsInterruptOfNilAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = engine.IsInterrupt(nil) }); n != 0 {
		t.Errorf("IsInterrupt(nil) allocates %v times, want 0", n)
	}
}

// An interrupt goes to no error handler: no redelivery, no dead letter, and the
// pipeline stops at the step that returned it.
func TestPipelinePassesInterruptsOn(t *testing.T) {
	t.Parallel()
	handled, ran := 0, 0
	eh := handlerFunc(func(context.Context, *exchange.Exchange, engine.Processor, error) error { handled++; return nil })
	p := engine.BuildPipeline([]engine.Processor{
		engine.ProcessorFunc(func(context.Context, *exchange.Exchange) error { return fmt.Errorf("ask: %w", pause{}) }),
		engine.ProcessorFunc(func(context.Context, *exchange.Exchange) error { ran++; return nil }),
	}, nil, eh)
	err := p.Process(context.Background(), exchange.New(exchange.InOut))
	if !engine.IsInterrupt(err) || handled != 0 || ran != 0 {
		t.Fatalf("err %v, handled %d, later step ran %d times", err, handled, ran)
	}
	// Any other failure still goes to the handler.
	p = engine.BuildPipeline([]engine.Processor{
		engine.ProcessorFunc(func(context.Context, *exchange.Exchange) error { return notReally{} }),
	}, nil, eh)
	if err := p.Process(context.Background(), exchange.New(exchange.InOut)); err != nil || handled != 1 {
		t.Fatalf("err %v, handled %d", err, handled)
	}
}

type handlerFunc func(context.Context, *exchange.Exchange, engine.Processor, error) error

func (f handlerFunc) HandleError(ctx context.Context, ex *exchange.Exchange, p engine.Processor, err error) error {
	return f(ctx, ex, p, err)
}

// An exchange stopped by an interrupt is no failure: not counted, not logged.
func TestInterruptIsNoFailure(t *testing.T) {
	t.Parallel()
	hc := engine.NewContext("interrupt-stats")
	var logged strings.Builder
	hc.SetLogger(slog.New(slog.NewTextHandler(&logged, nil)))
	wf := &engine.Workflow{ID: "asks", FromURI: "direct://asks", Processors: []engine.Processor{
		engine.ProcessorFunc(func(context.Context, *exchange.Exchange) error { return pause{} }),
	}}
	if err := hc.AddWorkflow(wf); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hc.Stop(context.Background()) }()
	err := hc.Run(context.Background(), "asks", exchange.New(exchange.InOut))
	if !engine.IsInterrupt(err) {
		t.Fatalf("run: %v", err)
	}
	if strings.Contains(logged.String(), engine.FailureLogMessage) {
		t.Errorf("logged as a failure: %s", logged.String())
	}
	for _, s := range hc.Stats().Workflows {
		if s.Failed != 0 || s.Exchanges != 1 {
			t.Errorf("counted %+v, want 1 exchange, 0 failed", s)
		}
	}
}
