package management

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// Agents have one sample per family, sorted by agent, after the MCP families.
func TestWriteMetricsAgents(t *testing.T) {
	m := Metrics{Version: "1", GoVersion: "go1", Agents: []AgentMetrics{
		{Agent: "zeta", Runs: 3, Errors: 1, Iterations: 7, ToolCalls: 4, InputTokens: 120, OutputTokens: 30},
		{Agent: "alpha", Runs: 1},
	}}
	var sb strings.Builder
	if err := WriteMetrics(&sb, m); err != nil {
		t.Fatal(err)
	}
	got := sb.String()
	for _, want := range []string{
		"# TYPE helix_agent_runs_total counter\nhelix_agent_runs_total{agent=\"alpha\"} 1\nhelix_agent_runs_total{agent=\"zeta\"} 3\n",
		`helix_agent_errors_total{agent="zeta"} 1`,
		`helix_agent_iterations_total{agent="zeta"} 7`,
		`helix_agent_tool_calls_total{agent="zeta"} 4`,
		`helix_agent_input_tokens_total{agent="zeta"} 120`,
		`helix_agent_output_tokens_total{agent="zeta"} 30`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("metrics lack %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "helix_mcp_rejected_requests_total") > strings.Index(got, "helix_agent_runs_total") {
		t.Error("agent families come before the MCP ones")
	}
}

// An agent with a provider matches the schema; an agent with a field the schema
// does not know (a key, say) does not.
func TestManifestAgentProviderMatchesSchema(t *testing.T) {
	m := sampleManifest()
	m.Agents = append(m.Agents, Agent{ID: "translator", Type: "react", Provider: "openai", Model: "gpt-4o",
		Tools: []string{"search"}, Capabilities: []string{"tools", "memory", "structured_output"}})
	doc, err := json.Marshal(m.normalized())
	if err != nil {
		t.Fatal(err)
	}
	validate(t, doc)
	if !strings.Contains(string(doc), `"provider":"openai"`) {
		t.Errorf("provider missing: %s", doc)
	}

	var generic map[string]any
	_ = json.Unmarshal(doc, &generic)
	generic["agents"].([]any)[0].(map[string]any)["api_key"] = "sk-x"
	bad, _ := json.Marshal(generic)
	if err := schemaErr(t, bad); err == nil {
		t.Error("the schema accepts an agent with an api_key")
	}
}

// schemaErr validates doc against docs/manifest.schema.json and returns the error.
func schemaErr(t *testing.T, doc []byte) error {
	t.Helper()
	raw, err := os.ReadFile("../../docs/manifest.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	var instance any
	if err := json.Unmarshal(doc, &instance); err != nil {
		t.Fatal(err)
	}
	return resolved.Validate(instance)
}
