package step_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// In a durable run, each side effect inside one top-level step gets a key of
// its own: targets append their YAML position, split elements their index. Run
// twice, the step gives the same keys (a crash that makes the run do the step
// again resends them); outside a durable run there is no key at all.
func TestTargetsInsideOneStepGetDistinctStableKeys(t *testing.T) {
	t.Parallel()
	hc, procs, errs := build(t, `      - split:
          steps:
            - to: direct://sink
            - to: direct://sink
`)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var mu sync.Mutex
	var keys []string
	if err := hc.AddWorkflow(&engine.Workflow{ID: "sink", FromURI: "direct://sink", Processors: []engine.Processor{
		engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
			k, ok := durable.KeyFrom(ctx)
			if !ok {
				k = "none"
			}
			mu.Lock()
			defer mu.Unlock()
			keys = append(keys, k)
			return nil
		})}}); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hc.Stop(context.Background()) })
	runOnce := func(ctx context.Context, redelivery ...int) []string {
		t.Helper()
		mu.Lock()
		keys = nil
		mu.Unlock()
		ex := exchange.NewWithBody(exchange.InOut, []any{"a", "b"})
		if len(redelivery) > 0 {
			ex.In().SetHeader(exchange.HeaderRedeliveryCount, redelivery[0])
		}
		if err := engine.BuildPipeline(procs, nil, nil).Process(ctx, ex); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return slices.Sorted(slices.Values(keys))
	}
	first := runOnce(durable.WithKey(context.Background(), "run-1/0/0"))
	want := []string{
		"run-1/0/0/[0]/helix.yaml:7:15", "run-1/0/0/[0]/helix.yaml:8:15",
		"run-1/0/0/[1]/helix.yaml:7:15", "run-1/0/0/[1]/helix.yaml:8:15",
	}
	if !slices.Equal(first, want) {
		t.Fatalf("keys %q, want %q", first, want)
	}
	if again := runOnce(durable.WithKey(context.Background(), "run-1/0/0")); !slices.Equal(again, first) {
		t.Fatalf("the step done again sent %q, the first time %q", again, first)
	}
	// A retry of the error handler is a new attempt: its keys differ.
	retried := runOnce(durable.WithKey(durable.WithDurable(context.Background(), "run-1"), "run-1/0/0"), 1)
	if retried[0] != "run-1/0/1/[0]/helix.yaml:7:15" || retried[3] != "run-1/0/1/[1]/helix.yaml:8:15" {
		t.Fatalf("a redelivery sent %q", retried)
	}
	if plain := runOnce(context.Background()); !slices.Equal(plain, []string{"none", "none", "none", "none"}) {
		t.Fatalf("outside a durable run: %q", plain)
	}
}
