package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// Tool is one entry of a [Catalogue]: what a caller needs to choose it (name, title,
// description, schemas, annotations) and the function that runs it.
//
// Fill the exported fields, then register the tool with [Catalogue.Add], which
// checks and compiles it; [Tool.Call] runs a registered tool. A registered Tool must
// not be modified. Its methods are safe for concurrent use.
type Tool struct {
	// ID is what the tool was registered as: a workflow id, a `tools:` id, an agent
	// id. It is unique in a catalogue, and callers may use it in place of Name.
	ID string
	// Name is what callers call it by; empty means SanitizeName(ID).
	Name string
	// Title is a human-readable name for listings; optional.
	Title string
	// Description tells a model when to use the tool.
	Description string
	// Kind says what registered it (engine.KindWorkflow, KindTool, KindAgent,
	// KindPipeline); listings show it.
	Kind engine.Kind
	// InputSchema is the JSON Schema of the arguments, an object schema (a missing
	// "type" is taken as "object"); nil accepts any object.
	InputSchema json.RawMessage
	// OutputSchema is the JSON Schema of the result's Structured value; nil when
	// the tool declares none. When set, every result is checked against it.
	OutputSchema json.RawMessage
	// Annotations are hints about the tool's behaviour; nil means none.
	Annotations *Annotations
	// Validate, when set, checks (and may default) the arguments before Invoke; its
	// error fails the call without invoking the tool. [CompileInput] makes one that
	// enforces a JSON Schema.
	Validate func(args map[string]any) (map[string]any, error)
	// Invoke runs the tool. It is called concurrently, with arguments that passed
	// Validate; ctx ends when the caller gives up.
	Invoke Func

	// Set by compile (Catalogue.Add).
	input     json.RawMessage      // InputSchema normalized: an object schema with "type": "object"
	outSchema *jsonschema.Resolved // nil without OutputSchema
	outQuick  *quickSchema         // outSchema compiled to Go checks when plain enough (nil: always outSchema)
	broken    error                // why the tool cannot be served; Select reports it
	name      any                  // Name boxed, for the header of every call (nameValue)
}

// nameValue is t.Name as an interface value, boxed once by compile.
func (t *Tool) nameValue() any {
	if n, ok := t.name.(string); ok && n == t.Name {
		return t.name
	}
	return t.Name
}

// Func runs a tool with its (validated) arguments. A returned error fails the call:
// the caller sees exchange.ClientMessage of it as an error result. A Result with
// IsError set is a failure the tool reports itself.
type Func func(ctx context.Context, args map[string]any) (Result, error)

// Annotations describe a tool's behaviour to callers (MCP's tool annotations). They
// are hints: a caller must not rely on them for safety.
type Annotations struct {
	// ReadOnlyHint: the tool does not modify its environment.
	ReadOnlyHint bool
	// DestructiveHint: the tool may perform destructive updates (meaningful when
	// not read-only); nil means true.
	DestructiveHint *bool
	// IdempotentHint: calling it again with the same arguments has no further
	// effect (meaningful when not read-only).
	IdempotentHint bool
	// OpenWorldHint: the tool reaches outside entities (the web, other systems);
	// nil means true.
	OpenWorldHint *bool
}

// Result is what a call of a tool answers.
type Result struct {
	// Content is what the caller (a model) reads: text, images, audio, resources.
	Content []Content
	// Structured is the result as a JSON value (maps, slices, strings, numbers …),
	// checked against the tool's OutputSchema when it has one. A string or []byte
	// holding JSON is taken as that JSON.
	Structured any
	// IsError marks a failed call; Content then says why.
	IsError bool
}

// ContentType says what a Content part holds.
type ContentType string

// Content types.
const (
	ContentText     ContentType = "text"
	ContentImage    ContentType = "image"
	ContentAudio    ContentType = "audio"
	ContentResource ContentType = "resource"
	// ContentResourceLink points at a resource by URI without embedding it.
	ContentResourceLink ContentType = "resource_link"
)

// Content is one part of a Result.
type Content struct {
	Type ContentType
	// Text is the text of a text part, or the contents of a text resource.
	Text string
	// Data is the bytes of an image or audio part, or of a binary resource (a
	// resource part with Data non-nil is a blob, else text).
	Data []byte
	// MIMEType of an image, audio, resource or resource link part.
	MIMEType string
	// URI names a resource or resource link part.
	URI string
	// Name and Description of a resource link part.
	Name        string
	Description string
}

// Text returns a text content part.
func Text(s string) Content { return Content{Type: ContentText, Text: s} }

// TextResult returns a result of one text part.
func TextResult(s string) Result { return Result{Content: []Content{Text(s)}} }

// ErrorResult returns a failed result whose one text part is msg.
func ErrorResult(msg string) Result {
	return Result{Content: []Content{Text(msg)}, IsError: true}
}

// WithInput returns a copy of the registered tool t that callers see with another
// description (when not empty) and another input schema (when not empty). The
// schema is enforced, not only advertised: arguments are checked against it
// (defaults applied), then by t's own Validate. MCP servers use it for their
// per-tool overrides (helix.mcp.servers[].tools).
func (t *Tool) WithInput(description string, schema json.RawMessage) (*Tool, error) {
	v := *t
	if description != "" {
		v.Description = description
	}
	if len(bytes.TrimSpace(schema)) == 0 || t.broken != nil {
		return &v, nil
	}
	in, err := objectSchema(schema)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %v", t.label(), t.ID, err)
	}
	enforce, err := CompileInput(in)
	if err != nil {
		return nil, fmt.Errorf("%s %q: tools override input_schema: %v", t.label(), t.ID, err)
	}
	v.InputSchema, v.input = schema, in
	own := t.Validate
	v.Validate = func(args map[string]any) (map[string]any, error) {
		args, err := enforce.Validate(args)
		if err != nil || own == nil {
			return args, err
		}
		return own(args)
	}
	return &v, nil
}

// A tool's result set as a body (a workflow tool's output) is kept by durable
// checkpoints: its parts with their bytes, its structured value with numbers as
// tool arguments have them.
func init() {
	exchange.RegisterSnapshotCodec("tool.Result", func(r Result) (any, error) {
		parts := make([]any, len(r.Content))
		for i, c := range r.Content {
			part := map[string]any{"type": string(c.Type), "text": c.Text, "mime": c.MIMEType,
				"uri": c.URI, "name": c.Name, "description": c.Description}
			if c.Data != nil { // nil and empty differ: a resource with Data is a blob
				part["data"] = c.Data
			}
			parts[i] = part
		}
		return map[string]any{"content": parts, "structured": r.Structured, "is_error": r.IsError}, nil
	}, func(data any) (Result, error) {
		m, _ := data.(map[string]any)
		r := Result{Structured: m["structured"]}
		r.IsError, _ = m["is_error"].(bool)
		parts, _ := m["content"].([]any)
		for _, p := range parts {
			pm, ok := p.(map[string]any)
			if !ok {
				return Result{}, fmt.Errorf("a content part is %T, not an object", p)
			}
			str := func(k string) string { s, _ := pm[k].(string); return s }
			data, _ := pm["data"].([]byte)
			r.Content = append(r.Content, Content{Type: ContentType(str("type")), Text: str("text"), Data: data,
				MIMEType: str("mime"), URI: str("uri"), Name: str("name"), Description: str("description")})
		}
		return r, nil
	})
}
