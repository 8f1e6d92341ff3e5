package cli

import (
	"os"
	"strings"
	"testing"
)

// §4A: agents are listed with the [agent ] marker, beside [tool  ] entries, and the
// server's TOOLS column names them; building the list contacts no model.
func TestMCPListMarksAgents(t *testing.T) {
	t.Parallel()
	file := t.TempDir() + "/agents.yaml"
	yaml := `agents:
  - id: summarize
    description: "Summarize text"
    model: {provider: openai, model: gpt-4o-mini, base_url: "http://127.0.0.1:1/v1"}
tools:
  - id: search
    description: "Search knowledge base"
    input:
      query: { type: string, required: true }
      limit: { type: integer, default: 10 }
    output:
      results: { type: array }
      total: { type: integer }
    steps:
      - agent: summarize
mcps:
  - id: helix-ai-tools
    addr: 127.0.0.1:0
    expose: [summarize, search]
`
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := execute(t, "mcp", "list", file)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	for _, want := range []string{
		"summarize                 [agent ] Summarize text (2 params)",
		"search                    [tool  ] Search knowledge base (2 params, output: 2 fields)",
		"summarize, search",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("mcp list lacks %q:\n%s", want, stdout)
		}
	}
}
