package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/durable"
)

// A call made in a durable run's step carries the step's idempotency key in its
// _meta; a call outside one carries none.
func TestCallCarriesIdempotencyKey(t *testing.T) {
	t.Parallel()
	s := sdk.NewServer(&sdk.Implementation{Name: "keys", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "key", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			key, present := req.Params.GetMeta()[durable.MetaKey]
			text := "none"
			if present {
				text, _ = key.(string)
				text = "key:" + text
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	conn, err := NewConn(Config{Endpoint: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	for _, tc := range []struct {
		ctx  context.Context
		want string
	}{
		{durable.WithKey(context.Background(), "run-1/2/0"), "key:run-1/2/0"},
		{context.Background(), "none"},
	} {
		res, err := conn.CallTool(tc.ctx, "key", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Content[0].(*sdk.TextContent).Text; got != tc.want {
			t.Errorf("server saw %q, want %q", got, tc.want)
		}
	}
}
