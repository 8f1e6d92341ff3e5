package starlang

import (
	"context"
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/exchange"
)

// A 1x1 PNG, as base64 and as bytes.
const pngBase64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"

var pngBytes, _ = base64.StdEncoding.DecodeString(pngBase64)

func TestContentValues(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want any
	}{
		{"text", `content.text("hi")`, tool.Text("hi")},
		{"image from base64", `content.image("` + pngBase64 + `", "image/png")`, tool.Image(pngBytes, "image/png")},
		{"image from base64 with line breaks", `content.image("` + pngBase64[:20] + `\n  ` + pngBase64[20:] + `", mime_type="image/png")`, tool.Image(pngBytes, "image/png")},
		{"image from unpadded base64", `content.image("` + strings.TrimRight(pngBase64, "=") + `", "image/png")`, tool.Image(pngBytes, "image/png")},
		{"image from bytes", `content.image(b"\x89PNG", "image/png")`, tool.Image([]byte("\x89PNG"), "image/png")},
		{"audio", `content.audio(b"RIFF", "audio/wav")`, tool.Audio([]byte("RIFF"), "audio/wav")},
		{"text resource defaults to text/plain", `content.resource("test://r", text="body")`, tool.TextResource("test://r", "body", "text/plain")},
		{"text resource with type", `content.resource("test://r", text="{}", mime_type="application/json")`, tool.TextResource("test://r", "{}", "application/json")},
		{"blob resource from base64", `content.resource("test://b", blob="` + pngBase64 + `", mime_type="image/png")`, tool.BlobResource("test://b", pngBytes, "image/png")},
		{"blob resource defaults to octet-stream", `content.resource("test://b", blob=b"\x00\x01")`, tool.BlobResource("test://b", []byte{0, 1}, "application/octet-stream")},
		{"resource link", `content.resource_link("file:///r.txt", "r.txt", description="a file", mime_type="text/plain")`,
			tool.ResourceLink("file:///r.txt", "r.txt", "a file", "text/plain")},
		{"list of parts", `["caption", content.image(b"\x89PNG", "image/png")]`, []any{"caption", tool.Image([]byte("\x89PNG"), "image/png")}},
		{"result of text", `content.result("done")`, tool.Result{Content: []tool.Content{tool.Text("done")}}},
		{"result of parts and structured", `content.result([content.text("a"), "b"], structured={"n": 1})`,
			tool.Result{Content: []tool.Content{tool.Text("a"), tool.Text("b")}, Structured: map[string]any{"n": int64(1)}}},
		{"error result", `content.result(content="order 42 does not exist", is_error=True)`,
			tool.Result{Content: []tool.Content{tool.Text("order 42 does not exist")}, IsError: true}},
		{"structured only", `content.result(structured=[1, 2])`, tool.Result{Structured: []any{int64(1), int64(2)}}},
		{"attributes", `c = content.image(b"\x89PNG", "image/png")
[c.type, c.mime_type, c.data, c.uri, type(c)]`, []any{"image", "image/png", []byte("\x89PNG"), nil, "content"}},
		{"result attributes", `r = content.result([content.text("x")], is_error=True)
[r.is_error, r.content[0].text, r.structured, type(r)]`, []any{true, "x", nil, "result"}},
		{"str of a part", `str(content.image(b"\x89PNG", "image/png"))`, `content.image(<4 bytes>, mime_type="image/png")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := compile(t, tt.src, nil).Eval(context.Background(), input{}.exchange())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.Value, tt.want) {
				t.Errorf("value = %#v\nwant    %#v", res.Value, tt.want)
			}
		})
	}
}

func TestContentErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string
	}{
		{"image without mime type", `content.image(b"x")`, "helix.yaml:10:26: content.image: missing argument for mime_type"},
		{"image with an audio type", `content.image(b"x", "audio/wav")`, `content.image: mime_type "audio/wav" is not an image type (want image/…, for example image/png)`},
		{"audio with bare prefix", `content.audio(b"x", "audio/")`, `content.audio: mime_type "audio/" is not an audio type`},
		{"image data not base64", `content.image("not base64!", "image/png")`, "helix.yaml:10:26: content.image: data is a str but not base64"},
		{"image data of wrong type", `content.image(42, "image/png")`, "content.image: data is int, want bytes or a str holding base64"},
		{"empty image", `content.image(b"", "image/png")`, "content.image: data is empty"},
		{"text of wrong type", `content.text(1)`, "content.text: for parameter text: got int, want string"},
		{"resource without body", `content.resource("test://r")`, "content.resource: give text= (a str) or blob="},
		{"resource with both", `content.resource("test://r", text="a", blob=b"b")`, "content.resource: give text= or blob=, not both"},
		{"resource text of bytes", `content.resource("test://r", text=b"a")`, "content.resource: text is bytes, want str (use blob= for bytes)"},
		{"resource without uri", `content.resource("", text="a")`, "content.resource: uri is empty"},
		{"resource blob not base64", `content.resource("test://r", blob="%%%")`, "content.resource: blob is a str but not base64"},
		{"link without name", `content.resource_link("test://r", "")`, "content.resource_link: name is empty"},
		{"link missing name", `content.resource_link("test://r")`, "content.resource_link: missing argument for name"},
		{"result with bad part", `content.result([1])`, "content.result: content[0] is int, want a content value"},
		{"result with bad content", `content.result(3)`, "content.result: content is int, want a str, a content value or a list of them"},
		{"error result without message", `content.result(is_error=True)`, "content.result: is_error=True needs content"},
		{"unknown attribute", `content.text("a").size`, "content has no .size field or method"},
		{"unhashable", `{content.text("a"): 1}`, "unhashable type: content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := compile(t, tt.src, nil).Eval(context.Background(), input{}.exchange())
			if err == nil {
				t.Fatal("Eval succeeded, want error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to contain %q", err.Error(), tt.want)
			}
		})
	}
}

// A content value written as the body or handed to a later step keeps its kind.
func TestContentThroughTheExchange(t *testing.T) {
	ex := exchange.NewWithBody(exchange.InOut, nil)
	if _, err := compile(t, `write(content.audio(b"RIFF", "audio/wav"))`, nil).Eval(context.Background(), ex); err != nil {
		t.Fatal(err)
	}
	if got, want := ex.In().Body(), tool.Audio([]byte("RIFF"), "audio/wav"); !reflect.DeepEqual(got, want) {
		t.Fatalf("written body = %#v, want %#v", got, want)
	}
	// The next step reads it back as a content value.
	res, err := compile(t, `[payload.type, payload.mime_type, len(payload.data)]`, nil).Eval(context.Background(), ex)
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{"audio", "audio/wav", int64(4)}; !reflect.DeepEqual(res.Value, want) {
		t.Fatalf("value = %#v, want %#v", res.Value, want)
	}
	ex.In().SetBody(tool.ErrorResult("boom"))
	res, err = compile(t, `[payload.is_error, payload.content[0].text]`, nil).Eval(context.Background(), ex)
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{true, "boom"}; !reflect.DeepEqual(res.Value, want) {
		t.Fatalf("value = %#v, want %#v", res.Value, want)
	}
}

// Decoding base64 counts against the memory budget like any other allocation.
func TestContentDataChargesTheBudget(t *testing.T) {
	big := strings.Repeat("QUFB", 64<<10) // 256 KiB of base64, 192 KiB decoded
	s := compile(t, `content.image(payload, "image/png")`, &Options{MaxMemory: 64 << 10})
	_, err := s.Eval(context.Background(), input{body: big}.exchange())
	if err == nil || !strings.Contains(err.Error(), "memory budget exceeded") {
		t.Fatalf("err = %v, want the memory budget exceeded", err)
	}
}
