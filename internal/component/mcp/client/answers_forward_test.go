package client_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// forwardYAML is a Helix node whose tool "relay" calls the upstream server's form
// and sample tools through targets that forward the upstream's questions to the
// relay's own caller.
const forwardYAML = `
helix:
  mcp:
    servers:
      - { enabled: true, transport: http, addr: "127.0.0.1:0", name: front, workflows: [relay-form, relay-sample] }
workflows:
  - id: relay-form
    description: "Ask upstream"
    trigger: { uri: direct://relay-form }
    steps:
      - target: mcp://%[1]s/form?onElicit=forward
  - id: relay-sample
    description: "Sample upstream"
    trigger: { uri: direct://relay-sample }
    steps:
      - target: mcp://%[1]s/sample?onSample=forward
`

// TestForwardThroughHelixServer: an upstream go-sdk server asks (a form, a
// sampling request); Helix's workflow forwards the question to its own MCP caller,
// a go-sdk client whose handlers answer. Every pair of eras: the upstream on
// 2025-11-25 (a request on its session) or 2026-07-28 (input requests), and the
// caller at the top on either (a request to it, or an input-required result it
// answers with a retry, which makes the workflow call upstream again).
func TestForwardThroughHelixServer(t *testing.T) {
	t.Parallel()
	for _, up := range eras {
		for _, top := range []string{"2025-11-25", "2026-07-28"} {
			t.Run("upstream "+up.name+", caller "+top, func(t *testing.T) {
				t.Parallel()
				upURL, _ := askingServer(t, up.stateless)
				addr := strings.TrimPrefix(upURL, "http://")
				front := startYAMLApp(t, fmt.Sprintf(forwardYAML, addr))
				var elicited, sampled atomic.Int64
				opts := &sdk.ClientOptions{
					ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
						elicited.Add(1)
						if !strings.HasPrefix(req.Params.Message, "Who are you?") {
							return nil, fmt.Errorf("the question arrived as %q", req.Params.Message)
						}
						return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace", "age": 85}}, nil
					},
					//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still in the window
					CreateMessageHandler: func(_ context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
						sampled.Add(1)
						//lint:ignore SA1019 sampling: deprecated in MCP 2026-07-28, still in the window
						return &sdk.CreateMessageResult{Model: "top-model", Role: "assistant", Content: &sdk.TextContent{Text: "hello"}}, nil
					},
				}
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				cs, err := sdk.NewClient(&sdk.Implementation{Name: "top", Version: "1"}, opts).Connect(ctx,
					&sdk.StreamableClientTransport{Endpoint: "http://" + serverAddr(t, front, "front") + "/mcp", MaxRetries: -1},
					&sdk.ClientSessionOptions{ProtocolVersion: top})
				if err != nil {
					t.Fatal(err)
				}
				defer cs.Close()
				for tool, want := range map[string]string{
					"relay_form":   `accept {"age":85,"name":"Grace"}`,
					"relay_sample": "model=top-model text=hello",
				} {
					res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{}})
					if err != nil {
						t.Fatalf("%s: %v", tool, err)
					}
					var got string
					for _, c := range res.Content {
						if tc, ok := c.(*sdk.TextContent); ok {
							got += tc.Text
						}
					}
					if res.IsError || got != want {
						t.Fatalf("%s: isError=%v %q, want %q", tool, res.IsError, got, want)
					}
				}
				if elicited.Load() != 1 || sampled.Load() != 1 {
					t.Fatalf("the caller answered %d forms and %d sampling requests, want one each", elicited.Load(), sampled.Load())
				}
			})
		}
	}
}
