package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// relayYAML is a Helix MCP server whose tool "relay" calls tool "slow" of another
// server through mcp://.
const relayYAML = `
helix:
  mcp:
    servers:
      - { enabled: true, transport: http, addr: "127.0.0.1:0", name: relay, workflows: [relay] }
workflows:
  - id: relay
    description: "Relay to the slow upstream"
    trigger: { uri: direct://relay }
    steps:
      - target: mcp://%s/mcp/slow?timeout=0
`

// TestRelayCancellationReachesUpstream: a client that cancels its tools/call of a
// relaying tool (the go-sdk client sends notifications/cancelled, as the TypeScript
// SDK does) cancels the mcp:// call the relay waits on, with and without a progress
// token (with one the Helix server takes the go-sdk path, not the fast path).
func TestRelayCancellationReachesUpstream(t *testing.T) {
	started := make(chan struct{}, 4)
	cancelled := make(chan struct{}, 4)
	up := sdk.NewServer(&sdk.Implementation{Name: "upstream", Version: "1"}, nil)
	up.AddTool(&sdk.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			started <- struct{}{}
			select {
			case <-ctx.Done():
				cancelled <- struct{}{}
			case <-time.After(60 * time.Second):
			}
			return nil, ctx.Err()
		})
	hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return up }, nil))
	t.Cleanup(hs.Close)
	relay := startYAMLApp(t, fmt.Sprintf(relayYAML, strings.TrimPrefix(hs.URL, "http://")))

	for _, withToken := range []bool{false, true} {
		t.Run(fmt.Sprintf("progressToken=%v", withToken), func(t *testing.T) {
			client := sdk.NewClient(&sdk.Implementation{Name: "canceller", Version: "1"}, nil)
			cs, err := client.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: "http://" + serverAddr(t, relay, "relay") + "/mcp"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			ctx, cancel := context.WithCancel(context.Background())
			params := &sdk.CallToolParams{Name: "relay", Arguments: map[string]any{}}
			if withToken {
				params.SetProgressToken("tok-1")
			}
			done := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, params)
				done <- err
			}()
			select {
			case <-started:
			case <-time.After(30 * time.Second):
				t.Fatal("the upstream call did not start")
			}
			cancel() // the go-sdk client sends notifications/cancelled
			<-done
			select {
			case <-cancelled:
			case <-time.After(15 * time.Second):
				t.Fatal("the upstream call was not cancelled within 15s of the client's cancellation")
			}
		})
	}
}
