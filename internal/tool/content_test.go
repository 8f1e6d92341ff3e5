package tool_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/tool"
)

func TestReplyResult(t *testing.T) {
	png := []byte("\x89PNG\r\n")
	tests := []struct {
		name        string
		body        any
		contentType string
		resourceURI string
		want        tool.Result
	}{
		{"string", "hi", "", "", tool.TextResult("hi")},
		{"map as JSON text", map[string]any{"a": int64(1)}, "application/json", "", tool.TextResult(`{"a":1}`)},
		{"list of values as JSON text", []any{"a", int64(1)}, "", "", tool.TextResult(`["a",1]`)},
		{"JSON text without HTML escapes", map[string]any{"sql": "a < b && c > d"}, "", "", tool.TextResult(`{"sql":"a < b && c > d"}`)},
		{"a struct as JSON text without HTML escapes", struct{ Q string }{"<&>"}, "", "", tool.TextResult(`{"Q":"<&>"}`)},
		{"a number as text", 1e21, "", "", tool.TextResult("1000000000000000000000")},
		{"bytes without a type are text", []byte("plain"), "", "", tool.TextResult("plain")},
		{"text bytes", []byte("plain"), "text/plain; charset=utf-8", "", tool.TextResult("plain")},
		{"JSON bytes", []byte(`{"a":1}`), "application/json", "", tool.TextResult(`{"a":1}`)},
		{"structured-syntax JSON bytes", []byte(`{}`), "application/problem+json", "", tool.TextResult(`{}`)},
		{"image bytes", png, "image/png", "", tool.Result{Content: []tool.Content{tool.Image(png, "image/png")}}},
		{"image type parameters dropped", png, "Image/PNG; q=1", "", tool.Result{Content: []tool.Content{tool.Image(png, "image/png")}}},
		{"audio bytes", []byte("RIFF"), "audio/wav", "", tool.Result{Content: []tool.Content{tool.Audio([]byte("RIFF"), "audio/wav")}}},
		{"binary bytes", []byte{0, 1}, "application/pdf", "", tool.Result{Content: []tool.Content{tool.BlobResource(tool.DefaultResourceURI, []byte{0, 1}, "application/pdf")}}},
		{"binary bytes named", []byte{0, 1}, "application/octet-stream", "app://report.bin",
			tool.Result{Content: []tool.Content{tool.BlobResource("app://report.bin", []byte{0, 1}, "application/octet-stream")}}},
		{"empty image bytes stay text", []byte{}, "image/png", "", tool.TextResult("")},
		{"string with an image type stays text", "iVBOR", "image/png", "", tool.TextResult("iVBOR")},
		{"one part", tool.Image(png, "image/png"), "", "", tool.Result{Content: []tool.Content{tool.Image(png, "image/png")}}},
		{"parts with strings", []any{"caption", tool.Image(png, "image/png")}, "", "",
			tool.Result{Content: []tool.Content{tool.Text("caption"), tool.Image(png, "image/png")}}},
		{"a result", tool.ErrorResult("nope"), "", "", tool.ErrorResult("nope")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tool.ReplyResult(tt.body, tt.contentType, tt.resourceURI)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestReplyResultRejectsBrokenParts(t *testing.T) {
	for _, tt := range []struct {
		name string
		body any
		want string
	}{
		{"mixed list", []any{tool.Text("a"), int64(3)}, "content part 1 is int64"},
		{"image without data", tool.Content{Type: tool.ContentImage, MIMEType: "image/png"}, "image content has no data"},
		{"audio without type", []any{tool.Content{Type: tool.ContentAudio, Data: []byte("x")}}, "content part 0: audio content has no MIME type"},
		{"resource without uri", tool.Result{Content: []tool.Content{{Type: tool.ContentResource, Text: "x"}}}, "content part 0: resource content has no URI"},
		{"unknown type", tool.Content{Type: "video"}, `unknown content type "video"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tool.ReplyResult(tt.body, "", "")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// Content values that end up outside a tool call (an HTTP reply, a log) read as
// content objects.
func TestContentJSON(t *testing.T) {
	for _, tt := range []struct {
		v    any
		want string
	}{
		{tool.Text(""), `{"type":"text","text":""}`},
		{tool.Image([]byte("ab"), "image/png"), `{"type":"image","data":"YWI=","mimeType":"image/png"}`},
		{tool.TextResource("test://r", "", "text/plain"), `{"type":"resource","resource":{"uri":"test://r","mimeType":"text/plain","text":""}}`},
		{tool.BlobResource("test://b", []byte("ab"), "application/pdf"), `{"type":"resource","resource":{"uri":"test://b","mimeType":"application/pdf","blob":"YWI="}}`},
		{tool.ResourceLink("test://r", "r", "d", ""), `{"type":"resource_link","uri":"test://r","name":"r","description":"d"}`},
		{tool.ErrorResult("x"), `{"content":[{"type":"text","text":"x"}],"isError":true}`},
		{tool.Result{}, `{"content":[]}`},
	} {
		got, err := json.Marshal(tt.v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("json.Marshal(%#v) = %s, want %s", tt.v, got, tt.want)
		}
	}
}
