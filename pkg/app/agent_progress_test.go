package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/agent/agenttest"
)

// An MCP caller with a progress token sees the agent's iterations. (The agent's
// "calling <tool>" report carries the same progress value as its iteration's
// "thinking", so the MCP server, which only sends progress that advances, drops
// it.)
func TestAgentProgressReachesTheMCPCaller(t *testing.T) {
	t.Parallel()
	fake := agenttest.NewOpenAI(t,
		agenttest.Reply{Calls: []agenttest.Call{{ID: "c1", Name: "clock", Args: `{}`}}},
		agenttest.Reply{Text: "It is noon."})
	a := buildAgentApp(t, `
workflows:
  - id: clock
    trigger: direct://clock
    steps:
      - set-body: {constant: "12:00"}
agents:
  - id: timekeeper
    model: {provider: openai, model: gpt-4o, api_key: k, base_url: FAKE_URL}
    tools: [clock]
mcps:
  - id: agents
    addr: "127.0.0.1:0"
    expose: [timekeeper]
`, fake)
	messages := make(chan string, 64)
	client := sdk.NewClient(&sdk.Implementation{Name: "progress", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
			select {
			case messages <- req.Params.Message:
			default:
			}
		},
	})
	ctx := callCtx(t)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: serverURL(t, a, "agents") + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	params := &sdk.CallToolParams{Name: "timekeeper", Arguments: map[string]any{"message": "What time is it?"}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != "It is noon." {
		t.Fatalf("call: %v %+v", err, res)
	}
	var seen []string
	timeout := time.After(30 * time.Second)
	for !strings.Contains(strings.Join(seen, "|"), "iteration 2") {
		select {
		case m := <-messages:
			seen = append(seen, m)
		case <-timeout:
			t.Fatalf("progress seen: %q", seen)
		}
	}
	all := strings.Join(seen, "|")
	if !strings.Contains(all, "agent timekeeper: iteration 1") {
		t.Errorf("progress %q", seen)
	}
}
