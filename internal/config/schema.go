package config

import (
	"bytes"
	"encoding/json"
)

// InputSchema returns the JSON Schema of the tool's arguments: an object whose
// properties are the input fields in YAML order, with required, default, enum, items
// and nested properties. Arguments not listed are accepted (no
// "additionalProperties": false): assistants sometimes send extra context, and
// rejecting a call for it helps nobody; the pipeline simply sees them in the body.
func (t ToolConfig) InputSchema() json.RawMessage { return objectSchema(t.Input) }

// OutputSchema returns the JSON Schema of the tool's result (advertised to MCP clients
// as outputSchema and x-helix-output-schema).
func (t ToolConfig) OutputSchema() json.RawMessage { return objectSchema(t.Output) }

// InputSchema returns the JSON Schema of the workflow's arguments, built as a tools:
// entry's ([ToolConfig.InputSchema]); nil when the workflow declares no input:.
func (w WorkflowConfig) InputSchema() json.RawMessage { return declaredSchema(w.Input) }

// OutputSchema returns the JSON Schema of the workflow's result, built as a tools:
// entry's; nil when the workflow declares no output:.
func (w WorkflowConfig) OutputSchema() json.RawMessage { return declaredSchema(w.Output) }

func declaredSchema(fields []FieldConfig) json.RawMessage {
	if fields == nil {
		return nil
	}
	return objectSchema(fields)
}

// Schema returns the JSON Schema of one field.
func (f FieldConfig) Schema() json.RawMessage { return f.schema().marshal() }

func objectSchema(fields []FieldConfig) json.RawMessage {
	o := &ordered{}
	o.set("type", "object")
	addProperties(o, fields)
	return o.marshal()
}

func addProperties(o *ordered, fields []FieldConfig) {
	props := &ordered{}
	var required []string
	for _, f := range fields {
		props.set(f.Name, f.schema())
		if f.Required {
			required = append(required, f.Name)
		}
	}
	o.set("properties", props)
	if len(required) > 0 {
		o.set("required", required)
	}
}

func (f FieldConfig) schema() *ordered {
	o := &ordered{}
	if f.Type != "" {
		o.set("type", f.Type)
	}
	if f.Description != "" {
		o.set("description", f.Description)
	}
	if len(f.Enum) > 0 {
		o.set("enum", f.Enum)
	}
	if f.Default != nil {
		o.set("default", f.Default)
	}
	if f.Items != nil {
		o.set("items", f.Items.schema())
	}
	if len(f.Properties) > 0 {
		addProperties(o, f.Properties)
	}
	return o
}

// ordered is a JSON object that keeps insertion order, so that schemas list fields
// in the order the YAML declares them.
type ordered struct {
	keys []string
	vals []any
}

func (o *ordered) set(k string, v any) {
	o.keys = append(o.keys, k)
	o.vals = append(o.vals, v)
}

func (o *ordered) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.vals[i])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (o *ordered) marshal() json.RawMessage {
	b, err := o.MarshalJSON()
	if err != nil {
		// Values come from YAML scalars, lists and maps, which always marshal; keep
		// the schema usable rather than failing the whole tool.
		return json.RawMessage(`{"type":"object"}`)
	}
	return b
}
