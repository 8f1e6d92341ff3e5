package app_test

import (
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
)

// The spec's §4.7 examples show agents without model:. They validate, with a
// warning at the agent naming the model it falls back to: OpenAI's gpt-4o-mini, or
// the model OPENAI_MODEL names.
func TestAgentWithoutModelUsesTheDefaultWithAWarning(t *testing.T) {
	src := `agents:
  - id: my-agent
    tools:
      - name: secure-tools
        type: mcp
        mcp_server:
          url: "http://mcp.internal:3100"
          transport: http
        auth:
          type: bearer
          token: "t0k3n"
`
	for _, tc := range []struct{ env, model string }{{"", "gpt-4o-mini"}, {"llama3.1", "llama3.1"}} {
		t.Setenv("OPENAI_MODEL", tc.env)
		cfg, err := config.LoadBytes("helix.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := app.Build(cfg, quiet); err != nil {
			t.Fatalf("build: %v", err)
		}
		want := `helix.yaml:2:5: agents[0]: agent "my-agent" has no model: it uses openai model ` + tc.model
		var got []string
		for _, w := range cfg.Warnings {
			got = append(got, w.Error())
		}
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("OPENAI_MODEL=%q: warnings %q lack %q", tc.env, got, want)
		}
	}
}
