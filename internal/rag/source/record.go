package source

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// DefaultTextField is the JSON field that holds a document's text.
const DefaultTextField = "text"

// DefaultTitleField is the JSON field that holds a document's title.
const DefaultTitleField = "title"

// record is a JSON object turned into a document's parts.
type record struct {
	id       string // from "_id" or "id"; "" when absent
	title    string
	text     string
	metadata map[string]any
}

// parseRecord takes a JSON object apart: textField holds the text, titleField
// the title (a string or a number; absent or another type: no title), "_id" or
// "id" the id, and the other fields become metadata, as do the fields of a
// "metadata" object: strings, numbers, booleans, lists of those and objects of
// those (filters reach into objects by dotted names and match any element of
// a list). Nulls, and values nested deeper than MaxMetadataDepth, are left out.
func parseRecord(obj map[string]any, textField, titleField string) (record, error) {
	raw, ok := obj[textField]
	if !ok {
		return record{}, fmt.Errorf("has no %q field; set text_field to the field holding the text", textField)
	}
	text, ok := raw.(string)
	if !ok {
		return record{}, fmt.Errorf("field %q is a %s, not a string; set text_field to the field holding the text", textField, jsonKind(raw))
	}
	r := record{text: text}
	for _, k := range []string{"_id", "id"} {
		if v, ok := obj[k]; ok {
			if s, ok := scalarString(v); ok && s != "" {
				r.id = s
				break
			}
		}
	}
	if titleField != textField {
		if v, ok := obj[titleField]; ok {
			r.title, _ = scalarString(v)
		}
	}
	for k, v := range obj {
		switch k {
		case textField, titleField, "_id", "id":
			continue
		case "metadata":
			if m, ok := v.(map[string]any); ok {
				for mk, mv := range m {
					r.setMetadata(mk, mv)
				}
				continue
			}
		}
		r.setMetadata(k, v)
	}
	return r, nil
}

// MaxMetadataDepth is how deeply a record's metadata objects and lists may
// nest; deeper values are left out.
const MaxMetadataDepth = 8

func (r *record) setMetadata(k string, v any) {
	v, ok := metadataOf(v, 0)
	if !ok {
		return
	}
	if r.metadata == nil {
		r.metadata = map[string]any{}
	}
	r.metadata[k] = v
}

// metadataOf is a decoded JSON value as metadata: numbers as float64 (a
// number too large for one stays its text), nulls left out of objects and
// lists; ok is false for a null, or a value nested deeper than
// MaxMetadataDepth.
func metadataOf(v any, depth int) (any, bool) {
	if depth > MaxMetadataDepth {
		return nil, false
	}
	switch t := v.(type) {
	case string, bool, float64:
		return t, true
	case int:
		return float64(t), true
	case int64:
		return float64(t), true
	case json.Number:
		if f, err := t.Float64(); err == nil {
			return f, true
		}
		return t.String(), true
	case []any:
		out := make([]any, 0, len(t))
		for _, e := range t {
			if x, ok := metadataOf(e, depth+1); ok {
				out = append(out, x)
			}
		}
		return out, true
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			if x, ok := metadataOf(e, depth+1); ok {
				out[k] = x
			}
		}
		return out, true
	}
	return nil, false
}

func scalarString(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	case int:
		return strconv.Itoa(v), true
	case int64:
		return strconv.FormatInt(v, 10), true
	}
	return "", false
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64, json.Number, int, int64:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// decodeJSON decodes b keeping numbers exact until they become metadata.
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// contentID names a document that has no id of its own by its text's hash, so
// that ingesting the same body twice gives the same document.
func contentID(text string) string {
	sum := sha256.Sum256([]byte(text))
	return "sha256:" + hex.EncodeToString(sum[:8])
}

// jsonError locates a JSON syntax error: line and column in b.
func jsonError(b []byte, err error) error {
	if se, ok := err.(*json.SyntaxError); ok {
		off := int(se.Offset)
		if off > len(b) {
			off = len(b)
		}
		line := 1 + strings.Count(string(b[:off]), "\n")
		col := off - strings.LastIndexByte(string(b[:off]), '\n')
		return fmt.Errorf("line %d column %d: %v", line, col, err)
	}
	return err
}
