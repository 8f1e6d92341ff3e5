package source

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/arvenza/helix/internal/rag"
)

// BodyOptions configures FromBody.
type BodyOptions struct {
	// ID names a document without an id of its own; for several documents
	// without ids, ID + "#" + their position (from 1). Without ID, such a
	// document is named by its text's hash.
	ID string
	// TextField is the JSON field holding the text; "" means "text".
	TextField string
	// TitleField is the JSON field holding the title; "" means "title".
	TitleField string
	// Title is the title of a document without one of its own: a text body, or
	// an object without a TitleField.
	Title string
	// Source is recorded as every document's Source (for citations), e.g. the
	// workflow's trigger URI.
	Source string
}

// FromBody turns a rag-ingest step's body into documents:
//
//   - a string or []byte: one document with that text (and opts.Title), unless
//     it is JSON (an object or an array of objects) or JSON lines (an object per
//     line);
//   - a JSON object (map[string]any): one document, the text from
//     opts.TextField, the title from opts.TitleField (else opts.Title), the id
//     from "_id" or "id", the other scalar fields and the scalar fields of
//     "metadata" as metadata;
//   - a JSON array of objects ([]any, []map[string]any): a document per object.
//
// Errors name the document (from 1) and say what to change.
func FromBody(body any, opts BodyOptions) ([]rag.Document, error) {
	if opts.TextField == "" {
		opts.TextField = DefaultTextField
	}
	if opts.TitleField == "" {
		opts.TitleField = DefaultTitleField
	}
	switch b := body.(type) {
	case nil:
		return nil, fmt.Errorf("rag-ingest: the body is empty: send text, a JSON object with a %q field, an array of them, or JSON lines", opts.TextField)
	case string:
		return fromBytes([]byte(b), opts)
	case []byte:
		return fromBytes(b, opts)
	case json.RawMessage:
		return fromBytes(b, opts)
	case map[string]any:
		return fromObjects([]any{b}, opts, false)
	case []map[string]any:
		objs := make([]any, len(b))
		for i, o := range b {
			objs[i] = o
		}
		return fromObjects(objs, opts, true)
	case []any:
		return fromObjects(b, opts, true)
	}
	return nil, fmt.Errorf("rag-ingest: a body of type %T cannot be ingested: send text, a JSON object with a %q field, an array of them, or JSON lines", body, opts.TextField)
}

func fromBytes(b []byte, opts BodyOptions) ([]rag.Document, error) {
	b = bytes.TrimPrefix(b, []byte("\ufeff"))
	if !utf8.Valid(b) {
		b = bytes.ToValidUTF8(b, []byte("\uFFFD"))
	}
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("rag-ingest: the body is empty: send text, a JSON object with a %q field, an array of them, or JSON lines", opts.TextField)
	}
	if trimmed[0] == '{' || trimmed[0] == '[' {
		if v, err := decodeJSON(trimmed); err == nil {
			switch v := v.(type) {
			case map[string]any:
				return fromObjects([]any{v}, opts, false)
			case []any:
				return fromObjects(v, opts, true)
			}
		} else if trimmed[0] == '{' {
			if docs, ok, err := fromJSONLines(trimmed, opts); ok {
				return docs, err
			}
		}
	}
	// Plain text.
	text := string(b)
	id := opts.ID
	if id == "" {
		id = contentID(text)
	}
	return []rag.Document{{ID: id, Source: opts.Source, Title: opts.Title, Text: text}}, nil
}

// fromJSONLines reads b as JSON lines when its first non-blank line is a JSON
// object; ok is false when b is not JSON lines at all (then it is plain text).
func fromJSONLines(b []byte, opts BodyOptions) (docs []rag.Document, ok bool, err error) {
	var objs []any
	for n, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		v, err := decodeJSON([]byte(line))
		obj, isObj := v.(map[string]any)
		if err != nil || !isObj {
			if len(objs) == 0 {
				return nil, false, nil
			}
			if err == nil {
				err = fmt.Errorf("a %s, not an object", jsonKind(v))
			}
			return nil, true, fmt.Errorf("rag-ingest: JSON lines: line %d: %v", n+1, err)
		}
		objs = append(objs, obj)
	}
	docs, err = fromObjects(objs, opts, true)
	return docs, true, err
}

func fromObjects(objs []any, opts BodyOptions, several bool) ([]rag.Document, error) {
	if len(objs) == 0 {
		return nil, fmt.Errorf("rag-ingest: the body is an empty array: send at least one object with a %q field", opts.TextField)
	}
	docs := make([]rag.Document, 0, len(objs))
	seen := make(map[string]int, len(objs))
	for i, o := range objs {
		obj, ok := o.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("rag-ingest: document %d is a %s, not a JSON object with a %q field", i+1, jsonKind(o), opts.TextField)
		}
		r, err := parseRecord(obj, opts.TextField, opts.TitleField)
		if err != nil {
			if several {
				return nil, fmt.Errorf("rag-ingest: document %d %v", i+1, err)
			}
			return nil, fmt.Errorf("rag-ingest: the document %v", err)
		}
		id := r.id
		hashed := false
		switch {
		case id != "":
		case opts.ID != "" && several:
			id = opts.ID + "#" + strconv.Itoa(i+1)
		case opts.ID != "":
			id = opts.ID
		default:
			id, hashed = contentID(r.text), true
		}
		if first, dup := seen[id]; dup {
			if hashed {
				continue // the same text twice: one document
			}
			return nil, fmt.Errorf("rag-ingest: documents %d and %d have the same id %q: give them distinct \"id\" fields", first+1, i+1, id)
		}
		seen[id] = i
		title := r.title
		if title == "" {
			title = opts.Title
		}
		docs = append(docs, rag.Document{ID: id, Source: opts.Source, Title: title, Text: r.text, Metadata: r.metadata})
	}
	return docs, nil
}
