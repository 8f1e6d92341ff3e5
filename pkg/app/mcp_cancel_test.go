package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCancelReachesChildMCPCalls: a client cancels a tool call whose workflow is
// waiting on an mcp:// call to another server. The cancellation must travel down:
// the workflow's exchange is cancelled, and with it the child call, whose server
// receives notifications/cancelled and sees its handler cancelled.
func TestCancelReachesChildMCPCalls(t *testing.T) {
	started := make(chan struct{}, 1)
	handlerCancelled := make(chan struct{})
	var cancelNotes atomic.Int32
	child := sdk.NewServer(&sdk.Implementation{Name: "child", Version: "1"}, nil)
	child.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "notifications/cancelled" {
				cancelNotes.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	sdk.AddTool(child, &sdk.Tool{Name: "slow", Description: "waits until cancelled"},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ map[string]any) (*sdk.CallToolResult, any, error) {
			started <- struct{}{}
			select {
			case <-ctx.Done():
				close(handlerCancelled)
				return nil, nil, ctx.Err()
			case <-time.After(2 * time.Minute):
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "late"}}}, nil, nil
			}
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return child }, nil))
	childHTTP := httptest.NewServer(mux)
	defer childHTTP.Close()
	childAddr := strings.TrimPrefix(childHTTP.URL, "http://")

	a, err := buildYAML(t, fmt.Sprintf(`
helix:
  mcp:
    servers:
      - enabled: true
        transport: http
        addr: "127.0.0.1:0"
        name: parent
workflows:
  - id: relay
    description: "Calls the child server's slow tool"
    trigger:
      uri: direct://relay
    steps:
      - target: mcp://%s/mcp/slow
`, childAddr))
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	cs := mcpSession(t, a, "parent")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "relay", Arguments: map[string]any{}})
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatal("the child tool was never called")
	}
	cancel() // the go-sdk client sends notifications/cancelled to the parent
	if err := <-done; err == nil {
		t.Fatal("the cancelled call returned a result")
	}
	select {
	case <-handlerCancelled:
	case <-time.After(60 * time.Second):
		t.Fatal("the child call kept running after the client cancelled the parent call")
	}
	deadline := time.Now().Add(60 * time.Second)
	for cancelNotes.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if cancelNotes.Load() == 0 {
		t.Fatal("the child server received no notifications/cancelled")
	}
}
