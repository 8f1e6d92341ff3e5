package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/report"
	"github.com/arvenza/helix/internal/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testTools registers the tools the tests use and returns them as a set.
//   - add(a, b integer) → the sum as text
//   - fail() → always an error
//   - wait() → blocks until its context ends, then reports why
func testTools(t testing.TB, extra ...*tool.Tool) *tool.Set {
	t.Helper()
	c := tool.NewCatalogue()
	schema, err := tool.CompileInput(json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`))
	if err != nil {
		t.Fatal(err)
	}
	tools := append([]*tool.Tool{
		{ID: "add", Description: "adds two integers", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}`),
			Validate: schema.Validate,
			Invoke: tool.Func(func(ctx context.Context, args map[string]any) (tool.Result, error) {
				return tool.TextResult(fmt.Sprint(args["a"].(int64) + args["b"].(int64))), nil
			})},
		{ID: "fail", Description: "always fails", Invoke: func(ctx context.Context, args map[string]any) (tool.Result, error) {
			return tool.Result{}, errors.New("disk on fire")
		}},
		{ID: "wait", Description: "waits for its context", Invoke: func(ctx context.Context, args map[string]any) (tool.Result, error) {
			<-ctx.Done()
			return tool.Result{}, context.Cause(ctx)
		}},
	}, extra...)
	for _, tl := range tools {
		if err := c.Add(tl); err != nil {
			t.Fatal(err)
		}
	}
	set, err := c.Select(nil)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func call(id, name, args string) agent.ToolCall {
	return agent.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

func calls(cs ...agent.ToolCall) *agent.ModelResponse {
	return &agent.ModelResponse{Message: agent.Message{Role: agent.RoleAssistant, ToolCalls: cs}, Usage: agent.Usage{InputTokens: 10, OutputTokens: 5}}
}

func answer(text string) *agent.ModelResponse {
	return &agent.ModelResponse{Message: agent.Message{Role: agent.RoleAssistant, Text: text}, Usage: agent.Usage{InputTokens: 20, OutputTokens: 7}}
}

// recorder is a report.Reporter that keeps what it is told.
type recorder struct {
	mu       sync.Mutex
	progress []string
	logs     []string
}

func (r *recorder) Progress(ctx context.Context, current, total float64, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress = append(r.progress, fmt.Sprintf("%g/%g %s", current, total, message))
}

func (r *recorder) Log(ctx context.Context, level report.Level, logger string, data any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, _ := json.Marshal(data)
	r.logs = append(r.logs, level.String()+" "+logger+" "+string(b))
}

func (r *recorder) all() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.progress, "\n") + "\n" + strings.Join(r.logs, "\n")
}

func mustNew(t testing.TB, cfg agent.Config, m agent.Model, tools *tool.Set) *agent.Agent {
	t.Helper()
	a, err := agent.New(cfg, m, tools)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
