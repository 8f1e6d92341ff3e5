package server

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/starlang"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// A 1x1 PNG.
var contentPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC")

// replyWith is a workflow whose one step sets the reply body and headers.
func replyWith(id string, body any, headers map[string]any) *engine.Workflow {
	return &engine.Workflow{ID: id, Description: id, FromURI: "direct://" + id, Processors: step(func(_ context.Context, ex *exchange.Exchange) error {
		ex.In().SetBody(body)
		for k, v := range headers {
			ex.In().SetHeader(k, v)
		}
		return nil
	})}
}

// starlangWorkflow is a workflow whose one step is a transform in Starlang: its
// value becomes the body, as internal/step's transform does.
func starlangWorkflow(t *testing.T, id, src string) *engine.Workflow {
	t.Helper()
	script, err := starlang.Compile("content.yaml", 1, 1, src, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &engine.Workflow{ID: id, Description: id, FromURI: "direct://" + id, Processors: step(func(ctx context.Context, ex *exchange.Exchange) error {
		res, err := script.Eval(ctx, ex)
		if err != nil {
			return err
		}
		if res.HasValue {
			ex.In().SetBody(res.Value)
		}
		return nil
	})}
}

// contentWorkflows answer every kind of content: bytes whose Content-Type makes
// them an image, audio or an embedded blob, and the Starlang content module's
// parts, lists and results.
func contentWorkflows(t *testing.T) []*engine.Workflow {
	return []*engine.Workflow{
		greetWorkflow(),
		replyWith("png", contentPNG, map[string]any{exchange.HeaderContentType: "image/png"}),
		replyWith("wav", []byte("RIFF....WAVE"), map[string]any{exchange.HeaderContentType: "audio/wav"}),
		replyWith("pdf", []byte("%PDF-1.7"), map[string]any{exchange.HeaderContentType: "application/pdf", tool.HeaderResourceURI: "app://report.pdf"}),
		replyWith("json-bytes", []byte(`{"a":1}`), map[string]any{exchange.HeaderContentType: "application/json"}),
		replyWith("mixed-list", []any{"bad", int64(1), tool.Text("x")}, nil),
		starlangWorkflow(t, "mixed", `[
    "caption",
    content.image(payload.get("png", b"\x89PNG"), "image/png"),
    content.audio(b"RIFF", "audio/wav"),
    content.resource("test://doc", text=json.encode({"test": "data"}), mime_type="application/json"),
    content.resource("test://bin", blob=b"\x00\x01"),
    content.resource_link("test://big", "big", description="too big to embed", mime_type="text/csv"),
]`),
		starlangWorkflow(t, "refuses", `content.result(content=["order " + str(payload.get("id", 0)) + " does not exist"], is_error=True)`),
		starlangWorkflow(t, "fails", `fail("This tool intentionally returns an error for testing")`),
	}
}

func TestContentThroughGoSDKClient(t *testing.T) {
	t.Parallel()
	hc := newTestContext(t, contentWorkflows(t)...)
	comp := startContext(t, hc, Options{ID: "fast", Addr: "127.0.0.1:0"}, Options{ID: "sdk", Addr: "127.0.0.1:0", DisableFastToolCalls: true})
	clients := map[string]*sdk.ClientSession{
		"in-memory": connectInMemory(t, hc, Options{}),
		"fast":      connectHTTP(t, &sdk.StreamableClientTransport{Endpoint: serverURL(t, comp, "fast", "/mcp")}),
		"sdk":       connectHTTP(t, &sdk.StreamableClientTransport{Endpoint: serverURL(t, comp, "sdk", "/mcp")}),
	}
	tests := []struct {
		tool    string
		want    []sdk.Content
		isError bool
	}{
		{"png", []sdk.Content{&sdk.ImageContent{Data: contentPNG, MIMEType: "image/png"}}, false},
		{"wav", []sdk.Content{&sdk.AudioContent{Data: []byte("RIFF....WAVE"), MIMEType: "audio/wav"}}, false},
		{"pdf", []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "app://report.pdf", MIMEType: "application/pdf", Blob: []byte("%PDF-1.7")}}}, false},
		{"json-bytes", []sdk.Content{&sdk.TextContent{Text: `{"a":1}`}}, false},
		{"mixed", []sdk.Content{
			&sdk.TextContent{Text: "caption"},
			&sdk.ImageContent{Data: []byte("\x89PNG"), MIMEType: "image/png"},
			&sdk.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "test://doc", MIMEType: "application/json", Text: `{"test":"data"}`}},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "test://bin", MIMEType: "application/octet-stream", Blob: []byte{0, 1}}},
			&sdk.ResourceLink{URI: "test://big", Name: "big", Description: "too big to embed", MIMEType: "text/csv"},
		}, false},
		{"refuses", []sdk.Content{&sdk.TextContent{Text: "order 0 does not exist"}}, true},
		{"fails", []sdk.Content{&sdk.TextContent{Text: "This tool intentionally returns an error for testing"}}, true},
		{"mixed_list", []sdk.Content{&sdk.TextContent{Text: "the tool's reply is not valid content: content part 1 is int64: a list of content parts may hold only content values and strings"}}, true},
	}
	for name, cs := range clients {
		for _, tt := range tests {
			t.Run(name+"/"+tt.tool, func(t *testing.T) {
				res := callTool(t, cs, tt.tool, map[string]any{})
				if res.IsError != tt.isError {
					t.Errorf("isError = %v, want %v", res.IsError, tt.isError)
				}
				if !reflect.DeepEqual(res.Content, tt.want) {
					t.Errorf("content:\n got %s\nwant %s", describeContent(res.Content), describeContent(tt.want))
				}
			})
		}
	}
}

