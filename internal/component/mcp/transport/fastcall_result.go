package transport

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/plainjson"
)

// The fast path's encoding of the usual tool result (text content, perhaps
// structured content and isError) without (*sdk.CallToolResult).MarshalJSON,
// whose reflection over the go-sdk's wire struct was a tenth of the handler's
// CPU. It writes the bytes MarshalJSON writes (go-sdk v1.8.0, protocol.go and
// content.go): fields in the wire struct's order, omitempty as tagged, strings
// as encoding/json writes them (HTML-escaped). Any other result is left to
// MarshalJSON. FuzzPlainResult compares the two.

// resultTypeField is the index of CallToolResult's unexported resultType, which
// MarshalJSON writes when set (a result relayed from another MCP server may carry
// it); -1 if a go-sdk update moved it, and then every result takes MarshalJSON.
var resultTypeField = func() int {
	f, ok := reflect.TypeFor[sdk.CallToolResult]().FieldByName("resultType")
	if !ok || len(f.Index) != 1 || f.Type.Kind() != reflect.String {
		return -1
	}
	return f.Index[0]
}()

// appendPlainResult appends res as res.MarshalJSON encodes it, when res has the
// usual shape; ok is false otherwise, and dst is then to be ignored. Only when
// plainResults.
func appendPlainResult(dst []byte, res *sdk.CallToolResult) (_ []byte, ok bool) {
	scratch := structuredScratch.Get().(*[]byte)
	defer putStructuredScratch(scratch)
	structured, size, ok := plainResultParts(res, scratch)
	if !ok {
		return dst, false
	}
	return appendResultBody(slices.Grow(dst, size), res, structured), true
}

// plainResultEnvelope returns the whole JSON-RPC response carrying res (what
// appendResultEnvelope gives for res.MarshalJSON()) in one allocation, and where
// the result starts in it. Only when plainResults.
func plainResultEnvelope(id jsonrpc.ID, res *sdk.CallToolResult) (env []byte, start int, ok bool) {
	scratch := structuredScratch.Get().(*[]byte)
	defer putStructuredScratch(scratch)
	structured, size, ok := plainResultParts(res, scratch)
	if !ok {
		return nil, 0, false
	}
	env = appendEnvelopeHead(make([]byte, 0, size+48), id)
	start = len(env)
	env = appendResultBody(env, res, structured)
	return append(env, '}'), start, true
}

// structuredScratch holds the buffers plainResultParts encodes plain structured
// content into; the caller copies it into the answer and puts the buffer back.
var structuredScratch = sync.Pool{New: func() any { return new([]byte) }}

// maxScratch bounds the buffers kept in structuredScratch.
const maxScratch = 64 << 10

func putStructuredScratch(b *[]byte) {
	if cap(*b) > maxScratch {
		return
	}
	*b = (*b)[:0]
	structuredScratch.Put(b)
}

// plainResultParts tells whether res has the usual shape, and if so returns its
// structured content as encoded and about the size of the whole result. Plain
// structured content (what json.Unmarshal gives an any) is encoded by hand into
// *scratch, so the result is valid until the caller puts scratch back; any other
// goes through json.Marshal.
func plainResultParts(res *sdk.CallToolResult, scratch *[]byte) (structured []byte, size int, ok bool) {
	if len(res.Meta) != 0 || res.InputRequests != nil || res.RequestState != "" ||
		reflect.ValueOf(res).Elem().Field(resultTypeField).Len() != 0 {
		return nil, 0, false
	}
	size = 48
	for _, c := range res.Content {
		t, ok := c.(*sdk.TextContent)
		if !ok || t == nil || len(t.Meta) != 0 || t.Annotations != nil {
			return nil, 0, false
		}
		size += len(`{"type":"text","text":""},`) + len(t.Text)
	}
	if res.StructuredContent != nil {
		if b, plain := plainjson.Append((*scratch)[:0], res.StructuredContent); plain {
			*scratch = b
			return b, size + len(`,"structuredContent":`) + len(b), true
		} else if cap(b) > cap(*scratch) {
			*scratch = b[:0] // keep what it grew to
		}
		var err error
		// Marshalled on its own it gives the bytes it gives inside the wire
		// struct: same options, and an interface's value is not addressable in
		// either. An error is left to MarshalJSON, to report as it does.
		if structured, err = json.Marshal(res.StructuredContent); err != nil {
			return nil, 0, false
		}
		size += len(`,"structuredContent":`) + len(structured)
	}
	return structured, size, true
}

// appendResultBody writes a result plainResultParts accepted: the wire struct's
// fields in order, those tagged omitempty only when set.
func appendResultBody(dst []byte, res *sdk.CallToolResult, structured []byte) []byte {
	dst = append(dst, `{"content":`...)
	if res.Content == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, c := range res.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"type":"text","text":`...)
			dst = plainjson.AppendString(dst, c.(*sdk.TextContent).Text)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if structured != nil {
		dst = append(dst, `,"structuredContent":`...)
		dst = append(dst, structured...)
	}
	if res.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	return append(dst, '}')
}

// appendID appends a response's id as encodeID encodes it.
func appendID(dst []byte, id jsonrpc.ID) []byte {
	if !plainResults {
		return append(dst, encodeID(id)...)
	}
	switch v := id.Raw().(type) {
	case int64:
		return strconv.AppendInt(dst, v, 10)
	case string:
		return plainjson.AppendString(dst, v)
	}
	return append(dst, "null"...)
}

// plainResults records that appendPlainResult and appendJSONString write what
// the go-sdk and encoding/json write for a few awkward results (should a Go or
// go-sdk update change their encoding, everything takes MarshalJSON again, and
// TestPlainResultsEnabled fails).
var plainResults = func() bool {
	if resultTypeField < 0 {
		return false
	}
	text := "a\"\\/<>&\b\f\n\r\t\x00\x1f\x7f é😀\u2028\u2029\xff\xe2\x80"
	for _, res := range []*sdk.CallToolResult{
		{},
		{Content: []sdk.Content{}},
		{Content: []sdk.Content{&sdk.TextContent{Text: text}, &sdk.TextContent{}}, IsError: true},
		{Content: []sdk.Content{&sdk.TextContent{Text: "x"}}, StructuredContent: map[string]any{text: []any{text, 1.5, nil}}},
	} {
		want, err := res.MarshalJSON()
		if got, ok := appendPlainResult(nil, res); err != nil || !ok || !bytes.Equal(got, want) {
			return false
		}
	}
	return true
}()
