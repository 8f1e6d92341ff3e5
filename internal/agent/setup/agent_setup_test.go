package setup

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/agent/agenttest"
	agentcomp "github.com/arvenza/helix/internal/component/agent"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func openaiAgent(id, baseURL string, tools ...config.AgentToolConfig) config.AgentConfig {
	return config.AgentConfig{ID: id, Model: config.ModelConfig{Provider: "openai", Model: "gpt-4o", APIKey: "k", BaseURL: baseURL},
		Tools: tools, Pos: config.Pos{File: "helix.yaml", Line: 3, Col: 5}}
}

func mustBuild(t *testing.T, cfg config.AgentConfig, deps Deps) *Runner {
	t.Helper()
	if deps.Logger == nil {
		deps.Logger = quiet
	}
	r, errs := Build(cfg, "agents[0]", deps)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return r
}

func TestRequestFromBody(t *testing.T) {
	for _, tc := range []struct {
		body        any
		msg, sid    string
		errContains string
	}{
		{body: map[string]any{"message": "hi", "session_id": "s1"}, msg: "hi", sid: "s1"},
		{body: `{"message":"from json text"}`, msg: "from json text"},
		{body: []byte("plain bytes"), msg: "plain bytes"},
		{body: "plain text", msg: "plain text"},
		{body: json.RawMessage(`{"message":"raw"}`), msg: "raw"},
		{body: map[string]any{"question": "x"}, msg: `{"question":"x"}`},
		{body: 42, msg: "42"},
		{body: nil, errContains: "the message is empty"},
		{body: map[string]any{"message": 3}, errContains: "message must be a string"},
		{body: map[string]any{"message": "x", "session_id": 3}, errContains: "session_id must be a string"},
		{body: "   ", errContains: "the message is empty"},
	} {
		var req agent.Request
		err := requestFromBody(tc.body, &req)
		switch {
		case tc.errContains != "":
			if err == nil || !strings.Contains(err.Error(), tc.errContains) {
				t.Errorf("%#v: error %v, want %q", tc.body, err, tc.errContains)
			}
		case err != nil:
			t.Errorf("%#v: %v", tc.body, err)
		case req.Message != tc.msg || req.SessionID != tc.sid:
			t.Errorf("%#v: message %q session %q", tc.body, req.Message, req.SessionID)
		}
	}
}

// Process answers on the exchange: text body, the run's counts as headers, the
// session from the header when the body has none (memory is per session).
func TestProcessSetsBodyAndHeaders(t *testing.T) {
	fake := agenttest.NewOpenAI(t,
		agenttest.Reply{Text: "first", InputTokens: 7, OutputTokens: 2},
		agenttest.Reply{Text: "second", InputTokens: 9, OutputTokens: 3})
	r := mustBuild(t, openaiAgent("a", fake.BaseURL()), Deps{})
	if errs := r.Resolve(tool.NewCatalogue()); len(errs) > 0 {
		t.Fatal(errs)
	}
	for i, want := range []string{"first", "second"} {
		ex := exchange.NewWithBody(exchange.InOut, "question")
		ex.In().SetHeader(agentcomp.HeaderSessionID, "s1")
		if err := r.Process(testCtx(t), ex); err != nil {
			t.Fatal(err)
		}
		if ex.In().Body() != want || ex.In().Header(agentcomp.HeaderIterations) != 1 || ex.In().Header(exchange.HeaderContentType) != "text/plain; charset=utf-8" {
			t.Fatalf("run %d: body %v headers %v", i, ex.In().Body(), ex.In().Headers())
		}
	}
	msgs, _ := json.Marshal(fake.Requests()[1]["messages"])
	if !strings.Contains(string(msgs), "first") {
		t.Errorf("the second run of session s1 did not see the first: %s", msgs)
	}
	if st := r.Stats(); st.Runs != 2 || st.Iterations != 2 || st.InputTokens != 16 || st.OutputTokens != 5 || st.Errors != 0 {
		t.Errorf("stats %+v", st)
	}
}

