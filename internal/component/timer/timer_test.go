package timer_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/arvenza/helix/internal/component/componenttest"
	"github.com/arvenza/helix/internal/component/timer"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	componenttest.Run(t, componenttest.Harness{
		Features: componenttest.Features{
			Consumer: true, SelfTriggering: true, Pattern: exchange.InOnly, StopDrains: true,
		},
		Setup: func(t *testing.T) *componenttest.Fixture {
			return &componenttest.Fixture{Component: timer.New(nil), URI: "timer://conformance?period=10ms&delay=0"}
		},
	})
}

func TestOptions(t *testing.T) {
	tests := []struct {
		raw     string
		wantErr string
	}{
		{"timer://tick", ""},
		{"timer://tick?period=5s&delay=0&repeatCount=3", ""},
		{"timer://once?period=0&repeatCount=1", ""},
		{"timer://", "needs a name"},
		{"timer://t?period=soon", "not a duration"},
		{"timer://t?delay=-1s", "must not be negative"},
		{"timer://t?period=0", "must be positive"},
		{"timer://t?repeatCount=-2", "repeatCount"},
		{"timer://t?repeatCount=many", "repeatCount"},
	}
	for _, tc := range tests {
		t.Run(tc.raw, func(t *testing.T) {
			u, err := uri.Parse(tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			_, err = timer.New(nil).CreateEndpoint(u)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %v, want error containing %q", err, tc.wantErr)
			}
		})
	}
}

// A timer workflow with repeatCount=3 fires exactly three times, numbered 1..3, and
// then stays quiet while the context is still running.
// It runs in a synctest bubble: the timer's periods are virtual time, so the count does
// not depend on how fast the machine is.
func TestRepeatCountInEngine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hc := engine.NewContext("timer-test")
		hc.AddComponent("timer", timer.New(hc.Logger))
		var mu sync.Mutex
		var counters []int
		var names []string
		fired := make(chan struct{}, 10)
		err := hc.AddWorkflow(&engine.Workflow{
			ID:      "ticks",
			FromURI: "timer://ticker?period=5ms&delay=0&repeatCount=3",
			Processors: []engine.Processor{engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
				mu.Lock()
				counters = append(counters, ex.In().Header(timer.HeaderCounter).(int))
				names = append(names, ex.In().HeaderString(timer.HeaderName))
				mu.Unlock()
				if ex.Pattern() != exchange.InOnly {
					t.Errorf("timer exchange pattern %v, want InOnly", ex.Pattern())
				}
				fired <- struct{}{}
				return nil
			})},
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), componenttest.Timeout)
		defer cancel()
		if err := hc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			select {
			case <-fired:
			case <-ctx.Done():
				t.Fatal("timer did not fire three times")
			}
		}
		// Twenty periods of the bubble's virtual time, then every goroutine of the bubble is
		// idle: a fourth firing would have happened by now, on any machine, however loaded.
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		if err := hc.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(counters) != 3 || counters[0] != 1 || counters[1] != 2 || counters[2] != 3 {
			t.Fatalf("counters %v, want [1 2 3]", counters)
		}
		for _, n := range names {
			if n != "ticker" {
				t.Fatalf("timer name header %q, want ticker", n)
			}
		}
	})
}

// Stop cancels an exchange that outlives the stop deadline instead of hanging.
func TestStopCancelsAfterDeadline(t *testing.T) {
	u, _ := uri.Parse("timer://slow?delay=0")
	ep, err := timer.New(nil).CreateEndpoint(u)
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	c, err := ep.CreateConsumer(engine.ProcessorFunc(func(ctx context.Context, _ *exchange.Exchange) error {
		close(entered)
		<-ctx.Done()
		return ctx.Err()
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v (the processor honours cancellation, so Stop should succeed)", err)
	}
}
