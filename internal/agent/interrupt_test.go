package agent_test

import (
	"context"
	"errors"
	"testing"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/internal/ask"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/engine"
)

// A tool that stops to ask the MCP client (an engine.Interrupt) stops the agent
// with that interrupt, in parallel turns too; the model is not asked again.
func TestToolInterruptStopsTheAgent(t *testing.T) {
	asks := &tool.Tool{ID: "asks", Description: "asks the client", Invoke: func(context.Context, map[string]any) (tool.Result, error) {
		return tool.ErrorResult("pending"), ask.ErrInputRequired
	}}
	for _, turn := range []*agent.ModelResponse{
		calls(call("1", "asks", `{}`)),
		calls(call("1", "add", `{"a":1,"b":2}`), call("2", "asks", `{}`)),
	} {
		generated := 0
		m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
			generated++
			if generated > 1 {
				return answer("went on"), nil
			}
			return turn, nil
		})
		a := mustNew(t, agent.Config{ID: "asker"}, m, testTools(t, asks))
		_, err := a.Run(context.Background(), agent.Request{Message: "go"})
		if !engine.IsInterrupt(err) || !errors.Is(err, ask.ErrInputRequired) || generated != 1 {
			t.Errorf("turn %+v: err %v, model asked %d times", turn, err, generated)
		}
	}
}
