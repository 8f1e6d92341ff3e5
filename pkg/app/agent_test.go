package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/internal/management"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

// agentYAML fills in the fake provider's base URL.
func agentYAML(yaml string, fake *agenttest.Server) string {
	return strings.ReplaceAll(yaml, "FAKE_URL", fake.BaseURL())
}

func buildAgentApp(t *testing.T, yaml string, fake *agenttest.Server) *app.App {
	t.Helper()
	a, err := buildYAML(t, agentYAML(yaml, fake))
	if err != nil {
		t.Fatal(err)
	}
	return startBuilt(t, a)
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// §1's headline example with a reachable trigger and a fake model: a plain-text
// POST and a JSON {message} POST both get the answer as text.
func TestAgentAnswersItsHTTPTrigger(t *testing.T) {
	t.Parallel()
	fake := agenttest.NewOpenAI(t,
		agenttest.Reply{Text: "Hello from the assistant", InputTokens: 12, OutputTokens: 5},
		agenttest.Reply{Text: "Second answer"})
	a := buildAgentApp(t, `
agents:
  - id: assistant
    type: react
    trigger: http-server://127.0.0.1:0/chat
    model:
      provider: openai
      model: gpt-4o
      api_key: test-key
      base_url: FAKE_URL
    system_prompt: "You are a helpful assistant."
`, fake)
	base := httpBase(t, a, "127.0.0.1:0")
	resp, err := http.Post(base+"/chat", "text/plain", strings.NewReader("Hi there"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "Hello from the assistant" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("POST text: %d %q %s", resp.StatusCode, body, resp.Header.Get("Content-Type"))
	}
	if code, got := post(t, base+"/chat", `{"message":"And again?"}`); code != 200 || got != "Second answer" {
		t.Fatalf("POST JSON: %d %q", code, got)
	}
	// A body the agent cannot read is the caller's mistake: 400, and no model call.
	for _, bad := range []string{`{"message": 42}`, `{"message": "x", "session_id": {"a": 1}}`, `{"message": "  "}`} {
		if code, got := post(t, base+"/chat", bad); code != 400 || !strings.Contains(got, "agent") {
			t.Errorf("POST %s: %d %q, want 400", bad, code, got)
		}
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	msgs, _ := json.Marshal(reqs[0]["messages"])
	if !strings.Contains(string(msgs), "You are a helpful assistant.") || !strings.Contains(string(msgs), "Hi there") {
		t.Errorf("first request: %s", msgs)
	}
	if h := fake.Headers()[0].Get("Authorization"); h != "Bearer test-key" {
		t.Errorf("authorization %q", h)
	}
	if msgs, _ := json.Marshal(reqs[1]["messages"]); !strings.Contains(string(msgs), "And again?") {
		t.Errorf("second request: %s", msgs)
	}
}

// agent://id as a target runs the agent on the caller's exchange; the run's counts
// are headers, and the agent is a workflow of Kind agent with the implicit trigger.
func TestAgentTargetFromWorkflow(t *testing.T) {
	t.Parallel()
	fake := agenttest.NewOpenAI(t, agenttest.Reply{Text: "42", InputTokens: 30, OutputTokens: 2})
	a := buildAgentApp(t, `
agents:
  - id: math-agent
    description: "Answers arithmetic"
    model: {provider: openai, model: gpt-4o-mini, api_key: k, base_url: FAKE_URL}
workflows:
  - id: ask
    trigger: direct://ask
    steps:
      - target: agent://math-agent
`, fake)
	wf, ok := a.Context().Workflow("math-agent")
	if !ok || wf.Kind != "agent" || wf.FromURI != "agent://math-agent" || wf.Description != "Answers arithmetic" {
		t.Fatalf("agent workflow %+v", wf)
	}
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"message": "6*7?", "session_id": "s1"})
	if err := a.Context().Run(callCtx(t), "ask", ex); err != nil {
		t.Fatal(err)
	}
	in := ex.In()
	if in.Body() != "42" {
		t.Fatalf("body %v", in.Body())
	}
	for h, want := range map[string]any{"HelixAgentIterations": 1, "HelixAgentToolCalls": 0, "HelixAgentInputTokens": 30, "HelixAgentOutputTokens": 2} {
		if got := in.Header(h); got != want {
			t.Errorf("%s = %v (%T), want %v", h, got, got, want)
		}
	}
}

// A failed run is the exchange's error, with the agent's message and never the key.
func TestAgentFailureIsTheExchangeError(t *testing.T) {
	t.Parallel()
	fake := agenttest.NewOpenAI(t, agenttest.Reply{Status: 400, Error: "model gpt-x does not exist"})
	a := buildAgentApp(t, `
agents:
  - id: broken
    model: {provider: openai, model: gpt-x, api_key: sk-very-secret, base_url: FAKE_URL}
`, fake)
	ex := exchange.NewWithBody(exchange.InOut, "hello")
	err := a.Context().Run(callCtx(t), "broken", ex)
	if err == nil || !strings.Contains(err.Error(), "does not exist") || strings.Contains(err.Error(), "sk-very-secret") {
		t.Fatalf("error %v", err)
	}
	if ex.Exception() == nil {
		t.Error("no exception on the exchange")
	}
}

// §1's translate tool as printed (plus base_url): the agent: step answers in the
// tool's output schema, which an MCP client gets as structured content.
func TestAgentStepInToolReturnsStructuredJSON(t *testing.T) {
	t.Parallel()
	fake := agenttest.NewOpenAI(t, agenttest.Reply{Text: `{"translated": "Hallo Welt", "confidence": 0.93}`})
	a := buildAgentApp(t, `
tools:
  - id: translate
    description: "Translate text between languages"
    input:
      text: { type: string, description: "Text to translate", required: true }
      source_lang: { type: string, description: "Source language code", default: "en" }
      target_lang: { type: string, description: "Target language code", required: true }
    output:
      translated: { type: string, description: "Translated text" }
      confidence: { type: number, description: "Translation confidence score" }
    steps:
      - agent:
          type: react
          model:
            provider: openai
            model: gpt-4o
            base_url: FAKE_URL
            api_key: k
          system_prompt: "You are a translator. Return JSON with 'translated' and 'confidence' fields."
mcps:
  - id: my-tools
    addr: "127.0.0.1:0"
    expose: [translate]
`, fake)
	cs := mcpSession(t, a, "my-tools")
	res, err := cs.CallTool(callCtx(t), &sdk.CallToolParams{Name: "translate", Arguments: map[string]any{"text": "Hello world", "target_lang": "de"}})
	if err != nil || res.IsError {
		t.Fatalf("translate: %v %+v", err, res)
	}
	sc, _ := json.Marshal(res.StructuredContent)
	if string(sc) != `{"confidence":0.93,"translated":"Hallo Welt"}` {
		t.Fatalf("structured content %s", sc)
	}
	msgs, _ := json.Marshal(fake.Requests()[0]["messages"])
	if !strings.Contains(string(msgs), `Hello world`) || !strings.Contains(string(msgs), `source_lang`) {
		t.Errorf("the model was not given the arguments as JSON: %s", msgs)
	}
}

// An MCP client calls an agent exposed through mcps: and gets its answer as text;
// the agent calls a Helix workflow as a tool on the way, and the model sees its
// result.
func TestAgentOverMCPCallsAWorkflowTool(t *testing.T) {
	t.Parallel()
	fake := agenttest.NewOpenAI(t,
		agenttest.Reply{Calls: []agenttest.Call{{ID: "call_1", Name: "lookup_order", Args: `{"id":"42"}`}}, InputTokens: 10, OutputTokens: 3},
		agenttest.Reply{Text: "Order 42 has shipped.", InputTokens: 20, OutputTokens: 6})
	a := buildAgentApp(t, `
workflows:
  - id: lookup-order
    description: "Look up an order by ID"
    trigger:
      uri: direct://lookup-order
    steps:
      - transform:
          starlang: |
            "order " ++ payload["id"] ++ ": shipped"
agents:
  - id: support
    description: "Answers questions about orders"
    model: {provider: openai, model: gpt-4o, api_key: k, base_url: FAKE_URL}
    tools:
      - name: lookup-order
        type: workflow
mcps:
  - id: agents
    addr: "127.0.0.1:0"
    expose: [support]
`, fake)
	cs := mcpSession(t, a, "agents")
	lt, err := cs.ListTools(callCtx(t), nil)
	if err != nil || len(lt.Tools) != 1 || lt.Tools[0].Name != "support" {
		t.Fatalf("tools: %v %+v", err, lt)
	}
	schema, _ := json.Marshal(lt.Tools[0].InputSchema)
	if !strings.Contains(string(schema), `"message"`) || !strings.Contains(string(schema), `"required":["message"]`) {
		t.Errorf("input schema %s", schema)
	}
	res, err := cs.CallTool(callCtx(t), &sdk.CallToolParams{Name: "support", Arguments: map[string]any{"message": "Where is order 42?"}})
	if err != nil || res.IsError {
		t.Fatalf("support: %v %+v", err, res)
	}
	if got := res.Content[0].(*sdk.TextContent).Text; got != "Order 42 has shipped." {
		t.Fatalf("answer %q", got)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	tools, _ := json.Marshal(reqs[0]["tools"])
	if !strings.Contains(string(tools), `"lookup_order"`) || !strings.Contains(string(tools), "Look up an order by ID") {
		t.Errorf("the model was not offered the workflow: %s", tools)
	}
	msgs, _ := json.Marshal(reqs[1]["messages"])
	if !strings.Contains(string(msgs), "order 42: shipped") {
		t.Errorf("the model did not see the tool's result: %s", msgs)
	}

	// /metrics counts the run per agent.
	resp, err := http.Get("http://" + a.ManagementAddr() + management.MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`helix_agent_runs_total{agent="support"} 1`,
		`helix_agent_errors_total{agent="support"} 0`,
		`helix_agent_iterations_total{agent="support"} 2`,
		`helix_agent_tool_calls_total{agent="support"} 1`,
		`helix_agent_input_tokens_total{agent="support"} 30`,
		`helix_agent_output_tokens_total{agent="support"} 9`,
		`helix_exchanges_total{workflow="support"} 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s:\n%s", want, body)
		}
	}
}

// The manifest lists agents with provider, model, tools and capabilities, and
// never a key, not even one written as ${env:…}.
func TestManifestListsAgentsWithoutSecrets(t *testing.T) {
	t.Setenv("AGENT_KEY", "sk-vk-very-secret")
	t.Setenv("MCP_TOKEN", "mcp-token-secret")
	fake := agenttest.NewOpenAI(t)
	a := buildAgentApp(t, `
workflows:
  - id: search
    trigger: direct://search
    steps:
      - log: {message: "search"}
agents:
  - id: code-assistant
    type: react
    model:
      provider: openai
      model: gpt-4o-mini
      api_key: ${env:AGENT_KEY}
      base_url: FAKE_URL
    tools:
      - name: search
      - name: remote
        type: mcp
        mcp_server: {url: "http://127.0.0.1:1/mcp"}
        auth: {type: bearer, token: "${env:MCP_TOKEN}"}
`, fake)
	resp, err := http.Get("http://" + a.ManagementAddr() + management.ManifestPath)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	validateManifest(t, doc)
	if strings.Contains(string(doc), "sk-vk-very-secret") || strings.Contains(string(doc), "AGENT_KEY") || strings.Contains(string(doc), "api_key") ||
		strings.Contains(string(doc), "mcp-token-secret") || strings.Contains(string(doc), "MCP_TOKEN") {
		t.Fatalf("manifest publishes the key: %s", doc)
	}
	var m management.Manifest
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Agents) != 1 {
		t.Fatalf("agents %+v", m.Agents)
	}
	ag := m.Agents[0]
	if ag.ID != "code-assistant" || ag.Type != "react" || ag.Provider != "openai" || ag.Model != "gpt-4o-mini" ||
		strings.Join(ag.Tools, ",") != "search,remote" || !strings.Contains(strings.Join(ag.Capabilities, ","), "tools") {
		t.Errorf("agent %+v", ag)
	}
}
