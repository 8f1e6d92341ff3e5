package engine_test

import (
	"context"
	"errors"
	"fmt"
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
