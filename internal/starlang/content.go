package starlang

import (
	"encoding/base64"
	"fmt"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"github.com/arvenza/helix/internal/tool"
)

// contentModule builds the content parts and results a tool answers with when
// plain text or JSON is not enough: images, audio, embedded resources, resource
// links, several parts at once, or an error the tool reports itself.
//
//	content.text(text)
//	content.image(data, mime_type)           data: bytes, or a str holding base64
//	content.audio(data, mime_type)
//	content.resource(uri, text=…|blob=…, mime_type=None)
//	content.resource_link(uri, name, description=None, mime_type=None)
//	content.result(content=None, structured=None, is_error=False)
//
// A content value, a list of them (strings in it are text parts) or a result as a
// step's value or written body becomes the tool's answer (tool.ReplyResult).
var contentModule = &starlarkstruct.Module{
	Name: "content",
	Members: starlark.StringDict{
		"text":          starlark.NewBuiltin("content.text", builtinContentText),
		"image":         starlark.NewBuiltin("content.image", builtinContentMedia),
		"audio":         starlark.NewBuiltin("content.audio", builtinContentMedia),
		"resource":      starlark.NewBuiltin("content.resource", builtinContentResource),
		"resource_link": starlark.NewBuiltin("content.resource_link", builtinContentResourceLink),
		"result":        starlark.NewBuiltin("content.result", builtinContentResult),
	},
}

// Content is a content part in Starlang (its type is "content"). Its attributes
// type, text, data (bytes), mime_type, uri, name and description read the part;
// it converts to a [tool.Content].
type Content struct{ c tool.Content }

var (
	_ starlark.HasAttrs = (*Content)(nil)
	_ starlark.HasAttrs = (*ToolResult)(nil)
)

// NewContent returns c as a Starlang value.
func NewContent(c tool.Content) *Content { return &Content{c: c} }

// Part returns the part v holds.
func (v *Content) Part() tool.Content { return v.c }

func (v *Content) String() string {
	c := v.c
	switch c.Type {
	case tool.ContentText:
		return fmt.Sprintf("content.text(%s)", starlark.String(c.Text).String())
	case tool.ContentImage, tool.ContentAudio:
		return fmt.Sprintf("content.%s(<%d bytes>, mime_type=%q)", c.Type, len(c.Data), c.MIMEType)
	case tool.ContentResource:
		if c.IsBlob() {
			return fmt.Sprintf("content.resource(%q, blob=<%d bytes>, mime_type=%q)", c.URI, len(c.Data), c.MIMEType)
		}
		return fmt.Sprintf("content.resource(%q, text=<%d bytes>, mime_type=%q)", c.URI, len(c.Text), c.MIMEType)
	}
	return fmt.Sprintf("content.%s(%q, %q)", c.Type, c.URI, c.Name)
}

func (v *Content) Type() string          { return "content" }
func (v *Content) Freeze()               {} // immutable
func (v *Content) Truth() starlark.Bool  { return starlark.True }
func (v *Content) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: content") }

var contentAttrs = []string{"data", "description", "mime_type", "name", "text", "type", "uri"}

func (v *Content) AttrNames() []string { return contentAttrs }

func (v *Content) Attr(name string) (starlark.Value, error) {
	c := v.c
	switch name {
	case "type":
		return starlark.String(c.Type), nil
	case "text":
		return noneIfEmpty(c.Text), nil
	case "data":
		if c.Data == nil {
			return starlark.None, nil
		}
		return starlark.Bytes(c.Data), nil
	case "mime_type":
		return noneIfEmpty(c.MIMEType), nil
	case "uri":
		return noneIfEmpty(c.URI), nil
	case "name":
		return noneIfEmpty(c.Name), nil
	case "description":
		return noneIfEmpty(c.Description), nil
	}
	return nil, nil // no such attribute: Starlark reports it
}

// textSize bounds the text form of the part (see estimateText): base64 data is a
// third larger than the bytes.
func (v *Content) textSize() int64 {
	return int64(len(v.c.Text)+len(v.c.URI)+len(v.c.Name)+len(v.c.Description)) + int64(len(v.c.Data))*4/3 + 64
}

