package mcptools_test

import (
	"context"
	"encoding/json"
	"github.com/arvenza/helix/internal/testtools"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/arvenza/helix/internal/agent/mcptools"
	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func text(s string) []sdk.Content { return []sdk.Content{&sdk.TextContent{Text: s}} }

var objectSchema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)

// testServer is an MCP server with one tool per kind of result. It lists two tools
// clients must skip: one with an invalid name ("bad name!", which the SDK only logs),
// and one ("stringy") whose input schema a middleware turns into a non-object schema
// on the way out, since the SDK refuses to register such a tool. Two tools a page, so
// that listing takes several requests.
func testServer() *sdk.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "test-tools", Version: "1"}, &sdk.ServerOptions{PageSize: 2, Logger: quiet})
	add := func(t *sdk.Tool, h sdk.ToolHandler) {
		if t.InputSchema == nil {
			t.InputSchema = objectSchema
		}
		s.AddTool(t, h)
	}
	add(&sdk.Tool{Name: "echo", Description: "echoes text", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var args struct{ Text string }
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			return &sdk.CallToolResult{Content: text("echo: " + args.Text)}, nil
		})
	add(&sdk.Tool{Name: "fail", Description: "always fails"},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: text("disk full"), IsError: true}, nil
		})
	size := int64(1234)
	add(&sdk.Tool{Name: "media", Description: "every kind of content"},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.ImageContent{Data: []byte("\x89PNG"), MIMEType: "image/png"},
				&sdk.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav"},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "notes"}},
				&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///a.bin", MIMEType: "application/octet-stream", Blob: []byte{1, 2, 3}}},
				&sdk.ResourceLink{URI: "https://example.com/report.pdf", Name: "report", MIMEType: "application/pdf", Size: &size, Description: "the report"},
			}}, nil
		})
	add(&sdk.Tool{Name: "weather", Description: "structured weather",
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"temp":{"type":"number"}},"required":["temp"]}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: text(`{"temp":21.5}`), StructuredContent: map[string]any{"temp": 21.5}}, nil
		})
	add(&sdk.Tool{Name: "gone", Description: "removed after listing"},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: text("still here")}, nil
		})
	add(&sdk.Tool{Name: "bad name!"}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: text("unreachable")}, nil
	})
	add(&sdk.Tool{Name: "stringy"}, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: text("unreachable")}, nil
	})
	s.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			res, err := next(ctx, method, req)
			if lt, ok := res.(*sdk.ListToolsResult); ok && err == nil {
				for i, t := range lt.Tools {
					if t.Name == "stringy" {
						c := *t // the listed tools are the server's own: change a copy
						c.InputSchema = json.RawMessage(`{"type":"string"}`)
						lt.Tools[i] = &c
					}
				}
			}
			return res, err
		}
	})
	return s
}

// serveHTTP serves s over Streamable HTTP on loopback until the test ends.
func serveHTTP(t testing.TB, s *sdk.Server) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(streamable(s))
	cleanup(t, s, ts)
	return ts
}

// cleanup closes ts and then the sessions s still has when the test ends: a
// session whose client went away without saying goodbye (the test closed the
// server under it) would otherwise keep its goroutine (goleak).
func cleanup(t testing.TB, s *sdk.Server, ts *httptest.Server) {
	t.Cleanup(func() {
		ts.Close()
		for ss := range s.Sessions() {
			_ = ss.Close()
		}
	})
}

func streamable(s *sdk.Server) http.Handler {
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{Logger: quiet})
}

// newServer builds the tools of the server at endpoint and stops them when the test
// ends.
func newServer(t testing.TB, opts mcptools.Options) *mcptools.Server {
	t.Helper()
	if opts.Conn.Logger == nil {
		opts.Conn.Logger = quiet
	}
	s, err := mcptools.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

func httpConfig(endpoint string) mcpclient.Config {
	return mcpclient.Config{Transport: mcpclient.TransportHTTP, Endpoint: endpoint}
}

// freeAddr returns a loopback address nothing listens on (the port was free a
// moment ago).
func freeAddr(t testing.TB) string {
	t.Helper()
	return "127.0.0.1:" + strconv.Itoa(testtools.FreePort(t))
}
