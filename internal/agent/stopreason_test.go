package agent_test

import (
	"context"
	"testing"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/agent/agenttest"
)

// Each provider says why the model stopped (the console's transcripts show
// it), streamed or not.
func TestProvidersReportTheStopReason(t *testing.T) {
	t.Parallel()
	want := map[string][2]string{"openai": {"tool_calls", "stop"}, "anthropic": {"tool_use", "end_turn"}}
	for _, p := range providers {
		for _, stream := range []bool{false, true} {
			srv := p.server(t, agenttest.Reply{Calls: []agenttest.Call{{ID: "c1", Name: "add", Args: `{"a":1,"b":2}`}}}, agenttest.Reply{Text: "3"})
			m := p.model(t, srv.BaseURL(), nil)
			req := &agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: "1+2?"}}}
			if stream {
				req.OnText = func(string) {}
			}
			for i, w := range want[p.name] {
				resp, err := m.Generate(context.Background(), req)
				if err != nil {
					t.Fatalf("%s stream=%v: %v", p.name, stream, err)
				}
				if resp.StopReason != w {
					t.Errorf("%s stream=%v turn %d: stop reason %q, want %q", p.name, stream, i+1, resp.StopReason, w)
				}
			}
		}
	}
}
