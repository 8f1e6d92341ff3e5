package pattern_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/pattern"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// parksOn returns the keys of every durable wait in err's tree.
func parksOn(err error) []string {
	var keys []string
	var walk func(error)
	walk = func(e error) {
		if pe, ok := e.(*durable.ParkError); ok {
			keys = append(keys, pe.Wait.Key)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, c := range u.Unwrap() {
				walk(c)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return keys
}

// Parallel branches that each wait give the caller all their waits (so that a
// durable run parks once on all of them), still an interrupt.
func TestMulticastJoinsTheInterruptsOfItsBranches(t *testing.T) {
	ask := func(key string) engine.Processor {
		return fn(func(context.Context, *exchange.Exchange) error {
			return durable.Park(durable.Wait{Kind: durable.WaitElicit, Key: key})
		})
	}
	m := pattern.NewMulticast(engine.NewContext("t"), pattern.MulticastOptions{Parallel: true},
		[]engine.Processor{ask("a"), failWith("boom"), ask("b")})
	defer stopMulticast(t, m)
	err := m.Process(context.Background(), exchange.NewWithBody(exchange.InOut, "x"))
	if got := fmt.Sprint(parksOn(err)); got != "[a b]" || !engine.IsInterrupt(err) {
		t.Fatalf("waits %s (interrupt %v) of %v", got, engine.IsInterrupt(err), err)
	}
	var pe *durable.ParkError
	if !errors.As(err, &pe) || pe.Wait.Key != "a" {
		t.Errorf("the first wait found is %+v, want the first branch's", pe)
	}
}

func TestSplitJoinsTheInterruptsOfItsElements(t *testing.T) {
	step := fn(func(_ context.Context, ex *exchange.Exchange) error {
		if k := ex.In().Body().(string); k != "-" {
			return durable.Park(durable.Wait{Kind: durable.WaitApprove, Key: k})
		}
		return nil
	})
	s := newSplit(t, pattern.SplitBody(), pattern.SplitOptions{Parallel: true}, step)
	_, err := process(t, s, []any{"k0", "-", "k2", "k3"})
	if got := fmt.Sprint(parksOn(err)); got != "[k0 k2 k3]" || !engine.IsInterrupt(err) {
		t.Fatalf("waits %s (interrupt %v) of %v", got, engine.IsInterrupt(err), err)
	}
}
