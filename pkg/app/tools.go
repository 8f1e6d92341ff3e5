package app

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/step"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// buildTool turns a `tools:` entry into a workflow triggered by tool://id whose
// arguments are validated against the input schema (defaults applied) before any
// step runs.
func (a *App) buildTool(t config.ToolConfig) *engine.Workflow {
	bc := a.bc
	bc.Workflow, bc.Trigger = t.ID, "tool://"+t.ID
	in, out := t.InputSchema(), t.OutputSchema()
	bc.ToolOutput = out // an agent: step answers in the tool's output JSON
	validate := a.compileSchemas(t.Pos, t.Path, in, out, t.Input, t.Output)
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

// compileSchemas compiles the input and output schemas of a tools: entry or a
// workflow declared at pos and path (fields: what they were built from), reporting
// a schema the library refuses, and returns the input validator.
func (a *App) compileSchemas(pos config.Pos, path string, in, out json.RawMessage, inFields, outFields []config.FieldConfig) func(map[string]any) (map[string]any, error) {
	var validate func(map[string]any) (map[string]any, error)
	var err error
	// A field with an unknown type was already reported by config; the schema
	// library's complaint about it would only repeat that.
	if in != nil {
		if validate, err = newValidator(in); err != nil && fieldsValid(inFields) {
			a.bc.Errorf(pos, config.KeyPath(path, "input"), "%v", err)
		}
	}
	if out != nil {
		if _, err := newValidator(out); err != nil && fieldsValid(outFields) {
			a.bc.Errorf(pos, config.KeyPath(path, "output"), "%v", err)
		}
	}
	return validate
}

// buildWorkflowSchemas gives wf the input: and output: of its declaration w, with
// the semantics of a tools: entry's: MCP clients are shown both schemas, a call's
// arguments are validated (defaults applied) before any step runs and its result
// is checked against the output schema (internal/tool). A workflow without input:
// takes any arguments; with it, what its trigger delivers is validated too
// (CheckTriggered): a webhook's JSON body, a direct:// caller's body.
func (a *App) buildWorkflowSchemas(w config.WorkflowConfig, wf *engine.Workflow) {
	in, out := w.InputSchema(), w.OutputSchema()
	if in == nil && out == nil {
		return
	}
	if u, err := uri.Parse(w.From); err == nil && u.Scheme == mcpServerScheme {
		// Its pipeline never runs and it is no tool: the schemas would be ignored.
		pos, key := w.InputPos, "input"
		if in == nil {
			pos, key = w.OutputPos, "output"
		}
		a.bc.Errorf(pos, config.KeyPath(w.Path, key), "a workflow triggered by mcp-server:// is an MCP server, not a tool: it takes no input: or output:").Hint =
			"declare input: and output: on the workflows (or tools: entries) the server exposes"
		return
	}
	if out != nil {
		a.bc.ToolOutput = out // an agent: step answers in the workflow's output JSON
	}
	validate := a.compileSchemas(w.Pos, w.Path, in, out, w.Input, w.Output)
	wf.InputSchema, wf.OutputSchema = in, out
	if in == nil || validate == nil {
		return
	}
	wf.ValidateInput = validate
	id := w.ID
	wf.CheckTriggered = func(ex *exchange.Exchange) error {
		args, err := tool.BodyArguments(ex.In().Body())
		if err != nil {
			return fmt.Errorf("workflow %s: invalid input: %w", id, err)
		}
		args, err = validate(args)
		if err != nil {
			return fmt.Errorf("workflow %s: invalid input: %w", id, err)
		}
		ex.In().SetBody(args)
		return nil
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
