package mcppage

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Bounds of the try-it form: a tool's schema is the server's, but a gateway
// passes on an upstream's, which may be anything.
const (
	// maxSchemaBytes: a larger input schema gets one JSON textarea.
	maxSchemaBytes = 256 << 10
	// maxFields: properties beyond it are left out ("showing N of M") and can
	// still be sent through the extra-arguments textarea.
	maxFields = 100
	// maxRefHops bounds how many $ref a property may follow (a $ref loop ends
	// there as a JSON field).
	maxRefHops = 16
	// maxEnum: a longer enum is a text field.
	maxEnum = 200
	// maxDefaultChars bounds a default shown in a field.
	maxDefaultChars = 4096
)

// Kinds of form field.
const (
	KindString  = "string"
	KindNumber  = "number"
	KindInteger = "integer"
	KindBoolean = "boolean"
	KindEnum    = "enum"
	// KindJSON is an array, an object, a union or anything else: a textarea
	// holding JSON.
	KindJSON = "json"
)

// Field is one input of the try-it form, for one top-level property.
type Field struct {
	Name        string
	Kind        string
	Type        string // the schema's type as written, for the label ("array", "object" …)
	Required    bool
	Description string
	// Value is the field's initial value: the schema's default (enum: the
	// option selected; boolean: "true", "false" or "").
	Value   string
	Options []string // KindEnum
}

// Form is the try-it form of one tool.
type Form struct {
	Fields []Field
	// Total is the number of properties; more than len(Fields) when capped.
	Total int
	// Raw: the schema could not be mapped to fields (too large, not an
	// object, not JSON); the form is one JSON textarea for all arguments.
	Raw    bool
	Reason string
}

// FormFor maps a tool's input schema to form fields. It never fails: what it
// cannot map becomes a JSON field (or, for the whole schema, a raw form), and
// every walk is bounded.
func FormFor(schema []byte) Form {
	if len(schema) == 0 {
		return Form{Raw: true, Reason: "the tool has no input schema"}
	}
	if len(schema) > maxSchemaBytes {
		return Form{Raw: true, Reason: fmt.Sprintf("the input schema is %d bytes, more than the form maps (%d)", len(schema), maxSchemaBytes)}
	}
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		return Form{Raw: true, Reason: "the input schema could not be read as a JSON object (" + truncate(err.Error(), 200) + ")"}
	}
	props, _ := root["properties"].(map[string]any)
	if t, _ := root["type"].(string); t != "" && t != "object" {
		return Form{Raw: true, Reason: fmt.Sprintf("the input schema's type is %q, not object", t)}
	}
	if len(props) == 0 {
		// {"type": "object"} often means "any object": let the user write one.
		return Form{Raw: true, Reason: "the input schema lists no properties"}
	}
	required := map[string]bool{}
	if req, ok := root["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	// Required first, then by name: a stable order the user can scan.
	sort.Slice(names, func(i, j int) bool {
		if required[names[i]] != required[names[j]] {
			return required[names[i]]
		}
		return names[i] < names[j]
	})
	f := Form{Total: len(names)}
	for _, n := range names {
		if len(f.Fields) == maxFields {
			break
		}
		p, _ := props[n].(map[string]any)
		f.Fields = append(f.Fields, fieldFor(root, n, resolve(root, p), required[n]))
	}
	return f
}

// resolve follows local $ref ("#/$defs/x", "#/definitions/x") at most
// maxRefHops times; a loop or a ref it cannot follow leaves what it has.
func resolve(root, p map[string]any) map[string]any {
	for range maxRefHops {
		ref, ok := p["$ref"].(string)
		if !ok {
			return p
		}
		next := lookupRef(root, ref)
		if next == nil {
			return p
		}
		p = next
	}
	if _, loop := p["$ref"]; loop {
		return map[string]any{"description": "($ref chain too long or circular)"}
	}
	return p
}

