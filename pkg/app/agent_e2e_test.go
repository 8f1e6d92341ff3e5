package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/internal/management"
	"github.com/arvenza/helix/internal/testtools"
)

// everythingStdio returns the command and args (as YAML flow values) that run the
// reference MCP server, @modelcontextprotocol/server-everything, over stdio. It
// skips the test when Node or the server is not installed, unless
// HELIX_REQUIRE_TOOLS=1.
func everythingStdio(t *testing.T) (command, args string) {
	t.Helper()
	node := testtools.Node(t)
	script := testtools.NPMBin(t, "mcp-server-everything")
	cmd, _ := json.Marshal(node)
	a, _ := json.Marshal([]string{script, "stdio"})
	return string(cmd), string(a)
}

// concierge answers as a model would: in its first turn it calls both tools it was
// offered at once (server-everything's echo with the user's message, and the
// order-status workflow); in its second it quotes both results. Anything else is a
// test failure, reported through t.Error because it runs on the fake's goroutines.
func concierge(t *testing.T) func(agenttest.Request) agenttest.Reply {
	return func(req agenttest.Request) agenttest.Reply {
		switch len(req.ToolResults) {
		case 0:
			tools := slices.Clone(req.Tools)
			slices.Sort(tools)
			if strings.Join(tools, ",") != "echo,order_status" {
				t.Errorf("request %d offers tools %v, want echo (server-everything) and order_status (workflow)", req.N, req.Tools)
			}
			msg, _ := json.Marshal(map[string]string{"message": req.UserMessage})
			return agenttest.Reply{Calls: []agenttest.Call{
				{ID: "call_echo", Name: "echo", Args: string(msg)},
				{ID: "call_order", Name: "order_status", Args: `{"id":"42"}`},
			}, InputTokens: 40, OutputTokens: 12}
		case 2:
			return agenttest.Reply{Text: "echo: " + req.ToolResults[0].Text + " | order: " + req.ToolResults[1].Text,
				InputTokens: 80, OutputTokens: 20}
		}
		t.Errorf("request %d carries %d tool results, want 0 or 2", req.N, len(req.ToolResults))
		return agenttest.Reply{Status: 500, Error: "unexpected request"}
	}
}

// The end-to-end path: an MCP client (go-sdk) calls an agent exposed by
// mcps:; the agent's model (a fake speaking the provider's wire format) calls, in one
// turn, a tool of server-everything spawned over stdio and a Helix workflow; the
// model's final answer quotes both results and reaches the MCP client as text. The
// run is counted per agent in /metrics.
func TestAgentEndToEndMCPClientToStdioServerAndWorkflow(t *testing.T) {
	command, args := everythingStdio(t)
	for _, provider := range []struct{ name, model string }{
		{"openai", "gpt-4o"},
		{"anthropic", "claude-sonnet-4-20250514"},
	} {
		t.Run(provider.name, func(t *testing.T) {
			t.Parallel()
			var fake *agenttest.Server
			if provider.name == "openai" {
				fake = agenttest.NewOpenAIFunc(t, concierge(t))
			} else {
				fake = agenttest.NewAnthropicFunc(t, concierge(t))
			}
			a := buildAgentApp(t, `
workflows:
  - id: order-status
    description: "Status of an order by ID"
    trigger: direct://order-status
    steps:
      - transform:
          starlang: |
            "order " ++ payload["id"] ++ ": shipped"
agents:
  - id: concierge
    description: "Answers with the reference MCP server and the order workflow"
    model: {provider: `+provider.name+`, model: `+provider.model+`, api_key: k, base_url: FAKE_URL}
    tools:
      - name: everything
        type: mcp
        include: [echo]
        mcp_server:
          command: `+command+`
          args: `+args+`
          transport: stdio
      - name: order-status
        type: workflow
mcps:
  - id: agents
    addr: "127.0.0.1:0"
    expose: [concierge]
`, fake)
			cs := mcpSession(t, a, "agents")
			res, err := cs.CallTool(callCtx(t), &sdk.CallToolParams{Name: "concierge", Arguments: map[string]any{"message": "Where is order 42?"}})
			if err != nil || res.IsError || len(res.Content) != 1 {
				t.Fatalf("concierge: %v %+v", err, res)
			}
			const want = "echo: Echo: Where is order 42? | order: order 42: shipped"
			if got := res.Content[0].(*sdk.TextContent).Text; got != want {
				t.Fatalf("answer %q, want %q", got, want)
			}
			if n := len(fake.Requests()); n != 2 {
				t.Errorf("%d model requests, want 2", n)
			}
			if m := fake.Requests()[0]["model"]; m != provider.model {
				t.Errorf("model %v, want %s", m, provider.model)
			}

			resp, err := http.Get("http://" + a.ManagementAddr() + management.MetricsPath)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, want := range []string{
				`helix_agent_runs_total{agent="concierge"} 1`,
				`helix_agent_errors_total{agent="concierge"} 0`,
				`helix_agent_iterations_total{agent="concierge"} 2`,
				`helix_agent_tool_calls_total{agent="concierge"} 2`,
				`helix_agent_input_tokens_total{agent="concierge"} 120`,
				`helix_agent_output_tokens_total{agent="concierge"} 32`,
			} {
				if !strings.Contains(string(body), want) {
					t.Errorf("metrics lack %s", want)
				}
			}
		})
	}
}
