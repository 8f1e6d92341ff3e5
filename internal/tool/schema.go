package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// OutputSchemaKey is the extension keyword under which a tool's output schema is
// mirrored inside its input schema when it is advertised to MCP clients older than
// the 2025-06-18 revision, which drop the tool's outputSchema field; an unknown
// keyword inside inputSchema survives every client and JSON Schema validators ignore
// it.
const OutputSchemaKey = "x-helix-output-schema"

// defaultInputSchema accepts any object: a tool without a declared schema takes
// whatever arguments the caller sends (spec §8.2).
var defaultInputSchema = json.RawMessage(`{"type":"object","additionalProperties":true}`)

// compile normalizes the input schema, resolves the output schema and checks the
// name, recording the first problem in t.broken.
func (t *Tool) compile() {
	if t.Name == "" {
		t.Name = SanitizeName(t.ID)
	}
	t.name = t.Name
	if err := CheckName(t.ID, t.Name); err != nil {
		t.broken = err
		return
	}
	in, err := objectSchema(t.InputSchema)
	if err != nil {
		t.broken = fmt.Errorf("%s %q: %v", t.label(), t.ID, err)
		return
	}
	t.input = in
	if len(bytes.TrimSpace(t.OutputSchema)) == 0 {
		t.OutputSchema = nil
	}
	if out := bytes.TrimSpace(t.OutputSchema); len(out) > 0 {
		rs, err := resolveOutput(out)
		if err != nil {
			t.broken = fmt.Errorf("%s %q: %w", t.label(), t.ID, err)
			return
		}
		t.OutputSchema, t.outSchema, t.outQuick = json.RawMessage(out), rs, compileQuick(out)
	}
}

// label names the kind of t in messages; workflows and `tools:` entries say
// "workflow", as they always have.
func (t *Tool) label() string {
	switch t.Kind {
	case "", "workflow", "tool":
		return "workflow"
	}
	return string(t.Kind)
}

// Problem is why a registered tool cannot be served (an invalid name, a schema
// that is not an object schema), or nil.
func (t *Tool) Problem() error { return t.broken }

// Input is the tool's input schema as callers are shown it: an object schema with
// "type": "object" (the default accepts any object).
func (t *Tool) Input() json.RawMessage { return t.input }

// objectSchema returns schema (nil: the default) as a JSON object with "type":
// "object": a schema with properties but no type is common in hand-written
// overrides, and tool arguments are always an object.
func objectSchema(schema json.RawMessage) (json.RawMessage, error) {
	in := defaultInputSchema
	if len(bytes.TrimSpace(schema)) > 0 {
		in = schema
	}
	var m map[string]any
	if err := json.Unmarshal(in, &m); err != nil || m == nil {
		return nil, fmt.Errorf("input schema is not a JSON object: %v", errOrNull(err))
	}
	switch t := m["type"]; t {
	case nil:
		m["type"] = "object"
	case "object":
	default:
		return nil, fmt.Errorf("input schema must have \"type\": \"object\" (MCP tool arguments are always an object), got %v", t)
	}
	return json.Marshal(m)
}

func errOrNull(err error) any {
	if err == nil {
		return "got null"
	}
	return err
}

func resolveOutput(out json.RawMessage) (*jsonschema.Resolved, error) {
	var doc any
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("output schema is not valid JSON: %w", err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(out, &s); err != nil {
		return nil, fmt.Errorf("output schema: %w", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("output schema: %w", err)
	}
	return rs, nil
}

// InputValidator enforces a JSON Schema on tool arguments: defaults are applied to
// a copy of the arguments, then the copy is validated. `tools:` entries and the
// input-schema overrides of MCP servers use it. Safe for concurrent use.
type InputValidator struct {
	rs    *jsonschema.Resolved
	quick *quickSchema // nil: every call asks rs
	// defaults: the schema has defaults ApplyDefaults may apply; without any it
	// leaves plain arguments (plainAlong) as they are, and Validate skips it.
	defaults bool
}

// CompileInput compiles schema, checking that its defaults are valid.
func CompileInput(schema json.RawMessage) (*InputValidator, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, err
	}
	rs, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return nil, err
	}
	return &InputValidator{rs: rs, quick: compileQuick(schema), defaults: hasDefaults(rs.Schema())}, nil
}

// hasDefaults reports whether s or a schema under its properties, at any depth, has
// a default: the only schemas jsonschema-go's ApplyDefaults reads.
func hasDefaults(s *jsonschema.Schema) bool {
	if s == nil {
		return false
	}
	if s.Default != nil {
		return true
	}
	for _, p := range s.Properties {
		if hasDefaults(p) {
			return true
		}
	}
	return false
}

