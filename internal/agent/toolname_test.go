package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/internal/tool"
)

// MCP tool names may hold '.' and '/' and be 128 long; model APIs take
// [A-Za-z0-9_-]{1,64}. The model is shown a name it accepts, and calling that
// name runs the tool.
func TestToolNamesAreMadeAcceptableToModels(t *testing.T) {
	long := strings.Repeat("x", 100)
	var ran []string
	mk := func(name string) *tool.Tool {
		return &tool.Tool{ID: name, Name: name, Description: name, Invoke: func(ctx context.Context, args map[string]any) (tool.Result, error) {
			ran = append(ran, name)
			return tool.TextResult("ran " + name), nil
		}}
	}
	c := tool.NewCatalogue()
	for _, tl := range []*tool.Tool{mk("files.read"), mk("files_read"), mk(long)} {
		if err := c.Add(tl); err != nil {
			t.Fatal(err)
		}
	}
	set, err := c.Select(nil)
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	m := agenttest.ModelFunc(func(ctx context.Context, req *agent.ModelRequest) (*agent.ModelResponse, error) {
		if len(req.Messages) > 1 {
			return &agent.ModelResponse{Message: agent.Message{Text: "done"}}, nil
		}
		for _, d := range req.Tools {
			shown = append(shown, d.Name)
		}
		calls := make([]agent.ToolCall, len(req.Tools))
		for i, d := range req.Tools {
			calls[i] = agent.ToolCall{ID: d.Name, Name: d.Name, Arguments: []byte(`{}`)}
		}
		return &agent.ModelResponse{Message: agent.Message{ToolCalls: calls}}, nil
	})
	a := mustNew(t, agent.Config{ID: "names", ParallelToolCalls: new(false)}, m, set)
	if _, err := a.Run(context.Background(), agent.Request{Message: "go"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"files_read_2", "files_read", strings.Repeat("x", 64)}
	if strings.Join(shown, ",") != strings.Join(want, ",") {
		t.Errorf("shown %q, want %q", shown, want)
	}
	if strings.Join(ran, ",") != "files.read,files_read,"+long {
		t.Errorf("ran %q", ran)
	}
}
