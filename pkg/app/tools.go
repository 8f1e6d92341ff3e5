package app

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/arvenza/helix/pkg/config"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/step"
)

// buildTool turns a `tools:` entry into a workflow triggered by tool://id whose
// arguments are validated against the input schema (defaults applied) before any
// step runs.
func (a *App) buildTool(t config.ToolConfig) *engine.Workflow {
	bc := a.bc
	bc.Workflow, bc.Trigger = t.ID, "tool://"+t.ID
	in, out := t.InputSchema(), t.OutputSchema()
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
// of the arguments and validates them, with an error that names the offending field.
func newValidator(schema json.RawMessage) (func(map[string]any) (map[string]any, error), error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	rs, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return func(args map[string]any) (out map[string]any, err error) {
		out = make(map[string]any, len(args))
		for k, v := range args {
			out[k] = v
		}
		defer func() {
			// ApplyDefaults documents that it may panic on values it cannot assign;
			// an MCP call must get an error, not crash the server.
			if r := recover(); r != nil {
				out, err = nil, fmt.Errorf("applying defaults: %v", r)
			}
		}()
		if err := rs.ApplyDefaults(&out); err != nil {
			return nil, fmt.Errorf("applying defaults: %w", err)
		}
		if err := rs.Validate(out); err != nil {
			return nil, friendlySchemaError(err)
		}
		return out, nil
	}, nil
}

// friendlySchemaError drops the library's "validating root:" framing.
func friendlySchemaError(err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "validating root: ")
	msg = strings.ReplaceAll(msg, "validating /properties/", "field ")
	// The library prints a JSON null as "<invalid reflect.Value>".
	msg = strings.ReplaceAll(msg, "<invalid reflect.Value>", "null")
	return fmt.Errorf("%s", msg)
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
