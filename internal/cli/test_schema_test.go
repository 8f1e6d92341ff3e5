package cli

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"
)

// TestSchemaKnowsTestsLists: editors validating with `helix schema` accept the
// tests: lists of the init templates and of the test data, and refuse an unknown key
// in one.
func TestSchemaKnowsTestsLists(t *testing.T) {
	t.Parallel()
	code, stdout, _ := execute(t, "schema")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	asJSON := func(file string) any {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(doc)
		var inst any
		if err := json.Unmarshal(b, &inst); err != nil {
			t.Fatal(err)
		}
		return inst
	}
	for _, f := range []string{"templates/webhook.yaml", "templates/mcp-tools.yaml", "templates/agent.yaml",
		"templates/rag.yaml", "testdata/wftest/pass.yaml", "testdata/wftest/hang.yaml", "testdata/wftest/sibling_test.yaml"} {
		if err := rs.Validate(asJSON(f)); err != nil {
			t.Errorf("%s: the schema refuses it: %v", f, err)
		}
	}
	if err := rs.Validate(asJSON("testdata/wftest/invalid.yaml")); err == nil {
		t.Error("the schema accepts testdata/wftest/invalid.yaml")
	}
}
