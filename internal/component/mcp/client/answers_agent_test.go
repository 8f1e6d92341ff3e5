package client_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

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
