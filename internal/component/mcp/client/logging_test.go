package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// With LogLevel and OnLog, a call receives the server's log messages at or above
// the level before it returns (logging/setLevel). Without LogLevel the server
// sends none.
func TestConnLogMessages(t *testing.T) {
	t.Parallel()
	s := sdk.NewServer(&sdk.Implementation{Name: "logs", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "work", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			//lint:ignore SA1019 tests MCP logging, deprecated in protocol 2026-07-28 but still supported
			for _, l := range []sdk.LoggingLevel{"debug", "info", "error"} {
				//lint:ignore SA1019 tests MCP logging, deprecated in protocol 2026-07-28 but still supported
				_ = req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: l, Logger: "w", Data: string(l) + " message"})
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)

	for _, tc := range []struct {
		protocol, level string
		want            []string
	}{
		{"2025-06-18", "info", []string{"info message", "error message"}},
		{"2025-11-25", "error", []string{"error message"}},
		{"2025-11-25", "", nil},
	} {
		var mu sync.Mutex
		var got []string
		conn, err := NewConn(Config{Endpoint: srv.URL, ProtocolVersion: tc.protocol, LogLevel: tc.level,
			//lint:ignore SA1019 tests MCP logging, deprecated in protocol 2026-07-28 but still supported
			OnLog: func(m *sdk.LoggingMessageParams) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, m.Data.(string))
			}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.CallTool(context.Background(), "work", nil); err != nil {
			t.Fatalf("%s: %v", tc.protocol, err)
		}
		_ = conn.Close()
		mu.Lock()
		if len(got) != len(tc.want) || (len(got) > 0 && (got[0] != tc.want[0] || got[len(got)-1] != tc.want[len(tc.want)-1])) {
			t.Errorf("protocol %s level %q: got %q, want %q", tc.protocol, tc.level, got, tc.want)
		}
		mu.Unlock()
	}
}

// A call carries LogLevel in its _meta, where servers on the 2026-07-28 protocol
// look for it (the test server negotiates an older one, so it is checked directly).
func TestConnCallCarriesLogLevelInMeta(t *testing.T) {
	t.Parallel()
	s := sdk.NewServer(&sdk.Implementation{Name: "meta", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "level", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			//lint:ignore SA1019 tests MCP logging, deprecated in protocol 2026-07-28 but still supported
			level, _ := req.Params.GetMeta()[sdk.MetaKeyLogLevel].(string)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: level}}}, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(srv.Close)
	for _, level := range []string{"warning", ""} {
		//lint:ignore SA1019 tests MCP logging, deprecated in protocol 2026-07-28 but still supported
		conn, err := NewConn(Config{Endpoint: srv.URL, LogLevel: level, OnLog: func(*sdk.LoggingMessageParams) {}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := conn.CallTool(context.Background(), "level", nil)
		_ = conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Content[0].(*sdk.TextContent).Text; got != level {
			t.Errorf("LogLevel %q: _meta carried %q", level, got)
		}
	}
}