func noneIfEmpty(s string) starlark.Value {
	if s == "" {
		return starlark.None
	}
	return starlark.String(s)
}

// ToolResult is a whole tool result in Starlang (its type is "result"), made by
// content.result; attributes content (a list), structured and is_error. It
// converts to a [tool.Result].
type ToolResult struct{ r tool.Result }

// Result returns the result v holds.
func (v *ToolResult) Result() tool.Result { return v.r }

func (v *ToolResult) String() string {
	return fmt.Sprintf("content.result(<%d parts>, is_error=%s)", len(v.r.Content), starlark.Bool(v.r.IsError))
}
func (v *ToolResult) Type() string          { return "result" }
func (v *ToolResult) Freeze()               {}
func (v *ToolResult) Truth() starlark.Bool  { return starlark.True }
func (v *ToolResult) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: result") }
func (v *ToolResult) AttrNames() []string   { return []string{"content", "is_error", "structured"} }

func (v *ToolResult) Attr(name string) (starlark.Value, error) {
	switch name {
	case "content":
		parts := make([]starlark.Value, len(v.r.Content))
		for i, c := range v.r.Content {
			parts[i] = NewContent(c)
		}
		return starlark.NewList(parts), nil
	case "is_error":
		return starlark.Bool(v.r.IsError), nil
	case "structured":
		return ToStarlark(v.r.Structured)
	}
	return nil, nil
}

func (v *ToolResult) textSize() int64 {
	n := int64(64)
	for _, c := range v.r.Content {
		n += NewContent(c).textSize()
	}
	if v.r.Structured != nil {
		if s, err := ToStarlark(v.r.Structured); err == nil {
			sn, _, _, _ := estimateText(s, 1<<62)
			n += sn
		}
	}
	return n
}

// content.text(text)
func builtinContentText(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var text string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "text", &text); err != nil {
		return nil, err
	}
	return NewContent(tool.Text(text)), nil
}

// content.image(data, mime_type) and content.audio(data, mime_type): the MIME
// type must be of the kind the builtin is named after.
func builtinContentMedia(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var data starlark.Value
	var mimeType string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "data", &data, "mime_type", &mimeType); err != nil {
		return nil, err
	}
	kind := strings.TrimPrefix(b.Name(), "content.") // image or audio
	mimeType = strings.TrimSpace(mimeType)
	if !strings.HasPrefix(strings.ToLower(mimeType), kind+"/") || len(mimeType) == len(kind)+1 {
		return nil, fmt.Errorf("%s: mime_type %q is not an %s type (want %s/…, for example %s)", b.Name(), mimeType, kind, kind, exampleMIMEType[kind])
	}
	raw, err := contentBytes(thread, b.Name(), "data", data)
	if err != nil {
		return nil, err
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("%s: data is empty", b.Name())
	}
	if kind == "image" {
		return NewContent(tool.Image(raw, mimeType)), nil
	}
	return NewContent(tool.Audio(raw, mimeType)), nil
}

var exampleMIMEType = map[string]string{"image": "image/png", "audio": "audio/wav"}

// content.resource(uri, text=None, blob=None, mime_type=None): exactly one of
// text and blob; mime_type defaults to text/plain for text and
// application/octet-stream for a blob.
func builtinContentResource(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var uri, mimeType string
	var text, blob starlark.Value = starlark.None, starlark.None
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "uri", &uri, "text?", &text, "blob?", &blob, "mime_type?", &mimeType); err != nil {
		return nil, err
	}
	if strings.TrimSpace(uri) == "" {
		return nil, fmt.Errorf("%s: uri is empty", b.Name())
	}
	switch {
	case text == starlark.None && blob == starlark.None:
		return nil, fmt.Errorf("%s: give text= (a str) or blob= (bytes, or a str holding base64)", b.Name())
	case text != starlark.None && blob != starlark.None:
		return nil, fmt.Errorf("%s: give text= or blob=, not both", b.Name())
	case text != starlark.None:
		s, ok := text.(starlark.String)
		if !ok {
			return nil, fmt.Errorf("%s: text is %s, want str (use blob= for bytes)", b.Name(), text.Type())
		}
		if mimeType == "" {
			mimeType = "text/plain"
		}
		return NewContent(tool.TextResource(uri, string(s), mimeType)), nil
	}
	raw, err := contentBytes(thread, b.Name(), "blob", blob)
	if err != nil {
		return nil, err
	}
	if mimeType == "" {
		mimeType = "application/octet-stream"
	}
	return NewContent(tool.BlobResource(uri, raw, mimeType)), nil
}

