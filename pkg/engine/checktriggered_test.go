package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// CheckTriggered runs on what the trigger delivers, before any step: its error fails
// the exchange without running the pipeline, its panic is an error too, and Run
// (how MCP calls run a workflow) skips it.
func TestCheckTriggered(t *testing.T) {
	h := engine.NewContext("check")
	var ran int
	step := engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error { ran++; return nil })
	refuse := errors.New("no thanks")
	h.AddWorkflow(&engine.Workflow{ID: "refuse", FromURI: "direct://refuse", Processors: []engine.Processor{step},
		CheckTriggered: func(ex *exchange.Exchange) error { return refuse }})
	h.AddWorkflow(&engine.Workflow{ID: "panic", FromURI: "direct://panic", Processors: []engine.Processor{step},
		CheckTriggered: func(ex *exchange.Exchange) error { panic("boom") }})
	h.AddWorkflow(&engine.Workflow{ID: "rewrite", FromURI: "direct://rewrite", Processors: []engine.Processor{step},
		CheckTriggered: func(ex *exchange.Exchange) error { ex.In().SetBody("checked"); return nil }})
	ctx := context.Background()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer h.Stop(ctx)

	if err := h.Send(ctx, "direct://refuse", exchange.New(exchange.InOut)); !errors.Is(err, refuse) {
		t.Errorf("refuse: %v", err)
	}
	if err := h.Send(ctx, "direct://panic", exchange.New(exchange.InOut)); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("panic: %v", err)
	}
	if ran != 0 {
		t.Errorf("the pipeline ran %d times after a failed check", ran)
	}
	ex := exchange.New(exchange.InOut)
	if err := h.Send(ctx, "direct://rewrite", ex); err != nil || ex.In().Body() != "checked" || ran != 1 {
		t.Errorf("rewrite: %v %v ran %d", err, ex.In().Body(), ran)
	}
	if err := h.Run(ctx, "refuse", exchange.New(exchange.InOut)); err != nil || ran != 2 {
		t.Errorf("Run: %v ran %d", err, ran)
	}
}
