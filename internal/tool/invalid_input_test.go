package tool_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/engine"
)

func TestSchemaViolationIsInvalidInputWithPositions(t *testing.T) {
	v, err := tool.CompileInput(json.RawMessage(`{"type":"object","required":["name"],
		"properties":{"name":{"type":"string"},"age":{"type":"integer"},
		"addr":{"type":"object","properties":{"zip":{"type":"string"}}},
		"tags":{"type":"array","items":{"type":"string"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args     map[string]any
		path     string
		messages string
	}{
		{map[string]any{}, "", `required: missing properties: ["name"]`},
		{map[string]any{"name": 1}, "/name", `type: 1 has type "integer", want "string"`},
		{map[string]any{"name": "x", "addr": map[string]any{"zip": 3}}, "/addr/zip", `type: 3 has type "integer", want "string"`},
		{map[string]any{"name": "x", "tags": []any{1}}, "/tags/*", `type: 1 has type "integer", want "string"`},
	}
	for _, c := range cases {
		_, err := v.Validate(c.args)
		// Classifiable through wrapping, as a failed step's error is.
		wrapped := fmt.Errorf("input: %w", &engine.StepError{Step: "s", Err: err})
		var inv *tool.InvalidInputError
		if !errors.As(wrapped, &inv) {
			t.Fatalf("%v: error %T %v is not an *InvalidInputError", c.args, err, err)
		}
		var st interface{ HTTPStatus() int }
		if !errors.As(wrapped, &st) || st.HTTPStatus() != 422 {
			t.Errorf("%v: want HTTP status 422", c.args)
		}
		if len(inv.Problems) != 1 || inv.Problems[0].Path != c.path || inv.Problems[0].Message != c.messages {
			t.Errorf("%v: problems = %+v, want path %q message %q", c.args, inv.Problems, c.path, c.messages)
		}
		if _, ok := inv.ErrorDetails().([]tool.InputProblem); !ok {
			t.Errorf("ErrorDetails = %T", inv.ErrorDetails())
		}
	}
}