func lookupRef(root map[string]any, ref string) map[string]any {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	var cur any = root
	for _, part := range strings.Split(rest, "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	m, _ := cur.(map[string]any)
	return m
}

func fieldFor(root map[string]any, name string, p map[string]any, required bool) Field {
	f := Field{Name: name, Required: required, Kind: KindJSON}
	if p == nil {
		f.Type = "any"
		return f
	}
	f.Description, _ = p["description"].(string)
	typ := schemaType(p)
	f.Type = typ
	if enum, ok := p["enum"].([]any); ok && len(enum) > 0 && len(enum) <= maxEnum && allStrings(enum) {
		f.Kind = KindEnum
		for _, e := range enum {
			f.Options = append(f.Options, e.(string))
		}
		if f.Type == "" {
			f.Type = "string"
		}
	} else {
		switch typ {
		case "string":
			f.Kind = KindString
		case "number":
			f.Kind = KindNumber
		case "integer":
			f.Kind = KindInteger
		case "boolean":
			f.Kind = KindBoolean
		case "":
			f.Type = "any"
		}
	}
	if d, ok := p["default"]; ok {
		f.Value = defaultText(f.Kind, d)
	}
	return f
}

// schemaType is the property's type: a string, or the one non-null type of a
// list (["string", "null"] is an optional string); "" otherwise.
func schemaType(p map[string]any) string {
	switch t := p["type"].(type) {
	case string:
		return t
	case []any:
		var one string
		for _, x := range t {
			s, _ := x.(string)
			if s == "null" {
				continue
			}
			if one != "" || s == "" {
				return "" // a union: JSON
			}
			one = s
		}
		return one
	}
	return ""
}

func allStrings(xs []any) bool {
	for _, x := range xs {
		if _, ok := x.(string); !ok {
			return false
		}
	}
	return true
}

func defaultText(kind string, d any) string {
	var s string
	switch v := d.(type) {
	case string:
		if kind == KindJSON {
			b, _ := json.Marshal(v)
			s = string(b)
		} else {
			s = v
		}
	case bool:
		s = strconv.FormatBool(v)
	case float64:
		s = strconv.FormatFloat(v, 'g', -1, 64)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		s = string(b)
	}
	if len(s) > maxDefaultChars {
		return ""
	}
	return s
}

// rawField is the name of the textarea holding all arguments as JSON (raw
// forms) or the arguments beyond the fields (capped forms).
const rawField = "arguments"

// fieldPrefix keeps the form's own fields (credential, …) apart from the
// tool's arguments, whatever the tool names them.
const fieldPrefix = "arg."

// maxArgumentBytes bounds the arguments a form may send.
const maxArgumentBytes = 1 << 20

// FieldError says which field of the form is wrong and why.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return fmt.Sprintf("field %q: %s", e.Field, e.Msg) }

// Arguments turns the submitted form into the tool's arguments. An empty
// optional field is left out; a required field may not be empty.
func (f Form) Arguments(v url.Values) (map[string]any, error) {
	args := map[string]any{}
	if raw := strings.TrimSpace(v.Get(rawField)); raw != "" {
		if len(raw) > maxArgumentBytes {
			return nil, &FieldError{Field: rawField, Msg: fmt.Sprintf("more than %d bytes", maxArgumentBytes)}
		}
		if err := json.Unmarshal([]byte(raw), &args); err != nil || args == nil {
			return nil, &FieldError{Field: rawField, Msg: "not a JSON object: write the arguments as {\"name\": value, …}"}
		}
	}
	for _, fd := range f.Fields {
		s := v.Get(fieldPrefix + fd.Name)
		if fd.Kind != KindString {
			s = strings.TrimSpace(s)
		}
		if s == "" {
			if fd.Required {
				if _, given := args[fd.Name]; !given {
					return nil, &FieldError{Field: fd.Name, Msg: "is required"}
				}
			}
			continue
		}
		val, err := parseField(fd, s)
		if err != nil {
			return nil, &FieldError{Field: fd.Name, Msg: err.Error()}
		}
		args[fd.Name] = val
	}
	return args, nil
}

func parseField(fd Field, s string) (any, error) {
	switch fd.Kind {
	case KindString:
		return s, nil
	case KindEnum:
		for _, o := range fd.Options {
			if o == s {
				return s, nil
			}
		}
		return nil, fmt.Errorf("%q is not one of the allowed values", s)
	case KindInteger:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", s)
		}
		return n, nil
	case KindNumber:
		n, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
			return nil, fmt.Errorf("%q is not a number", s)
		}
		return n, nil
	case KindBoolean:
		switch s {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not true or false", s)
	default:
		if len(s) > maxArgumentBytes {
			return nil, fmt.Errorf("more than %d bytes", maxArgumentBytes)
		}
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return nil, fmt.Errorf("not JSON (%v); write it as JSON, e.g. [1, 2] or {\"a\": 1}", err)
		}
		return v, nil
	}
}
