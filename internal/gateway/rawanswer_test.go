package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// The upstream gets a client's elicitation answer as the client gave it: no
// schema defaults filled in by the go-sdk on either side of the gateway, on
// the decoding relay and on the fast relay alike.
func TestGatewayPassesTheClientsRawElicitationAnswer(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var answers []string // the answers as they reached the upstream, before its own go-sdk fills defaults
	a := startUpstream(t, "a", func(srv *sdk.Server) {
		srv.AddSendingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
			return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
				res, err := next(ctx, method, req)
				if method == "elicitation/create" && err == nil {
					b, _ := json.Marshal(res.(*sdk.ElicitResult).Content)
					mu.Lock()
					answers = append(answers, string(b))
					mu.Unlock()
				}
				return res, err
			}
		})
		srv.AddTool(&sdk.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "who?", RequestedSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"name":  map[string]any{"type": "string"},
					"count": map[string]any{"type": "integer", "default": 5},
				},
			}})
			if err != nil {
				return nil, err
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: res.Action}}}, nil
		})
	})
	comp, _ := gatewayServer(t, gateway.Options{Upstreams: []config.UpstreamConfig{{ID: "a", URL: a.url, Transport: "http"}}})
	// The client answers without the go-sdk client's defaults (as the
	// TypeScript client does): its middleware answers before the go-sdk's own.
	c := sdk.NewClient(&sdk.Implementation{Name: "client", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return nil, errors.New("not reached")
		},
	})
	c.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "elicitation/create" {
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "ann"}}, nil
			}
			return next(ctx, method, req)
		}
	})
	cs, err := c.Connect(testCtx(t), &sdk.StreamableClientTransport{Endpoint: "http://" + comp.Addr("gw").String() + "/mcp", MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	decoding := &sdk.CallToolParams{Name: "a.ask"}
	decoding.SetProgressToken("p") // a progress token keeps the call off the fast relay
	for _, params := range []*sdk.CallToolParams{decoding, {Name: "a.ask"}} {
		res, err := cs.CallTool(testCtx(t), params)
		if err != nil {
			t.Fatal(err)
		}
		if got := text(res); got != "accept" || res.IsError {
			t.Fatalf("call = %q", got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(answers) != 2 || answers[0] != `{"name":"ann"}` || answers[1] != `{"name":"ann"}` {
		t.Errorf("answers that reached the upstream = %q, want the client's own twice: {\"name\":\"ann\"}", answers)
	}
}
