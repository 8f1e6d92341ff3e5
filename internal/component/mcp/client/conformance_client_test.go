package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/componenttest"
	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
)

// conformanceTool is the tool the mcp:// fixture's peer offers; the fixture URI names it.
const conformanceTool = "echo"

// TestClientConformance runs the component conformance suite for the mcp:// client.
// Its outside world is a real go-sdk MCP server over Streamable HTTP on httptest.
//
// Headers is off: an MCP tools/call carries only the tool's name and its arguments,
// so exchange headers have nowhere to travel and the tool's reply has none. The
// producer does write HelixMcpToolName and HelixMcpIsError on the exchange, which the
// package's own tests check. ProducerCancel is on: a cancelled Process must return
// with context.Canceled at once, while the peer still holds the call.
//
// Whether the server then sees the call cancelled is not checked here. The go-sdk
// (v1.8) sends notifications/cancelled from a goroutine after the call has returned,
// and the suite stops the producer right after Process returns: when the session's
// close wins that race (about one run in three on a 2-core machine) the notification
// is lost, the server's handler is never cancelled and Stop waits out the go-sdk's 5s
// notification timeout. TestToolErrorResultAndTimeout checks the cancellation reaching
// the server while the session stays open. The held call is therefore released when
// the fixture closes, so that httptest's Close (which waits for running handlers)
// cannot hang.
func TestClientConformance(t *testing.T) {
	// Not parallel: it checks process-wide state (goroutines or child processes).
	componenttest.Run(t, componenttest.Harness{
		Features: componenttest.Features{Producer: true, RequestReply: true, ProducerCancel: true},
		Setup: func(t *testing.T) *componenttest.Fixture {
			ch := make(chan componenttest.Message, 256)
			// closing ends a held call that the cancellation never reached (see above).
			closing := make(chan struct{})
			srv := sdk.NewServer(&sdk.Implementation{Name: "conformance-peer", Version: "1.0.0"}, nil)
			srv.AddTool(&sdk.Tool{Name: conformanceTool, InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
					body, err := conformanceBody(req.Params.Arguments)
					if err != nil {
						return nil, err
					}
					ch <- componenttest.Message{Body: body}
					if body == componenttest.BlockBody {
						select {
						case <-ctx.Done():
							return nil, ctx.Err()
						case <-closing:
							return nil, errors.New("conformance peer closing")
						}
					}
					return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: componenttest.ReplyPrefix + body}}}, nil
				})
			hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
			t.Cleanup(hs.Close)
			t.Cleanup(func() { close(closing) })
			return &componenttest.Fixture{
				Component: mcpclient.New(),
				URI:       "mcp://" + strings.TrimPrefix(hs.URL, "http://") + "/" + conformanceTool,
				Listen:    func() <-chan componenttest.Message { return ch },
			}
		},
	})
}

// conformanceBody recovers the exchange body the producer sent from the call's
// arguments. The suite's bodies are plain text, which the producer wraps as
// {"input": text} (ArgumentsFromBody); any other arguments are reported as their JSON,
// so that a wrong wrapping shows up as a body mismatch.
func conformanceBody(raw json.RawMessage) (string, error) {
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil {
		return "", err
	}
	if s, ok := args["input"].(string); ok && len(args) == 1 {
		return s, nil
	}
	return string(raw), nil
}
