package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/arvenza/helix/internal/durable"
)

// In a durable run (durable.JournalFrom(ctx) is not nil) each model turn and each
// tool result is an entry of the run's journal, so that an agent resumed after a
// crash gets the turns and results it had from the journal: it neither asks the
// model again for them nor runs again the tools that finished. Entries are named
// by the agent, the iteration and the call's position in the turn (not only by
// the provider's call id, which a model may reuse), so a resumed run that asks
// for something else than it recorded (the agent's configuration changed) fails
// with the journal's error instead of mixing two runs.

// recordedTurn is a model turn as the journal keeps it. Arguments are kept as
// text: a model may send arguments that are not valid JSON, which the agent
// passes on to the tool as they are (the tool's validation answers them).
type recordedTurn struct {
	Text  string         `json:"text,omitempty"`
	Calls []recordedCall `json:"calls,omitempty"`
	Usage Usage          `json:"usage"`
}

type recordedCall struct {
	ID        string `json:"id,omitempty"`
	Name      string `json:"name"`
	Arguments string `json:"arguments,omitempty"`
}

// recordedResult is a tool result as the journal keeps it.
type recordedResult struct {
	Text    string `json:"text"`
	IsError bool   `json:"is_error,omitempty"`
}

func (a *Agent) turnEntry(iteration int) string {
	return "agent " + a.cfg.ID + " turn " + strconv.Itoa(iteration) + " model"
}

func (a *Agent) toolEntry(iteration, i int, c ToolCall) string {
	return "agent " + a.cfg.ID + " turn " + strconv.Itoa(iteration) + " tool " + strconv.Itoa(i) + " " + c.Name
}

// modelTurn is generate, through the journal in a durable run.
func (a *Agent) modelTurn(ctx context.Context, iteration int, req *ModelRequest) (*ModelResponse, error) {
	j := durable.JournalFrom(ctx)
	if j == nil {
		return a.generate(ctx, req)
	}
	raw, err := j.Do(ctx, a.turnEntry(iteration), func(ctx context.Context) (json.RawMessage, error) {
		resp, err := a.generate(ctx, req)
		if err != nil {
			return nil, err
		}
		rec := recordedTurn{Text: resp.Message.Text, Usage: resp.Usage}
		for _, c := range resp.Message.ToolCalls {
			rec.Calls = append(rec.Calls, recordedCall{ID: c.ID, Name: c.Name, Arguments: string(c.Arguments)})
		}
		return json.Marshal(rec)
	})
	if err != nil {
		return nil, err
	}
	var rec recordedTurn
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("the journal's entry %q is no model turn: %w", a.turnEntry(iteration), err)
	}
	resp := &ModelResponse{Message: Message{Role: RoleAssistant, Text: rec.Text}, Usage: rec.Usage}
	for _, c := range rec.Calls {
		resp.Message.ToolCalls = append(resp.Message.ToolCalls, ToolCall{ID: c.ID, Name: c.Name, Arguments: json.RawMessage(c.Arguments)})
	}
	return resp, nil
}

// toolCallContext is ctx for call i of a turn: in a durable run its side effects
// get a key of their own (the step's key with turn and call appended).
func toolCallContext(ctx context.Context, iteration, i int) context.Context {
	if _, ok := durable.KeyFrom(ctx); !ok {
		return ctx
	}
	return durable.SubKey(ctx, "turn-"+strconv.Itoa(iteration)+"/call-"+strconv.Itoa(i))
}

// callToolsJournaled is callTools in a durable run. The journal is asked for the
// results in the calls' order: those it recorded come from it. The journal
// records in order, so once one call has no entry none of the later ones has:
// with parallel tool calls, that call and every later one start together then,
// and their results are recorded in the calls' order as they come in. (A crash
// after a later call finished but before an earlier one did runs the later one
// again on resume; its side effects carry the same idempotency key.)
func (a *Agent) callToolsJournaled(ctx context.Context, j durable.Journal, tools *toolView, iteration int, calls []ToolCall) ([]Message, error) {
	out := make([]Message, len(calls))
	var futures []chan Message // by call index, from the first call not recorded
	var wg sync.WaitGroup
	defer wg.Wait() // no call outlives the turn, even when the journal fails
	start := func(from int) {
		futures = make([]chan Message, len(calls))
		slots := make(chan struct{}, max(a.cfg.MaxParallelToolCalls, 1))
		for i := from; i < len(calls); i++ {
			futures[i] = make(chan Message, 1)
			wg.Go(func() {
				slots <- struct{}{}
				defer func() { <-slots }()
				futures[i] <- a.callTool(toolCallContext(ctx, iteration, i), tools, calls[i])
			})
		}
	}
	for i, c := range calls {
		raw, err := j.Do(ctx, a.toolEntry(iteration, i, c), func(context.Context) (json.RawMessage, error) {
			var m Message
			switch {
			case !a.parallel || len(calls) == 1:
				m = a.callTool(toolCallContext(ctx, iteration, i), tools, c)
			default:
				if futures == nil {
					start(i)
				}
				m = <-futures[i]
			}
			return json.Marshal(recordedResult{Text: m.Text, IsError: m.IsError})
		})
		if err != nil {
			return nil, err
		}
		var rec recordedResult
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, fmt.Errorf("the journal's entry %q is no tool result: %w", a.toolEntry(iteration, i, c), err)
		}
		out[i] = Message{Role: RoleTool, ToolCallID: c.ID, Text: rec.Text, IsError: rec.IsError}
	}
	return out, nil
}
