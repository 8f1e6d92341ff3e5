package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// inputValidator enforces the input schema of a `tools:` override (helix.mcp.servers
// [].tools.<id>.input_schema, spec §3.6 and §8.3) the way a `tools:` entry's schema is
// enforced: defaults are applied to a copy of the arguments, then the arguments are
// validated; a violation fails the call before any step runs.
type inputValidator struct {
	rs *jsonschema.Resolved
}

// newInputValidator compiles schema (a JSON object whose type is object).
func newInputValidator(schema []byte) (*inputValidator, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, err
	}
	rs, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return nil, err
	}
	return &inputValidator{rs: rs}, nil
}

// validate returns args with the schema's defaults applied, or the violation.
// Defaults get the number types of decoded arguments (integral numbers as int64).
func (v *inputValidator) validate(args map[string]any) (out map[string]any, err error) {
	out = make(map[string]any, len(args))
	for k, x := range args {
		out[k] = x
	}
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
	if err := v.rs.Validate(out); err != nil {
		return nil, SchemaError(err)
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
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return x
	}
	return normalizeNumbers(v)
}

// SchemaError makes a jsonschema validation error readable: without the
// library's "validating root:" framing, fields named as such, and a JSON null
// shown as null (the library prints "<invalid reflect.Value>" for it).
func SchemaError(err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "validating root: ")
	msg = strings.ReplaceAll(msg, "validating /properties/", "field ")
	msg = strings.ReplaceAll(msg, "<invalid reflect.Value>", "null")
	return fmt.Errorf("%s", msg)
}
