package app_test

import (
	"context"
	"fmt"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// The spec §3.3 Go program without its MCP lines: a workflow built with the engine
// API directly, called through direct:// instead of an MCP client.
func Example_goDSL() {
	h := engine.NewContext("mcp-demo")

	// Define a workflow that will become an MCP tool
	h.AddWorkflow(&engine.Workflow{
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

	ctx := context.Background()
	if err := h.Start(ctx); err != nil {
		fmt.Println("start:", err)
		return
	}
	defer h.Stop(ctx)

	for _, args := range []map[string]any{{"name": "Ada"}, {}} {
		ex := exchange.NewWithBody(exchange.InOut, args)
		if err := h.Send(ctx, "direct://greet", ex); err != nil {
			fmt.Println("send:", err)
			return
		}
		fmt.Println(ex.In().Body())
	}
	// Output:
	// Hello, Ada!
	// Hello, World!
}
