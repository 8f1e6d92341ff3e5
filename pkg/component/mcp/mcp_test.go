package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	helixmcp "github.com/arvenza/helix/pkg/component/mcp"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// The MCP guide's §11.1 test, which §11.3 runs by name
// (go test ./pkg/component/mcp/ -run TestRouteToTool_InMemory -v): a Helix route
// served as a tool over the go-sdk's in-memory transports, no network at all.
// The guide leaves "register tools" to the reader; helixmcp.NewSDKServer is what
// registers them, with the same logic as the mcp-server component.
func TestRouteToTool_InMemory(t *testing.T) {
	cs := connectInMemory(t, &engine.Workflow{
		ID:          "echo",
		Description: "Echo back the input",
		FromURI:     "direct://echo",
		Processors: []engine.Processor{
			engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
				// Echo: just leave the body as-is
				return nil
			}),
		},
	})

	tools, err := cs.ListTools(testContext(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "echo" || tools.Tools[0].Description != "Echo back the input" {
		t.Fatalf("tools/list = %+v, want the one route as tool echo", tools.Tools)
	}

	result, err := cs.CallTool(testContext(t), &mcpsdk.CallToolParams{
		Name:      "echo",
		Arguments: json.RawMessage(`{"message": "hello"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if result.IsError {
		t.Fatalf("expected success, got %s", contentText(t, result))
	}
	var echoed map[string]any
	if err := json.Unmarshal([]byte(contentText(t, result)), &echoed); err != nil {
		t.Fatalf("reply %q is not the echoed object: %v", contentText(t, result), err)
	}
	if echoed["message"] != "hello" {
		t.Fatalf("reply %v, want the arguments echoed back", echoed)
	}
}

// A failing route is a tool result with isError, not a protocol error (§10).
func TestRouteToTool_InMemoryErrorPropagation(t *testing.T) {
	cs := connectInMemory(t, &engine.Workflow{
		ID:      "fails",
		FromURI: "direct://fails",
		Processors: []engine.Processor{
			engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
				return errors.New("the warehouse is closed")
			}),
		},
	})
	result, err := cs.CallTool(testContext(t), &mcpsdk.CallToolParams{Name: "fails", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("protocol error %v, want a tool error result", err)
	}
	if !result.IsError || !strings.Contains(contentText(t, result), "the warehouse is closed") {
		t.Fatalf("result isError=%v %q, want isError with the workflow's error", result.IsError, contentText(t, result))
	}
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	// Generous: the suite runs with -race on a loaded 2-core machine.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// connectInMemory serves the workflows as tools over in-memory transports and
// returns the client's session; everything is closed at cleanup.
func connectInMemory(t *testing.T, wfs ...*engine.Workflow) *mcpsdk.ClientSession {
	t.Helper()
	ctx := testContext(t)
	hc := engine.NewContext("test")
	hc.SetLogger(slog.New(slog.DiscardHandler))
	for _, wf := range wfs {
		if err := hc.AddWorkflow(wf); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := helixmcp.NewSDKServer(hc, helixmcp.ServerOptions{Name: "test-server", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	clientTransport, serverTransport := mcpsdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, serverTransport, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "test-client", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, clientTransport, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func contentText(t *testing.T, res *mcpsdk.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		tc, ok := c.(*mcpsdk.TextContent)
		if !ok {
			t.Fatalf("content %T, want text", c)
		}
		parts = append(parts, tc.Text)
	}
	return strings.Join(parts, "")
}
