package server_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/componenttest"
	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/internal/tool"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// conformanceWorkflow is the workflow the mcp-server fixture exposes as a tool.
const conformanceWorkflow = "conformance-echo"

// TestServerConformance runs the component conformance suite for mcp-server://.
//
// An mcp-server consumer does not run the processor it is created with (the pipeline
// of the workflow carrying the trigger): it serves the other workflows of its engine
// context as tools. So the harness declares ExternalProcessor, and the fixture's
// context holds one workflow, exposed as the tool conformance_echo, whose last step
// is the processor the suite binds. Send is a real go-sdk client over Streamable HTTP
// calling that tool with {"input": body}; the workflow's first step turns the
// arguments back into the text body and checks that the exchange arrived as a call of
// that tool. What the suite checks therefore happens in the consumer: Start listening,
// request/reply through tools/call, the caller's cancellation reaching the workflow,
// Stop waiting for running calls and refusing new ones, concurrent calls.
//
// Headers is off: a tool call carries arguments only; the server sets the HelixMcp*
// headers itself (checked by the package's server tests).
func TestServerConformance(t *testing.T) {
	// Not parallel: it checks process-wide state (goroutines or child processes).
	componenttest.Run(t, componenttest.Harness{
		Features: componenttest.Features{
			Consumer: true, RequestReply: true, Pattern: exchange.InOut,
			ConsumerCancel: true, StopDrains: true, ConcurrentConsumer: true,
			ExternalProcessor: true,
		},
		Setup: func(t *testing.T) *componenttest.Fixture {
			hc := engine.NewContext("conformance")
			t.Cleanup(func() {
				if err := hc.Stop(context.Background()); err != nil {
					t.Errorf("stop engine context: %v", err)
				}
			})
			name := tool.SanitizeName(conformanceWorkflow)

			var mu sync.Mutex
			var bound component.Processor
			unwrap := engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
				if got := ex.In().HeaderString(exchange.HeaderMcpToolName); got != name {
					return fmt.Errorf("exchange did not arrive as a call of tool %s (%s=%q)", name, exchange.HeaderMcpToolName, got)
				}
				args, _ := ex.In().Body().(map[string]any)
				text, ok := args["input"].(string)
				if !ok || len(args) != 1 {
					return fmt.Errorf("tool %s wants the arguments {\"input\": text}, got %#v", name, ex.In().Body())
				}
				ex.In().SetBody(text)
				return nil
			})
			forward := engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
				mu.Lock()
				p := bound
				mu.Unlock()
				if p == nil {
					return errors.New("no processor bound: the suite binds one before creating the consumer")
				}
				return p.Process(ctx, ex)
			})
			if err := hc.AddWorkflow(&engine.Workflow{
				ID: conformanceWorkflow, FromURI: "direct://" + conformanceWorkflow,
				Description: "Conformance suite: hands the text to the suite's processor.",
				Processors:  []engine.Processor{unwrap, forward},
			}); err != nil {
				t.Fatal(err)
			}

			// A fixed port rather than :0, so that Send after Stop dials the address the
			// server listened on and must find it closed.
			addr := conformanceAddr(t)
			return &componenttest.Fixture{
				Component: mcpserver.New(hc),
				URI:       "mcp-server://" + addr + "?name=conformance",
				Bind: func(p component.Processor) {
					mu.Lock()
					bound = p
					mu.Unlock()
				},
				Send: func(ctx context.Context, m componenttest.Message) (componenttest.Message, error) {
					return callConformanceTool(ctx, "http://"+addr+"/mcp", name, m.Body)
				},
			}
		},
	})
}

// callConformanceTool opens a session, calls tool with {"input": body} and returns the
// reply text; a result with isError is an error. Each call has its own HTTP transport,
// closed afterwards, so that no keep-alive connection outlives the subtest (goleak).
func callConformanceTool(ctx context.Context, endpoint, tool, body string) (componenttest.Message, error) {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := sdk.NewClient(&sdk.Implementation{Name: "conformance-sender", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{
		Endpoint: endpoint, HTTPClient: &http.Client{Transport: tr}, DisableStandaloneSSE: true, MaxRetries: -1,
	}, nil)
	if err != nil {
		return componenttest.Message{}, fmt.Errorf("connect to %s: %w", endpoint, err)
	}
	// Closing may fail once the server has stopped (StopDrains); the reply is already in.
	defer func() { _ = cs.Close() }()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"input": body}})
	if err != nil {
		return componenttest.Message{}, fmt.Errorf("call %s: %w", tool, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return componenttest.Message{}, fmt.Errorf("tool %s returned an error: %s", tool, text.String())
	}
	return componenttest.Message{Body: text.String()}, nil
}

// conformanceAddr returns a loopback address with a port that was free a moment ago.
func conformanceAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