// content.resource_link(uri, name, description=None, mime_type=None)
func builtinContentResourceLink(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var uri, name, description, mimeType string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "uri", &uri, "name", &name, "description?", &description, "mime_type?", &mimeType); err != nil {
		return nil, err
	}
	if strings.TrimSpace(uri) == "" {
		return nil, fmt.Errorf("%s: uri is empty", b.Name())
	}
	if strings.TrimSpace(name) == "" {
		return nil, fmt.Errorf("%s: name is empty", b.Name())
	}
	return NewContent(tool.ResourceLink(uri, name, description, mimeType)), nil
}

// content.result(content=None, structured=None, is_error=False): content is a str,
// a content value, or a list or tuple of them; structured any JSON-like value (a
// tool with an output schema answers it); is_error=True is a failure the tool
// reports itself and needs content saying what went wrong.
func builtinContentResult(thread *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var parts, structured starlark.Value = starlark.None, starlark.None
	var isError bool
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "content?", &parts, "structured?", &structured, "is_error?", &isError); err != nil {
		return nil, err
	}
	var r tool.Result
	var err error
	if r.Content, err = contentParts(b.Name(), parts); err != nil {
		return nil, err
	}
	if structured != starlark.None {
		if r.Structured, err = FromStarlark(structured); err != nil {
			return nil, fmt.Errorf("%s: structured: %w", b.Name(), err)
		}
	}
	r.IsError = isError
	if isError && len(r.Content) == 0 {
		return nil, fmt.Errorf("%s: is_error=True needs content saying what went wrong, for example content=\"order 42 does not exist\"", b.Name())
	}
	return &ToolResult{r: r}, nil
}

// contentParts reads the content= of content.result.
func contentParts(fn string, v starlark.Value) ([]tool.Content, error) {
	switch t := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case starlark.String:
		return []tool.Content{tool.Text(string(t))}, nil
	case *Content:
		return []tool.Content{t.c}, nil
	case *starlark.List, starlark.Tuple:
		seq := t.(starlark.Indexable)
		out := make([]tool.Content, seq.Len())
		for i := range out {
			switch x := seq.Index(i).(type) {
			case *Content:
				out[i] = x.c
			case starlark.String:
				out[i] = tool.Text(string(x))
			default:
				return nil, fmt.Errorf("%s: content[%d] is %s, want a content value (content.text(), content.image() …) or a str", fn, i, x.Type())
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: content is %s, want a str, a content value or a list of them", fn, v.Type())
}

// contentBytes reads binary data: bytes as they are, a str as base64 (standard or
// URL alphabet, padded or not; line breaks and spaces are ignored, as base64 pasted
// into YAML often has them). The decoded size is charged to the memory budget.
func contentBytes(thread *starlark.Thread, fn, param string, v starlark.Value) ([]byte, error) {
	switch t := v.(type) {
	case starlark.Bytes:
		return []byte(t), nil
	case starlark.String:
		s := strings.Map(func(r rune) rune {
			if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
				return -1
			}
			return r
		}, string(t))
		if err := chargeThread(thread, int64(base64.StdEncoding.DecodedLen(len(s)))); err != nil {
			return nil, err
		}
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if raw, err := enc.DecodeString(s); err == nil {
				return raw, nil
			}
		}
		_, err := base64.StdEncoding.DecodeString(s)
		return nil, fmt.Errorf("%s: %s is a str but not base64 (%v); pass bytes for raw data", fn, param, err)
	}
	return nil, fmt.Errorf("%s: %s is %s, want bytes or a str holding base64", fn, param, v.Type())
}
