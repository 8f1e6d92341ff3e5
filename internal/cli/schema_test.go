package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"
)

// The checked-in schema is what `helix schema` prints. When this fails, regenerate
// it with
//
//	go run ./cmd/helix schema > docs/helix.schema.json
//
// (or go test ./internal/cli -run TestSchemaCheckedInCopyIsCurrent -update).
func TestSchemaCheckedInCopyIsCurrent(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := execute(t, "schema")
	if code != ExitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	path := "../../" + schemaFile
	if *update {
		if err := os.WriteFile(path, []byte(stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run `go run ./cmd/helix schema > %s`", err, schemaFile)
	}
	if stdout != string(want) {
		t.Errorf("%s is stale: regenerate it with `go run ./cmd/helix schema > %s` (or `go test ./internal/cli -run TestSchemaCheckedInCopyIsCurrent -update`)", schemaFile, schemaFile)
	}
}

func TestSchemaCommand(t *testing.T) {
	t.Parallel()
	code, stdout, _ := execute(t, "schema")
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatalf("not a JSON Schema: %v", err)
	}
	if s.Schema != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema %q, want draft 2020-12", s.Schema)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve: %v", err)
	}
	// The file of mistakes that validate reports is refused by the schema too (the
	// validator stops at its first finding).
	data, err := os.ReadFile("testdata/mistakes.yaml")
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
	if err := rs.Validate(inst); err == nil {
		t.Error("the schema accepts testdata/mistakes.yaml")
	}

	if code, _, stderr := execute(t, "schema", "extra"); code != ExitConfig || !strings.Contains(stderr, "unknown command") && !strings.Contains(stderr, "accepts 0 arg") {
		t.Errorf("schema with an argument: exit %d, stderr %q", code, stderr)
	}
}
