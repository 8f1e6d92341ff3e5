package server

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// A keyed call of a durable tool is a durable run named after caller, tool and
// key: a repeat after the server restarted (its memory of answers gone) gets the
// run's result from the store, and the tool does not run again.
func TestKeyedCallOfDurableToolSurvivesARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var runs atomic.Int64
	serve := func() (*engine.Context, func()) {
		hc := engine.NewContext("durable-tool")
		hc.SetLogger(slog.New(slog.DiscardHandler))
		wf := countingTool(&runs, nil)
		wf.Processors = []engine.Processor{named{"t.yaml:3:5 count", wf.Processors[0]}}
		wf.Durable = true
		if err := hc.AddWorkflow(wf); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		rt, err := durable.New(ctx, durable.Options{AppName: "t", DataDir: dir, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		hc.SetDurableRunner(rt)
		if err := hc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := rt.Launch(hc); err != nil {
			t.Fatal(err)
		}
		return hc, func() { rt.Shutdown(time.Second); _ = hc.Stop(ctx) }
	}
	hc, stop := serve()
	cs := connectInMemory(t, hc, Options{ID: "d"})
	first := resultText(t, keyedCall(t, cs, "run-4/1/0"))
	if first != "run 1" {
		t.Fatalf("first call answered %q", first)
	}
	_ = cs.Close()
	stop()

	hc, stop = serve()
	defer stop()
	cs = connectInMemory(t, hc, Options{ID: "d"})
	if again := resultText(t, keyedCall(t, cs, "run-4/1/0")); again != first || runs.Load() != 1 {
		t.Fatalf("after a restart the repeat answered %q (first %q), %d runs", again, first, runs.Load())
	}
	if other := resultText(t, keyedCall(t, cs, "run-4/2/0")); other != "run 2" {
		t.Fatalf("another key answered %q", other)
	}
	// Another caller with the same key names another run.
	if k1, k2 := durableCallKey("alice", "count", "k"), durableCallKey("bob", "count", "k"); k1 == k2 {
		t.Fatal("two callers' keys name the same run")
	}
	if durableCallKey("a", "bc", "k") == durableCallKey("ab", "c", "k") {
		t.Fatal("the parts of a run name run into each other")
	}
}

// named gives a processor a step name (durable runs check step names).
type named struct {
	name string
	p    engine.Processor
}

func (n named) Name() string { return n.name }
func (n named) Process(ctx context.Context, ex *exchange.Exchange) error {
	return n.p.Process(ctx, ex)
}
