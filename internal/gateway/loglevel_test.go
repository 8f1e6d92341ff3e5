package gateway_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/testtools"
)

// A 2025-11-25 client that set its logging level hears the log messages of
// its call, whichever protocol era the gateway speaks with the upstream (a
// 2026-07-28 upstream sends a call's log messages only at the level its
// request states).
func TestGatewayRelaysCallLogsAtTheClientsLevel(t *testing.T) {
	t.Parallel()
	srv := sdk.NewServer(&sdk.Implementation{Name: "a", Version: "1"}, nil)
	{
		srv.AddTool(&sdk.Tool{Name: "chatty", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			for _, lv := range []string{"debug", "info", "warning"} {
				//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed for clients that use it
				_ = req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: sdk.LoggingLevel(lv), Data: "at " + lv})
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil
		})
	}
	// A stateless go-sdk server: the gateway's client speaks 2026-07-28 with it.
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(hs.Close)
	a := &fakeUpstream{url: hs.URL}
	comp, _ := gatewayServer(t, gateway.Options{Upstreams: []config.UpstreamConfig{{ID: "a", URL: a.url, Transport: "http", Sessions: config.SessionsShared}}})
	var mu sync.Mutex
	var logs []string
	cs := connect(t, comp, "/mcp", "2025-11-25", &sdk.ClientOptions{
		//lint:ignore SA1019 MCP logging: deprecated in protocol 2026-07-28, still relayed for clients that use it
		LoggingMessageHandler: func(_ context.Context, req *sdk.LoggingMessageRequest) {
			mu.Lock()
			logs = append(logs, req.Params.Data.(string))
			mu.Unlock()
		},
	})
	//lint:ignore SA1019 MCP logging is what is relayed
	if err := cs.SetLoggingLevel(testCtx(t), &sdk.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "a.chatty", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	testtools.Eventually(t, "the call's info and warning messages", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(logs, "at info") && slices.Contains(logs, "at warning")
	})
	mu.Lock()
	defer mu.Unlock()
	if slices.Contains(logs, "at debug") {
		t.Errorf("a debug message reached a client at level info: %v", logs)
	}
}
