package app_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/pkg/exchange"
)

// weatherServer is an external MCP server over Streamable HTTP that checks the
// bearer token the agent's auth: block sends.
func weatherServer(t *testing.T, token string) string {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "weather", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "forecast", Description: "Forecast for a city", InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var args struct{ City string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "sunny in " + args.City}}}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.Close()
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	return ts.URL + "/mcp"
}

// §4.7: an agent calls the tools of an authenticated MCP server, and another agent
// by id (through the catalogue); the answer of the inner agent reaches the outer
// model as a tool result.
func TestAgentCallsMCPServerAndAnotherAgent(t *testing.T) {
	t.Setenv("MCP_TOKEN", "tok-123")
	url := weatherServer(t, "tok-123")
	fake := agenttest.NewOpenAI(t,
		// planner: ask the forecaster
		agenttest.Reply{Calls: []agenttest.Call{{ID: "c1", Name: "forecaster", Args: `{"message":"Weather in Oslo?"}`}}},
		// forecaster: call the MCP tool, then answer
		agenttest.Reply{Calls: []agenttest.Call{{ID: "c2", Name: "forecast", Args: `{"city":"Oslo"}`}}},
		agenttest.Reply{Text: "Forecaster says: sunny in Oslo"},
		// planner: final answer
		agenttest.Reply{Text: "Pack sunglasses."})
	a := buildAgentApp(t, strings.ReplaceAll(`
agents:
  - id: forecaster
    model: {provider: openai, model: gpt-4o, api_key: k, base_url: FAKE_URL}
    tools:
      - name: weather-tools
        type: mcp
        mcp_server:
          url: "MCP_URL"
          transport: http
        auth:
          type: bearer
          token: "${env:MCP_TOKEN}"
  - id: planner
    model: {provider: openai, model: gpt-4o, api_key: k, base_url: FAKE_URL}
    tools:
      - name: forecaster
        type: agent
`, "MCP_URL", url), fake)
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"message": "Plan my trip to Oslo"})
	if err := a.Context().Run(callCtx(t), "planner", ex); err != nil {
		t.Fatal(err)
	}
	if ex.In().Body() != "Pack sunglasses." || ex.In().Header("HelixAgentToolCalls") != 1 {
		t.Fatalf("body %v headers %v", ex.In().Body(), ex.In().Headers())
	}
	reqs := fake.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests", len(reqs))
	}
	forecasterTools, _ := json.Marshal(reqs[1]["tools"])
	if !strings.Contains(string(forecasterTools), `"forecast"`) {
		t.Errorf("the forecaster was not offered the MCP tool: %s", forecasterTools)
	}
	if msgs, _ := json.Marshal(reqs[2]["messages"]); !strings.Contains(string(msgs), "sunny in Oslo") {
		t.Errorf("the MCP tool's result did not reach the model: %s", msgs)
	}
	if msgs, _ := json.Marshal(reqs[3]["messages"]); !strings.Contains(string(msgs), "Forecaster says: sunny in Oslo") {
		t.Errorf("the inner agent's answer did not reach the outer model: %s", msgs)
	}
}

// The tool bounds of an agents: entry reach its loop: beyond
// max_tool_calls_per_turn a call is not run, and arguments over max_tool_bytes
// are refused; the model is told which limit each time.
func TestAgentToolBoundsFromConfig(t *testing.T) {
	t.Parallel()
	var results []agenttest.ToolResult
	fake := agenttest.NewOpenAIFunc(t, func(r agenttest.Request) agenttest.Reply {
		if len(r.Tools) == 0 { // the echoer itself
			return agenttest.Reply{Text: "echo"}
		}
		if len(r.ToolResults) == 0 {
			big := `{"message":"` + strings.Repeat("b", 200) + `"}`
			return agenttest.Reply{Calls: []agenttest.Call{
				{ID: "c1", Name: "echoer", Args: big}, {ID: "c2", Name: "echoer", Args: `{"message":"hi"}`}, {ID: "c3", Name: "echoer", Args: `{"message":"hi"}`}}}
		}
		results = r.ToolResults
		return agenttest.Reply{Text: "done"}
	})
	a := buildAgentApp(t, `
agents:
  - id: echoer
    model: {provider: openai, model: m, api_key: k, base_url: FAKE_URL}
  - id: planner
    model: {provider: openai, model: m, api_key: k, base_url: FAKE_URL}
    max_tool_calls_per_turn: 2
    max_tool_bytes: 100
    tools: [{name: echoer, type: agent}]
`, fake)
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"message": "go"})
	if err := a.Context().Run(callCtx(t), "planner", ex); err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 || !strings.Contains(results[0].Text, "max_tool_bytes (100)") || results[1].Text != "echo" ||
		!strings.Contains(results[2].Text, "max_tool_calls_per_turn (2)") {
		t.Fatalf("tool results: %+v", results)
	}
}