// With an output schema the answer is the decoded JSON, as application/json; the
// runner WithOutput made counts into its parent.
func TestWithOutputAnswersJSON(t *testing.T) {
	fake := agenttest.NewAnthropic(t, agenttest.Reply{Text: `{"n": 3}`})
	cfg := openaiAgent("a", fake.BaseURL())
	cfg.Model.Provider = "anthropic"
	r := mustBuild(t, cfg, Deps{})
	_ = r.Resolve(tool.NewCatalogue())
	structured := r.WithOutput(json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`))
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"text": "count"})
	if err := structured.StepProcessor().Process(testCtx(t), ex); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(ex.In().Body())
	if string(got) != `{"n":3}` || ex.In().Header(exchange.HeaderContentType) != "application/json" {
		t.Fatalf("body %s headers %v", got, ex.In().Headers())
	}
	msgs, _ := json.Marshal(fake.Requests()[0]["messages"])
	if !strings.Contains(string(msgs), `{\"text\":\"count\"}`) {
		t.Errorf("the step did not send the body as JSON text: %s", msgs)
	}
	if r.Stats().Runs != 1 {
		t.Errorf("parent stats %+v", r.Stats())
	}
}

// An empty api_key falls back to the provider's environment variable; headers go
// out with every request.
func TestAPIKeyFromEnvironmentAndHeaders(t *testing.T) {
	fake := agenttest.NewOpenAI(t, agenttest.Reply{Text: "ok"})
	cfg := openaiAgent("a", fake.BaseURL())
	cfg.Model.APIKey = ""
	cfg.Model.Headers = map[string]string{"X-Gateway-Team": "helix"}
	env := func(k string) string {
		if k == "OPENAI_API_KEY" {
			return "from-env"
		}
		return ""
	}
	r := mustBuild(t, cfg, Deps{Getenv: env})
	_ = r.Resolve(tool.NewCatalogue())
	if _, err := r.Run(testCtx(t), agent.Request{Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	h := fake.Headers()[0]
	if h.Get("Authorization") != "Bearer from-env" || h.Get("X-Gateway-Team") != "helix" {
		t.Errorf("headers %v", h)
	}
}

func TestBuildErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*config.AgentConfig)
		want string
	}{
		{"provider typo", func(c *config.AgentConfig) { c.Model.Provider = "opnai" }, `unknown model provider "opnai" (did you mean "openai"?)`},
		{"no provider", func(c *config.AgentConfig) { c.Model.Provider = "" }, "model.provider is required"},
		{"no model", func(c *config.AgentConfig) { c.Model.Model = "" }, "model.model is required"},
		{"bad type", func(c *config.AgentConfig) { c.Type = "plan" }, `unknown type "plan"`},
		{"tool type", func(c *config.AgentConfig) {
			c.Tools = []config.AgentToolConfig{{Name: "x", Type: "workflw"}}
		}, `unknown tool type "workflw" (did you mean "workflow"?)`},
		{"mcp without server", func(c *config.AgentConfig) {
			c.Tools = []config.AgentToolConfig{{Name: "x", Type: "mcp"}}
		}, "a tool of type mcp needs mcp_server:"},
		{"bad transport", func(c *config.AgentConfig) {
			c.Tools = []config.AgentToolConfig{{Name: "x", Type: "mcp", MCPServer: &config.AgentMCPServerConfig{URL: "ftp://x", Transport: "http"}}}
		}, "must be an http:// or https:// URL"},
	} {
		cfg := openaiAgent("a", "http://127.0.0.1:1/v1")
		cfg.Model.APIKey = "sk-secret-key"
		tc.edit(&cfg)
		_, errs := Build(cfg, "agents[0]", Deps{Logger: quiet})
		if len(errs) == 0 || !strings.Contains(errs.Error(), tc.want) || !strings.HasPrefix(errs.Error(), "helix.yaml:3:5: agents[0]") {
			t.Errorf("%s: %v, want %q", tc.name, errs, tc.want)
		}
		if strings.Contains(errs.Error(), "sk-secret-key") {
			t.Errorf("%s: the key is in the error: %v", tc.name, errs)
		}
	}
}

