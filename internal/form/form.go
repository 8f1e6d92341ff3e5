// Package form checks a person's answer against the form they were asked to
// fill in (an elicitation's requested schema), wherever the answer comes from:
// an MCP client's elicitation result, a task's input response, a callback link.
package form

import (
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// Check validates content against schema (a JSON schema, as an object) and
// applies the schema's defaults to content, as the go-sdk does with the answer
// to an elicitation request. A nil or empty schema accepts anything.
func Check(schema map[string]any, content *map[string]any) error {
	if len(schema) == 0 {
		return nil
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return err
	}
	return CheckRaw(raw, content)
}

// CheckRaw is [Check] with the schema as JSON text.
func CheckRaw(schema json.RawMessage, content *map[string]any) (err error) {
	if len(schema) == 0 {
		return nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return err
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return err
	}
	if err := resolved.Validate(*content); err != nil {
		return err
	}
	// ApplyDefaults may panic on values it cannot assign to; an answer that
	// trips it is refused, it never takes the process down.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the answer does not fit the form: %v", r)
		}
	}()
	return resolved.ApplyDefaults(content)
}
