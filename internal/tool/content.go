package tool

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strings"

	"github.com/arvenza/helix/pkg/exchange"
)

// HeaderResourceURI names the resource a binary reply body is embedded as (see
// [ReplyResult]); without it the URI is [DefaultResourceURI].
const HeaderResourceURI = "HelixMcpResourceUri"

// DefaultResourceURI is the URI of a binary reply body embedded as a resource when
// the reply names none.
const DefaultResourceURI = "helix://result"

// Image returns an image content part.
func Image(data []byte, mimeType string) Content {
	return Content{Type: ContentImage, Data: data, MIMEType: mimeType}
}

// Audio returns an audio content part.
func Audio(data []byte, mimeType string) Content {
	return Content{Type: ContentAudio, Data: data, MIMEType: mimeType}
}

// TextResource returns an embedded resource part holding text.
func TextResource(uri, text, mimeType string) Content {
	return Content{Type: ContentResource, URI: uri, Text: text, MIMEType: mimeType}
}

// BlobResource returns an embedded resource part holding bytes.
func BlobResource(uri string, data []byte, mimeType string) Content {
	if data == nil {
		data = []byte{} // a blob resource stays one even when empty
	}
	return Content{Type: ContentResource, URI: uri, Data: data, MIMEType: mimeType}
}

// ResourceLink returns a part that points at a resource without embedding it.
func ResourceLink(uri, name, description, mimeType string) Content {
	return Content{Type: ContentResourceLink, URI: uri, Name: name, Description: description, MIMEType: mimeType}
}

// IsBlob reports whether a resource part holds bytes (else text).
func (c Content) IsBlob() bool { return c.Data != nil }

// Check reports what makes c unusable as a content part: a missing URI, MIME
// type or data, or an unknown type. Every message names the part's type.
func (c Content) Check() error {
	switch c.Type {
	case ContentText:
		return nil
	case ContentImage, ContentAudio:
		if len(c.Data) == 0 {
			return fmt.Errorf("%s content has no data", c.Type)
		}
		if c.MIMEType == "" {
			return fmt.Errorf("%s content has no MIME type", c.Type)
		}
		return nil
	case ContentResource:
		if c.URI == "" {
			return errors.New("resource content has no URI")
		}
		return nil
	case ContentResourceLink:
		if c.URI == "" {
			return errors.New("resource_link content has no URI")
		}
		if c.Name == "" {
			return errors.New("resource_link content has no name")
		}
		return nil
	}
	return fmt.Errorf("unknown content type %q (want text, image, audio, resource or resource_link)", c.Type)
}

// wireContent is the JSON form of a Content: the content object of MCP and of most
// model APIs, so that a content value that ends up outside a tool call (an HTTP
// reply, a log line) still reads as what it is.
type wireContent struct {
	Type        ContentType   `json:"type"`
	Text        string        `json:"text,omitempty"`
	Data        []byte        `json:"data,omitempty"`
	MIMEType    string        `json:"mimeType,omitempty"`
	URI         string        `json:"uri,omitempty"`
	Name        string        `json:"name,omitempty"`
	Description string        `json:"description,omitempty"`
	Resource    *wireResource `json:"resource,omitempty"`
}

type wireResource struct {
	URI      string  `json:"uri"`
	MIMEType string  `json:"mimeType,omitempty"`
	Text     *string `json:"text,omitempty"`
	Blob     []byte  `json:"blob,omitempty"`
}

// MarshalJSON encodes c as a content object: {"type": "image", "data": base64,
// "mimeType": …}, {"type": "resource", "resource": {"uri": …, "text"|"blob": …}} …
func (c Content) MarshalJSON() ([]byte, error) {
	w := wireContent{Type: c.Type}
	switch c.Type {
	case ContentText:
		return json.Marshal(struct {
			Type ContentType `json:"type"`
			Text string      `json:"text"`
		}{c.Type, c.Text})
	case ContentImage, ContentAudio:
		w.Data, w.MIMEType = c.Data, c.MIMEType
	case ContentResource:
		r := &wireResource{URI: c.URI, MIMEType: c.MIMEType}
		if c.IsBlob() {
			r.Blob = c.Data
		} else {
			text := c.Text
			r.Text = &text
		}
		w.Resource = r
	default:
		w.Text, w.Data, w.MIMEType, w.URI, w.Name, w.Description = c.Text, c.Data, c.MIMEType, c.URI, c.Name, c.Description
	}
	return json.Marshal(w)
}