// Agents calling agents stop at MaxDepth with an error the calling model sees as a
// tool result; every level still answers.
func TestRecursionDepthIsBounded(t *testing.T) {
	var replies []agenttest.Reply
	for range MaxDepth {
		replies = append(replies, agenttest.Reply{Calls: []agenttest.Call{{ID: "c", Name: "self_call", Args: `{"message":"again"}`}}})
	}
	for range MaxDepth {
		replies = append(replies, agenttest.Reply{Text: "done"})
	}
	fake := agenttest.NewOpenAI(t, replies...)
	cat := tool.NewCatalogue()
	r := mustBuild(t, openaiAgent("loopy", fake.BaseURL(), config.AgentToolConfig{Name: "self-call"}), Deps{})
	if err := cat.Add(&tool.Tool{ID: "self-call", Kind: engine.KindAgent, Description: "calls loopy",
		Invoke: func(ctx context.Context, args map[string]any) (tool.Result, error) {
			res, err := r.Run(ctx, agent.Request{Message: args["message"].(string)})
			if err != nil {
				return tool.Result{}, err
			}
			return tool.TextResult(res.Text), nil
		}}); err != nil {
		t.Fatal(err)
	}
	if errs := r.Resolve(cat); len(errs) > 0 {
		t.Fatal(errs)
	}
	res, err := r.Run(testCtx(t), agent.Request{Message: "go"})
	if err != nil || res.Text != "done" {
		t.Fatalf("%v %+v", err, res)
	}
	reqs := fake.Requests()
	deepest, _ := json.Marshal(reqs[MaxDepth]["messages"])
	if !strings.Contains(string(deepest), "more than 8 deep (loopy → loopy") {
		t.Errorf("the deepest model did not see the depth error: %s", deepest)
	}
	if st := r.Stats(); st.Runs != MaxDepth+1 || st.Errors != 1 {
		t.Errorf("stats %+v", st)
	}
}

// MCP tools and catalogue tools form one set; an MCP tool named like a catalogue
// entry is an error naming both.
func TestMCPToolsJoinCatalogueTools(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "remote", Version: "1"}, &sdk.ServerOptions{Logger: quiet})
	srv.AddTool(&sdk.Tool{Name: "weather", Description: "the weather", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "sunny"}}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "lookup", Description: "clashes", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "x"}}}, nil
		})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Logger: quiet}))
	t.Cleanup(func() {
		ts.Close()
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	cat := tool.NewCatalogue()
	_ = cat.Add(&tool.Tool{ID: "lookup", Invoke: func(context.Context, map[string]any) (tool.Result, error) { return tool.TextResult("found"), nil }})

	build := func(exclude []string) *Runner {
		mcpTool := config.AgentToolConfig{Name: "remote", Type: "mcp", Exclude: exclude,
			MCPServer: &config.AgentMCPServerConfig{URL: ts.URL, Transport: "http"}}
		r := mustBuild(t, openaiAgent("a", "http://127.0.0.1:1/v1", config.AgentToolConfig{Name: "lookup"}, mcpTool), Deps{})
		if errs := r.Resolve(cat); len(errs) > 0 {
			t.Fatal(errs)
		}
		if err := r.Start(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = r.Stop(context.Background()) })
		return r
	}

	clash := build(nil)
	if _, err := clash.source.ToolSet(testCtx(t)); err == nil || !strings.Contains(err.Error(), `tool name "lookup" is given by both workflow "lookup" and MCP tool entry remote`) {
		t.Errorf("clash: %v", err)
	}

	r := build([]string{"lookup"})
	set, err := r.source.ToolSet(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range set.Tools() {
		names = append(names, x.Name)
	}
	if strings.Join(names, ",") != "lookup,weather" {
		t.Fatalf("tools %v", names)
	}
	again, _ := r.source.ToolSet(testCtx(t))
	if again != set {
		t.Error("the set is made again although no server's tools changed")
	}
	if d := r.Describe(); strings.Join(d.Tools, ",") != "lookup,remote" || d.Provider != "openai" || d.Type != "react" {
		t.Errorf("describe %+v", d)
	}
}
