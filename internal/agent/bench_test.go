package agent_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/internal/tool"
)

// BenchmarkIteration measures Helix's own cost per agent iteration: a fake model
// answering instantly in process (no HTTP), one tool call per turn on a tool that
// returns at once. Each run is 5 iterations (4 with a tool call, then the answer);
// ns/iteration and allocs/iteration are reported beside the per-run figures.
func BenchmarkIteration(b *testing.B) {
	const iterations = 5
	echo := &tool.Tool{ID: "echo", Description: "echoes", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
		Invoke: func(ctx context.Context, args map[string]any) (tool.Result, error) {
			return tool.TextResult("ok"), nil
		}}
	c := tool.NewCatalogue()
	if err := c.Add(echo); err != nil {
		b.Fatal(err)
	}
	set, err := c.Select(nil)
	if err != nil {
		b.Fatal(err)
	}
	callTurn := &agent.ModelResponse{Message: agent.Message{Role: agent.RoleAssistant,
		ToolCalls: []agent.ToolCall{{ID: "1", Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)}}}, Usage: agent.Usage{InputTokens: 1, OutputTokens: 1}}
	final := &agent.ModelResponse{Message: agent.Message{Role: agent.RoleAssistant, Text: "done"}}
	m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		if len(req.Messages) >= 2*iterations-1 {
			return final, nil
		}
		return callTurn, nil
	})
	a, err := agent.New(agent.Config{ID: "bench"}, m, set)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := a.Run(ctx, agent.Request{Message: "go"})
		if err != nil || res.Iterations != iterations {
			b.Fatalf("res %+v, err %v", res, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*iterations), "ns/iteration")
}
