package tool_test

import (
	"context"
	"testing"

	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// Headers given with WithHeaders at two places (the MCP server's input-required
// handling, then its idempotency key) all reach the workflow's exchange; a later
// value of a header wins.
func TestWithHeadersAddsUp(t *testing.T) {
	t.Parallel()
	hc := engine.NewContext("h")
	got := make(chan map[string]any, 1)
	wf := &engine.Workflow{ID: "seen", FromURI: "direct://seen", Processors: []engine.Processor{
		engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			got <- ex.In().Headers()
			return nil
		})}}
	if err := hc.AddWorkflow(wf); err != nil {
		t.Fatal(err)
	}
	if err := hc.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer hc.Stop(context.Background())
	tl, err := tool.FromWorkflow(hc, wf)
	if err != nil {
		t.Fatal(err)
	}
	ctx := tool.WithHeaders(context.Background(), map[string]any{"A": "1", "B": "old"})
	ctx = tool.WithHeaders(ctx, map[string]any{"B": "2", "C": "3"})
	if _, err := tl.Invoke(ctx, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	h := <-got
	if h["A"] != "1" || h["B"] != "2" || h["C"] != "3" {
		t.Fatalf("headers %v", h)
	}
}
