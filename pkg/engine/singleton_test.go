package engine_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
)

// singleComponent is a countingComponent whose spec marks its triggers as singletons.
type singleComponent struct{ *countingComponent }

func (singleComponent) Spec() *component.Spec {
	return &component.Spec{Scheme: "single", Summary: "test", Syntax: "single://x", Singleton: true}
}

func singletonContext(t *testing.T) (*engine.Context, *countingComponent) {
	t.Helper()
	cc := &countingComponent{}
	h := engine.NewContext("t")
	h.AddComponent("count", cc)
	h.AddComponent("single", singleComponent{cc})
	for _, w := range []*engine.Workflow{
		{ID: "web", FromURI: "count://web"},
		{ID: "tick", FromURI: "single://tick"},
		{ID: "poll", FromURI: "single://poll"},
		{ID: "sub"},
	} {
		if err := h.AddWorkflow(w); err != nil {
			t.Fatal(err)
		}
	}
	return h, cc
}

func (c *countingComponent) take() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := strings.Join(c.events, ",")
	c.events = nil
	return s
}

func TestSingletonsStartOnlyWhenAsked(t *testing.T) {
	h, cc := singletonContext(t)
	ctx := context.Background()
	if got := h.SingletonWorkflows(); !slices.Equal(got, []string{"tick", "poll"}) {
		t.Fatalf("SingletonWorkflows = %v", got)
	}
	if !h.IsSingleton("single://x?a=1") || h.IsSingleton("count://x") || h.IsSingleton("nope://x") || h.IsSingleton("::") {
		t.Error("IsSingleton answers wrongly")
	}
	h.DeferSingletons()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := cc.take(); got != "start consumer web" {
		t.Fatalf("Start: %s, want only the non-singleton trigger", got)
	}
	if h.WorkflowState("tick") != engine.StateStandby || h.WorkflowState("web") != engine.StateStarted || h.SingletonsRunning() {
		t.Fatalf("states after Start: tick=%s web=%s", h.WorkflowState("tick"), h.WorkflowState("web"))
	}
	// Leadership gained, lost, gained again: fresh consumers each time.
	for round := 0; round < 2; round++ {
		if err := h.StartSingletons(ctx); err != nil {
			t.Fatal(err)
		}
		if err := h.StartSingletons(ctx); err != nil { // already running: nothing happens
			t.Fatal(err)
		}
		if got := cc.take(); got != "start consumer tick,start consumer poll" {
			t.Fatalf("round %d StartSingletons: %s", round, got)
		}
		if h.WorkflowState("poll") != engine.StateStarted || !h.SingletonsRunning() {
			t.Fatalf("round %d: poll is %s", round, h.WorkflowState("poll"))
		}
		if err := h.StopSingletons(ctx); err != nil {
			t.Fatal(err)
		}
		if got := cc.take(); got != "stop consumer poll,stop consumer tick" {
			t.Fatalf("round %d StopSingletons: %s", round, got)
		}
		if h.WorkflowState("poll") != engine.StateStandby || h.WorkflowState("web") != engine.StateStarted || h.SingletonsRunning() {
			t.Fatalf("round %d after stop: poll=%s web=%s", round, h.WorkflowState("poll"), h.WorkflowState("web"))
		}
	}
	if err := h.StartSingletons(ctx); err != nil {
		t.Fatal(err)
	}
	cc.take()
	if err := h.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got := cc.take(); got != "stop consumer poll,stop consumer tick,stop consumer web" {
		t.Fatalf("Stop: %s", got)
	}
	// After Stop nothing starts again.
	if err := h.StartSingletons(ctx); err != nil || cc.take() != "" || h.WorkflowState("tick") != engine.StateStopped {
		t.Fatalf("StartSingletons after Stop: %v, state %s", err, h.WorkflowState("tick"))
	}
}

func TestSingletonsStartWithStartWhenNotDeferred(t *testing.T) {
	h, cc := singletonContext(t)
	ctx := context.Background()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if got := cc.take(); got != "start consumer web,start consumer tick,start consumer poll" {
		t.Fatalf("Start: %s", got)
	}
	if err := h.StartSingletons(ctx); err != nil || cc.take() != "" {
		t.Fatalf("StartSingletons without DeferSingletons must do nothing: %v", err)
	}
	if err := h.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestStartSingletonsAllOrNothing(t *testing.T) {
	h, cc := singletonContext(t)
	cc.failStart = "poll"
	ctx := context.Background()
	h.DeferSingletons()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	cc.take()
	err := h.StartSingletons(ctx)
	if err == nil || !strings.Contains(err.Error(), "workflow poll: start trigger single://poll: boom") {
		t.Fatalf("err = %v", err)
	}
	if got := cc.take(); got != "start consumer tick,stop consumer tick" {
		t.Fatalf("events: %s", got)
	}
	if h.SingletonsRunning() || h.WorkflowState("tick") != engine.StateStandby {
		t.Fatalf("after a failed start: running=%v tick=%s", h.SingletonsRunning(), h.WorkflowState("tick"))
	}
	if err := h.Stop(ctx); err != nil {
		t.Fatal(err)
	}
}
