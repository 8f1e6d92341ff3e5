package agent

import (
	"context"
	"fmt"
	"time"
)

// Observer sees an agent's runs as they happen: the web console records their
// transcripts (internal/console/agents). A run is observed when its context
// carries an Observer ([WithObserver]); without one the loop pays one context
// lookup per run and nothing else.
//
// The methods are called on the run's own goroutines — ToolResult concurrently
// for the parallel calls of a turn — and must return at once: an observer must
// never make the loop wait (no I/O, no waiting on a reader).
type Observer interface {
	// StartRun is called when a run starts; the returned RunObserver (not nil)
	// gets the rest of that run.
	StartRun(ctx context.Context, s RunStart) RunObserver
}

// RunObserver gets the events of one run.
type RunObserver interface {
	// ModelTurn is one answer of the model (journaled turns of a resumed
	// durable run included).
	ModelTurn(t TurnEvent)
	// ToolResult is one tool call's result, after the call returned.
	ToolResult(t ToolEvent)
	// End is called once, when the run returns.
	End(e RunEnd)
}

// RunStart is what a run starts with.
type RunStart struct {
	Agent string
	// Owner is who called (the MCP server and credential), when known.
	Owner     SessionOwner
	SessionID string
	Input     string
	Started   time.Time
}

// TurnEvent is one model turn.
type TurnEvent struct {
	Iteration  int
	Text       string
	ToolCalls  []ToolCall
	Usage      Usage
	Latency    time.Duration
	StopReason string
	// Err is the model call's failure (Text and ToolCalls are then empty).
	Err error
}

// ToolEvent is one tool call's result as the model is given it.
type ToolEvent struct {
	CallID, Name string
	Text         string
	IsError      bool
	Latency      time.Duration
}

// RunEnd is how a run ended: what it counted (never nil) and its error.
type RunEnd struct {
	Result  *Result
	Err     error
	Latency time.Duration
}

type observerKey struct{}
type runObserverKey struct{}

// WithObserver returns ctx whose agent runs o observes.
func WithObserver(ctx context.Context, o Observer) context.Context {
	return context.WithValue(ctx, observerKey{}, o)
}

func observerFrom(ctx context.Context) Observer {
	o, _ := ctx.Value(observerKey{}).(Observer)
	return o
}

func runObserverFrom(ctx context.Context) RunObserver {
	o, _ := ctx.Value(runObserverKey{}).(RunObserver)
	return o
}

// Run answers req: it calls the model, runs the tools it asks for and repeats until
// the model answers without tool calls. Errors say which agent failed and why; a
// failing tool is not one (the model sees its error). The Result is returned with
// what was counted so far even when err is not nil.
func (a *Agent) Run(ctx context.Context, req Request) (*Result, error) {
	o := observerFrom(ctx)
	if o == nil {
		return a.run(ctx, req)
	}
	start := time.Now()
	ro := o.StartRun(ctx, RunStart{Agent: a.cfg.ID, Owner: req.Owner, SessionID: req.SessionID, Input: req.Message, Started: start})
	ended := false
	defer func() {
		if !ended { // a panic on its way up (the engine recovers it): the run did end
			ro.End(RunEnd{Result: &Result{}, Err: fmt.Errorf("agent %q: the run panicked", a.cfg.ID), Latency: time.Since(start)})
		}
	}()
	// The run's own observer, so that an agent this run calls (through a
	// workflow tool) is observed as a run of its own.
	res, err := a.run(context.WithValue(ctx, runObserverKey{}, ro), req)
	ended = true
	ro.End(RunEnd{Result: res, Err: err, Latency: time.Since(start)})
	return res, err
}

// observedTurn is modelTurn, reported to the run's observer when there is one.
func (a *Agent) observedTurn(ctx context.Context, ro RunObserver, iteration int, req *ModelRequest) (*ModelResponse, error) {
	if ro == nil {
		return a.modelTurn(ctx, iteration, req)
	}
	start := time.Now()
	resp, err := a.modelTurn(ctx, iteration, req)
	ev := TurnEvent{Iteration: iteration, Latency: time.Since(start), Err: err}
	if resp != nil {
		ev.Text, ev.ToolCalls, ev.Usage, ev.StopReason = resp.Message.Text, resp.Message.ToolCalls, resp.Usage, resp.StopReason
	}
	ro.ModelTurn(ev)
	return resp, err
}

// callTool runs one call (runCall), reported to the run's observer when there
// is one.
func (a *Agent) callTool(ctx context.Context, tools *toolView, c ToolCall) Message {
	ro := runObserverFrom(ctx)
	if ro == nil {
		return a.runCall(ctx, tools, c)
	}
	start := time.Now()
	msg := a.runCall(ctx, tools, c)
	ro.ToolResult(ToolEvent{CallID: c.ID, Name: c.Name, Text: msg.Text, IsError: msg.IsError, Latency: time.Since(start)})
	return msg
}
