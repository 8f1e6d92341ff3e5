package client_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

const agentSampleYAML = `
agents:
  - id: writer
    description: "Writes"
    model: {provider: %[2]s, model: test-model, base_url: "%[3]s", api_key: test-key}
    system_prompt: "unused for sampling"
workflows:
  - id: ask-upstream
    trigger: { uri: direct://ask-upstream }
    steps:
      - target: mcp://%[1]s/sample?onSample=agent:writer
`

// TestAgentAnswersSampling: onSample=agent:<id> has that agent's model (OpenAI
// and Anthropic, each a fake speaking its wire format) write the message an
// upstream server's sampling request asks for, on both eras.
func TestAgentAnswersSampling(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"openai", "anthropic"} {
		for _, era := range eras {
			t.Run(provider+" "+era.name, func(t *testing.T) {
				t.Parallel()
				answer := func(req agenttest.Request) agenttest.Reply {
					if req.UserMessage != "say hi" || len(req.Tools) != 0 {
						t.Errorf("the model was asked %q with tools %v", req.UserMessage, req.Tools)
					}
					return agenttest.Reply{Text: "hi from the agent"}
				}
				fake := agenttest.NewOpenAIFunc(t, answer)
				if provider == "anthropic" {
					fake = agenttest.NewAnthropicFunc(t, answer)
				}
				url, _ := askingServer(t, era.stateless)
				a := startYAMLApp(t, fmt.Sprintf(agentSampleYAML, strings.TrimPrefix(url, "http://"), provider, fake.BaseURL()))
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				ex := exchange.NewWithBody(exchange.InOut, nil)
				if err := a.Context().Send(ctx, "direct://ask-upstream", ex); err != nil {
					t.Fatal(err)
				}
				if got := exchange.Stringify(ex.In().Body()); got != "model=agent:writer text=hi from the agent" {
					t.Fatalf("body %q", got)
				}
			})
		}
	}
}

// TestAnswerPolicyConfigErrors: a wrong onElicit or onSample is a configuration
// error at the target's line, naming the allowed values.
func TestAnswerPolicyConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ option, want string }{
		{"onElicit=ask", "refuse, defaults or forward"},
		{"onSample=agent:nobody", `no agent "nobody"`},
		{"onSample=defaults", "sampling has no defaults"},
	} {
		text := fmt.Sprintf(`
workflows:
  - id: w
    trigger: { uri: direct://w }
    steps:
      - target: mcp://127.0.0.1:1/t?%s
`, tc.option)
		_, _, err := app.Load(app.Options{Logger: slog.New(slog.DiscardHandler)}, writeYAML(t, text))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "helix.yaml:6:") {
			t.Errorf("%s: got %v, want an error at helix.yaml:6 with %q", tc.option, err, tc.want)
		}
	}
}

const agentToolYAML = `
agents:
  - id: writer
    model: {provider: openai, model: m, api_key: k, base_url: "%[2]s"}
  - id: planner
    model: {provider: openai, model: m, api_key: k, base_url: "%[2]s"}
    tools:
      - name: upstream
        mcp_server: {url: "%[1]s"}
        include: [form, sample]
        on_elicit: defaults
        on_sample: agent:writer
`

// TestAgentMCPToolAnswers: an agent's MCP tool answers its server's form with the
// defaults and its sampling with another agent's model (on_elicit, on_sample).
func TestAgentMCPToolAnswers(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			var results []agenttest.ToolResult
			fake := agenttest.NewOpenAIFunc(t, func(r agenttest.Request) agenttest.Reply {
				switch {
				case len(r.Tools) == 0: // the writer, sampling
					return agenttest.Reply{Text: "hi from the writer"}
				case len(r.ToolResults) == 0:
					return agenttest.Reply{Calls: []agenttest.Call{{ID: "c1", Name: "form", Args: `{}`}, {ID: "c2", Name: "sample", Args: `{}`}}}
				}
				results = r.ToolResults
				return agenttest.Reply{Text: "done"}
			})
			url, _ := askingServer(t, era.stateless)
			a := startYAMLApp(t, fmt.Sprintf(agentToolYAML, url, fake.BaseURL()))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ex := exchange.NewWithBody(exchange.InOut, map[string]any{"message": "go"})
			if err := a.Context().Run(ctx, "planner", ex); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range results {
				got = append(got, r.Text)
			}
			want := []string{`accept {"age":36,"name":"Ada"}`, "model=agent:writer text=hi from the writer"}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Fatalf("tool results %q, want %q", got, want)
			}
		})
	}
}

// TestAgentMCPToolAnswerErrors: wrong on_elicit and on_sample values are errors
// at their line.
func TestAgentMCPToolAnswerErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ key, want, line string }{
		{"on_elicit: ask", "refuse", ":10:"},
		{"on_sample: agent:nobody", `no agent "nobody"`, ":10:"},
		{"on_sample: maybe", "refuse, forward, agent:<id>", ":10:"},
	} {
		text := fmt.Sprintf(`
agents:
  - id: planner
    model: {provider: openai, model: m, api_key: k, base_url: "http://127.0.0.1:1/v1"}
    tools:
      - name: upstream
        mcp_server:
          url: "http://127.0.0.1:1/mcp"
        include: [form]
        %s
`, tc.key)
		_, _, err := app.Load(app.Options{Logger: slog.New(slog.DiscardHandler)}, writeYAML(t, text))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "helix.yaml"+tc.line) {
			t.Errorf("%s: got %v, want an error at line %s with %q", tc.key, err, tc.line, tc.want)
		}
	}
}

const agentForwardYAML = `
helix:
  mcp:
    servers:
      - { enabled: true, transport: http, addr: "127.0.0.1:0", name: front, workflows: [planner] }
agents:
  - id: planner
    description: "Plans"
    model: {provider: openai, model: m, api_key: k, base_url: "%[2]s"}
    tools:
      - name: upstream
        mcp_server: {url: "%[1]s"}
        include: [form]
        on_elicit: forward
`

// TestAgentMCPToolForwards: an agent served as an MCP tool forwards its MCP
// tool's form to its own caller, on both eras of that caller.
func TestAgentMCPToolForwards(t *testing.T) {
	t.Parallel()
	for _, top := range []string{"2025-11-25", "2026-07-28"} {
		t.Run("caller "+top, func(t *testing.T) {
			t.Parallel()
			var results []agenttest.ToolResult
			fake := agenttest.NewOpenAIFunc(t, func(r agenttest.Request) agenttest.Reply {
				if len(r.ToolResults) == 0 {
					return agenttest.Reply{Calls: []agenttest.Call{{ID: "c1", Name: "form", Args: `{}`}}}
				}
				results = r.ToolResults
				return agenttest.Reply{Text: "done"}
			})
			url, _ := askingServer(t, false)
			a := startYAMLApp(t, fmt.Sprintf(agentForwardYAML, url, fake.BaseURL()))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			opts := &sdk.ClientOptions{ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Top", "age": 1}}, nil
			}}
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "top", Version: "1"}, opts).Connect(ctx,
				&sdk.StreamableClientTransport{Endpoint: "http://" + serverAddr(t, a, "front") + "/mcp", MaxRetries: -1},
				&sdk.ClientSessionOptions{ProtocolVersion: top})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "planner", Arguments: map[string]any{"message": "go"}})
			if err != nil || res.IsError {
				t.Fatalf("planner: %v %+v", err, res)
			}
			if len(results) != 1 || results[0].Text != `accept {"age":1,"name":"Top"}` {
				t.Fatalf("tool results %+v", results)
			}
		})
	}
}