// MarshalJSON encodes r as MCP's tool result object (content, structuredContent,
// isError), for a result that ends up outside a tool call.
func (r Result) MarshalJSON() ([]byte, error) {
	content := r.Content
	if content == nil {
		content = []Content{}
	}
	return json.Marshal(struct {
		Content    []Content `json:"content"`
		Structured any       `json:"structuredContent,omitempty"`
		IsError    bool      `json:"isError,omitempty"`
	}{content, r.Structured, r.IsError})
}

// ReplyResult turns the reply of a tool's pipeline into its Result:
//
//   - a Result is taken as it is, a Content as a result of that one part, and a
//     list whose elements are all Content (or strings, which become text parts) as
//     a result of those parts;
//   - bytes whose Content-Type is image/* become an image part, audio/* an audio
//     part, and any other type that is not text an embedded blob resource with that
//     MIME type, named by the HeaderResourceURI header (else DefaultResourceURI);
//   - anything else is one text part: strings as they are, other values as their
//     text (JSON for maps and lists), exactly as before content values existed.
//
// contentType is the reply's Content-Type header, resourceURI its
// HeaderResourceURI header. An error means the reply mixes content parts with
// other values, or holds a part that fails [Content.Check].
func ReplyResult(body any, contentType, resourceURI string) (Result, error) {
	switch b := body.(type) {
	case Result:
		return b, checkParts(b.Content)
	case *Result:
		if b == nil {
			return TextResult(""), nil
		}
		return *b, checkParts(b.Content)
	case Content:
		return Result{Content: []Content{b}}, b.Check()
	case []Content:
		return Result{Content: b}, checkParts(b)
	case []any:
		if parts, ok, err := contentList(b); ok || err != nil {
			return Result{Content: parts}, err
		}
	case []byte:
		if c, ok := binaryContent(b, contentType, resourceURI); ok {
			return Result{Content: []Content{c}}, nil
		}
	}
	return TextResult(replyText(body)), nil
}

// replyText is the text of a reply that is not content: exchange.Stringify, except
// that objects, lists and other values it would encode as JSON are encoded without
// HTML escaping (as marshalText does for structured results): a model reads this
// text, and `a \u003c b` in place of `a < b` is only noise.
func replyText(v any) string {
	if s, ok := exchange.ScalarText(v); ok {
		return s
	}
	if text, err := marshalText(v); err == nil {
		return text
	}
	return exchange.Stringify(v)
}

func checkParts(parts []Content) error {
	for i, c := range parts {
		if err := c.Check(); err != nil {
			return fmt.Errorf("content part %d: %w", i, err)
		}
	}
	return nil
}

// contentList reads a list as content parts when it holds at least one Content;
// ok is false for a list of plain values (JSON data, answered as text).
func contentList(list []any) (parts []Content, ok bool, err error) {
	for _, e := range list {
		if _, isContent := e.(Content); isContent {
			ok = true
			break
		}
	}
	if !ok {
		return nil, false, nil
	}
	parts = make([]Content, len(list))
	for i, e := range list {
		switch x := e.(type) {
		case Content:
			if err := x.Check(); err != nil {
				return nil, true, fmt.Errorf("content part %d: %w", i, err)
			}
			parts[i] = x
		case string:
			parts[i] = Text(x)
		default:
			return nil, true, fmt.Errorf("content part %d is %T: a list of content parts may hold only content values and strings", i, e)
		}
	}
	return parts, true, nil
}

// binaryContent is the content part of a body of bytes with a non-text
// Content-Type; ok is false for text types and bodies without a type.
func binaryContent(data []byte, contentType, resourceURI string) (Content, bool) {
	if contentType == "" {
		return Content{}, false
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return Content{}, false
	}
	switch {
	case strings.HasPrefix(mt, "image/"):
		return Image(data, mt), len(data) > 0
	case strings.HasPrefix(mt, "audio/"):
		return Audio(data, mt), len(data) > 0
	case IsTextMIMEType(mt):
		return Content{}, false
	}
	if resourceURI == "" {
		resourceURI = DefaultResourceURI
	}
	return BlobResource(resourceURI, data, mt), true
}

// IsTextMIMEType reports whether a media type (without parameters) holds text:
// text/*, JSON, XML, YAML, JavaScript, form data and their structured-syntax
// suffixes (+json, +xml, +yaml).
func IsTextMIMEType(mt string) bool {
	mt = strings.ToLower(mt)
	if strings.HasPrefix(mt, "text/") {
		return true
	}
	for _, suffix := range []string{"+json", "+xml", "+yaml"} {
		if strings.HasSuffix(mt, suffix) {
			return true
		}
	}
	switch mt {
	case "application/json", "application/xml", "application/yaml", "application/x-yaml",
		"application/javascript", "application/ecmascript", "application/x-www-form-urlencoded",
		"application/x-ndjson", "application/jsonl", "application/graphql", "application/sql":
		return true
	}
	return false
}
