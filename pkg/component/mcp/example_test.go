package mcp_test

import (
	"context"
	"fmt"
	"log/slog"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	helixmcp "github.com/arvenza/helix/pkg/component/mcp"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// The integration guide's §3.3 program, on a free loopback port instead of
// 0.0.0.0:3000, with a client calling the tool instead of blocking forever.
func ExampleNewServer() {
	h := engine.NewContext("mcp-demo")
	h.SetLogger(slog.New(slog.DiscardHandler))

	// Register the MCP server component
	server := helixmcp.NewServer(h)
	h.AddComponent("mcp-server", server)

	// Define a workflow that will become an MCP tool
	_ = h.AddWorkflow(&engine.Workflow{
		ID:          "greet",
		Description: "Greet a person by name",
		FromURI:     "direct://greet",
		Processors: []engine.Processor{
			engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
				body, _ := ex.In().Body().(map[string]any)
				name, _ := body["name"].(string)
				if name == "" {
					name = "World"
				}
				ex.In().SetBody("Hello, " + name + "!")
				return nil
			}),
		},
	})

	// Start the MCP server route
	_ = h.AddWorkflow(&engine.Workflow{
		ID:      "mcp-server",
		FromURI: "mcp-server://127.0.0.1:0?transport=http&name=my-tools&version=1.0.0",
	})

	ctx := context.Background()
	if err := h.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer h.Stop(ctx)

	// A server declared by a trigger is known by its address URI.
	addr := server.Addr("mcp-server://127.0.0.1:0")
	client := sdk.NewClient(&sdk.Implementation{Name: "example", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: "http://" + addr.String() + "/mcp"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cs.InitializeResult().ServerInfo.Name, res.Content[0].(*sdk.TextContent).Text)
	// Output: my-tools Hello, Ada!
}

// The integration guide's §4.3: a workflow whose target is a tool of another MCP
// server. The mcp:// component is registered first (app.Build registers every
// component; a bare engine context has only direct://). The called server here is
// a second Helix on a free loopback port, serving the tool analyze-data.
func ExampleNewClient() {
	ctx := context.Background()
	addr, stop, err := serveAnalyzeData(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	h := engine.NewContext("caller")
	h.SetLogger(slog.New(slog.DiscardHandler))
	h.AddComponent(helixmcp.ClientScheme, helixmcp.NewClient())
	_ = h.AddWorkflow(&engine.Workflow{
		ID:      "call-mcp-tool",
		FromURI: "direct://invoke",
		ToURIs:  []string{"mcp://" + addr + "/analyze-data?transport=http"},
	})
	if err := h.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer h.Stop(ctx)

	// The body becomes the tool's arguments; the tool's result the body.
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"values": []any{3, 4, 5}})
	if err := h.Send(ctx, "direct://invoke", ex); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ex.In().Body())
	// Output: 3 values
}

// serveAnalyzeData starts a Helix serving the workflow analyze-data as an MCP tool
// on a free loopback port and returns its address.
func serveAnalyzeData(ctx context.Context) (addr string, stop func(), err error) {
	h := engine.NewContext("analyzer")
	h.SetLogger(slog.New(slog.DiscardHandler))
	server := helixmcp.NewServer(h)
	h.AddComponent(helixmcp.ServerScheme, server)
	_ = h.AddWorkflow(&engine.Workflow{
		ID:      "analyze-data",
		FromURI: "direct://analyze-data",
		Processors: []engine.Processor{
			engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
				args, _ := ex.In().Body().(map[string]any)
				values, _ := args["values"].([]any)
				ex.In().SetBody(fmt.Sprintf("%d values", len(values)))
				return nil
			}),
		},
	})
	_ = h.AddWorkflow(&engine.Workflow{ID: "mcp", FromURI: "mcp-server://127.0.0.1:0?name=analyzer"})
	if err := h.Start(ctx); err != nil {
		return "", nil, err
	}
	return server.Addr("mcp-server://127.0.0.1:0").String(), func() { _ = h.Stop(ctx) }, nil
}