// Validate returns args with the schema's defaults applied (to a copy: args
// itself is never changed; without defaults to apply, args is returned), or the
// violation (see [SchemaError]). Defaults get the number types of decoded arguments: integral
// numbers int64, others float64.
func (v *InputValidator) Validate(args map[string]any) (map[string]any, error) {
	// Arguments nothing is applied to are validated and returned as they are:
	// every tool call comes through here, and a copy would only be thrown away.
	out := args
	if args == nil || v.defaults || !plainAlong(v.rs.Schema(), args) {
		out = make(map[string]any, len(args))
		for k, x := range args {
			out[k] = x
		}
		var err error
		if out, err = v.applyDefaults(args, out); err != nil {
			return nil, err
		}
	}
	if v.quick != nil && v.quick.valid(out) {
		return out, nil
	}
	if err := v.rs.Validate(out); err != nil {
		return nil, SchemaError(err)
	}
	return out, nil
}

// plainAlong reports whether the values of m that ApplyDefaults visits for schema s
// (under its properties, at any depth) are plain decoded JSON, on which it fails
// or panics only when applying a default.
func plainAlong(s *jsonschema.Schema, m map[string]any) bool {
	if s == nil {
		return false
	}
	for prop, sub := range s.Properties {
		switch x := m[prop].(type) {
		case nil, bool, string, int64, float64, []any:
		case map[string]any:
			if !plainAlong(sub, x) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// applyDefaults applies the schema's defaults to out, a copy of args.
func (v *InputValidator) applyDefaults(args, out map[string]any) (_ map[string]any, err error) {
	defer func() {
		// ApplyDefaults may panic on values it cannot assign; a call must get an
		// error, not take the server down.
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("applying defaults: %v", r)
		}
	}()
	if err := v.rs.ApplyDefaults(&out); err != nil {
		return nil, fmt.Errorf("applying defaults: %w", err)
	}
	for k, x := range out {
		if _, given := args[k]; !given {
			out[k] = renumber(x)
		}
	}
	return out, nil
}

// renumber gives a default decoded by the schema library (float64 numbers) the
// number types of tool arguments.
func renumber(x any) any {
	data, err := json.Marshal(x)
	if err != nil {
		return x
	}
	v, err := decodeJSON(data)
	if err != nil {
		return x
	}
	return v
}

// SchemaError makes a jsonschema validation error readable: without the library's
// "validating root:" framing, fields named as such, and a JSON null shown as null
// (the library prints "<invalid reflect.Value>" for it). It returns an
// *[InvalidInputError], which also says where the violation is.
func SchemaError(err error) error {
	msg := err.Error()
	path, problem := violation(msg)
	msg = strings.TrimPrefix(msg, "validating root: ")
	msg = strings.ReplaceAll(msg, "validating /properties/", "field ")
	msg = strings.ReplaceAll(msg, "<invalid reflect.Value>", "null")
	problem = strings.ReplaceAll(problem, "<invalid reflect.Value>", "null")
	return &InvalidInputError{Msg: msg, Problems: []InputProblem{{Path: path, Message: problem}}}
}

// InvalidInputError is input that a schema rejects: a tool's (or workflow's)
// arguments or body. It is the caller's mistake, so http-server:// answers it 422
// with the problems as "errors".
type InvalidInputError struct {
	// Msg is the readable message: what Error() returns.
	Msg string
	// Problems say where the input is wrong (the jsonschema library stops at the
	// first violation, so there is one).
	Problems []InputProblem
}

// InputProblem is one violation: Path is a JSON Pointer into the input ("" is
// the whole input; "*" stands for any item of a list), Message what is wrong there.
type InputProblem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (e *InvalidInputError) Error() string { return e.Msg }

// HTTPStatus is 422 Unprocessable Content: the request was read, its content is wrong.
func (e *InvalidInputError) HTTPStatus() int { return 422 }

// ErrorDetails returns the problems, for clients that point at the field.
func (e *InvalidInputError) ErrorDetails() any { return e.Problems }

// violation splits a jsonschema-go message ("validating root: validating
// /properties/a: validating /properties/a/items: type: …") into the input path of
// the innermost schema (/a/*) and what is wrong there.
func violation(msg string) (path, problem string) {
	schemaPath := "root"
	for {
		rest, ok := strings.CutPrefix(msg, "validating ")
		if !ok {
			break
		}
		at, after, ok := strings.Cut(rest, ": ")
		if !ok {
			break
		}
		schemaPath, msg = at, after
	}
	return inputPath(schemaPath), msg
}

// inputPath turns a schema location (/properties/a/items) into the input location
// it validates (/a/*); "root" is "".
func inputPath(schemaPath string) string {
	if schemaPath == "root" || schemaPath == "" {
		return ""
	}
	segs := strings.Split(strings.TrimPrefix(schemaPath, "/"), "/")
	var b strings.Builder
	for i := 0; i < len(segs); i++ {
		switch {
		case segs[i] == "properties" && i+1 < len(segs):
			i++
			b.WriteString("/" + segs[i])
		case segs[i] == "items":
			b.WriteString("/*")
		default:
			b.WriteString("/" + segs[i])
		}
	}
	return b.String()
}
