package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

const searchTool = `tools:
  - id: search
    description: "Search knowledge base"
    input:
      query: { type: string, description: "Search query", required: true }
      limit: { type: integer, description: "Max results", default: 10 }
    output:
      results: { type: array, description: "Matching documents" }
      total: { type: integer, description: "Total matches" }
    steps:
      - transform:
          starlang: |
            q = payload["query"]
            limit = payload.get("limit", 10)
            write({"results": [q] * 2, "total": limit}, "application/json")
`

func TestToolWorkflow(t *testing.T) {
	t.Parallel()
	cfg, err := config.LoadBytes("helix.yaml", []byte(searchTool))
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Build(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := a.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer a.Stop(ctx)
	hc := a.Context()
	wf, ok := hc.Workflow("search")
	if !ok || wf.Kind != engine.KindTool || wf.FromURI != "tool://search" || hc.WorkflowState("search") != engine.StateStarted {
		t.Fatalf("tool workflow: %+v state %s", wf, hc.WorkflowState("search"))
	}
	if !strings.Contains(string(wf.InputSchema), `"required":["query"]`) || !strings.Contains(string(wf.OutputSchema), `"total"`) {
		t.Errorf("schemas: %s %s", wf.InputSchema, wf.OutputSchema)
	}

	args, err := wf.ValidateInput(map[string]any{"query": "go"})
	if err != nil || args["limit"] != int64(10) { // defaults take the number types of arguments
		t.Errorf("defaults: %v %v", args, err)
	}
	if _, err := wf.ValidateInput(map[string]any{"limit": 3}); err == nil || !strings.Contains(err.Error(), "query") {
		t.Errorf("missing query: %v", err)
	}
	if _, err := wf.ValidateInput(map[string]any{"query": "go", "limit": "ten"}); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("bad limit: %v", err)
	}

	// tool://search as a producer validates, defaults and runs the pipeline.
	ex := exchange.NewWithBody(exchange.InOut, `{"query":"go"}`)
	if err := hc.Send(ctx, "tool://search", ex); err != nil {
		t.Fatal(err)
	}
	if got := exchange.Stringify(ex.In().Body()); got != `{"results":["go","go"],"total":10}` {
		t.Errorf("body %s", got)
	}
	ex = exchange.NewWithBody(exchange.InOut, map[string]any{})
	if err := hc.Send(ctx, "tool://search", ex); err == nil || !strings.Contains(err.Error(), "invalid arguments") {
		t.Errorf("want invalid arguments, got %v", err)
	}
}