func describeContent(cs []sdk.Content) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%T%+v", c, c))
	}
	return strings.Join(parts, ", ")
}

// TestFastToolCallsMatchTheSDKPathForContent: the fast path answers every kind of
// content exactly as the go-sdk session does.
func TestFastToolCallsMatchTheSDKPathForContent(t *testing.T) {
	t.Parallel()
	hc := newTestContext(t, contentWorkflows(t)...)
	var opts []Options
	for _, id := range []string{"fast", "sdk", "fast-stateless", "sdk-stateless"} {
		opts = append(opts, Options{ID: id, Addr: "127.0.0.1:0", Stateless: strings.HasSuffix(id, "stateless"),
			DisableFastToolCalls: strings.HasPrefix(id, "sdk")})
	}
	comp := startContext(t, hc, opts...)
	wantKinds := func(kinds ...string) func(*testing.T, decodedReply) {
		return func(t *testing.T, d decodedReply) {
			t.Helper()
			if len(d.Messages) != 1 {
				t.Fatalf("want one message, got %+v", d)
			}
			res, _ := d.Messages[0].(map[string]any)["result"].(map[string]any)
			content, _ := res["content"].([]any)
			var got []string
			for _, c := range content {
				got = append(got, fmt.Sprint(c.(map[string]any)["type"]))
			}
			if strings.Join(got, ",") != strings.Join(kinds, ",") {
				t.Fatalf("content types %v, want %v (%+v)", got, kinds, res)
			}
		}
	}
	steps := []fastStep{
		{name: "image bytes", body: call(40, "png", `{}`), fast: true, expect: wantKinds("image")},
		{name: "audio bytes", body: call(41, "wav", `{}`), fast: true, expect: wantKinds("audio")},
		{name: "binary bytes", body: call(42, "pdf", `{}`), fast: true, expect: wantKinds("resource")},
		{name: "mixed content", body: call(43, "mixed", `{}`), fast: true, expect: wantKinds("text", "image", "audio", "resource", "resource", "resource_link")},
		{name: "error result", body: call(44, "refuses", `{"id":42}`), fast: true, expect: wantTool("order 42 does not exist", true)},
		{name: "fail", body: call(45, "fails", `{}`), fast: true, expect: wantTool("intentionally returns an error", true)},
		{name: "broken content", body: call(46, "mixed-list", `{}`), fast: true, expect: wantTool("not valid content", true)},
	}
	for _, stateless := range []bool{false, true} {
		suffix := map[bool]string{false: "", true: "-stateless"}[stateless]
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			before := fastServed(comp, "fast"+suffix)
			fast := runSequence(t, serverURL(t, comp, "fast"+suffix, "/mcp"), stateless, steps)
			if got := fastServed(comp, "fast"+suffix) - before; got < uint64(len(steps)) {
				t.Errorf("the fast path answered %d calls, want at least %d", got, len(steps))
			}
			slow := runSequence(t, serverURL(t, comp, "sdk"+suffix, "/mcp"), stateless, steps)
			if len(fast) != len(slow) {
				t.Fatalf("%d answers against %d", len(fast), len(slow))
			}
			for i := range fast {
				if !reflect.DeepEqual(fast[i], slow[i]) {
					t.Errorf("answer %d differs:\nfast: %+v\nsdk:  %+v", i, fast[i], slow[i])
				}
			}
		})
	}
}

// sdkResult's one-allocation text result is the result it always made.
func TestSDKResultOneTextPart(t *testing.T) {
	t.Parallel()
	for _, res := range []tool.Result{
		tool.TextResult("hi"),
		tool.ErrorResult("bad"),
		{Content: []tool.Content{tool.Text(`{"a":1}`)}, Structured: map[string]any{"a": 1.0}},
		{Content: []tool.Content{{Type: "", Text: "untyped"}}},
		{Content: []tool.Content{{Type: tool.ContentImage, Data: contentPNG, MIMEType: "image/png"}}},
		{Content: []tool.Content{tool.Text("a"), tool.Text("b")}},
		{},
	} {
		got := sdkResult(res)
		want := &sdk.CallToolResult{IsError: res.IsError, StructuredContent: res.Structured}
		for _, c := range res.Content {
			if c.Type == tool.ContentImage {
				want.Content = append(want.Content, &sdk.ImageContent{Data: c.Data, MIMEType: c.MIMEType})
			} else {
				want.Content = append(want.Content, &sdk.TextContent{Text: c.Text})
			}
		}
		if !reflect.DeepEqual(got, want) || len(got.Content) != cap(got.Content) {
			t.Errorf("sdkResult(%+v) = %+v, want %+v", res, got, want)
		}
	}
}
