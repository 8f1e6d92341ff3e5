package app_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/durable"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

// A durable workflow's exchange goes through the durable store (the run is
// recorded, its reply is the run's result); a workflow not declared durable
// does not; helix.durable makes every workflow durable.
func TestDurableWorkflowRunsThroughTheStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := buildStart(t, `
helix:
  data_dir: `+dir+`
workflows:
  - id: orders
    durable: true
    trigger: direct://orders
    steps:
      - set-body: ${body} placed
  - id: plain
    trigger: direct://plain
    steps:
      - set-body: ${body} done
`, quiet)
	runs := durable.For(a.Context())
	if runs == nil {
		t.Fatal("no durable store attached")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ex := exchange.NewWithBody(exchange.InOut, "order 7")
	if err := a.Context().Run(ctx, "orders", ex); err != nil {
		t.Fatal(err)
	}
	id := ex.In().HeaderString(durable.HeaderRunID)
	if ex.In().Body() != "order 7 placed" || id == "" {
		t.Fatalf("reply %v, run id %q", ex.In().Body(), id)
	}
	run, err := runs.Get(ctx, id)
	if err != nil || run.State != durable.StateCompleted || run.Workflow != "orders" || run.Kind != "workflow" {
		t.Fatalf("run %+v, %v", run, err)
	}
	ex = exchange.NewWithBody(exchange.InOut, "x")
	if err := a.Context().Run(ctx, "plain", ex); err != nil || ex.In().HeaderString(durable.HeaderRunID) != "" {
		t.Fatalf("plain workflow: %v, headers %v", err, ex.In().Headers())
	}
	all, _ := runs.List(ctx, durable.Filter{})
	if len(all) != 1 {
		t.Fatalf("runs %+v", all)
	}

	cfg, err := config.LoadBytes("helix.yaml", []byte("helix:\n  durable: true\n  data_dir: "+t.TempDir()+"\nworkflows:\n  - id: w\n    trigger: direct://w\n    steps:\n      - log: x\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := app.Build(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if wf, _ := b.Context().Workflow("w"); !wf.Durable {
		t.Fatal("helix.durable did not make the workflow durable")
	}
}

// An app without a durable workflow opens no store.
func TestNoDurableStoreWithoutDurableWorkflows(t *testing.T) {
	t.Parallel()
	a := buildStart(t, "workflows:\n  - id: w\n    trigger: direct://w\n    steps:\n      - log: x\n", quiet)
	if durable.For(a.Context()) != nil {
		t.Fatal("a store was opened")
	}
}

// A configuration with durable workflows is not reloaded in place: the new
// application would take up the runs the old one is running.
func TestReloadRefusedWithDurableWorkflows(t *testing.T) {
	t.Parallel()
	running := startBuilt(t, reloadApp(t, "v1", ""))
	durableNext := reloadApp(t, "v2", "  - id: orders\n    durable: true\n    trigger: direct://orders\n    steps:\n      - set-body: x\n")
	err := running.Handover(context.Background(), durableNext)
	if !errors.Is(err, app.ErrReloadRefused) || !strings.Contains(err.Error(), "durable") {
		t.Fatalf("handover to a durable configuration: %v", err)
	}
}

// A durable tools: entry called as a tool (an MCP tools/call) runs as a
// durable run; its structured result comes back from the run's record.
func TestDurableToolCall(t *testing.T) {
	t.Parallel()
	a := buildStart(t, `
helix:
  data_dir: `+t.TempDir()+`
tools:
  - id: triple
    description: triples n
    durable: true
    input: {n: integer}
    output: {m: integer}
    steps:
      - transform:
          starlang: '{"m": payload["n"] * 3}'
`, quiet)
	wf, _ := a.Context().Workflow("triple")
	tl, err := tool.FromWorkflow(a.Context(), wf)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := tl.Invoke(ctx, map[string]any{"n": int64(14)})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := res.Structured.(map[string]any); m["m"] != int64(42) {
		t.Fatalf("result %#v", res.Structured)
	}
	runs, err := durable.For(a.Context()).List(ctx, durable.Filter{Workflow: "triple"})
	if err != nil || len(runs) != 1 || runs[0].State != durable.StateCompleted || runs[0].Kind != "tool" {
		t.Fatalf("runs %+v %v", runs, err)
	}
}

// The context an app is started with bounds the start only: a durable run
// started after that context ended still runs (the runtime is not tied to it).
func TestDurableRunsOutliveTheStartContext(t *testing.T) {
	t.Parallel()
	cfg, err := config.LoadBytes("helix.yaml", []byte(`
helix:
  data_dir: `+t.TempDir()+`
workflows:
  - id: orders
    durable: true
    trigger: direct://orders
    steps:
      - set-body: ${body} placed
`))
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Build(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	startCtx, cancelStart := context.WithTimeout(context.Background(), 30*time.Second)
	if err := a.Start(startCtx); err != nil {
		t.Fatal(err)
	}
	cancelStart()
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = a.Stop(stopCtx)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ex := exchange.NewWithBody(exchange.InOut, "order 8")
	if err := a.Context().Run(ctx, "orders", ex); err != nil || ex.In().Body() != "order 8 placed" {
		t.Fatalf("run after the start context ended: %v, body %v", err, ex.In().Body())
	}
}
