package app_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// An upstream whose url: is down is served by its replica: the gateway's
// sessions come from the upstream pool (health checks, failover), not from a
// single address.
func TestGatewayUpstreamFailsOverToReplica(t *testing.T) {
	t.Parallel()
	srv := sdk.NewServer(&sdk.Implementation{Name: "replica", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Description: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, a gwArgs) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "replica:" + a.Text}}}, nil, nil
	})
	replica := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(replica.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + l.Addr().String() + "/mcp"
	_ = l.Close()
	a := startYAML(t, `
workflows:
  - id: greet
    trigger: direct://greet
    steps: []
mcps:
  - id: gw
    addr: "127.0.0.1:0"
    upstreams:
      - id: up
        url: `+down+`
        replicas: [`+replica.URL+`]
        health: { interval: 50ms, timeout: 1s }
`)
	cs := mcpSession(t, a, "gw")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	found := false
	for !found && ctx.Err() == nil { // discovery may still be under way
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range lt.Tools {
			found = found || tl.Name == "up.echo"
		}
		if !found {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if text, isErr := callTool(t, cs, "up.echo", map[string]any{"text": "hi"}); text != "replica:hi" || isErr {
		t.Fatalf("up.echo answered %q (error %v), want the replica's answer", text, isErr)
	}
}
