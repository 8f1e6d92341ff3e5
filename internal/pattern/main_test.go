package pattern_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// Every goroutine a pattern starts must be gone once its context is stopped.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fn adapts a function to a processor.
func fn(f func(ctx context.Context, ex *exchange.Exchange) error) engine.Processor {
	return engine.ProcessorFunc(f)
}

// setBody is a branch replying with body.
func setBody(body any) engine.Processor {
	return fn(func(_ context.Context, ex *exchange.Exchange) error {
		ex.In().SetBody(body)
		return nil
	})
}

// newStarted builds a context with the given workflows, starts it and stops it at the
// end of the test (so goleak sees every goroutine ended).
func newStarted(t *testing.T, wfs ...*engine.Workflow) *engine.Context {
	t.Helper()
	hc := engine.NewContext(t.Name())
	for _, w := range wfs {
		if err := hc.AddWorkflow(w); err != nil {
			t.Fatal(err)
		}
	}
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop(t, hc, 10*time.Second) })
	return hc
}

func stop(t *testing.T, hc *engine.Context, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if err := hc.Stop(ctx); err != nil {
		t.Errorf("stop: %v", err)
	}
}

// eventually polls cond for up to 10 s (generous: the machine may be loaded).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
