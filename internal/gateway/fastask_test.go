package gateway_test

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// A plain tools/call (no progress token: the transport's fast path would take
// it) of an upstream tool that asks the client something still reaches the
// client: the gateway's tools take the go-sdk session's path.
func TestGatewayPlainCallThatAsksReachesTheClient(t *testing.T) {
	t.Parallel()
	a := startUpstream(t, "a", echoServer)
	comp, _ := gatewayServer(t, gateway.Options{Upstreams: []config.UpstreamConfig{{ID: "a", URL: a.url, Transport: "http"}}})
	cs := connect(t, comp, "/mcp", "2025-11-25", &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "zed"}}, nil
		},
		//lint:ignore SA1019 MCP sampling: deprecated in protocol 2026-07-28, still relayed for clients that use it
		CreateMessageHandler: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			//lint:ignore SA1019 MCP sampling: deprecated in protocol 2026-07-28, still relayed for clients that use it
			return &sdk.CreateMessageResult{Model: "m", Role: "assistant", Content: &sdk.TextContent{Text: "s"}}, nil
		},
	})
	res, err := cs.CallTool(testCtx(t), &sdk.CallToolParams{Name: "a.slow", Arguments: map[string]any{"text": "ask"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); got != "accept:zed s done" {
		t.Errorf("result = %q", got)
	}
}
