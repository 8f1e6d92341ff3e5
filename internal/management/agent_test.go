package management

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

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
