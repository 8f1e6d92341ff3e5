package form

import (
	"encoding/json"
	"testing"
)

func TestCheckValidatesAndAppliesDefaults(t *testing.T) {
	schema := map[string]any{
		"type":       "object",
		"properties": map[string]any{"name": map[string]any{"type": "string"}, "size": map[string]any{"type": "integer", "default": 3}},
		"required":   []any{"name"},
	}
	content := map[string]any{"name": "a"}
	if err := Check(schema, &content); err != nil {
		t.Fatal(err)
	}
	if content["size"] != 3 && content["size"] != float64(3) && content["size"] != json.Number("3") {
		t.Fatalf("default not applied: %v", content)
	}
	for _, bad := range []map[string]any{{}, {"name": 7}} {
		if err := Check(schema, &bad); err == nil {
			t.Errorf("%v passed", bad)
		}
	}
	if err := CheckRaw(json.RawMessage(`{"type":`), &content); err == nil {
		t.Error("a broken schema passed")
	}
	if err := Check(nil, &content); err != nil {
		t.Errorf("no schema: %v", err)
	}
}
