package app

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/arvenza/helix/pkg/config"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/step"
	"github.com/arvenza/helix/pkg/tool"
)

// buildTool turns a `tools:` entry into a workflow triggered by tool://id whose
// arguments are validated against the input schema (defaults applied) before any
// step runs.
func (a *App) buildTool(t config.ToolConfig) *engine.Workflow {
	bc := a.bc
	bc.Workflow, bc.Trigger = t.ID, "tool://"+t.ID
	in, out := t.InputSchema(), t.OutputSchema()
	bc.ToolOutput = out // an agent: step answers in the tool's output JSON
	validate, err := newValidator(in)
	// A field with an unknown type was already reported by config; the schema
	// library's complaint about it would only repeat that.
	if err != nil && fieldsValid(t.Input) {
		bc.Errorf(t.Pos, config.KeyPath(t.Path, "input"), "%v", err)
	}
	if _, err := newValidator(out); err != nil && fieldsValid(t.Output) {
		bc.Errorf(t.Pos, config.KeyPath(t.Path, "output"), "%v", err)
	}
	from := "tool://" + t.ID
	bc.CheckEndpoint(t.Pos, t.Path, from, true)
	return &engine.Workflow{
		ID:            t.ID,
		Description:   t.Description,
		FromURI:       from,
		Kind:          engine.KindTool,
		InputSchema:   in,
		OutputSchema:  out,
		ValidateInput: validate,
		Source:        t.Pos.String(),
		Processors:    step.BuildSteps(bc, t.Steps),
	}
}

// newValidator compiles a JSON Schema into a function that applies defaults to a copy
// of the arguments and validates them, with an error that names the offending field
// (tool.CompileInput: the one implementation MCP overrides use too).
func newValidator(schema json.RawMessage) (func(map[string]any) (map[string]any, error), error) {
	v, err := tool.CompileInput(schema)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return v.Validate, nil
}

func fieldsValid(fields []config.FieldConfig) bool {
	for _, f := range fields {
		if !slices.Contains(config.FieldTypes, f.Type) || !fieldsValid(f.Properties) {
			return false
		}
		if f.Items != nil && !fieldsValid([]config.FieldConfig{*f.Items}) {
			return false
		}
	}
	return true
}
