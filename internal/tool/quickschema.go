package tool

import (
	"encoding/json"
	"math"
)

// quickSchema is a JSON Schema of the plain kind `tools:` entries generate (type,
// properties, required, items, annotations) compiled to Go checks. It only ever
// answers "valid": a value it does not accept, or a schema it cannot compile, goes
// to jsonschema-go, which decides and words the error, so that validation behaves
// exactly as before and costs no reflection walk on the common valid call (the
// walk allocated on every tools/call, for the input and the output schema;
// BENCHMARKS.md has the counts).
type quickSchema struct {
	typ      string                  // "" (any value), object, array, string, integer, number, boolean
	props    map[string]*quickSchema // object: the declared properties
	required []string                // object
	items    *quickSchema            // array: every element (nil: any)
}

// maxQuickDepth bounds the nesting compileQuick accepts; deeper schemas are left to
// jsonschema-go.
const maxQuickDepth = 16

// compileQuick compiles schema (JSON), or returns nil when it uses anything beyond
// the plain kind.
func compileQuick(schema json.RawMessage) *quickSchema {
	var doc any
	if err := json.Unmarshal(schema, &doc); err != nil {
		return nil
	}
	q, ok := quickFrom(doc, 0)
	if !ok {
		return nil
	}
	return q
}

func quickFrom(doc any, depth int) (*quickSchema, bool) {
	m, ok := doc.(map[string]any)
	if !ok || depth > maxQuickDepth {
		return nil, false
	}
	q := &quickSchema{}
	for k, v := range m {
		switch k {
		case "description", "title", "default", "examples":
			// annotations: no effect on validation
		case "type":
			t, ok := v.(string)
			switch {
			case !ok:
				return nil, false // a list of types
			case t == "object" || t == "array" || t == "string" || t == "integer" || t == "number" || t == "boolean":
				q.typ = t
			default:
				return nil, false
			}
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			q.props = make(map[string]*quickSchema, len(props))
			for name, sub := range props {
				if q.props[name], ok = quickFrom(sub, depth+1); !ok {
					return nil, false
				}
			}
		case "required":
			names, ok := v.([]any)
			if !ok {
				return nil, false
			}
			for _, n := range names {
				s, ok := n.(string)
				if !ok {
					return nil, false
				}
				q.required = append(q.required, s)
			}
		case "items":
			if q.items, ok = quickFrom(v, depth+1); !ok {
				return nil, false
			}
		case "additionalProperties":
			if v != true {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	if (q.props != nil || q.required != nil) && q.typ != "object" || q.items != nil && q.typ != "array" {
		return nil, false // keywords that apply only to some kinds of value: left to the library
	}
	return q, true
}

// valid reports whether v certainly satisfies the schema; false means "ask
// jsonschema-go", not "invalid". Values are decoded tool arguments or plain JSON
// (int64 for integral arguments, float64, string, bool, nil, []any, map[string]any).
func (q *quickSchema) valid(v any) bool {
	switch q.typ {
	case "":
		return true
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "integer":
		_, ok := v.(int64)
		return ok
	case "number":
		switch x := v.(type) {
		case int64:
			return true
		case float64:
			return !math.IsNaN(x) && !math.IsInf(x, 0)
		}
		return false
	case "array":
		a, ok := v.([]any)
		if !ok {
			return false
		}
		if q.items != nil {
			for _, e := range a {
				if !q.items.valid(e) {
					return false
				}
			}
		}
		return true
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		for _, name := range q.required {
			if _, ok := m[name]; !ok {
				return false
			}
		}
		for name, sub := range q.props {
			if x, ok := m[name]; ok && !sub.valid(x) {
				return false
			}
		}
		return true
	}
	return false
}
